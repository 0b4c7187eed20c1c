"""Differential builds: the same generated inputs through urna 0.5.1's build and ours.

A seeded generator makes build inputs nobody wrote by hand (texts of every shape, odd
URIs and spans, embeddings with -0.0 / denormals / huge and tiny magnitudes, every dim,
chunk count, preset, dtype and index option the wheel's ``urna.build`` accepts, blobs,
spaces, provenance). Each case is built by the wheel (a subprocess of the reference
interpreter, in batches) and by this project (a subprocess of ours, same script), and the
outcomes are compared: sha256 of the file, its content_hash, or the builtin exception class
and message when either side refuses. Not a test: the wheel is never a suite dependency.

    .venv/bin/python tools/differential_builds.py run [--seed S] [--count N] [--keep DIR]
        [--keep-built DIR]
    .venv/bin/python tools/differential_builds.py record NAME [SEED:INDEX ...]

``record`` writes tests/data/<NAME>-0.5.1.json: the inputs of a hand-made set (``CASE_SETS``,
one per fixed cause) plus any generated cases picked by SEED:INDEX, and the wheel's outcome for
each, which ``tests/test_build_corpora.py`` rebuilds and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from reference_wheel import BUILTIN_NAME_SOURCE, REF_PYTHON  # noqa: E402

OURS_PYTHON = str(ROOT / ".venv" / "bin" / "python")
DATA = ROOT / "tests" / "data"

U32 = 2**32 - 1
U64 = 2**64 - 1
ZERO_HASH = "sha256:" + "0" * 64

# Runs inside either interpreter: argv[1] = JSON {"cases": [...], "out": dir, "keep": bool}.
# Each case is {"key", "args", "kwargs", "blobs": {name: hex}}; "@blob:<name>" in
# blob_data_paths is replaced by the path of that blob written under ``out``.
RUNNER = r'''
import hashlib, json, os, sys, time
import urna
spec = json.load(open(sys.argv[1]))
out_dir = spec["out"]
results = {}

''' + BUILTIN_NAME_SOURCE + r'''
for case in spec["cases"]:
    key = case["key"]
    blob_dir = os.path.join(out_dir, key + ".blobs")
    kwargs = dict(case["kwargs"])
    if case.get("blobs"):
        os.makedirs(blob_dir, exist_ok=True)
        for name, hexdata in case["blobs"].items():
            with open(os.path.join(blob_dir, name), "wb") as fh:
                fh.write(bytes.fromhex(hexdata))
    if kwargs.get("blob_data_paths") is not None:
        kwargs["blob_data_paths"] = [
            os.path.join(blob_dir, p[6:]) if isinstance(p, str) and p.startswith("@blob:") else p
            for p in kwargs["blob_data_paths"]]
    path = os.path.join(out_dir, key + ".urna")
    t0 = time.perf_counter()
    try:
        urna.build(path, *case["args"], **kwargs)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        results[key] = {"ok": False, "cls": builtin_name(exc), "type": type(exc).__name__,
                        "msg": str(exc), "seconds": time.perf_counter() - t0}
        continue
    data = open(path, "rb").read()
    res = {"ok": True, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
           "seconds": time.perf_counter() - t0}
    try:
        f = urna.open(path)  # the wheel's UrnaFile is no context manager
        res["content_hash"] = f.content_hash
        del f
    except BaseException as exc:
        res["open_error"] = builtin_name(exc) + ": " + str(exc)
    results[key] = res
    if not spec["keep"]:
        os.remove(path)
print(json.dumps(results))
'''


# ---------------------------------------------------------------- texts

_WORD_TEXT = """
    the of and a to in is you that it he was for on are as with his they at be this have
    from or one had by word but not what all were we when your can said there use an each
    which she do how their if will up other about out many then them these so vector index
    search chunk embedding citation offline file format section header checksum manifest
    zstd dictionary span source cosine rerank graph hybrid
