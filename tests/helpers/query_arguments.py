"""The argument grid of ``tests/data/query-arguments-0.5.1.json``: named values, calls, digests.

Shared by ``tools/record_query_arguments.py`` (which runs it under the reference wheel, so this
module imports numpy and the standard library only, never ``urna``) and
``tests/runtime/test_query_arguments.py``. A call is ``(method, args, kwargs)`` over value
*names* (``"int:2**63"``, ``"vec:np_1xd"``, ...); :func:`value` builds each value for one file
and method, so the JSON records names and both interpreters build the same objects.
"""

from __future__ import annotations

import array
import decimal
import hashlib
import json
import math
import pathlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

DATA = pathlib.Path(__file__).resolve().parent.parent / "data"
REF = DATA / "ref-0.5.1"
OUT = DATA / "query-arguments-0.5.1.json"
FILES = ("synthetic-exact", "synthetic-hybrid", "synthetic-f16_hnsw", "synthetic-graph",
         "synthetic-spaces", "synthetic-blobs")
WORDS = "alpha beta"

# The wheel's methods of an opened file that take arguments, with their parameters in order
# and the kind of value each takes (``dir()`` of the wheel's UrnaFile, 0.5.1).
METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    "search": (("query", "vector"), ("k", "count")),
    "search_ann": (("query", "vector"), ("k", "count"), ("ef", "count")),
    "search_hybrid": (("query", "vector"), ("query_text", "text"), ("k", "count"),
                      ("candidates", "count")),
    "search_graph": (("query", "vector"), ("k", "count"), ("hops", "count"), ("ef", "count")),
    "search_space": (("name", "text"), ("query", "vector"), ("k", "count"),
                     ("expected_model_hash", "text")),
    "retrieve": (("query", "vector"), ("k", "count"), ("candidates", "count"), ("hops", "count"),
                 ("ef", "count"), ("expected_model_hash", "text")),
    "blob_bytes": (("index", "count"),),
    "open": (("path", "path"),),
    "chunk_ids": (), "blob_refs": (), "inspect": (), "validate": (),
}
BASE = {"query": "vec:unit", "k": "int:3", "ef": "int:16", "query_text": "text:words",
        "candidates": "int:10", "hops": "int:1", "name": "text:space",
        "expected_model_hash": "none", "index": "int:0", "path": "path:self"}

GRID = {
    "vector": [
        "none", "bool:true", "int:1", "int:-1", "int:0", "int:2**31", "int:2**63", "int:2**64",
        "float:1.5", "float:nan", "str:abc", "str:", "bytes:abc", "vec:bytes_dim",
        "vec:bytearray_dim", "vec:short", "vec:long", "vec:empty", "vec:zeros", "vec:nan",
        "vec:inf", "vec:tiny", "vec:huge", "vec:list_str", "vec:list_numeric_str", "vec:nested",
        "vec:tuple", "vec:dict", "vec:set", "vec:generator", "vec:range", "vec:array_f",
        "vec:memoryview", "vec:list_none", "vec:list_bigint", "vec:list_hugeint", "vec:list_bool",
        "vec:list_int", "vec:list_np_f32", "vec:list_complex", "vec:list_decimal",
        "vec:list_index_obj", "vec:list_float_obj", "vec:list_0d_arrays", "vec:list_1d_arrays",
        "vec:seq_obj", "vec:np_f32", "vec:np_f64", "vec:np_f16", "vec:np_int64", "vec:np_uint8",
        "vec:np_uint64_big", "vec:np_bool", "vec:np_complex", "vec:np_object", "vec:np_str",
        "vec:np_noncontig", "vec:np_short", "vec:np_2d", "vec:np_1xd", "vec:np_dx1",
        "vec:np_0d", "vec:np_scalar", "vec:np_empty", "vec:np_f64_overflow", "vec:np_nan",
        "vec:obj", "vec:type",
    ],
    "count": [
        "none", "bool:true", "bool:false", "int:0", "int:1", "int:-1", "int:2**31-1", "int:2**31",
        "int:2**32", "int:2**63-1", "int:2**63", "int:2**64-1", "int:2**64", "int:-2**31",
        "int:-2**31-1", "int:-2**63", "int:-2**63-1", "float:1.0", "float:1.5", "float:nan",
        "float:inf", "str:3", "bytes:3", "list:3", "tuple:3", "dict", "np:int64:3",
        "np:int32:-1", "np:uint64:max", "np:float64:3", "np:bool:true", "np:array0d:3",
        "obj:index3", "obj:index_neg", "obj:bad_index", "decimal:3",
    ],
    "text": [
        "none", "str:", "text:words", "text:space", "text:hash", "str:nope", "text:surrogate",
        "text:unicode", "text:nul", "text:long", "strsub:words", "np:str_:words", "bytes:abc",
        "int:1", "bool:true", "float:1.5", "list:str", "dict",
    ],
    "path": [
        "path:self", "path:pathlib", "path:bytes", "path:missing", "path:dir", "path:empty",
        "path:surrogate", "path:not_urna", "path:strsub", "none", "int:1", "list:path",
    ],
}
# Bad values two at a time: which argument's error wins.
PAIRS = {"vector": ["none", "vec:short", "vec:zeros"],
         "count": ["none", "int:-1", "int:0", "int:2**64"],
         "text": ["none", "str:nope", "text:surrogate"]}
