"""The build-argument cases of tests/data/build-arguments-0.5.1.json: decode one, run it.

A case names a reference input (a file of expected.json, optionally cut to its first chunks),
replaces some of ``urna.build``'s arguments and edits values inside them. Values that JSON
cannot hold (NaN, bytes, tuples, numpy scalars, objects with ``__index__``, ...) are tagged
dicts ``{"$": kind, ...}``. The recorder runs this module inside the reference wheel's
interpreter (tools/record_build_arguments.py) and the test inside ours, so both call
``build`` with the same objects. Standard library and numpy only: this never imports urna.
"""

from __future__ import annotations

import copy
import decimal
import hashlib
import json
import os
from collections import OrderedDict
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
REF = DATA / "ref-0.5.1"
RECORD = DATA / "build-arguments-0.5.1.json"
POSITIONAL = ("output_path", "embedding_model", "embedding_dim", "chunker_version",
              "model_hash", "chunks")
DELETE = {"$": "delete"}


class Index:
    """An object with ``__index__`` (what PyO3's integer extraction calls)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __index__(self) -> Any:
        return self.value


class Floaty:
    """An object with ``__float__`` (what PyFloat_AsDouble calls)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __float__(self) -> Any:
        return self.value


class Truthy:
    """An object with ``__bool__`` only (not a bool)."""

    def __bool__(self) -> bool:
        return True


class GetItem:
    """A sequence by ``__getitem__`` alone (no ``__len__``, no ``__iter__``)."""

    def __init__(self, items: list) -> None:
        self.items = items

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


class Thing:
    """A plain object of a type nobody converts."""


class StrSub(str):
    """A str subclass."""


class ListSub(list):
    """A list subclass."""


class DictSub(dict):
    """A dict subclass."""