"""
WORDS = tuple(w for w in _WORD_TEXT.split())

PLANES = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
          (0x900, 0x97F), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
          (0xE000, 0xF8FF), (0xFB00, 0xFFFD), (0x10000, 0x1FFFF), (0x1F300, 0x1FAFF),
          (0x20000, 0x2FFFF), (0x30000, 0x3FFFF), (0xE0000, 0xEFFFF), (0xF0000, 0xFFFFF),
          (0x100000, 0x10FFFF)]
COMBINING = [chr(c) for c in range(0x300, 0x370)] + ["\u20d0", "\u20e3", "\ufe0f", "\u200d"]
CONTROLS = [chr(c) for c in range(0, 32)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _prose(rng: random.Random) -> str:
    return ". ".join(_words(rng, rng.randint(3, 14)).capitalize()
                     for _ in range(rng.randint(1, 6))) + "."


def _plane_text(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 40)):
        lo, hi = rng.choice(PLANES)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def _combining(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.8:
            out.append(rng.choice("aeiouxyzAE\u00e9\u0939"))
        out.extend(rng.choice(COMBINING) for _ in range(rng.randint(0, 6)))
    return "".join(out)


def _controls(rng: random.Random) -> str:
    return "".join(rng.choice(CONTROLS) if rng.random() < 0.5 else rng.choice("ab \u00ff")
                   for _ in range(rng.randint(1, 30)))


def _crlf(rng: random.Random) -> str:
    return "\r\n".join(_words(rng, rng.randint(0, 6)) for _ in range(rng.randint(1, 6))) + \
        rng.choice(["", "\r\n", "\r", "\n", "\r\n\r\n"])


def _whitespace(rng: random.Random) -> str:
    return "".join(rng.choice(" \t\n\r\x0b\x0c\u00a0\u2003\u3000\u2028")
                   for _ in range(rng.randint(1, 12)))


def _one_char(rng: random.Random) -> str:
    return rng.choice(["a", "Z", " ", "\x00", "\u00e9", "\u4e2d", "\U0001f600", "\U0010fffd",
                       "\u0301", "\ufeff", "\n", "\U000e0001"])


def _long(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return _words(rng, rng.randint(20_000, 26_000))  # ~110-150 kB of prose
    if kind == 1:
        return ("".join(rng.choice("abcdefghij\u00e9\U0001f600") for _ in range(1000))
                * rng.randint(100, 130))
    return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(100_000, 120_000)))


def _id_like(rng: random.Random) -> str:
    return f"{rng.choice(['item', 'sku', 'row', 'doc'])}-{rng.randint(0, 10**rng.randint(1, 9))}"


def _random_bytes_text(rng: random.Random) -> str:
    return "".join(chr(rng.randint(0x21, 0x2FFF)) for _ in range(rng.randint(20, 200)))


TEXT_KINDS: dict[str, Callable[[random.Random], str]] = {
    "prose": _prose, "planes": _plane_text, "combining": _combining, "controls": _controls,
    "crlf": _crlf, "whitespace": _whitespace, "one_char": _one_char, "empty": lambda r: "",
    "id_like": _id_like, "random": _random_bytes_text,
}


def _texts(rng: random.Random, n: int) -> tuple[str, list[str]]:
    """A corpus style and ``n`` texts of it (some styles aim at one chooser candidate)."""
    style = rng.choice(["prose", "mixed", "dups", "near_dups", "templated", "short_ids",
                        "unique_random", "one_kind", "long", "all_empty", "big_texts",
                        "incompressible"])
    if style == "prose":
        return style, [_prose(rng) for _ in range(n)]
    if style == "mixed":
        return style, [rng.choice(list(TEXT_KINDS.values()))(rng) for _ in range(n)]
    if style == "dups":  # exact duplicates: the dedup candidate
        pool = [_prose(rng) for _ in range(max(1, rng.randint(1, max(1, n // 3))))]
        return style, [rng.choice(pool) for _ in range(n)]
    if style == "near_dups":
        base = _prose(rng)
        out = []
        for _ in range(n):
            t = list(base)
            for _ in range(rng.randint(0, 3)):
                if t:
                    t[rng.randrange(len(t))] = rng.choice("xyz0123")
            out.append("".join(t))
        return style, out
    if style == "templated":  # many similar records: the dictionary candidate
        return style, [f"Product {rng.randint(0, 99999)}: {rng.choice(WORDS)} "
                       f"{rng.choice(WORDS)}, price {rng.randint(1, 999)}.{rng.randint(0, 99):02d}"
                       f" EUR, stock {rng.randint(0, 500)}, category "
                       f"{rng.choice(['tools', 'garden', 'books', 'food'])}"
                       for _ in range(n)]
    if style == "short_ids":
        return style, [_id_like(rng) for _ in range(n)]
    if style == "unique_random":
        return style, [_random_bytes_text(rng) for _ in range(n)]
    if style == "one_kind":
        kind = rng.choice(list(TEXT_KINDS))
        return style + ":" + kind, [TEXT_KINDS[kind](rng) for _ in range(n)]
    if style == "long":
        return style, [_long(rng) if i == 0 else _prose(rng) for i in range(n)]
    if style == "incompressible":  # one big text of random bytes: per-text frames can win
        return style, ["".join(chr(rng.randint(0x21, 0x7E)) for _ in range(rng.randint(2000, 6000)))
                       if i < 2 else _prose(rng) for i in range(n)]
    if style == "all_empty":
        return style, [""] * n
    # big_texts: few large compressible texts
    return style, ["\n".join(_prose(rng) for _ in range(rng.randint(20, 80))) for _ in range(n)]


def _uri(rng: random.Random, i: int) -> str:
    kind = rng.random()
    if kind < 0.6:
        return f"docs/{i % 7}.md"
    return rng.choice(["", "x" * rng.randint(300, 5000), "docs/\u65e5\u672c\u8a9e/\U0001f600.md",
                       "a b/c%20d?e=f#g", "file:///tmp/\x00nul", "\u0301\u200d",
                       "https://example.invalid/" + "\u00e9" * 300, "same.txt"])


def _spans(rng: random.Random, texts: list[str]) -> list[tuple[int, int]]:
    style = rng.choice(["running", "running", "zeros", "u32", "u64", "random", "huge"])
    out, pos = [], 0
    for t in texts:
        size = len(t.encode("utf-8", "surrogatepass"))
        if style == "running":
            out.append((pos, pos + size))
            pos += size + rng.choice([0, 0, 1, 2])
        elif style == "zeros":
            out.append((0, 0))
        elif style == "u32":
            a = rng.choice([U32 - 1, U32, U32 + 1, 0, 2**31])
            out.append((a, a + rng.choice([0, 1, 2])))
        elif style == "u64":
            a = rng.choice([U64, U64 - 1, 2**63, 2**63 - 1, 2**53 + 1])
            out.append((a, min(U64, a + rng.choice([0, 1]))))
        elif style == "random":
            a = rng.randrange(0, 2**rng.choice([8, 16, 32, 40, 64]))
            out.append((a, min(U64, a + rng.randrange(0, 10**6))))
        else:
            a = rng.randrange(0, 2**48)
            out.append((a, a + size))
    return out


# ---------------------------------------------------------------- vectors

def _gauss_row(rng: random.Random, dim: int) -> list[float]:
    row = [rng.gauss(0, 1) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in row)) or 1.0
    return [x / norm for x in row]


def _row(rng: random.Random, dim: int, style: str) -> list[float]:
    if style == "gauss":
        return _gauss_row(rng, dim)
    if style == "negzero":
        row = _gauss_row(rng, dim)
        return [-0.0 if rng.random() < 0.3 else x for x in row]
    if style == "denormal":
        return [rng.choice([1e-40, -1e-40, 1.4e-45, -1.4e-45, 1e-39, 5e-324, 0.0, -0.0, x])
                for x in _gauss_row(rng, dim)]
    if style == "huge":
        return [x * rng.choice([1e30, 1e38, 3.4e38, 1.0]) for x in _gauss_row(rng, dim)]
    if style == "tiny":
        return [x * rng.choice([1e-20, 1e-30, 1e-37]) for x in _gauss_row(rng, dim)]
    if style == "zeros":
        return [0.0] * dim
    if style == "onehot":
        row = [0.0] * dim
        row[rng.randrange(dim)] = rng.choice([1.0, -1.0])
        return row
    if style == "ints":
        return [float(rng.randint(-3, 3)) for _ in range(dim)]
    if style == "constant":
        return [1.0 / math.sqrt(dim)] * dim
    if style == "f16_edges":
        return [rng.choice([65504.0, -65504.0, 65520.0, 6e-8, 6.1e-5, 1e-8, 0.5])
                for _ in range(dim)]
    if style == "f32_max":
        return [rng.choice([3.4028234663852886e38, -3.4028234663852886e38, 3.4028235e38,
                            3.4028235677973366e38, 1.0]) for _ in range(dim)]
    return _gauss_row(rng, dim)


VECTOR_STYLES = ["gauss", "gauss", "gauss", "negzero", "denormal", "huge", "tiny", "zeros",
                 "onehot", "ints", "constant", "f16_edges", "f32_max", "dup_rows", "mixed"]


def _matrix(rng: random.Random, n: int, dim: int) -> tuple[str, list[list[float]]]:
    style = rng.choice(VECTOR_STYLES)
    if style == "dup_rows":
        pool = [_gauss_row(rng, dim) for _ in range(max(1, rng.randint(1, 4)))]
        return style, [list(rng.choice(pool)) for _ in range(n)]
    if style == "mixed":
        return style, [_row(rng, dim, rng.choice(VECTOR_STYLES[:13])) for _ in range(n)]
    return style, [_row(rng, dim, style) for _ in range(n)]


# ---------------------------------------------------------------- options

def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _model_hash(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.96:
        return "sha256:" + _hex(rng, 64)
    return rng.choice(["", "sha256:", "sha256:" + "A" * 64, _hex(rng, 64), "md5:" + "0" * 32,
                       "sha256:" + "0" * 63, "sha256:" + "g" * 64])


def _text_field(rng: random.Random) -> str:
    return rng.choice(["", "t", "d\u00e9j\u00e0 vu \"quoted\"", "\U0001f600" * 50, "x" * 3000,
                       "line\nbreak\ttab\x00nul", "\\back\\slash", "</script>"])


def _provenance(rng: random.Random) -> object:
    choices: list[object] = [
        {}, {"a": 1}, {"z": 1, "a": [1, 2.5, None], "s": "\u00fc"},
        {"nested": {"deep": {"x": [True, False, None, -0.0, 1e300, 5e-324]}}},
        {"big": 2**63, "bigger": 2**64 - 1, "neg": -(2**63)},
        {"f": 0.1, "g": 1e-7, "h": 123456789.123456789, "i": 1e16, "j": 1e21},
        {"\u00e9": "\U0001f600", "": "", "ctl": "\x01\x1f\x7f"},
        {"k" + str(i): i for i in range(rng.randint(0, 40))},
    ]
    return rng.choice(choices)


def _spaces(rng: random.Random, n: int) -> list[dict]:
    out = []
    for i in range(rng.randint(1, 3)):
        dtype = rng.choice([None, "float32", "float16", "int8", "int4"])
        dim = rng.choice([1, 3, 8, 64, 128]) if dtype != "int4" else rng.choice([64, 128])
        name = rng.choice(["vision", "audio", "\u00e9t\u00e9", "x" * 60, "a b", "v"])
        if rng.random() < 0.9:  # unique names mostly; a duplicate is a refusal
            name += str(i)
        space: dict = {"name": name,
                       "model_hash": "sha256:" + _hex(rng, 64),
                       "vectors": _matrix(rng, n, dim)[1]}
        if dtype is not None:
            space["dtype"] = dtype
        out.append(space)
    return out


def _blob_kwargs(rng: random.Random, n: int) -> tuple[dict, dict[str, str]]:
    refs, paths, blobs = [], [], {}
    for i in range(rng.randint(0, 4)):
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 10, 1024, 5000])))
        digest = hashlib.sha256(data).hexdigest()
        inline = rng.random() < 0.6
        refs.append({"content_hash": rng.choice([digest, "sha256:" + digest]),
                     "original_uri": rng.choice(["media/b.bin", "", "https://x.invalid/\u00e9.jpg"]),
                     "byte_len": rng.choice([len(data), 0, U32, U64]) if rng.random() < 0.2
                     else len(data), "inlined": inline})
        if inline:
            blobs[f"b{i}"] = data.hex()
            paths.append(f"@blob:b{i}")
        else:
            paths.append(None)
    kwargs: dict = {}
    if refs or rng.random() < 0.3:
        kwargs["blob_refs"] = refs
        if rng.random() < 0.7:
            kwargs["blob_data_paths"] = paths
    if rng.random() < 0.7:
        spans = []
        for _ in range(n):
            idx = rng.randrange(len(refs)) if refs and rng.random() < 0.6 else None
            a = rng.choice([0, 1, 100, U32, U64 - 1])
            spans.append({"blob_ref_index": idx, "byte_start": a,
                          "byte_end": min(U64, a + rng.choice([0, 1, 50]))})
        kwargs["chunk_blob_spans"] = spans
    return kwargs, blobs


CHUNK_COUNTS = [0, 1, 1, 2, 2, 3, 5, 8, 13, 31, 64, 100, 255, 256, 257]
DIMS = [1, 2, 3, 7, 8, 64, 64, 128, 384, 1024]


def make_case(seed: int, index: int) -> dict:
    """Case ``index`` of ``seed``: positional args, keyword args, blob files and a summary."""
    rng = random.Random(f"{seed}:{index}")
    preset = rng.choice(["exact", "compressed", "tiny", "nano", "hybrid"])
    if rng.random() < 0.02:
        preset = rng.choice(["EXACT", "fast", ""])
    text_encoding = rng.choice(["raw", "zstd"]) if rng.random() < 0.4 else None
    zstd_text = (text_encoding or ("raw" if preset == "exact" else "zstd")) == "zstd"
    n = rng.choice(CHUNK_COUNTS)
    if rng.random() < 0.02:
        n = rng.randint(4096, 4400)
    if zstd_text and n > 20 and rng.random() < 0.9:
        # The wheel spends ~0.12 s per chunk on zstd text (a level-19 context per text
        # frame): most of these cases stay small so a run of thousands ends in an hour.
        n = rng.choice([3, 8, 9, 12, 16, 20])
    if zstd_text and n > 300:
        n = 257
    dim = rng.choice(DIMS)
    int4 = preset == "nano" and rng.random() < 0.9
    if int4:  # int4 needs dim % 64 == 0: mostly give it one, sometimes not (a refusal)
        dim = rng.choice([64, 128, 384, 1024])
    if n * dim > 70_000:  # many chunks with small dims: a case's JSON stays under ~2 MB
        dim = rng.choice([1, 2, 3, 7, 8, 64])
    if n > 1000 and dim > 8:
        dim = rng.choice([1, 2, 3, 7, 8])
    text_style, texts = _texts(rng, n)
    if n > 300 and text_style in ("long", "big_texts"):
        texts = [_prose(rng) for _ in range(n)]
    vec_style, rows = _matrix(rng, n, dim)
    spans = _spans(rng, texts)
    chunks = [{"canonical_text": t, "source_uri": _uri(rng, i), "byte_start": s, "byte_end": e,
               "embedding": r}
              for i, (t, (s, e), r) in enumerate(zip(texts, spans, rows, strict=True))]
    if chunks and rng.random() < 0.05:  # one bad value somewhere: both must refuse alike
        c = rng.choice(chunks)
        bad = rng.choice(["nan", "inf", "short", "long", "reversed", "negative", "over_u64"])
        if bad == "nan":
            c["embedding"] = [float("nan")] + c["embedding"][1:]
        elif bad == "inf":
            c["embedding"] = c["embedding"][:-1] + [float("-inf")]
        elif bad == "short":
            c["embedding"] = c["embedding"][:-1]
        elif bad == "long":
            c["embedding"] = c["embedding"] + [0.0]
        elif bad == "reversed":
            c["byte_start"], c["byte_end"] = 10, 9
        elif bad == "negative":
            c["byte_start"] = -1
        else:
            c["byte_end"] = 2**64
        vec_style += "+" + bad
    model = rng.choice(["demo", "minishlab/potion-base-8M/v1", "m\u00f6del/\U0001f600", "x" * 500])
    chunker = rng.choice(["c/1", "quickstart/1", "\u00e9/2", "y" * 300])
    if rng.random() < 0.03:
        model, chunker = rng.choice([("", chunker), (model, ""), ("", "")])
    kwargs: dict = {"preset": preset}
    if rng.random() < 0.4:
        kwargs["dtype"] = rng.choice(["float32", "float16", "int8", "int4"])
        if kwargs["dtype"] == "int4" and dim % 64 and rng.random() < 0.8:
            kwargs["dtype"] = "int8"
    if text_encoding is not None:
        kwargs["text_encoding"] = text_encoding
    if rng.random() < 0.3:
        kwargs["with_hnsw"] = rng.choice([True, False])
    if rng.random() < 0.3:
        kwargs["with_bm25"] = rng.choice([True, False])
    if rng.random() < 0.2:
        kwargs["with_graph"] = True
        kwargs["graph_top_m"] = rng.choice([0, 1, 2, 4, 8, 100])
    if rng.random() < 0.3:
        kwargs["hnsw_m"] = rng.choice([2, 3, 4, 8, 16, 32])
        kwargs["hnsw_ef_construction"] = rng.choice([1, 2, 8, 64, 200])
        kwargs["hnsw_seed"] = rng.choice([0, 1, 7, 42, 2**32, 2**63, U64])
    elif n > 500:  # keep our pure-numba HNSW builds of the big cases quick
        kwargs["hnsw_ef_construction"] = 32
    if rng.random() < 0.15:
        int4_out = kwargs.get("dtype", "int4" if preset == "nano" else "") == "int4"
        valid = [m for m in (1, 2, 3, dim // 2, dim - 1, dim, 64, 128)
                 if 0 < m <= dim and (not int4_out or m % 64 == 0)]
        if valid and rng.random() < 0.85:
            kwargs["mrl_dim"] = rng.choice(valid)
        else:
            kwargs["mrl_dim"] = rng.choice([0, dim + 1, 64])
    if rng.random() < 0.3:
        for field in ("title", "version", "description", "license"):
            if rng.random() < 0.5:
                kwargs[field] = _text_field(rng)
        if rng.random() < 0.4:
            kwargs["authors"] = rng.choice([[], ["a"], ["a", "b", "\u00e9"], [""] * 3])
        if rng.random() < 0.4:
            kwargs["created"] = rng.choice(["2024-01-01T00:00:00Z", "", "yesterday",
                                            "2024-02-30T00:00:00Z", "1970-01-01T00:00:00+02:00"])
    if rng.random() < 0.25:
        kwargs["provenance"] = _provenance(rng)
    if rng.random() < 0.5:
        kwargs["reproducible"] = True
    blobs: dict[str, str] = {}
    if rng.random() < 0.12:
        extra, blobs = _blob_kwargs(rng, n)
        kwargs.update(extra)
    if rng.random() < 0.1 and n > 0:
        kwargs["spaces"] = _spaces(rng, n)
    if kwargs.get("created") is None and not kwargs.get("reproducible"):
        # Without a fixed time both sides stamp "now" and the bytes could never match.
        kwargs["created"] = "2025-06-01T12:00:00Z"
    args = [model, dim, chunker, _model_hash(rng), chunks]
    summary = {"n": n, "dim": dim, "texts": text_style, "vectors": vec_style,
               "options": sorted(k for k in kwargs if k not in ("created", "reproducible"))}
    return {"key": f"{seed}_{index}", "args": args, "kwargs": kwargs, "blobs": blobs,
            "summary": summary}


# ---------------------------------------------------------------- running

def run_side(python: str, cases: list[dict], out_dir: Path, keep: bool, isolated: bool) -> dict:
    """Build every case in one subprocess of ``python``; its outcome per case key."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = out_dir / "cases.json"
    spec.write_text(json.dumps({"cases": cases, "out": str(out_dir), "keep": keep}))
    cmd = [python, *(["-I"] if isolated else []), "-c", RUNNER, str(spec)]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=out_dir)
    spec.unlink()
    if run.returncode:
        raise RuntimeError(f"{python} failed:\n{run.stderr[-4000:]}")
    return json.loads(run.stdout)