# Keyword arguments our UrnaFile takes beyond the wheel's (README "Python API").
EXTENSIONS = {"where": "none", "threads": "int:1", "rank": "str:cosine", "query_text": "none",
              "full": "bool:false"}


class Context:
    """What a value name needs to become a value: the file's and the method's query width."""

    def __init__(self, path: str, dim: int, space: str, model_hash: str) -> None:
        self.path, self.dim, self.space, self.model_hash = path, dim, space, model_hash


def context(f: Any, path: str, method: str) -> Context:
    """The context of ``method`` on the opened file ``f`` (the reference's or ours)."""
    spaces = f.inspect().get("spaces") or []
    space = spaces[0] if spaces else None
    dim = space["dim"] if method == "search_space" and space else f.embedding_dim
    model_hash = space["model_hash"] if method == "search_space" and space else f.model_hash
    return Context(path, dim, space["name"] if space else "vision", model_hash)


class _Index:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __index__(self) -> Any:
        return self.v


class _Float:
    def __init__(self, v: float) -> None:
        self.v = v

    def __float__(self) -> float:
        return self.v


class _Seq:
    """A sequence by ``__getitem__`` / ``__len__`` only (no ``__iter__``)."""

    def __init__(self, items: list) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


class _Str(str):
    pass


class Outer:
    """Holds a nested class: messages name a type by its qualified name."""

    class Inner:
        pass


def _unit(dim: int) -> list[float]:
    return [1.0] + [0.0] * (dim - 1)


def _vector(kind: str, c: Context) -> Any:
    d, unit = c.dim, _unit(c.dim)
    table: dict[str, Callable[[], Any]] = {
        "unit": lambda: unit,
        "bytes_dim": lambda: bytes([1] * d),
        "bytearray_dim": lambda: bytearray([2] * d),
        "short": lambda: [1.0, 2.0, 3.0],
        "long": lambda: unit + [0.0],
        "empty": lambda: [],
        "zeros": lambda: [0.0] * d,
        "nan": lambda: [float("nan")] + unit[1:],
        "inf": lambda: unit[:-1] + [float("inf")],
        "tiny": lambda: [1e-30] * d,
        "huge": lambda: [1e30] * d,
        "list_str": lambda: ["a"] * d,
        "list_numeric_str": lambda: ["1.5"] * d,
        "nested": lambda: [unit],
        "tuple": lambda: tuple(unit),
        "dict": lambda: dict(enumerate(unit)),
        "set": lambda: {1.0, 2.0},
        "generator": lambda: (x for x in unit),
        "range": lambda: range(1, d + 1),
        "array_f": lambda: array.array("f", [0.5] * d),
        "memoryview": lambda: memoryview(bytes(range(1, d + 1))),
        "list_none": lambda: [None] + unit[1:],
        "list_bigint": lambda: [2 ** 64] + [0] * (d - 1),
        "list_hugeint": lambda: [2 ** 1024] + [0] * (d - 1),
        "list_bool": lambda: [True] * d,
        "list_int": lambda: list(range(d)),
        "list_np_f32": lambda: [np.float32(x) for x in unit],
        "list_complex": lambda: [1j] + unit[1:],
        "list_decimal": lambda: [decimal.Decimal("0.5")] * d,
        "list_index_obj": lambda: [_Index(1)] * d,
        "list_float_obj": lambda: [_Float(0.25)] * d,
        "list_0d_arrays": lambda: [np.array(x) for x in unit],
        "list_1d_arrays": lambda: [np.array([x]) for x in unit],
        "seq_obj": lambda: _Seq(unit),
        "np_f32": lambda: np.array(unit, dtype=np.float32),
        "np_f64": lambda: np.array(unit, dtype=np.float64),
        "np_f16": lambda: np.array(unit, dtype=np.float16),
        "np_int64": lambda: np.arange(d, dtype=np.int64),
        "np_uint8": lambda: np.full(d, 3, dtype=np.uint8),
        "np_uint64_big": lambda: np.full(d, 2 ** 64 - 1, dtype=np.uint64),
        "np_bool": lambda: np.ones(d, dtype=bool),
        "np_complex": lambda: np.array(unit, dtype=np.complex128) + 1j,
        "np_object": lambda: np.array(unit, dtype=object),
        "np_str": lambda: np.array(["1"] * d),
        "np_noncontig": lambda: np.array(unit * 2, dtype=np.float32)[::2],
        "np_short": lambda: np.ones(3, dtype=np.float32),
        "np_2d": lambda: np.array([unit, unit], dtype=np.float32),
        "np_1xd": lambda: np.array([unit], dtype=np.float32),
        "np_dx1": lambda: np.array(unit, dtype=np.float32).reshape(d, 1),
        "np_0d": lambda: np.array(1.0, dtype=np.float32),
        "np_scalar": lambda: np.float32(1.0),
        "np_empty": lambda: np.zeros(0, dtype=np.float32),
        "np_f64_overflow": lambda: np.array([1e300] + unit[1:]),
        "np_nan": lambda: np.array([np.nan] + unit[1:], dtype=np.float32),
        "obj": lambda: Outer.Inner(),
        "type": lambda: int,
    }
    return table[kind]()