def decode(value: Any, ctx: dict) -> Any:
    """The Python object an encoded case value stands for (``ctx``: tmp folder, ref folder)."""
    if isinstance(value, list):
        return [decode(v, ctx) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("$")
    if kind is None:
        return {k: decode(v, ctx) for k, v in value.items()}
    v = value.get("v")
    simple = {
        "float": lambda: float(v), "bytes": lambda: bytes.fromhex(v),
        "bytearray": lambda: bytearray.fromhex(v),
        "tuple": lambda: tuple(decode(v, ctx)), "set": lambda: set(decode(v, ctx)),
        "gen": lambda: (x for x in decode(v, ctx)), "range": lambda: range(*v),
        "listsub": lambda: ListSub(decode(v, ctx)), "dictsub": lambda: DictSub(decode(v, ctx)),
        "odict": lambda: OrderedDict(decode(v, ctx)), "strsub": lambda: StrSub(v),
        "index": lambda: Index(decode(v, ctx)), "floaty": lambda: Floaty(decode(v, ctx)),
        "truthy": Truthy, "getitem": lambda: GetItem(decode(v, ctx)), "thing": Thing,
        "decimal": lambda: decimal.Decimal(v), "complex": lambda: complex(*v),
        "ellipsis": lambda: ...,
        "np": lambda: np.dtype(value["dtype"]).type(decode(v, ctx)),
        "nparray": lambda: np.array(decode(v, ctx), dtype=value["dtype"]),
        "ref_path": lambda: str(ctx["ref"] / v),
        "keys": lambda: {k: None for k in v}.keys(),
        "pairs": lambda: {_key(k, ctx): decode(x, ctx) for k, x in v},
        "deep": lambda: _deep(int(v)),
    }
    if kind in simple:
        return simple[kind]()
    if kind == "out":
        return _out(value, ctx)
    raise ValueError(f"unknown case value kind {kind!r}")


def _key(key: Any, ctx: dict) -> Any:
    out = decode(key, ctx)
    return tuple(out) if isinstance(out, list) else out


def _deep(depth: int) -> dict:
    node: dict = {}
    root = node
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


def _out(value: dict, ctx: dict) -> Any:
    """An output path under the case's tmp folder, set up as the case says."""
    tmp: Path = ctx["tmp"]
    name = value.get("name", "o.urna")
    target = tmp / name
    pre = value.get("pre")
    if pre == "file":
        target.write_bytes(b"old contents")
    elif pre == "dir":
        target.mkdir()
    if value.get("relative"):
        return name
    if value.get("pathlike"):
        return target
    return str(target) + ("/" if value.get("slash") else "")


@cache
def _json(path: Path) -> Any:
    """A parsed JSON file, read once (``decode`` copies every container it is given)."""
    return json.loads(path.read_text())


def call_arguments(case: dict, ctx: dict) -> tuple[list, dict]:
    """(positional, keyword) arguments of ``case``: its base input, replacements and edits."""
    info = _json(ctx["ref"] / "expected.json")["files"][case["base"]]
    data = _json(ctx["ref"] / f"{info['corpus']}.chunks.json")
    meta = data["meta"]
    n = case.get("n_chunks")
    call: dict[str, Any] = {
        "output_path": {"$": "out"}, "embedding_model": meta["embedding_model"],
        "embedding_dim": meta["embedding_dim"], "chunker_version": meta["chunker_version"],
        "model_hash": meta["model_hash"], "chunks": data["chunks"][:n] if n else data["chunks"]}
    opts = copy.deepcopy(info["build_options"])
    if opts.get("blob_data_paths") is not None:
        opts["blob_data_paths"] = [None if p is None else {"$": "ref_path", "v": p}
                                   for p in opts["blob_data_paths"]]
    call.update(opts)
    for name, value in case.get("args", {}).items():
        if value == DELETE:
            call.pop(name, None)
        else:
            call[name] = value
    call = {k: decode(v, ctx) for k, v in call.items()}
    for path, value in case.get("edits", []):
        _edit(call, path, value, ctx)
    for name, kind in case.get("wrap", []):  # a whole base value in another container
        call[name] = {"tuple": tuple, "listsub": ListSub}[kind](call[name])
    n_pos = case.get("n_positional", len(POSITIONAL))
    positional = [call.pop(name) for name in POSITIONAL[:n_pos] if name in call]
    positional += [decode(v, ctx) for v in case.get("extra_positional", [])]
    return positional, call


def _edit(call: dict, path: list, value: Any, ctx: dict) -> None:
    node: Any = call
    for key in path[:-1]:
        node = node[key]
    key = path[-1]
    if value == DELETE:
        node.pop(key, None) if isinstance(node, dict) else node.pop(key)
    elif isinstance(node, list) and key == len(node):
        node.append(decode(value, ctx))
    else:
        node[key] = decode(value, ctx)


def builtin_class(exc: BaseException) -> str:
    """The first class of ``exc``'s MRO that Python itself defines (our errors subclass one)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(exc).__name__


def _placeholders(message: str, tmp: Path) -> str:
    """``message`` with the run's folders named as placeholders (a checkout's path varies)."""
    return message.replace(str(tmp), "<tmp>").replace(str(REF), "<ref>")


def outcome(build: Any, case: dict, tmp: Path) -> dict:
    """Run one case with ``build`` in the empty folder ``tmp``: the file's digest or the error.

    ``left`` lists what a refused build left in ``tmp`` (besides what the case put there).
    """
    ctx = {"tmp": tmp, "ref": REF}
    positional, keywords = call_arguments(case, ctx)
    before = set(os.listdir(tmp))
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        written = build(*positional, **keywords)
        target = Path(tmp, written)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - every refusal is an outcome (a panic too)
        left = sorted(set(os.listdir(tmp)) - before)
        out = {"error": builtin_class(exc), "message": _placeholders(str(exc), tmp)}
        if left:
            out["left"] = left
        return out
    finally:
        os.chdir(cwd)
    return {"sha256": hashlib.sha256(target.read_bytes()).hexdigest()}