def outcome_key(res: dict) -> tuple:
    """What must be equal between the two sides."""
    if res["ok"]:
        return ("ok", res["sha256"], res.get("content_hash"), res.get("open_error"))
    return ("err", res["cls"], res["msg"])


def _table(buf: bytes) -> dict[int, tuple[int, bytes]]:
    """``{section_id: (encoding, payload)}`` read through the file's section table."""
    sys.path.insert(0, str(ROOT / "src"))
    from urna.format import layout as L

    h = L.Header.unpack(buf)
    out: dict[int, tuple[int, bytes]] = {}
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        out[e.section_id] = (e.encoding, buf[e.offset:e.offset + e.size])
    return out


def section_diff(ref: bytes, ours: bytes) -> list[str]:
    """The section ids whose (encoding, payload) differ, as short labels."""
    a, b = _table(ref), _table(ours)
    labels = []
    for sid in sorted(set(a) | set(b)):
        if a.get(sid) != b.get(sid):
            ea = a[sid][0] if sid in a else None
            eb = b[sid][0] if sid in b else None
            labels.append(f"0x{sid:02x}(ref enc {ea}, ours {eb})")
    if not labels:
        labels.append("manifest/header")
    return labels


def coverage(buf: bytes) -> list[str]:
    """Labels of what a built file exercised: 0x02's encoding, aux sections, indexes."""
    t = _table(buf)
    labels = [f"0x02 enc {t[2][0]}" if 2 in t else "no 0x02", f"0x03 enc {t[3][0]}",
              f"0x04 enc {t[4][0]}", f"0x01 enc {t[1][0]}"]
    names = {0x07: "hnsw", 0x08: "bm25", 0x0A: "dictionary 0x0A", 0x0B: "dedup 0x0B",
             0x0C: "graph", 0x14: "blob_refs", 0x15: "spaces", 0x16: "overlay", 0x17: "blob_data"}
    labels += [label for sid, label in names.items() if sid in t]
    return labels