def _text(kind: str, c: Context) -> Any:
    return {"words": WORDS, "space": c.space, "hash": c.model_hash, "surrogate": "\udc80",
            "unicode": "ünïcödé ß", "nul": "a\x00b", "long": "x" * 2000}[kind]


def _path(kind: str, c: Context) -> Any:
    return {"self": lambda: c.path, "pathlib": lambda: pathlib.Path(c.path),
            "bytes": lambda: c.path.encode(), "missing": lambda: c.path + ".missing",
            "dir": lambda: str(REF), "empty": lambda: "",
            # first: the encoder's message names the position, which a checkout's path moves
            "surrogate": lambda: "\udc80" + c.path,
            "not_urna": lambda: str(DATA / "README.md"), "strsub": lambda: _Str(c.path)}[kind]()


def _int(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    text = text.lstrip("-")
    if "**" in text:
        base, _, rest = text.partition("**")
        exp, _, minus = rest.partition("-")
        return sign * (int(base) ** int(exp) - int(minus or 0))
    return sign * int(text)


def value(name: str, c: Context) -> Any:
    """The value called ``name`` for a method on one file."""
    head, _, rest = name.partition(":")
    if name == "none":
        return None
    if name == "dict":
        return {"k": 3}
    simple: dict[str, Callable[[str], Any]] = {
        "bool": lambda r: r == "true", "int": _int, "float": float, "str": str,
        "bytes": str.encode, "strsub": lambda r: _Str(_text(r, c)),
        "decimal": decimal.Decimal,
        "vec": lambda r: _vector(r, c), "text": lambda r: _text(r, c),
        "path": lambda r: _path(r, c),
        "list": lambda r: {"3": [3], "str": ["a"], "path": [c.path]}[r],
        "tuple": lambda r: (int(r),),
        "obj": lambda r: {"index3": _Index(3), "index_neg": _Index(-1),
                          "bad_index": _Index(3.5)}[r],
    }
    if head in simple:
        return simple[head](rest)
    if head == "np":
        dtype, _, v = rest.partition(":")
        return {"int64": lambda: np.int64(int(v)), "int32": lambda: np.int32(int(v)),
                "uint64": lambda: np.uint64(2 ** 64 - 1), "float64": lambda: np.float64(v),
                "bool": lambda: np.bool_(v == "true"), "array0d": lambda: np.array(int(v)),
                "str_": lambda: np.str_(_text(v, c))}[dtype]()
    raise KeyError(name)


# -- the calls ----------------------------------------------------------------------------


def _call(method: str, args: list[str], kwargs: dict[str, str] | None = None) -> dict:
    return {"method": method, "args": args, "kwargs": kwargs or {}}


def calls(method: str) -> Iterator[dict]:
    """Every call of ``method`` in the grid (one file's worth)."""
    params = METHODS[method]
    names = [p for p, _ in params]
    base = [BASE[p] for p in names]
    if not params:
        for args, kwargs in (([], {}), (["int:1"], {}), ([], {"x": "int:1"}),
                             (["int:1", "int:2"], {}), (["int:1"], {"x": "int:1"})):
            yield _call(method, args, kwargs)
    else:
        yield _call(method, base)
        yield _call(method, [], dict(zip(names, base, strict=True)))
        for i, (param, kind) in enumerate(params):
            for v in GRID[kind]:
                yield _call(method, base[:i] + [v] + base[i + 1:])
            for v in GRID[kind][:4]:
                kw = dict(zip(names, base, strict=True))
                kw[param] = v
                yield _call(method, base[:i], {p: kw[p] for p in names[i:]})
            # missing: the first i positionally, or every other one by keyword
            yield _call(method, base[:i])
            yield _call(method, [], {p: b for p, b in zip(names, base, strict=True) if p != param})
            # the same argument twice
            yield _call(method, base[:i + 1], {param: base[i]})
            yield _call(method, base, {param: base[i], "foo": "int:1"})
        yield _call(method, base + ["int:1"])
        yield _call(method, base + ["int:1", "int:2"])
        yield _call(method, base + ["int:1"], {"foo": "int:1"})
        yield _call(method, base, {"foo": "int:1"})
        yield _call(method, base, {"foo": "int:1", names[0]: base[0]})
        yield _call(method, base[:1], {"foo": "int:1"})
        for i, (_, ki) in enumerate(params):
            for j in range(i + 1, len(params)):
                kj = params[j][1]
                for vi in PAIRS.get(ki, []):
                    for vj in PAIRS.get(kj, []):
                        args = list(base)
                        args[i], args[j] = vi, vj
                        yield _call(method, args)
    for name, v in EXTENSIONS.items():
        yield _call(method, base, {name: v})


def grid() -> list[dict]:
    """Every recorded call: each method's calls on each file (``open`` on the first only)."""
    out = []
    for file in FILES:
        for method in METHODS:
            if method == "open" and file != FILES[0]:
                continue
            for call in calls(method):
                out.append({"file": file, **call})
    return out


# -- outcomes -----------------------------------------------------------------------------


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def digest(method: str, result: Any, ids: dict[str, int]) -> dict:
    """A short, comparable summary of a successful call (hit ordinals and rounded scores)."""
    if method.startswith("search") or method == "retrieve":
        hits = list(result)
        ordinals = [ids[h.chunk_id] for h in hits]
        scores = [round(h.score, 6) for h in hits]
        kinds = sorted({str(getattr(h, "index_type", None) or getattr(h, "rerank_source", ""))
                        for h in hits})
        return {"hits": len(hits), "kinds": kinds, "ids": ordinals[:12], "scores": scores[:12],
                "all_ids": _sha(ordinals)}
    if method == "blob_bytes":
        return {"bytes": len(result), "sha256": hashlib.sha256(result).hexdigest()[:16]}
    if method == "open":
        return {"file_hash": result.file_hash}
    if method == "inspect":
        return {"keys": sorted(result)}
    if method in ("chunk_ids", "blob_refs"):
        return {"items": len(result), "sha": _sha(result)}
    return {"value": result}


def builtin_class(exc: BaseException) -> str:
    """The builtin exception class an error is (ours subclass the reference's builtin ones)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def run(f: Any, path: str, call: dict, ids: dict[str, int]) -> dict:
    """Make one call on the opened file ``f``; its digest, or its builtin class and message."""
    c = context(f, path, call["method"])
    args = [value(a, c) for a in call["args"]]
    kwargs = {k: value(v, c) for k, v in call["kwargs"].items()}
    fn = getattr(f, call["method"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # every class is recorded, builtin ones included
            return {"error": builtin_class(exc), "message": str(exc)}
    try:
        return {"ok": digest(call["method"], result, ids)}
    finally:
        if call["method"] == "open" and hasattr(result, "close"):  # the wheel's has no close()
            result.close()


def same(got: dict, want: dict) -> bool:
    """Whether two outcomes agree: same class and message, or same hits (scores within 2e-6)."""
    if "ok" not in got or "ok" not in want:
        return got == want
    g, w = got["ok"], want["ok"]
    if set(g) != set(w):
        return False
    for key in g:
        if key == "scores":
            if len(g[key]) != len(w[key]) or any(
                    not (math.isclose(a, b, abs_tol=2e-6) or a == b)
                    for a, b in zip(g[key], w[key], strict=True)):
                return False
        elif g[key] != w[key]:
            return False
    return True
