"""Differential run: seeded corruptions of every reference file, the wheel against this project.

Every file of ``tests/data/ref-0.5.1`` is corrupted many ways (the mutation fuzzer's cases of
``tests/robustness/_cases.py`` plus the structured ones below: hostile values in every count
and prefix field of every decoded payload, intpack blobs found in any payload with their
widths, minimums, counts and offsets changed, sections re-encoded (zstd, repack, txt_streams,
fsst, zstd_dict with a 0x0A dictionary) and then damaged, zstd frames replaced by valid frames
of other content, table entries swapped, duplicated, emptied or appended). Each case is
written to a file and run through the same worker (open, validate, inspect, every search
verb, retrieve, chunk_ids, blob access) in the reference wheel's interpreter and in ours,
both as long-lived subprocesses fed in batches; a crash or hang is recorded for its case and
the batch goes on after it. Every case whose outcomes differ is printed, grouped by cause (the
first differing call, with both classes and messages, digits masked).

    PYTHONPATH=src .venv/bin/python tools/differential_corruptions.py [--per-source N]
        [--seed S] [--sources GLOB] [--source-dir DIR] [--save DIR]
    PYTHONPATH=src .venv/bin/python tools/differential_corruptions.py --record NAME ID...

``--source-dir DIR`` corrupts other files the wheel wrote instead (e.g. the generated builds
that ``differential_builds.py run --keep-built DIR`` keeps).
``--record NAME ID...`` regenerates the named cases (``<source>:<case>``, as printed), asks
the reference for each one's first failure and writes ``tests/data/NAME-0.5.1.json`` in the
layout of ``mutations-0.5.1.json`` (``src``, ``length``, ``patch``) plus ``op`` and
``message`` (the reference's first failing call and its text, ``None`` when all pass) and
``builtin`` (the builtin class the reference raised). Not a test: the wheel is never a suite
dependency.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "robustness"))
import _cases  # noqa: E402
from reference_wheel import REF_PYTHON  # noqa: E402

from helpers import mutate as M  # noqa: E402
from urna.format import layout as L  # noqa: E402
from urna.format.encodings import zstd as Z  # noqa: E402

Case = tuple[str, Callable[[], bytes]]
OURS_PYTHON = str(ROOT / ".venv" / "bin" / "python")

# Runs in both interpreters: argv[1] = JSON list of [case_id, path]; argv[2] = output file, one
# JSON line per finished case (appended and flushed, so a crash loses only the case it hit).
WORKER = r'''
import hashlib, json, sys
import urna

TEXT = "offline search with citations"


def builtin(e):
    for c in type(e).__mro__:
        if c.__module__ == "builtins":
            return c.__name__
    return type(e).__name__


def digest(v):
    return hashlib.sha256(json.dumps(v, sort_keys=True, default=str).encode()).hexdigest()[:16]


def hits(hs):
    return [[h.chunk_id, round(float(h.score), 4)] for h in hs]


def rhits(hs):
    return [[h.chunk_id, round(float(h.score), 4), h.source_uri, h.offset_start, h.offset_end,
             digest(h.text), h.citation_id] for h in hs]


def query(dim, salt=0):
    return [1.0 if i == 0 else (((i + salt) * 37) % 11 - 5) / 10.0 for i in range(dim)]


def one(path):
    res = {}

    def do(op, fn, summary=lambda v: None):
        try:
            v = fn()
            res[op] = ["", summary(v)]
            return v
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # pyo3's PanicException is a BaseException
            res[op] = [type(e).__name__, builtin(e), str(e)[:1500]]
            return None

    f = do("open", lambda: urna.open(path))
    if f is None:
        return res
    props = do("props", lambda: [f.embedding_dim, f.n_embeddings, f.dtype, f.model_hash,
                                 f.file_hash, f.content_hash, f.has_ann, f.has_bm25,
                                 f.has_graph, f.has_spaces, f.has_blobs, list(f.space_names)],
               lambda v: v)
    dim = props[0] if props else 1
    q = query(dim if 0 < dim <= 1 << 16 else 1)
    do("validate", f.validate)
    info = do("inspect", f.inspect, digest)
    do("search", lambda: f.search(q, 5), hits)
    do("search_ann", lambda: f.search_ann(q, 5, 32), hits)
    do("search_hybrid", lambda: f.search_hybrid(q, TEXT, 5, 50), hits)
    do("search_graph", lambda: f.search_graph(q, 5), hits)
    spaces = info.get("spaces") if isinstance(info, dict) else None
    for s in (spaces or [])[:4]:
        if isinstance(s, dict) and isinstance(s.get("dim"), int) and 0 < s["dim"] <= 1 << 16:
            do("search_space:" + str(s.get("name")),
               lambda s=s: f.search_space(s["name"], query(s["dim"], 3), 3), hits)
    got = do("retrieve", lambda: f.retrieve(q, 3), rhits)
    do("chunk_ids", f.chunk_ids, digest)
    refs = do("blob_refs", f.blob_refs, lambda v: v)
    for i in range(min(len(refs) if isinstance(refs, list) else 0, 4)):
        do("blob_bytes:%d" % i, lambda i=i: f.blob_bytes(i),
           lambda v: hashlib.sha256(bytes(v)).hexdigest()[:16])
    if hasattr(f, "cite") and got:  # ours only: the reference wheel has no cite
        do("*cite", lambda: f.cite(got[0].citation_id), lambda v: digest(v.text))
    return res


out = open(sys.argv[2], "a")
for case_id, path in json.load(open(sys.argv[1])):
    out.write(json.dumps([case_id, one(path)]) + "\n")
    out.flush()
'''


# ---------------------------------------------------------------- structured generators


def _entries(base: bytes) -> list[L.SectionEntry]:
    return [e for _, _, e in M.iter_entries(base)]


def _payload(base: bytes, e: L.SectionEntry) -> bytes:
    return base[e.offset:e.offset + e.size]


def _logical(base: bytes, e: L.SectionEntry) -> bytes | None:
    """The decoded bytes of a text-class payload (0x02 before any dedup), None if undecodable."""
    from urna.format.encodings import decode_section
    try:
        if e.encoding == 5:
            return None
        return decode_section(e.section_id, e.encoding, _payload(base, e))
    except Exception:  # noqa: BLE001 - a source that does not decode is simply not offered
        return None


def _raw_strings(raw: bytes) -> list[bytes]:
    n = struct.unpack_from("<Q", raw, 4)[0]
    pos, out = 12, []
    for _ in range(n):
        k = struct.unpack_from("<I", raw, pos)[0]
        out.append(raw[pos + 4:pos + 4 + k])
        pos += 4 + k
    return out


def _raw_spans(raw: bytes) -> list[tuple[str, int, int]]:
    n = struct.unpack_from("<Q", raw, 4)[0]
    pos, out = 12, []
    for _ in range(n):
        k = struct.unpack_from("<I", raw, pos)[0]
        uri = raw[pos + 4:pos + 4 + k].decode()
        a, b = struct.unpack_from("<QQ", raw, pos + 4 + k)
        out.append((uri, a, b))
        pos += 20 + k
    return out


def _reencode(sid: int, enc: int, raw: bytes) -> bytes | None:
    """``raw`` (a logical payload) in wire encoding ``enc``, None when that cannot hold it."""
    from urna.format.encodings import repack
    try:
        if enc == 0:
            return raw
        if enc == 1:
            return Z.zstd_compress(raw)
        if enc == 4 and sid == 0x01:
            return repack.encode_chunk_ids([s.decode() for s in _raw_strings(raw)])
        if enc == 4 and sid == 0x03:
            return repack.encode_spans(_raw_spans(raw))
        if enc == 10:
            from urna.format.encodings.textcontainer import encode_txt_streams
            return encode_txt_streams([s.decode() for s in _raw_strings(raw)])
        if enc == 9:
            from urna.format.encodings.fsst import encode_fsst
            return encode_fsst([s.decode() for s in _raw_strings(raw)])
    except Exception:  # noqa: BLE001 - not representable in that encoding
        return None
    return None


def _zstd_dict(raw: bytes) -> tuple[bytes, bytes] | None:
    from urna.format.encodings.zstd_dict import encode_zstd_dict, train_dict
    try:
        texts = [s.decode() for s in _raw_strings(raw)]
    except Exception:  # noqa: BLE001
        return None
    d = train_dict(texts * 8) if texts else None
    return None if d is None else (encode_zstd_dict(texts, d), d)


def rebuild(base: bytes, entries: list[tuple[int, int, bytes | None, L.SectionEntry | None]],
            table_count: int | None = None) -> bytes:
    """A new file: ``(section_id, encoding, payload or None, keep)`` rows; payloads appended.

    A row with payload None keeps the offset and size of ``keep``. The table is written anew
    after the body (the header points at it), the old one left as dead bytes, then resealed.
    """
    out = bytearray(base[:len(base) - L.URNA_FOOTER_SIZE])
    rows = []
    for sid, enc, data, keep in entries:
        if data is None:
            assert keep is not None
            rows.append((sid, enc, keep.offset, keep.size))
            continue
        out += bytes(L.align_up(len(out)) - len(out))
        rows.append((sid, enc, len(out), len(data)))
        out += data
    out += bytes(L.align_up(len(out)) - len(out))
    table = len(out)
    for sid, enc, off, size in rows:
        out += struct.pack("<IIQQ8s", sid, enc, off, size, bytes(8))
    out += bytes(L.URNA_FOOTER_SIZE)
    M.poke_header(out, "section_table_offset", table)
    M.poke_header(out, "section_table_count", len(rows) if table_count is None else table_count)
    return bytes(M.reseal(out))


def _with(base: bytes, sid: int, payload: bytes, enc: int | None = None) -> bytes:
    """``base`` with ``sid``'s payload (and encoding) replaced; in place when it fits."""
    _, at, e = M.find_entry(base, sid)
    if len(payload) == e.size:
        b = bytearray(base)
        b[e.offset:e.offset + e.size] = payload
        if enc is not None:
            M.poke_entry(b, sid, "encoding", enc)
        return bytes(M.reseal(b))
    return bytes(M.replace_payload(base, sid, payload, encoding=enc))