def compare(seed: int, count: int, batch: int, keep_dir: Path | None,
            only: list[int] | None = None, workers: int = 2, keep_built: Path | None = None
            ) -> int:
    """Generate, build on both sides, print the differences; returns the difference count.
    ``keep_built`` receives a copy of every file the wheel wrote (sources for
    ``differential_corruptions.py --source-dir``)."""
    indices = only if only is not None else list(range(count))
    diffs: list[tuple[dict, dict, dict]] = []
    kinds: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    covered: Counter[str] = Counter()
    seconds = {"ref": 0.0, "ours": 0.0}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, len(indices), batch):
            cases = [make_case(seed, i) for i in indices[start:start + batch]]
            ref_dir, our_dir = Path(tmp) / "ref", Path(tmp) / "ours"
            with ThreadPoolExecutor(1 + workers) as pool:
                # The wheel is the slow side: its half of the work is split over ``workers``.
                fut_ref = [pool.submit(run_side, REF_PYTHON, cases[w::workers], ref_dir / str(w),
                                       True, True) for w in range(workers)]
                fut_our = pool.submit(run_side, OURS_PYTHON, cases, our_dir, True, False)
                ref_res = {k: v for f in fut_ref for k, v in f.result().items()}
                our_res = fut_our.result()
            ref_files = {p.stem: p for p in ref_dir.glob("*/*.urna")}
            if keep_built is not None:
                keep_built.mkdir(parents=True, exist_ok=True)
                for key, path in ref_files.items():
                    shutil.copy(path, keep_built / f"{key}.urna")
            for case in cases:
                key = case["key"]
                r, o = ref_res[key], our_res[key]
                kinds["ok" if r["ok"] else "refused"] += 1
                seconds["ref"] += r["seconds"]
                seconds["ours"] += o["seconds"]
                if r["seconds"] > 5 or o["seconds"] > 5:
                    print(f"SLOW {key} wheel {r['seconds']:.1f} s, ours {o['seconds']:.1f} s "
                          f"{json.dumps(case['summary'])}", flush=True)
                if not r["ok"]:
                    refusals[f"{r['cls']}: {r['msg'][:70]}"] += 1
                elif o["ok"]:
                    covered.update(coverage((our_dir / f"{key}.urna").read_bytes()))
                if outcome_key(r) != outcome_key(o):
                    detail = ""
                    if r["ok"] and o["ok"]:
                        rb = ref_files[key].read_bytes()
                        ob = (our_dir / f"{key}.urna").read_bytes()
                        detail = " ".join(section_diff(rb, ob))
                        if keep_dir is not None:
                            keep_dir.mkdir(parents=True, exist_ok=True)
                            (keep_dir / f"{key}.ref.urna").write_bytes(rb)
                            (keep_dir / f"{key}.ours.urna").write_bytes(ob)
                    diffs.append((case, r, o))
                    print(f"DIFF {key} {json.dumps(case['summary'])}\n  ref : {_short(r)}\n"
                          f"  ours: {_short(o)}\n  {detail}", flush=True)
            for d in (ref_dir, our_dir):
                shutil.rmtree(d, ignore_errors=True)
            done = min(start + batch, len(indices))
            print(f"-- {done}/{len(indices)} builds, {len(diffs)} differences, "
                  f"{time.time() - t0:.0f} s", flush=True)
    print("wheel's refusals:")
    for text, k in refusals.most_common():
        print(f"  {k:5} {text}")
    print("coverage of the built files (ours):")
    for text, k in sorted(covered.items()):
        print(f"  {k:5} {text}")
    print(f"build seconds: wheel {seconds['ref']:.1f}, ours {seconds['ours']:.1f}")
    print(f"builds {len(indices)} ({kinds['ok']} built, {kinds['refused']} refused by the "
          f"wheel), differences {len(diffs)}")
    return len(diffs)


