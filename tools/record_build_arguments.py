"""Record what the reference's ``urna.build`` does with every argument (tests/data).

Builds small reference inputs (tests/data/ref-0.5.1: expected.json's build_options over the
*.chunks.json corpora) under a grid of argument variations, one per parameter of build and
per value PyO3 converts differently (wrong types, None, bools, floats, too-large and negative
ints, numpy scalars, str/list/dict subclasses, ...), plus values inside chunks, media and
spaces and pairs of faults that pin the order of the checks. Each outcome is the SHA-256 of
the written file or the exception's builtin class and message; the cases and outcomes go to
tests/data/build-arguments-0.5.1.json, which tests/test_build_arguments.py replays with ours.
Not a test: the wheel is never a suite dependency.

    python3 tools/record_build_arguments.py [REF_PYTHON]   # the wheel's python, default below

Values that make the wheel die are not in the grid: an HNSW ``hnsw_m`` of 2**31..2**61 asks
the allocator for 8 * m bytes and the process aborts; a larger one panics (``capacity
overflow``, pyo3's PanicException, a BaseException). Ours refuses those with a ValueError.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from reference_wheel import REF_PYTHON

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "build-arguments-0.5.1.json"
HELPERS = ROOT / "tests" / "helpers"
MEMORY_LIMIT = 4 << 30

# Runs inside the reference interpreter: argv[1] = helpers folder, argv[2] = JSON cases file.
# One line of JSON per case, flushed, so a crash names the case it happened in.
CHILD = r'''
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import build_arguments as B
import urna
for case in json.load(open(sys.argv[2])):
    with tempfile.TemporaryDirectory() as tmp:
        out = B.outcome(urna.build, case, Path(tmp))
    print(json.dumps({"name": case["name"], "outcome": out}), flush=True)
'''

QS = "quickstart-exact.urna"


def tag(kind: str, v: Any = None, **more: Any) -> dict:
    """A tagged value (tests/helpers/build_arguments.py decodes it)."""
    out: dict[str, Any] = {"$": kind}
    if v is not None:
        out["v"] = v
    out.update(more)
    return out


NAN, INF = tag("float", "nan"), tag("float", "inf")
STR_VALUES: dict[str, Any] = {
    "int": 1, "float": 1.5, "bytes": tag("bytes", "78"), "bool": True, "list": ["x"],
    "dict": {"a": 1}, "none": None, "thing": tag("thing"), "np_str": tag("np", "np", dtype="str"),
    "strsub": tag("strsub", "sub"), "surrogate": "\ud800x", "empty": "", "nonascii": "déjà",
    "nul": "a\x00b", "np_int": tag("np", 3, dtype="int64"), "tuple": tag("tuple", ["x"]),
}
INT_VALUES: dict[str, Any] = {
    "neg1": -1, "zero": 0, "one": 1, "two": 2, "2^31": 2**31, "2^32-1": 2**32 - 1, "2^32": 2**32,
    "2^63-1": 2**63 - 1, "2^63": 2**63, "2^64-1": 2**64 - 1, "2^64": 2**64, "-2^63-1": -2**63 - 1,
    "-2^70": -2**70, "true": True, "false": False, "float": 1.0, "str": "3", "none": None,
    "bytes": tag("bytes", "33"), "list": [3], "np_int64": tag("np", 3, dtype="int64"),
    "np_uint64_max": tag("np", 2**64 - 1, dtype="uint64"),
    "np_int8_neg": tag("np", -1, dtype="int8"),
    "np_float64": tag("np", 3.0, dtype="float64"), "np_bool": tag("np", True, dtype="bool"),
    "index7": tag("index", 7), "index_bad": tag("index", "x"), "decimal": tag("decimal", "3"),
    "thing": tag("thing"),
}
BOOL_VALUES: dict[str, Any] = {
    "true": True, "false": False, "one": 1, "zero": 0, "none": None, "str": "x", "float": 1.0,
    "np_true": tag("np", True, dtype="bool"), "np_false": tag("np", False, dtype="bool"),
    "truthy": tag("truthy"), "np_int": tag("np", 1, dtype="int64"), "list": [True],
}
LIST_VALUES: dict[str, Any] = {
    "int": 1, "str": "x", "dict": {"a": 1}, "none": None, "tuple": tag("tuple", []),
    "empty": [], "gen": tag("gen", []), "bytes": tag("bytes", "00"), "thing": tag("thing"),
    "listsub_empty": tag("listsub", []),
}


def case(name: str, base: str = QS, n: int | None = 3, args: dict | None = None,
         edits: list | None = None, **more: Any) -> dict:
    """One case: ``base`` cut to ``n`` chunks, with ``args`` replaced and ``edits`` applied."""
    out: dict[str, Any] = {"name": name, "base": base, "n_chunks": n}
    if args:
        out["args"] = args
    if edits:
        out["edits"] = edits
    out.update(more)
    return out


def scalar_cases() -> list[dict]:
    """Every scalar parameter under every value of its kind."""
    out = [case("base")]
    strs = ("embedding_model", "chunker_version", "model_hash", "title", "version", "created",
            "description", "license", "preset", "text_encoding", "dtype")
    for param in strs:
        for label, value in STR_VALUES.items():
            out.append(case(f"{param}={label}", args={param: value}))
    for label, value in STR_VALUES.items():
        out.append(case(f"output_path={label}", args={"output_path": value}))
    ints = {"embedding_dim": {}, "mrl_dim": {}, "graph_top_m": {"with_graph": True},
            "hnsw_m": {"with_hnsw": True}, "hnsw_ef_construction": {"with_hnsw": True},
            "hnsw_seed": {"with_hnsw": True}}
    for param, extra in ints.items():
        for label, value in INT_VALUES.items():
            if param == "hnsw_m" and label in _CRASHING_M:
                continue  # the wheel dies (see the module docstring)
            out.append(case(f"{param}={label}", args={param: value, **extra}))
            if extra:
                out.append(case(f"{param}={label} (index off)", args={param: value}))
    for param in ("reproducible", "with_hnsw", "with_bm25", "with_graph"):
        for label, value in BOOL_VALUES.items():
            out.append(case(f"{param}={label}", args={param: value}))
    for param in ("hnsw_m", "hnsw_ef_construction", "hnsw_seed"):
        for value in (0, 1, 3, 1000, 2**62, 2**64 - 1):
            if param == "hnsw_m" and value in (2**62, 2**64 - 1):
                continue
            out.append(case(f"{param}={value} graph", args={param: value, "with_graph": True}))
    return out


# hnsw_m values the wheel cannot build with: 2**31..2**61 ask the allocator for 8 * m bytes
# and abort the process, larger ones panic ("capacity overflow", a pyo3 PanicException).
_CRASHING_M = ("2^31", "2^32-1", "2^32", "2^63-1", "2^63", "2^64-1", "np_uint64_max")


def preset_cases() -> list[dict]:
    """Presets, per-knob overrides and their refusals, mrl_dim ranges."""
    out = []
    for preset in ("exact", "compressed", "tiny", "nano", "hybrid", "EXACT", "micro", " exact"):
        out.append(case(f"preset {preset!r}", args={"preset": preset}))
    for enc in ("raw", "zstd", "ZSTD", "none"):
        out.append(case(f"text_encoding {enc!r}", args={"text_encoding": enc}))
    for dt in ("float32", "float16", "int8", "int4", "f32", "FLOAT32", "bf16", "int2"):
        out.append(case(f"dtype {dt!r}", args={"dtype": dt}))
    for mrl in (1, 63, 64, 100, 128, 255, 256, 257):
        out.append(case(f"mrl_dim {mrl}", args={"mrl_dim": mrl}))
        out.append(case(f"mrl_dim {mrl} int4", args={"mrl_dim": mrl, "dtype": "int4"}))
    out.append(case("int4 dim 32", base="synthetic-exact.urna", n=3,
                    args={"dtype": "int4", "embedding_dim": 32},
                    edits=[[["chunks", i, "embedding"], [0.0] * 31 + [1.0]] for i in range(3)]))
    for flags in ({"with_hnsw": True, "with_bm25": True, "with_graph": True},
                  {"preset": "hybrid", "with_hnsw": False, "with_bm25": False},
                  {"preset": "tiny", "text_encoding": "raw", "dtype": "float16"}):
        out.append(case("flags " + json.dumps(flags, sort_keys=True), args=flags))
    row = [1.0] + [0.0] * 255
    mrl_rows = {"short": row[:-1], "long": row + [0.0], "nan tail": row[:200] + [NAN] + row[201:],
                "nan head": [NAN] + row[1:], "zero": [0.0] * 256, "tiny": [1e-30] * 256,
                "huge": [3e38] * 256}
    for label, value in mrl_rows.items():
        out.append(case(f"mrl_dim 128 row {label}", args={"mrl_dim": 128},
                        edits=[[["chunks", 1, "embedding"], value]]))
        out.append(case(f"mrl_dim 128 int8 row {label}", args={"mrl_dim": 128, "dtype": "int8"},
                        edits=[[["chunks", 1, "embedding"], value]]))
    out.append(case("graph one chunk", n=1, args={"with_graph": True}))
    out.append(case("hnsw one chunk", n=1, args={"with_hnsw": True}))
    out.append(case("reproducible with created", args={"reproducible": True, "created": "x"}))
    return out


def manifest_cases() -> list[dict]:
    """Manifest strings, authors and provenance (its JSON round trip)."""
    out = []
    for mh in ("sha256:" + "0" * 64, "sha256:" + "A" * 64, "sha256:" + "0" * 63, "sha256:",
               "sha256:" + "g" * 64, "SHA256:" + "0" * 64, "0" * 64, "sha256:" + "0" * 65):
        out.append(case(f"model_hash {mh[:12]}..{len(mh)}", args={"model_hash": mh}))
    authors = {"tuple": tag("tuple", ["a", "b"]), "str": "ab", "bytes": tag("bytes", "6162"),
               "ints": [1], "nones": [None], "np": tag("nparray", ["a", "b"], dtype="str"),
               "getitem": tag("getitem", ["a"]), "gen": tag("gen", ["a"]), "set": tag("set", ["a"]),
               "dict": {"a": 1}, "range": tag("range", [0, 2]), "keys": tag("keys", ["a"]),
               "surrogate": ["\ud800"], "strsub": [tag("strsub", "s")], "empty": [],
               "int": 1, "none": None, "nested": [["a"]], "listsub": tag("listsub", ["a"])}
    for label, value in authors.items():
        out.append(case(f"authors={label}", args={"authors": value}))
    prov = {"none": None, "empty": {}, "int": 1, "str": "x", "list": [1],
            "tuple_value": {"a": tag("tuple", [1, 2])}, "set_value": {"a": tag("set", [1])},
            "nan": {"a": NAN}, "inf": {"a": INF}, "negzero": {"a": tag("float", "-0.0")},
            "int_key": tag("pairs", [[1, 2]]), "none_key": tag("pairs", [[None, 1]]),
            "bool_key": tag("pairs", [[True, 1]]), "float_key": tag("pairs", [[1.5, 1]]),
            "tuple_key": tag("pairs", [[tag("tuple", [1]), 1]]), "bigint": {"a": 2**70},
            "u64max": {"a": 2**64 - 1}, "i64min": {"a": -2**63}, "float_fmt":
            {"a": [1.0, 0.1, 1e16, 5e-324, 1e300, 123456789.125, 2.5e-8]},
            "bytes_value": {"a": tag("bytes", "00")}, "surrogate": {"a": "\ud800"},
            "nonascii": {"é": "ü\u2028"}, "deep_100": tag("deep", "100"), "deep_200":
            tag("deep", "200"), "odict": tag("odict", [["z", 1], ["a", 2]]),
            "dictsub": tag("dictsub", {"b": 1, "a": 2}),
            "np_value": {"a": tag("np", 1, dtype="int64")},
            "dup_after_str": tag("pairs", [[1, "x"], ["1", "y"]]), "thing": {"a": tag("thing")},
            "nested": {"a": {"b": [None, True, False, "s"]}}}
    for label, value in prov.items():
        out.append(case(f"provenance={label}", args={"provenance": value}))
    for field in ("title", "description", "license", "created", "version"):
        out.append(case(f"{field} unicode", args={field: "\u00e9\u2028\U0001f600\"\\"}))
    return out


def chunk_cases() -> list[dict]:
    """Values inside chunks: missing keys, key types, embeddings, spans, and their order."""
    out = [case("chunks=" + label, args={"chunks": v}) for label, v in LIST_VALUES.items()]
    out.append(case("chunks tuple of dicts", wrap=[["chunks", "tuple"]]))
    out.append(case("chunks list subclass", wrap=[["chunks", "listsub"]]))
    out.append(case("chunk not a dict", edits=[[["chunks", 0], 1]]))
    out.append(case("chunk dict subclass", edits=[[["chunks", 1], tag("dictsub", {
        "canonical_text": "a", "source_uri": "u", "byte_start": 0, "byte_end": 1,
        "embedding": [1.0] + [0.0] * 255})]]))
    out.append(case("chunk extra key", edits=[[["chunks", 0, "extra"], 1]]))
    values = {"none": None, "int": 1, "float": 1.5, "str": "x", "bytes": tag("bytes", "78"),
              "neg1": -1, "2^63": 2**63, "2^64-1": 2**64 - 1, "2^64": 2**64, "true": True,
              "list": [], "np_int64": tag("np", 3, dtype="int64"),
              "np_float32": tag("np", 1.0, dtype="float32"), "strsub": tag("strsub", "s"),
              "surrogate": "\ud800", "empty": "", "index": tag("index", 4)}
    for key in ("canonical_text", "source_uri", "byte_start", "byte_end", "embedding"):
        out.append(case(f"chunk missing {key}", edits=[[["chunks", 1, key], {"$": "delete"}]]))
        for label, value in values.items():
            out.append(case(f"chunk {key}={label}", edits=[[["chunks", 1, key], value]]))
    row = [1.0] + [0.0] * 255
    embeddings = {
        "tuple": tag("tuple", row), "np64": tag("nparray", row, dtype="float64"),
        "np32": tag("nparray", row, dtype="float32"), "np16": tag("nparray", row, dtype="float16"),
        "np_int": tag("nparray", [1] + [0] * 255, dtype="int64"),
        "np_str": tag("nparray", [str(x) for x in row], dtype="str"),
        "np2d": tag("nparray", [row], dtype="float64"), "short": row[:-1], "long": row + [0.0],
        "nan": [NAN] + row[1:], "inf": [INF] + row[1:], "-inf": [tag("float", "-inf")] + row[1:],
        "1e39": [1e39] + row[1:], "3.5e38": [3.5e38] + row[1:], "1e-46": [1e-46] + row[1:],
        "-0": [tag("float", "-0.0")] + row[1:], "ints": [1] + [0] * 255,
        "bools": [True] + [False] * 255, "str_el": ["1.0"] + row[1:], "none_el": [None] + row[1:],
        "nested_el": [[1.0]] + row[1:], "bigint_el": [2**1100] + row[1:],
        "np_el": [tag("np", 1.0, dtype="float32")] + row[1:], "decimal_el":
        [tag("decimal", "1")] + row[1:], "floaty_el": [tag("floaty", 1.0)] + row[1:],
        "floaty_bad": [tag("floaty", "x")] + row[1:], "index_el": [tag("index", 1)] + row[1:],
        "complex_el": [tag("complex", [1, 0])] + row[1:], "bytes": tag("bytes", "00" * 256),
        "range": tag("range", [0, 256]), "getitem": tag("getitem", row), "gen": tag("gen", row),
        "set": tag("set", [1.0]), "str": "abc", "empty": [], "unnormalised": [3.0] + row[1:],
        "f32_round": [0.1 + 2**-30] + row[1:], "np_scalar": tag("np", 1.0, dtype="float64"),
        "listsub": tag("listsub", row), "dict": {"a": 1}}
    for label, value in embeddings.items():
        out.append(case(f"embedding {label}", edits=[[["chunks", 1, "embedding"], value]]))
    spans = {"equal": (5, 5), "reversed": (5, 1), "zero": (0, 0), "u64max": (2**64 - 1, 2**64 - 1),
             "start_max": (2**64 - 1, 0)}
    for label, (start, end) in spans.items():
        out.append(case(f"span {label}", edits=[[["chunks", 1, "byte_start"], start],
                                                [["chunks", 1, "byte_end"], end]]))
    bad = {"nd": [["chunks", 0], 1], "missing": [["chunks", 0, "embedding"], {"$": "delete"}],
           "type": [["chunks", 0, "byte_start"], "x"],
           "dim": [["chunks", 0, "embedding"], row[:-1]],
           "nan": [["chunks", 0, "embedding"], [NAN] + row[1:]],
           "span": [["chunks", 0, "byte_end"], 0]}
    later = {"missing": [["chunks", 2, "source_uri"], {"$": "delete"}],
             "type": [["chunks", 2, "byte_end"], 1.5], "dim": [["chunks", 2, "embedding"], [0.0]],
             "nan": [["chunks", 2, "embedding"], [INF] + row[1:]], "nd": [["chunks", 2], "x"],
             "span": [["chunks", 2, "byte_start"], 10**6]}
    for a, ea in bad.items():
        for b, eb in later.items():
            edits = [ea, eb]
            if a == "span":
                edits = [[["chunks", 0, "byte_start"], 7], ea, eb]
            out.append(case(f"chunk fault {a}@0 then {b}@2", edits=edits))
    same = {"text+embedding": [[["chunks", 1, "canonical_text"], 1],
                               [["chunks", 1, "embedding"], {"$": "delete"}]],
            "no text + embedding": [[["chunks", 1, "canonical_text"], {"$": "delete"}],
                                    [["chunks", 1, "embedding"], 1]],
            "start+uri": [[["chunks", 1, "byte_start"], "x"], [["chunks", 1, "source_uri"], 1]],
            "end+start": [[["chunks", 1, "byte_end"], "x"], [["chunks", 1, "byte_start"], 1.5]],
            "dim+span": [[["chunks", 1, "embedding"], row[:-1]], [["chunks", 1, "byte_start"], 9],
                         [["chunks", 1, "byte_end"], 1]],
            "nan+span": [[["chunks", 1, "embedding"], [NAN] + row[1:]],
                         [["chunks", 1, "byte_start"], 9], [["chunks", 1, "byte_end"], 1]],
            "nan+dim": [[["chunks", 1, "embedding"], [NAN] * 255]]}
    for label, edits in same.items():
        out.append(case(f"chunk faults {label}", edits=edits))
    return out


def media_cases() -> list[dict]:
    """blob_refs, blob_data_paths, chunk_blob_spans and spaces, on the media inputs."""
    blobs, spaces = "quickstart-blobs.urna", "quickstart-spaces.urna"
    out = [case("blobs base", base=blobs, n=None), case("spaces base", base=spaces, n=None)]
    for param in ("blob_refs", "blob_data_paths", "chunk_blob_spans", "spaces"):
        base = spaces if param == "spaces" else blobs
        for label, value in LIST_VALUES.items():
            out.append(case(f"{param}={label}", base=base, n=None, args={param: value}))
        out.append(case(f"{param} item not a dict", base=base, n=None,
                        edits=[[[param, 0], 1]]))
        out.append(case(f"{param} on exact", args={param: []}))
        out.append(case(f"{param} tuple of base", base=base, n=None, wrap=[[param, "tuple"]]))
    out.append(case("blob_refs only, no spans/data", base=blobs, n=None,
                    args={"blob_data_paths": {"$": "delete"}, "chunk_blob_spans": {"$": "delete"}}))
    out.append(case("chunk_blob_spans only", base=blobs, n=None,
                    args={"blob_data_paths": {"$": "delete"}, "blob_refs": {"$": "delete"}}))
    ref_values = {
        "content_hash": {"bare": "ab" * 32, "upper": "AB" * 32, "short": "sha256:abc",
                         "nonhex": "sha256:" + "zz" * 32, "int": 1, "none": None, "empty": "",
                         "prefix_only": "sha256:", "long": "ab" * 33,
                         "other_prefix": "md5:" + "ab" * 32},
        "original_uri": {"int": 1, "none": None, "empty": "", "surrogate": "\ud800"},
        "byte_len": {"neg1": -1, "2^64": 2**64, "2^64-1": 2**64 - 1, "str": "x", "float": 1.5,
                     "true": True, "none": None, "np": tag("np", 5, dtype="int64")},
        "inlined": {"one": 1, "str": "x", "none": None, "np": tag("np", True, dtype="bool"),
                    "false": False},
    }
    for key, values in ref_values.items():
        out.append(case(f"blob_refs[1] missing {key}", base=blobs, n=None,
                        edits=[[["blob_refs", 1, key], {"$": "delete"}]]))
        for label, value in values.items():
            out.append(case(f"blob_refs[1].{key}={label}", base=blobs, n=None,
                            edits=[[["blob_refs", 1, key], value]]))
    out.append(case("blob_refs extra key", base=blobs, n=None, edits=[[["blob_refs", 0, "x"], 1]]))
    out.append(case("blob_refs empty list", base=blobs, n=None,
                    args={"blob_refs": [], "blob_data_paths": [],
                          "chunk_blob_spans": {"$": "delete"}}))
    paths = {"missing": tag("ref_path", "no-such-blob.bin"), "dir": tag("ref_path", "."),
             "int": 1, "bytes": tag("bytes", "78"), "empty": "", "none_for_inlined": None}
    for label, value in paths.items():
        out.append(case(f"blob_data_paths[0]={label}", base=blobs, n=None,
                        edits=[[["blob_data_paths", 0], value]]))
    out.append(case("blob_data_paths[1]=file for not inlined", base=blobs, n=None,
                    edits=[[["blob_data_paths", 1], tag("ref_path", "blob0.bin")]]))
    out.append(case("blob_data_paths too long", base=blobs, n=None,
                    edits=[[["blob_data_paths", 2], None]]))
    out.append(case("blob_data_paths too short", base=blobs, n=None,
                    edits=[[["blob_data_paths", 1], {"$": "delete"}]]))
    out.append(case("blob_data_paths tuple", base=blobs, n=None,
                    args={"blob_data_paths": tag("tuple", [tag("ref_path", "blob0.bin"), None])}))
    span_values = {
        "blob_ref_index": {"none": None, "two": 2, "99": 99, "neg1": -1, "2^32": 2**32,
                           "2^64": 2**64, "str": "x", "float": 0.0, "true": True},
        "byte_start": {"neg1": -1, "2^64": 2**64, "str": "x", "big": 10**6, "none": None},
        "byte_end": {"neg1": -1, "2^64": 2**64, "str": "x", "zero": 0, "none": None},
    }
    for key, values in span_values.items():
        out.append(case(f"chunk_blob_spans[0] missing {key}", base=blobs, n=None,
                        edits=[[["chunk_blob_spans", 0, key], {"$": "delete"}]]))
        for label, value in values.items():
            out.append(case(f"chunk_blob_spans[0].{key}={label}", base=blobs, n=None,
                            edits=[[["chunk_blob_spans", 0, key], value]]))
    out.append(case("chunk_blob_spans too long", base=blobs, n=None,
                    edits=[[["chunk_blob_spans", 12], {"blob_ref_index": None, "byte_start": 0,
                                                        "byte_end": 0}]]))
    out.append(case("chunk_blob_spans too short", base=blobs, n=None,
                    edits=[[["chunk_blob_spans", 11], {"$": "delete"}]]))
    out += _space_cases(spaces)
    out += _media_order_cases(blobs, spaces)
    return out


def _space_cases(spaces: str) -> list[dict]:
    out = [case("spaces=[] on spaces", base=spaces, n=None, args={"spaces": []})]
    for key in ("name", "model_hash", "vectors", "dtype"):
        out.append(case(f"spaces[0] missing {key}", base=spaces, n=None,
                        edits=[[["spaces", 0, key], {"$": "delete"}]]))
    values = {
        "name": {"int": 1, "none": None, "empty": "", "dup": "audio", "long": "n" * 300,
                 "nonascii": "vis\u00e3o", "surrogate": "\ud800",
                 "np": tag("np", "v", dtype="str")},
        "model_hash": {"int": 1, "none": None, "empty": "", "bad": "x",
                       "upper": "sha256:" + "A" * 64},
        "dtype": {"float16": "float16", "int8": "int8", "int4": "int4", "bad": "bf16", "int": 1,
                  "none": None, "upper": "FLOAT32"},
        "vectors": {"empty": [], "str": "x", "int": 1, "none": None, "tuple_rows": tag("tuple", []),
                    "np": tag("nparray", [[0.5] * 32] * 12, dtype="float32")},
    }
    for key, vals in values.items():
        for label, value in vals.items():
            out.append(case(f"spaces[0].{key}={label}", base=spaces, n=None,
                            edits=[[["spaces", 0, key], value]]))
    rows = {"nan": [NAN] + [0.0] * 31, "inf": [INF] + [0.0] * 31, "short": [0.0] * 31,
            "long": [0.0] * 33, "empty": [], "str_el": ["x"] + [0.0] * 31, "str": "abc",
            "tuple": tag("tuple", [0.5] * 32), "big": [1e39] + [0.0] * 31,
            "unnormalised": [5.0] * 32, "ints": [1] * 32, "none": None}
    for label, row in rows.items():
        out.append(case(f"spaces[0].vectors[3]={label}", base=spaces, n=None,
                        edits=[[["spaces", 0, "vectors", 3], row]]))
        out.append(case(f"spaces[1] f16 vectors[3]={label}", base=spaces, n=None,
                        edits=[[["spaces", 1, "vectors", 3], row[:16] if isinstance(row, list)
                                and len(row) == 32 else row]]))
    for dt in ("int8", "int4"):
        out.append(case(f"spaces[0] {dt} with nan", base=spaces, n=None,
                        edits=[[["spaces", 0, "dtype"], dt],
                               [["spaces", 0, "vectors", 3], [NAN] + [0.0] * 31]]))
    out.append(case("spaces[0] int4 dim 64", base=spaces, n=None,
                    edits=[[["spaces", 0, "dtype"], "int4"],
                           [["spaces", 0, "vectors"], [[0.125] * 64] * 12]]))
    out.append(case("spaces[0] all rows empty", base=spaces, n=None,
                    edits=[[["spaces", 0, "vectors"], [[]] * 12]]))
    out.append(case("spaces[0] rows too few", base=spaces, n=None,
                    edits=[[["spaces", 0, "vectors", 11], {"$": "delete"}]]))
    out.append(case("spaces[0] rows too many", base=spaces, n=None,
                    edits=[[["spaces", 0, "vectors", 12], [0.0] * 32]]))
    out.append(case("spaces[0] extra key", base=spaces, n=None, edits=[[["spaces", 0, "x"], 1]]))
    many = [{"name": f"s{i}", "model_hash": "sha256:" + "1" * 64, "vectors": [[0.5] * 4] * 12}
            for i in range(20)]
    for count in (15, 16, 17, 20):
        out.append(case(f"spaces x{count}", base=spaces, n=None, args={"spaces": many[:count]}))
    return out


def _media_order_cases(blobs: str, spaces: str) -> list[dict]:
    """Pairs of faults in different checks: which one the reference reports first."""
    faults = {
        "chunk_nd": ("chunks", [["chunks", 0], 1]), "mrl": ("mrl_dim", 1000),
        "prov_set": ("provenance", {"a": tag("set", [1])}), "prov_nan": ("provenance", {"a": NAN}),
        "preset": ("preset", "zz"), "text_encoding": ("text_encoding", "zz"),
        "dtype": ("dtype", "zz"),
        "int4_dim": ("mrl_dim", 100, {"dtype": "int4"}), "refs_nd": ("blob_refs", [1]),
        "refs_hash": ("blob_refs", [{"content_hash": "x", "original_uri": "u", "byte_len": 1,
                                     "inlined": False}]),
        "data_norefs": ("blob_data_paths", []), "spans_nd": ("chunk_blob_spans", [1]),
        "spans_len": ("chunk_blob_spans", []), "spaces_nd": ("spaces", [1]),
        "spaces_rows": ("spaces", [{"name": "s", "model_hash": "sha256:" + "1" * 64,
                                    "vectors": [[0.5]]}]),
        "spaces_nan": ("spaces", [{"name": "s", "model_hash": "sha256:" + "1" * 64,
                                   "vectors": [[NAN]] * 3}]),
        "model_hash": ("model_hash", "x"), "model_empty": ("embedding_model", ""),
        "dim_zero": ("embedding_dim", 0),
        "chunk_dim": ("chunks", [["chunks", 1, "embedding"], [0.0]]),
        "chunk_nan": ("chunks", [["chunks", 1, "embedding"], [NAN] * 256]),
        "chunk_span": ("chunks", [["chunks", 1, "byte_end"], 0]),
        "out_dir": ("output_path", tag("out", name="d", pre="dir")),
    }
    names = list(faults)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            args: dict[str, Any] = {}
            edits: list = []
            clash = False
            for f in (a, b):
                param, value, *extra = faults[f]
                if param == "chunks":
                    edits.append(value)
                    if f == "chunk_span":
                        edits.append([["chunks", 1, "byte_start"], 5])
                    continue
                if param in args or any(k in args for k in (extra[0] if extra else {})):
                    clash = True
                args[param] = value
                args.update(extra[0] if extra else {})
            if clash or (a.startswith("chunk_") and b.startswith("chunk_")):
                continue
            out.append(case(f"order {a} + {b}", args=args, edits=edits))
    del blobs, spaces
    return out


def output_cases() -> list[dict]:
    """Where the file goes: existing files and folders, missing folders, relative paths."""
    paths = {"pathlike": tag("out", pathlike=True), "existing file": tag("out", pre="file"),
             "existing dir": tag("out", name="d", pre="dir"), "missing dir":
             tag("out", name="no/such/o.urna"), "relative": tag("out", relative=True),
             "empty": tag("out", name="", relative=True), "trailing slash": tag("out", slash=True),
             "dot": tag("out", name=".", relative=True), "nul": tag("out", name="a\x00b")}
    out = [case(f"output_path {label}", args={"output_path": v}) for label, v in paths.items()]
    out.append(case("output_path existing file + bad preset",
                    args={"output_path": tag("out", pre="file"), "preset": "zz"}))
    out.append(case("call: keywords for positionals", n_positional=0))
    out.append(case("call: 5 positionals", n_positional=5))
    out.append(case("call: chunks missing", n_positional=5, args={"chunks": {"$": "delete"}}))
    out.append(case("call: extra positional", extra_positional=["x"]))
    out.append(case("call: unknown keyword", args={"colour": "red"}))
    return out


def all_cases() -> list[dict]:
    """The whole grid, names unique."""
    cases = (scalar_cases() + preset_cases() + manifest_cases() + chunk_cases() + media_cases()
             + output_cases())
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    return cases


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_reference(cases: list[dict], ref_python: str) -> dict[str, dict]:
    """Outcomes of ``cases`` in the wheel; a case that kills the process is reported and dropped."""
    import tempfile

    results: dict[str, dict] = {}
    todo = list(cases)
    while todo:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(todo, fh)
        # -I: ignore PYTHONPATH, or the child would import this project instead of the wheel.
        run = subprocess.run([ref_python, "-I", "-c", CHILD, str(HELPERS), fh.name],
                             capture_output=True, text=True, check=False,
                             preexec_fn=_limit_memory)
        Path(fh.name).unlink()
        for line in run.stdout.splitlines():
            row = json.loads(line)
            results[row["name"]] = row["outcome"]
        done = len([c for c in todo if c["name"] in results])
        if run.returncode == 0:
            break
        crashed = todo[done]
        print(f"reference died (rc {run.returncode}) on {crashed['name']!r}: "
              f"{run.stderr.strip().splitlines()[:1]}", file=sys.stderr)
        todo = todo[done + 1:]
    return results


def main(ref_python: str = REF_PYTHON) -> int:
    """Run the grid in the reference and write the record."""
    cases = all_cases()
    results = run_reference(cases, ref_python)
    kept = [dict(c, outcome=results[c["name"]]) for c in cases if c["name"] in results]
    OUT.write_text(json.dumps({"reference": "urna 0.5.1", "cases": kept}, indent=None,
                              ensure_ascii=True).replace('}, {"name"', '},\n{"name"') + "\n")
    errors = sum("error" in c["outcome"] for c in kept)
    print(f"{len(kept)} builds recorded ({len(kept) - errors} written, {errors} refused), "
          f"{len(cases) - len(kept)} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