def find_intpacks(data: bytes, limit: int = 6) -> list[int]:
    """Offsets where an intpack blob plausibly starts (count, block count, first offset agree)."""
    found: list[int] = []
    for p in range(0, max(len(data) - 17, 0)):
        count, nb = struct.unpack_from("<II", data, p)
        if count == 0 or nb != -(-count // 128) or p + 8 + 4 * nb + 9 > len(data):
            continue
        if struct.unpack_from("<I", data, p + 8)[0] != 8 + 4 * nb:
            continue
        if data[p + 8 + 4 * nb + 8] > 64:
            continue
        found.append(p)
        if len(found) >= limit:
            break
    return found


def _set(data: bytes, pos: int, fmt: str, value: int) -> bytes | None:
    if pos < 0 or pos + struct.calcsize(fmt) > len(data):
        return None
    b = bytearray(data)
    struct.pack_into(fmt, b, pos, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
    return bytes(b)


def intpack_damage(data: bytes, p: int) -> Iterator[tuple[str, bytes | None]]:
    """Variants of ``data`` with the intpack blob at ``p`` damaged field by field."""
    count, nb = struct.unpack_from("<II", data, p)
    first = p + 8 + 4 * nb
    width = data[first + 8]
    for w in sorted({0, max(width - 1, 0), width + 1, 63, 64, 65, 255}):
        yield f"width{w}", _set(data, first + 8, "<B", w)
    for v in (0, 1, L.U64_MAX, 1 << 63):
        yield f"min{v}", _set(data, first, "<Q", v)
    for v in (0, count - 1, count + 1, nb * 128 + 1, 1 << 31, L.U32_MAX):
        yield f"count{v}", _set(data, p, "<I", v)
    for v in (0, nb + 1, L.U32_MAX):
        yield f"nblocks{v}", _set(data, p + 4, "<I", v)
    for v in (0, 7, 8 + 4 * nb + 1, len(data) - p, len(data) - p - 8, L.U32_MAX):
        yield f"off0-{v}", _set(data, p + 8, "<I", v)
    if nb > 1:
        yield "off1-back", _set(data, p + 12, "<I", 8 + 4 * nb)
        yield "off1-past", _set(data, p + 12, "<I", len(data) - p)
    if p >= 4:  # a u32 byte length frames most embedded blobs
        blen = struct.unpack_from("<I", data, p - 4)[0]
        for v in (0, 7, max(blen - 1, 0), blen + 1, L.U32_MAX):
            yield f"len{v}", _set(data, p - 4, "<I", v)


def structured(base: bytes, rng: M.Rng) -> Iterator[Case]:
    """Every structured case of one source (names are stable for a source and seed)."""
    entries = _entries(base)
    ids = [e.section_id for e in entries]
    for e in entries:
        sid = f"{e.section_id:02x}"
        raw = _logical(base, e)
        text = e.section_id not in (0x04,) and not 0x20 <= e.section_id <= 0x3F
        if raw is None or not text:
            if e.section_id == 0x04 or 0x20 <= e.section_id <= 0x3F:
                yield from _vector_cases(base, e)
            continue
        enc = e.encoding

        def put(data: bytes | None, e: L.SectionEntry = e, enc: int = enc) -> bytes | None:
            if data is None:
                return None
            wire = _reencode(e.section_id, enc if enc != 4 else 1, data)
            return None if wire is None else _with(base, e.section_id, wire,
                                                   enc if enc != 4 else 1)

        # Hostile values in every u32 / u64 of the decoded payload's first 48 bytes and at
        # seeded points beyond (counts, lengths, versions wherever the layout puts them).
        spots = set(range(min(len(raw), 48)))
        spots |= {rng.below(max(len(raw), 1)) for _ in range(12)}
        for pos in sorted(spots):
            for fmt, size in (("<I", 4), ("<Q", 8)):
                if pos + size > len(raw):
                    continue
                cur = struct.unpack_from(fmt, raw, pos)[0]
                top = (1 << (8 * size)) - 1
                values = {cur + 1, cur - 1, 0, top, 1 << (8 * size - 1)}
                if size == 8:
                    values |= {1 << 32}
                for v in sorted(values):
                    if v < 0 or v == cur:
                        continue
                    yield (f"val-{sid}-{pos}-u{size * 8}-{v}",
                           lambda pos=pos, fmt=fmt, v=v, put=put, raw=raw:
                           put(_set(raw, pos, fmt, v)))
        for k in sorted({0, 1, 4, 11, 12, 13, len(raw) // 2, len(raw) - 1, len(raw) + 1}):
            yield (f"cut-{sid}-{k}", lambda k=k, put=put, raw=raw:
                   put(raw[:k] if k <= len(raw) else raw + b"\x00"))
        yield f"tail-{sid}", lambda put=put, raw=raw: put(raw + b"\x00\x00\x00\x00")
        for p in find_intpacks(raw):
            for name, data in intpack_damage(raw, p):
                if data is not None:
                    yield f"intpack-{sid}-{p}-{name}", lambda d=data, put=put: put(d)
        # The same logical bytes in every other text encoding (a valid file), then damaged.
        for other in (0, 1, 4, 9, 10):
            if other == enc:
                continue
            wire = _reencode(e.section_id, other, raw)
            if wire is None:
                continue
            yield f"enc-{sid}-{enc}-to-{other}", \
                lambda w=wire, o=other, e=e: _with(base, e.section_id, w, o)
            yield from _wire_damage(base, e.section_id, other, wire, rng)
        if e.section_id == 0x02 and 0x0A not in ids:
            zd = _zstd_dict(raw)
            if zd is not None:
                yield from _dict_cases(base, entries, zd)
        # zstd sections: valid frames of other content, split and decorated frames.
        if enc == 1:
            yield from _zstd_frames(base, e, raw, entries)
    yield from _table_cases(base, entries)
    if 0x15 in ids:
        yield from _space_cases(base)


def _space_rows(table: bytes) -> list[tuple[int, int, int, int]]:
    """``(space_index, dim, dtype code position, n_vectors)`` of each 0x15 record."""
    n = struct.unpack_from("<Q", table, 4)[0]
    pos, out = 12, []
    for _ in range(n):
        index = table[pos]
        k = struct.unpack_from("<I", table, pos + 1)[0]
        pos += 5 + k
        dim = struct.unpack_from("<I", table, pos)[0]
        code_at = pos + 4
        k = struct.unpack_from("<I", table, code_at + 1)[0]
        pos = code_at + 5 + k
        out.append((index, dim, code_at, struct.unpack_from("<Q", table, pos)[0]))
        pos += 8
    return out


def _space_cases(base: bytes) -> Iterator[Case]:
    """A space's dtype code changed, its band rewritten to that layout's size, then damaged."""
    _, _, te = M.find_entry(base, 0x15)
    table = _payload(base, te)
    for index, dim, code_at, n in _space_rows(table):
        band = 0x20 + index
        for code, enc, size in ((0, 0, 4 * n * dim), (1, 2, 2 * n * dim),
                                (2, 3, 8 + 4 * n + n * dim),
                                (3, 7, 8 + 2 * n * max(dim // 64, 1) + n * dim // 2)):
            retyped = bytearray(base)
            retyped[te.offset + code_at] = code
            retyped = bytes(M.reseal(retyped))
            quantised = code >= 2
            kind = 0 if code == 2 else 1  # int8's scale kind, int4's
            nan = b"\x00\x00\xc0\x7f" if code == 2 else b"\x00\x7e"
            for name, head in (("ok", struct.pack("<II", 1, kind)),
                               ("v2", struct.pack("<II", 2, kind)),
                               ("kind9", struct.pack("<II", 1, 9)),
                               ("nanscale", struct.pack("<II", 1, kind) + nan)):
                if not quantised and name != "ok":
                    continue
                pay = (head + bytes(size))[:size] if quantised else bytes(size)
                yield (f"space-{index}-code{code}-{name}",
                       lambda r=retyped, b=band, p=pay, e=enc: _with(r, b, p, e))
            yield (f"space-{index}-code{code}-short",
                   lambda r=retyped, b=band, s=size, e=enc: _with(r, b, bytes(max(s - 1, 0)), e))


def _wire_damage(base: bytes, sid: int, enc: int, wire: bytes, rng: M.Rng) -> Iterator[Case]:
    s = f"{sid:02x}-e{enc}"
    spots = set(range(min(len(wire), 40))) | {rng.below(len(wire)) for _ in range(8)}
    spots |= {len(wire) - 1}
    for pos in sorted(p for p in spots if 0 <= p < len(wire)):
        yield f"wire-{s}-flip{pos}", lambda pos=pos: _with(
            base, sid, wire[:pos] + bytes([wire[pos] ^ 0x5A]) + wire[pos + 1:], enc)
    for k in sorted({0, 1, 5, 9, 13, len(wire) // 2, len(wire) - 1}):
        yield f"wire-{s}-cut{k}", lambda k=k: _with(base, sid, wire[:k], enc)
    yield f"wire-{s}-tail", lambda: _with(base, sid, wire + b"\x00", enc)
    for pos in (1, 5):
        for v in (0, 1, L.U32_MAX):
            d = _set(wire, pos, "<I", v)
            if d is not None:
                yield f"wire-{s}-u32at{pos}-{v}", lambda d=d: _with(base, sid, d, enc)
    for v in (0, L.U64_MAX, 1 << 32):
        d = _set(wire, 1, "<Q", v)
        if d is not None:
            yield f"wire-{s}-u64at1-{v}", lambda d=d: _with(base, sid, d, enc)
    for p in find_intpacks(wire, limit=4):
        for name, data in intpack_damage(wire, p):
            if data is not None:
                yield f"wire-{s}-intpack{p}-{name}", lambda d=data: _with(base, sid, d, enc)
    if enc == 9:  # the fsst symbol table follows the offsets: find it by re-parsing
        yield from _fsst_cases(base, sid, wire)


def _fsst_cases(base: bytes, sid: int, wire: bytes) -> Iterator[Case]:
    from urna.format.encodings import intpack
    n = struct.unpack_from("<Q", wire, 1)[0]
    offs = intpack.unpack_u64s(memoryview(wire)[9:])
    t = 9 + len(intpack.pack_u64s(offs))
    tlen = struct.unpack_from("<I", wire, t)[0]
    for v in (0, 1, tlen - 1, tlen + 1, 255 * 9, len(wire), L.U32_MAX):
        d = _set(wire, t, "<I", v)
        if d is not None:
            yield f"fsst-{sid:02x}-tlen{v}", lambda d=d: _with(base, sid, d, 9)
    for rel in range(0, min(tlen, 24)):
        for x in (0x00, 0xFF, 0x09):
            d = _set(wire, t + 4 + rel, "<B", x)
            if d is not None:
                yield f"fsst-{sid:02x}-tbl{rel}-{x}", lambda d=d: _with(base, sid, d, 9)
    body = t + 4 + tlen
    for rel in (0, 1, 2):
        for x in (0xFF, 0xFE, 0x80):
            d = _set(wire, body + rel, "<B", x)
            if d is not None:
                yield f"fsst-{sid:02x}-code{rel}-{x}", lambda d=d: _with(base, sid, d, 9)
    del n


def _dict_cases(base: bytes, entries: list[L.SectionEntry],
                zd: tuple[bytes, bytes]) -> Iterator[Case]:
    wire, d = zd
    rows = [(e.section_id, e.encoding, None, e) for e in entries]

    def with_dict(w: bytes, dct: bytes | None, denc: int = 0) -> bytes:
        out = [(sid, 5, w, None) if sid == 0x02 else (sid, enc, data, keep)
               for sid, enc, data, keep in rows]
        if dct is not None:
            out.append((0x0A, denc, dct, None))
        return rebuild(base, out)

    yield "dict-valid", lambda: with_dict(wire, d)
    yield "dict-missing", lambda: with_dict(wire, None)
    yield "dict-empty", lambda: with_dict(wire, b"")
    yield "dict-zstd-encoded", lambda: with_dict(wire, d, 1)
    for pos in (0, 1, 4, 7, 8, 9, len(d) // 2, len(d) - 1):
        yield f"dict-flip{pos}", lambda pos=pos: with_dict(
            wire, d[:pos] + bytes([d[pos] ^ 0x5A]) + d[pos + 1:])
    yield "dict-cut", lambda: with_dict(wire, d[:len(d) // 2])
    yield "dict-raw-content", lambda: with_dict(wire, b"not a dictionary at all" * 8)
    for pos in (0, 1, 9, 12, 20, len(wire) - 1):
        yield f"dict-wire-flip{pos}", lambda pos=pos: with_dict(
            wire[:pos] + bytes([wire[pos] ^ 0x5A]) + wire[pos + 1:], d)
    for k in (0, 9, len(wire) - 1):
        yield f"dict-wire-cut{k}", lambda k=k: with_dict(wire[:k], d)


def _zstd_frames(base: bytes, e: L.SectionEntry, raw: bytes,
                 entries: list[L.SectionEntry]) -> Iterator[Case]:
    sid = e.section_id
    s = f"{sid:02x}"
    import zstandard
    half = len(raw) // 2
    yield f"zf-{s}-empty-frame", lambda: _with(base, sid, Z.zstd_compress(b""))
    yield f"zf-{s}-empty-payload", lambda: _with(base, sid, b"")
    yield f"zf-{s}-split", lambda: _with(
        base, sid, Z.zstd_compress(raw[:half]) + Z.zstd_compress(raw[half:]))
    yield f"zf-{s}-skippable", lambda: _with(
        base, sid, b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd" + _payload(base, e))
    yield f"zf-{s}-checksum", lambda: _with(
        base, sid, zstandard.ZstdCompressor(level=3, write_checksum=True).compress(raw))
    yield f"zf-{s}-bad-checksum", lambda: _with(base, sid, _bad_checksum(raw))
    yield f"zf-{s}-short", lambda: _with(base, sid, Z.zstd_compress(raw[:-1]))
    yield f"zf-{s}-long", lambda: _with(base, sid, Z.zstd_compress(raw + b"\x00"))
    yield f"zf-{s}-doubled", lambda: _with(base, sid, Z.zstd_compress(raw + raw))
    yield f"zf-{s}-trailing-junk", lambda: _with(base, sid, _payload(base, e) + b"\x00\x01")
    yield f"zf-{s}-big-declared", lambda: _with(base, sid, zstandard.ZstdCompressor(
        level=1).compress(b"\x00" * (70 << 20)))
    for other in entries:
        o_raw = _logical(base, other) if other.section_id != sid else None
        if o_raw is not None and other.section_id not in (0x04,):
            yield f"zf-{s}-from-{other.section_id:02x}", \
                lambda o=o_raw: _with(base, sid, Z.zstd_compress(o))


def _bad_checksum(raw: bytes) -> bytes:
    import zstandard
    good = bytearray(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(raw))
    good[-1] ^= 0xFF
    return bytes(good)


def _vector_cases(base: bytes, e: L.SectionEntry) -> Iterator[Case]:
    sid = e.section_id
    s = f"{sid:02x}"
    pay = _payload(base, e)
    for enc in (0, 2, 3, 7):
        if enc != e.encoding:
            yield f"vec-{s}-enc{enc}", lambda enc=enc: _with(base, sid, pay, enc)
    for k in (0, 1, len(pay) // 2, len(pay) - 1, len(pay) + 1):
        yield f"vec-{s}-len{k}", lambda k=k: _with(
            base, sid, pay[:k] if k <= len(pay) else pay + b"\x00", e.encoding)
    for pos in (0, 1, 2, 3, 4, 8):  # quantised layouts open with a kind byte and scales
        for x in (0x00, 0xFF, 0x7F):
            d = _set(pay, pos, "<B", x)
            if d is not None:
                yield f"vec-{s}-b{pos}-{x}", lambda d=d: _with(base, sid, d, e.encoding)
    for word in (b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x7e", b"\x00\x7c"):
        for pos in (0, 4, len(pay) - 4):
            d = pay[:pos] + word + pay[pos + len(word):] if pos >= 0 else None
            if d is not None:
                yield f"vec-{s}-nan{word.hex()}-{pos}", lambda d=d: _with(base, sid, d,
                                                                           e.encoding)


def _table_cases(base: bytes, entries: list[L.SectionEntry]) -> Iterator[Case]:
    rows = [(e.section_id, e.encoding, None, e) for e in entries]
    n = len(rows)
    yield "tbl-reversed", lambda: rebuild(base, rows[::-1])
    for i in range(n):
        for j in range(i + 1, n):
            swapped = list(rows)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            yield f"tbl-swap-{i}-{j}", lambda r=swapped: rebuild(base, r)
            ids = list(rows)
            a, b = ids[i], ids[j]
            ids[i], ids[j] = (b[0], a[1], a[2], a[3]), (a[0], b[1], b[2], b[3])
            yield f"tbl-swapids-{i}-{j}", lambda r=ids: rebuild(base, r)
        yield f"tbl-dup-{i}-first", lambda i=i: rebuild(base, [rows[i]] + rows)
        yield f"tbl-dup-{i}-last", lambda i=i: rebuild(base, rows + [rows[i]])
        dup_empty = (rows[i][0], rows[i][1], b"", None)
        yield f"tbl-dupempty-{i}-first", lambda d=dup_empty: rebuild(base, [d] + rows)
        yield f"tbl-dupempty-{i}-last", lambda d=dup_empty: rebuild(base, rows + [d])
        yield f"tbl-drop-{i}", lambda i=i: rebuild(base, rows[:i] + rows[i + 1:])
        for enc in (0, 1):
            empty = list(rows)
            empty[i] = (rows[i][0], enc, b"", None)
            yield f"tbl-zero-{i}-e{enc}", lambda r=empty: rebuild(base, r)
    for sid in (0x09, 0x0A, 0x0B, 0x0C, 0x14, 0x15, 0x16, 0x17, 0x20, 0x21, 0x30, 0x31, 0x18,
                0x0D, 0x40):
        if sid in {e.section_id for e in entries}:
            continue
        for name, data in (("empty", b""), ("prefix0", struct.pack("<IQ", 1, 0)),
                           ("junk", b"\x01" * 24)):
            enc = 0
            yield f"tbl-add-{sid:02x}-{name}", \
                lambda s=sid, d=data, enc=enc: rebuild(base, rows + [(s, enc, d, None)])
    yield "tbl-count-short", lambda: rebuild(base, rows, table_count=n - 1)


# ---------------------------------------------------------------- running


SAMPLED = ("val-", "wire-")


def _sample(items: list[Case], k: int, rng: M.Rng) -> list[Case]:
    """``k`` of ``items`` chosen by a seeded shuffle, in their original order."""
    order = list(range(len(items)))
    for i in range(len(order) - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return [items[i] for i in sorted(order[:k])]


def all_cases(base: bytes, seed: int, per_source: int, sampled: int = 600) -> list[Case]:
    """The fuzzer's cases (a seeded sample of ``per_source``), ``sampled`` of the value and
    wire cases, every other structured case."""
    rng = M.Rng(seed + 77)
    fuzz = _cases.generate(base, random_iters=max(per_source // 4, 1), seed=seed)
    keep = [c for c in fuzz if c[0].startswith("rand")]
    det = [c for c in fuzz if not c[0].startswith("rand")]
    want = max(per_source - len(keep), 0)
    if len(det) > want:
        det = _sample(det, want, rng)
    cases = [("orig", lambda: base)] + [("fz-" + i, t) for i, t in det + keep]
    # The value pokes and wire damage are many per section: a seeded sample of them.
    rest = list(structured(base, M.Rng(seed + 5)))
    many = [c for c in rest if c[0].startswith(SAMPLED)]
    if len(many) > sampled:
        many = _sample(many, sampled, rng)
    return cases + many + [c for c in rest if not c[0].startswith(SAMPLED)]


def sources(pattern: str, folder: Path = M.REF_DIR) -> list[Path]:
    """The files of ``folder`` (the reference's own by default) matching ``pattern``."""
    return sorted(p for p in folder.glob("*.urna") if fnmatch.fnmatch(p.name, pattern))


OURS_SRC = str(ROOT / "src")


def _env(ours: bool, cache: str, src: str = OURS_SRC) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if ours:
        env["PYTHONPATH"] = src
        env["URNA_OPEN_CACHE"] = "0"
        env["URNA_CACHE_DIR"] = cache
    return env


class Runner:
    """One interpreter fed batches of cases; a crash or hang costs one case, not the batch."""

    def __init__(self, python: str, ours: bool, tmp: Path, timeout: float,
                 src: str = OURS_SRC) -> None:
        self.cmd = [python] + ([] if ours else ["-I"]) + ["-c", WORKER]
        self.env = _env(ours, str(tmp / "cache"), src)
        self.tmp = tmp
        self.tag = "ours" if ours else "ref"
        self.timeout = timeout

    def start(self, items: list[list[str]]) -> tuple[subprocess.Popen, Path, list[list[str]]]:
        """Start one worker on ``items``."""
        spec = self.tmp / f"{self.tag}-spec.json"
        out = self.tmp / f"{self.tag}-out.jsonl"
        spec.write_text(json.dumps(items))
        out.write_text("")
        proc = subprocess.Popen(self.cmd + [str(spec), str(out)], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return proc, out, items

    def finish(self, started: tuple[subprocess.Popen, Path, list[list[str]]],
               results: dict[str, dict]) -> list[list[str]]:
        """Wait for a worker; record its results; the items still to run (after a crash)."""
        proc, out, items = started
        deadline = time.monotonic() + self.timeout * len(items) + 30
        last, seen = time.monotonic(), 0
        while proc.poll() is None:
            time.sleep(0.05)
            lines = out.read_text().count("\n")
            if lines != seen:
                seen, last = lines, time.monotonic()
            if time.monotonic() - last > self.timeout or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                break
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        done = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        for cid, res in done:
            results[cid] = res
        if len(done) >= len(items):
            return []
        lost = items[len(done)][0]
        why = "hang" if proc.returncode in (-9, None) else f"exit {proc.returncode}"
        results[lost] = {"open": ["<" + why + ">", "<" + why + ">", stderr[-300:]]}
        return items[len(done) + 1:]


def run_cases(cases: list[tuple[str, bytes]], tmp: Path, ref_python: str, ours_python: str,
              batch: int, timeout: float, only_ref: bool = False, ours_src: str = OURS_SRC
              ) -> tuple[dict[str, dict], dict[str, dict]]:
    """Run every ``(case_id, bytes)`` through both interpreters; their results by case id."""
    ref_r = Runner(ref_python, False, tmp, timeout)
    ours_r = Runner(ours_python, True, tmp, timeout, ours_src)
    ref_res: dict[str, dict] = {}
    ours_res: dict[str, dict] = {}
    files = tmp / "cases"
    files.mkdir(exist_ok=True)
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        items = []
        for k, (cid, data) in enumerate(chunk):
            path = files / f"{start + k}.urna"
            path.write_bytes(data)
            items.append([cid, str(path)])
        pending = {"ref": items, "ours": [] if only_ref else items}
        while pending["ref"] or pending["ours"]:
            started = {}
            if pending["ref"]:
                started["ref"] = ref_r.start(pending["ref"])
            if pending["ours"]:
                started["ours"] = ours_r.start(pending["ours"])
            if "ref" in started:
                pending["ref"] = ref_r.finish(started["ref"], ref_res)
            if "ours" in started:
                pending["ours"] = ours_r.finish(started["ours"], ours_res)
        for p in files.iterdir():
            p.unlink()
    return ref_res, ours_res


ORDER = ("open", "props", "validate", "inspect", "search", "search_ann", "search_hybrid",
         "search_graph")
_DIGITS = re.compile(r"\d+")


def _key(op: str) -> tuple[int, str]:
    return (ORDER.index(op) if op in ORDER else len(ORDER), op)


def _show(outcome: list | None) -> str:
    if outcome is None:
        return "(not run)"
    if outcome[0] == "":
        return "ok"
    return f"{outcome[1]}[{outcome[0]}]: {outcome[2]}"


def difference(ref: dict, ours: dict) -> tuple[str, str, str] | None:
    """``(op, ref outcome, ours outcome)`` of the first call that ended differently."""
    ops = sorted({o for o in ref} | {o for o in ours if not o.startswith("*")}, key=_key)
    for op in ops:
        a, b = ref.get(op), ours.get(op)
        if a is None or b is None:
            return op, _show(a), _show(b)
        if a[0] == "" and b[0] == "":
            if a[1] != b[1]:
                return op, f"ok {json.dumps(a[1])[:200]}", f"ok {json.dumps(b[1])[:200]}"
            continue
        if a[0] == "" or b[0] == "" or a[1] != b[1] or a[2] != b[2]:
            return op, _show(a), _show(b)
    return None


def first_failure(res: dict) -> tuple[str, str, str] | None:
    """``(op, builtin class, message)`` of the first failing call in the worker's order."""
    for op in sorted((o for o in res if not o.startswith("*")), key=_key):
        if res[op][0] != "":
            return op, res[op][1], res[op][2]
    return None


def cause(diff: tuple[str, str, str]) -> str:
    """The grouping key of a difference: digits masked, messages cut."""
    op, a, b = diff
    return _DIGITS.sub("N", f"{op.split(':')[0]} | ref {a[:160]} | ours {b[:160]}")


def patches(src: bytes, data: bytes) -> list[list]:
    """``[offset, hex]`` runs that turn ``src`` cut or zero-extended to ``len(data)`` into it."""
    out: list[list] = []
    base = src[:len(data)] + bytes(max(len(data) - len(src), 0))
    i, n = 0, len(data)
    while i < n:
        if data[i] == base[i]:
            i += 1
            continue
        j = i
        # A run goes on over equal stretches shorter than 9 bytes (fewer, longer patches).
        while j < n and (data[j] != base[j]
                         or (j + 8 < n and data[j + 1:j + 9] != base[j + 1:j + 9])):
            j += 1
        out.append([i, data[i:j].hex()])
        i = j
    return out


def generate_named(names: list[str], seed: int, per_source: int) -> list[tuple[str, bytes]]:
    """The bytes of the cases named ``<source>:<case>``."""
    by_src: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        src, _, cid = name.partition(":")
        by_src[src].append(cid)
    out = []
    for src, cids in by_src.items():
        table = dict(all_cases(M.source_bytes(src), seed, per_source))
        out += [(f"{src}:{cid}", table[cid]()) for cid in cids]
    return out


def record(name: str, ids: list[str], args: argparse.Namespace) -> int:
    """Write ``tests/data/<name>-0.5.1.json`` from the reference's answers to ``ids``."""
    cases = generate_named(ids, args.seed, args.per_source)
    with tempfile.TemporaryDirectory() as tmp:
        ref, _ = run_cases(cases, Path(tmp), args.ref_python, args.ours_python, args.batch,
                           args.timeout, only_ref=True)
    doc = {}
    for cid, data in cases:
        src = cid.partition(":")[0]
        first = first_failure(ref[cid])
        doc[cid] = {"src": src, "length": len(data),
                    "patch": patches(M.source_bytes(src), data),
                    "op": first[0] if first else None,
                    "builtin": first[1] if first else None,
                    "message": first[2] if first else None}
        assert M.apply_case(doc[cid]) == data, cid
        print(f"{cid:60} {doc[cid]['op']}: {doc[cid]['message']}")
    out = ROOT / "tests" / "data" / f"{name}-0.5.1.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out} ({len(doc)} cases)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the differential (or ``--record``) and print the differences grouped by cause."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-source", type=int, default=300,
                    help="fuzzer cases per source (a seeded sample), besides the structured ones")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sources", default="*.urna")
    ap.add_argument("--source-dir", type=Path, default=M.REF_DIR,
                    help="a folder of other files the wheel wrote (e.g. differential_builds "
                         "run --keep-built DIR)")
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds of silence = a hang")
    ap.add_argument("--ref-python", default=REF_PYTHON)
    ap.add_argument("--ours-python", default=OURS_PYTHON)
    ap.add_argument("--ours-src", default=OURS_SRC,
                    help="the urna package folder ours imports (another tree to compare)")
    ap.add_argument("--save", type=Path, help="write every case's two results here (JSONL)")
    ap.add_argument("--record", metavar="NAME")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args(argv)
    if args.record:
        return record(args.record, args.ids, args)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    total = 0
    saved = args.save.open("w") if args.save else None
    t0 = time.monotonic()
    for src in sources(args.sources, args.source_dir):
        base = src.read_bytes()
        cases = []
        for cid, thunk in all_cases(base, args.seed, args.per_source):
            data = thunk()
            if data is not None:
                cases.append((f"{src.name}:{cid}", data))
        with tempfile.TemporaryDirectory() as tmp:
            ref, ours = run_cases(cases, Path(tmp), args.ref_python, args.ours_python,
                                  args.batch, args.timeout, ours_src=args.ours_src)
        n_diff = 0
        for cid, _ in cases:
            diff = difference(ref[cid], ours[cid])
            if saved:
                saved.write(json.dumps([cid, ref[cid], ours[cid]]) + "\n")
            if diff is not None:
                n_diff += 1
                groups[cause(diff)].append(cid)
        total += len(cases)
        print(f"{src.name:28} {len(cases):6} cases {n_diff:5} differ "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
    n = sum(len(v) for v in groups.values())
    n_sources = len(sources(args.sources, args.source_dir))
    print(f"\n{total} corruptions over {n_sources} sources; {n} differ, "
          f"{len(groups)} causes")
    for key, cids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(cids)}] {key}")
        for cid in cids[:4]:
            print(f"    {cid}")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