def _short(res: dict) -> str:
    if res["ok"]:
        return (f"ok {res['bytes']} B sha {res['sha256'][:16]} content "
                f"{str(res.get('content_hash'))[:24]} {res.get('open_error') or ''}")
    return f"{res['cls']}({res['type']}): {res['msg'][:300]}"


def _hand_case(key: str, n: int = 3, dim: int = 4, **kwargs: object) -> dict:
    """A small hand-made case: ``n`` chunks of dim ``dim`` and the given keywords."""
    chunks = [{"canonical_text": f"chunk {i}", "source_uri": "doc.txt", "byte_start": 8 * i,
               "byte_end": 8 * i + 7, "embedding": [1.0 if j == i % dim else 0.0
                                                   for j in range(dim)]} for i in range(n)]
    blobs = kwargs.pop("blobs", {})
    return {"key": key, "args": ["demo", dim, "c/1", ZERO_HASH, chunks],
            "kwargs": {"reproducible": True, **kwargs}, "blobs": blobs}


def _space(vectors: list, dtype: str | None = None, name: str = "s",
           model_hash: str = ZERO_HASH) -> dict:
    out: dict = {"name": name, "model_hash": model_hash, "vectors": vectors}
    if dtype is not None:
        out["dtype"] = dtype
    return out


def _space_value_cases() -> list[dict]:
    """Space bands holding NaN / inf / f16-overflowing values: the wheel stores them as given."""
    nan, inf = float("nan"), float("inf")
    cases = []
    for dtype in ("float32", "float16", "int8", "int4"):
        for label, head in (("nan_first", [nan, 1.0, 0.5]), ("nan_later", [1.0, nan, 0.5]),
                            ("inf", [inf, 1.0]), ("neg_inf", [-inf, 0.5]),
                            ("all_nan", [nan] * 64), ("zero_then_nan", [0.0] * 63 + [nan]),
                            ("over_f16", [70000.0, 1.0]), ("over_f32", [1e39, 1.0])):
            pad = 64 - len(head)
            rows = [head + [0.1] * pad, [0.2] * 64, head[::-1] + [0.0] * pad]
            cases.append(_hand_case(f"{dtype}_{label}", spaces=[_space(rows, dtype)]))
    return cases


def _media_error_cases() -> list[dict]:
    """blob_refs / blob_data_paths / chunk_blob_spans / spaces refused with the wheel's texts."""
    digest = "ab" * 32
    ref = {"content_hash": digest, "original_uri": "u", "byte_len": 1, "inlined": False}
    span = {"blob_ref_index": None, "byte_start": 0, "byte_end": 1}
    good = [[1.0, 0.0]] * 3
    hashes = {"bad_char": "zz", "odd": "abc", "short": "abcd", "long": "ab" * 33,
              "prefixed_short": "sha256:abcd", "upper_prefix": "SHA256:" + digest, "empty": "",
              "prefix_only": "sha256:", "double_prefix": "sha256:sha256:" + digest,
              "space": " " + digest[1:], "non_ascii": "\u00e9" + digest[2:],
              "nul": "\x00" + digest[1:], "quote": "'" + digest[1:], "c1": "\u0085" + digest[2:]}
    cases = [_hand_case(f"hash_{k}", blob_refs=[dict(ref, content_hash=v)])
             for k, v in hashes.items()]
    cases += [_hand_case(f"ref_missing_{key}",
                         blob_refs=[{k: v for k, v in ref.items() if k != key}]) for key in ref]
    cases += [
        _hand_case("hash_bad_second", blob_refs=[ref, dict(ref, content_hash="zz")]),
        _hand_case("paths_count", blob_refs=[ref], blob_data_paths=[None, None]),
        _hand_case("paths_missing_file", blob_refs=[ref], blob_data_paths=["/nonexistent/x.bin"]),
        _hand_case("paths_count_after_bad_hash", blob_refs=[dict(ref, content_hash="zz")],
                   blob_data_paths=[None, None]),
        _hand_case("overlay_count", chunk_blob_spans=[span]),
        _hand_case("overlay_count_after_paths", blob_refs=[ref], blob_data_paths=[None, None],
                   chunk_blob_spans=[]),
        _hand_case("overlay_missing_start", chunk_blob_spans=[{"blob_ref_index": None,
                                                               "byte_end": 1}] * 3),
        _hand_case("overlay_missing_index", chunk_blob_spans=[{"byte_start": 0,
                                                               "byte_end": 1}] * 3),
        _hand_case("overlay_index_over_u32", blob_refs=[ref],
                   chunk_blob_spans=[dict(span, blob_ref_index=2**32)] * 3),
        _hand_case("overlay_negative_start", chunk_blob_spans=[dict(span, byte_start=-1)] * 3),
        _hand_case("overlay_end_over_u64", chunk_blob_spans=[dict(span, byte_end=2**64)] * 3),
        _hand_case("byte_len_negative", blob_refs=[dict(ref, byte_len=-1)]),
        _hand_case("byte_len_over_u64", blob_refs=[dict(ref, byte_len=2**64)]),
        _hand_case("byte_len_u64_max", blob_refs=[dict(ref, byte_len=U64)]),
        _hand_case("overlay_before_spaces", chunk_blob_spans=[], spaces=[_space([[1.0]])]),
        _hand_case("spaces_too_many", spaces=[_space(good, name=f"s{i}") for i in range(16)]),
        _hand_case("spaces_too_many_bad_first", spaces=[_space(good, "bf16")]
                   + [_space(good, name=f"s{i}") for i in range(15)]),
        _hand_case("space_missing_vectors", spaces=[{"name": "a", "model_hash": ZERO_HASH,
                                                     "dtype": "zz"}]),
        _hand_case("space_missing_name", spaces=[{"model_hash": ZERO_HASH, "vectors": good}]),
        _hand_case("space_rows", spaces=[_space([[1.0, 0.0]])]),
        _hand_case("space_rows_before_dtype", spaces=[_space([[1.0, 0.0]], "zz")]),
        _hand_case("space_ragged", spaces=[_space([[1.0, 0.0], [1.0], [0.0, 1.0]])]),
        _hand_case("space_ragged_first", spaces=[_space([[1.0], [1.0, 0.0], [0.0]])]),
        _hand_case("space_dtype_unknown", spaces=[_space(good, "FLOAT16")]),
        _hand_case("space_int4_dim", spaces=[_space(good, "int4")]),
        _hand_case("space_int4_dim0", spaces=[_space([[], [], []], "int4")]),
        _hand_case("space_int4_before_rows", spaces=[_space(good, "int4"),
                                                     _space([[1.0]], name="t")]),
        _hand_case("space_rows_before_duplicate", spaces=[_space(good), _space([[1.0]])]),
        _hand_case("space_duplicate_name", spaces=[_space(good), _space(good)]),
        _hand_case("space_empty_name", spaces=[_space(good, name="")]),
        _hand_case("space_hash_empty", spaces=[_space(good, model_hash="")]),
        _hand_case("space_hash_bare", spaces=[_space(good, model_hash="a" * 64)]),
        _hand_case("space_hash_upper_prefix",
                   spaces=[_space(good, model_hash="SHA256:" + "0" * 64)]),
        _hand_case("space_hash_short_accepted", spaces=[_space(good, model_hash="sha256:abc")]),
        _hand_case("space_dim0_int8", spaces=[_space([[], [], []], "int8")]),
        _hand_case("space_inline_blob", blob_refs=[dict(ref, inlined=True, byte_len=4)],
                   blob_data_paths=["@blob:b0"], blobs={"b0": "00ff10ee"},
                   chunk_blob_spans=[dict(span, blob_ref_index=0)] * 3),
    ]
    return cases


CASE_SETS: dict[str, Callable[[], list[dict]]] = {
    "space-values": _space_value_cases, "media-errors": _media_error_cases}


def record(name: str, picks: list[str]) -> int:
    """Write tests/data/<name>-0.5.1.json: the named hand-made set and/or picked generated cases."""
    cases = CASE_SETS[name]() if name in CASE_SETS else []
    for pick in picks:
        seed, index = (int(x) for x in pick.split(":"))
        cases.append(make_case(seed, index))
    with tempfile.TemporaryDirectory() as tmp:
        ref = run_side(REF_PYTHON, cases, Path(tmp), False, True)
    for case in cases:
        case["reference"] = ref[case["key"]]
        print(case["key"], _short(case["reference"]))
    out = DATA / f"{name}-0.5.1.json"
    out.write_text(json.dumps({"recorded_with": "urna 0.5.1 (tools/differential_builds.py)",
                               "cases": cases}, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command line: ``run`` the differential or ``record`` chosen cases for the tests."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--count", type=int, default=500)
    run.add_argument("--batch", type=int, default=100)
    run.add_argument("--keep", type=Path, default=None)
    run.add_argument("--keep-built", type=Path, default=None,
                     help="copy every file the wheel wrote here")
    run.add_argument("--only", type=int, nargs="*", default=None)
    run.add_argument("--workers", type=int, default=2, help="wheel processes per batch")
    rec = sub.add_parser("record")
    rec.add_argument("name")
    rec.add_argument("picks", nargs="*", help="SEED:INDEX of generated cases to add")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        return 1 if compare(args.seed, args.count, args.batch, args.keep, args.only,
                             args.workers, args.keep_built) else 0
    return record(args.name, args.picks)


if __name__ == "__main__":
    sys.exit(main())
