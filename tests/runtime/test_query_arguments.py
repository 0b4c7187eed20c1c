"""Every query method answers good and bad arguments as the reference wheel does.

Paths: each call of tests/data/query-arguments-0.5.1.json (recorded from urna 0.5.1 by
tools/record_query_arguments.py: every method of the wheel's opened file that takes arguments,
on six files of ref-0.5.1, with None, bools, ints at the 32- and 64-bit limits, floats, NaN,
str, bytes, wrong lists, numpy arrays of every shape and dtype, tuples, dicts, keyword and
positional forms, missing and extra arguments) ends on our urna.open as it ended there: the
same builtin exception class and message, or the same hits (scores within 2e-6). The calls our
README documents as extensions (its keyword arguments, ``validate(full=)``, paths as
``os.PathLike``) answer as the wheel answers the call without them; ``retrieve``'s seventh
positional argument (our ``query_text``) is refused by both. The methods the wheel lacks (cite,
search_bm25, search_batch, search_routed, metadata, and our text arguments of the wheel's
methods) refuse a bad argument with the wheel's text for that kind of argument.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

import urna
from helpers.query_arguments import (
    BASE,
    FILES,
    METHODS,
    OUT,
    REF,
    WORDS,
    builtin_class,
    context,
    run,
    same,
    value,
)


@cache
def _record() -> dict:
    return json.loads(OUT.read_text())


# Our keyword arguments beyond the wheel's, per method (README "Python API").
OUR_KEYWORDS = {"search": {"where", "threads"}, "search_ann": {"where"},
                "search_hybrid": {"where", "rank"},
                "search_graph": {"where", "rank", "query_text"}, "search_space": {"where"},
                "retrieve": {"where", "rank", "query_text"}, "validate": {"full"}}


def _key(call: dict) -> str:
    return json.dumps([call["file"], call["method"], call["args"], call["kwargs"]])


@cache
def _recorded() -> dict[str, dict]:
    return {_key(c): c["outcome"] for c in _record()["calls"]}


def _extension(call: dict) -> str | None:
    """Why a recorded call uses our surface beyond the wheel's (None: it does not)."""
    method, args, kwargs = call["method"], call["args"], call["kwargs"]
    extra = set(kwargs) - {p for p, _ in METHODS[method]}
    if extra and extra <= OUR_KEYWORDS.get(method, set()):
        return f"{method}: our keyword argument(s) {sorted(extra)}"
    if method == "retrieve" and len(args) >= 7:
        return "retrieve: our seventh positional argument, query_text"
    if method == "open" and "path:pathlib" in [*args, *kwargs.values()]:
        return "open: an os.PathLike path"
    return None


def _without_extension(call: dict) -> dict | None:
    """The reference's outcome of the same call without our extension (None: no such call)."""
    method = call["method"]
    if method == "open":
        def mend(values: list[str]) -> list[str]:
            return ["path:self" if v == "path:pathlib" else v for v in values]

        kwargs = dict(zip(call["kwargs"], mend(list(call["kwargs"].values())), strict=True))
        return _recorded()[_key({**call, "args": mend(call["args"]), "kwargs": kwargs})]
    if method == "retrieve" and len(call["args"]) >= 7:
        return None
    ref_params = {p for p, _ in METHODS[method]}
    kwargs = {k: v for k, v in call["kwargs"].items() if k in ref_params}
    return _recorded()[_key({**call, "kwargs": kwargs})]


def _ours(file: str) -> tuple[urna.UrnaFile, dict[str, int]]:
    f = urna.open(REF / f"{file}.urna")
    return f, {c: i for i, c in enumerate(f.chunk_ids())}


def test_the_grid_covers_the_wheels_surface() -> None:
    """Every method of the wheel's file that takes arguments was called, and ours has it."""
    surface = _record()["surface"]
    assert set(surface) == set(METHODS)
    assert all(callable(getattr(urna.UrnaFile, name)) for name in surface)
    assert len(_record()["calls"]) > 10_000


@pytest.mark.parametrize("file", FILES)
def test_calls_end_as_the_references(file: str) -> None:
    """Same builtin class and message, or the same hits, for every recorded call on ``file``."""
    f, ids = _ours(file)
    path = str(REF / f"{file}.urna")
    differ = []
    with f:
        for call in _record()["calls"]:
            if call["file"] != file or _extension(call):
                continue
            got = run(f, path, call, ids)
            if not same(got, call["outcome"]):
                differ.append((call["method"], call["args"], call["kwargs"], got,
                               call["outcome"]))
    assert not differ, f"{len(differ)} calls differ, first: {differ[:3]}"


@pytest.mark.parametrize("file", FILES)
def test_extensions_change_nothing_else(file: str) -> None:
    """A call the wheel refuses only for our extension answers as the wheel answers it without
    the extension (its neutral value: where=None, rank="cosine", full=False, ...)."""
    f, ids = _ours(file)
    path = str(REF / f"{file}.urna")
    differ = []
    with f:
        for call in _record()["calls"]:
            if call["file"] != file or not _extension(call):
                continue
            assert call["outcome"].get("error") == "TypeError", call
            got = run(f, path, call, ids)
            want = _without_extension(call)
            # want None: retrieve with 7+ positionals, which both refuse (ours over query_text)
            ok = got.get("error") == "TypeError" if want is None else same(got, want)
            if not ok:
                differ.append((_extension(call), call["args"], call["kwargs"], got, want))
    assert not differ, f"{len(differ)} calls differ, first: {differ[:3]}"


def _conversion_errors(file: str, method: str, position: int) -> dict[str, dict]:
    """The reference's conversion errors (TypeError, OverflowError, UnicodeEncodeError) of one
    argument of one method, by value name (the single-argument calls of the grid)."""
    base = [BASE[p] for p, _ in METHODS[method]]
    out = {}
    for call in _record()["calls"]:
        args = call["args"]
        if (call["file"] == file and call["method"] == method and not call["kwargs"]
                and len(args) == len(base)
                and all(a == b for i, (a, b) in enumerate(zip(args, base, strict=True))
                        if i != position)
                and call["outcome"].get("error") in CONVERSION_ERRORS):
            out[args[position]] = call["outcome"]
    return out


CONVERSION_ERRORS = {"TypeError", "OverflowError", "UnicodeEncodeError"}
# Our methods beyond the wheel's, each argument with the wheel's argument of the same kind:
# our call of a value, the wheel's method and that argument's position there; whether None is
# the argument's default (then it is not refused).
BEYOND = {
    "cite": (lambda f, v: f.cite(v), "search_hybrid", 1, False),
    "search_bm25 text": (lambda f, v: f.search_bm25(v, 3), "search_hybrid", 1, False),
    "search_bm25 k": (lambda f, v: f.search_bm25(WORDS, v), "search", 1, False),
    "search_batch k": (lambda f, v: f.search_batch([[1.0] * f.embedding_dim], v), "search", 1,
                       False),
    "search_routed hops": (lambda f, v: f.search_routed([1.0] * f.embedding_dim, 3, None, v),
                           "search_graph", 2, False),
    "search_routed text": (lambda f, v: f.search_routed([1.0] * f.embedding_dim, 3,
                                                        query_text=v), "search_hybrid", 1, True),
    "retrieve query_text": (lambda f, v: f.retrieve([1.0] * f.embedding_dim, 3, query_text=v),
                            "search_hybrid", 1, True),
    "search_graph query_text": (lambda f, v: f.search_graph([1.0] * f.embedding_dim, 3,
                                                            query_text=v), "search_hybrid", 1,
                                True),
    "metadata": (lambda f, v: f.metadata(v), "blob_bytes", 0, False),
}


@pytest.mark.parametrize("name", BEYOND)
def test_our_methods_convert_as_the_wheel(name: str) -> None:
    """An argument of a method the wheel lacks is refused with the text the wheel gives the
    same kind of argument (the bad values of the grid: None, floats, bytes, 2**64, ...)."""
    ours, method, position, optional = BEYOND[name]
    file = "synthetic-hybrid"
    want = _conversion_errors(file, method, position)
    if optional:
        del want["none"]
    assert len(want) >= 7, want
    f, _ = _ours(file)
    c = context(f, str(REF / f"{file}.urna"), method)
    differ = []
    with f:
        for value_name, outcome in want.items():
            try:
                ours(f, value(value_name, c))
                got: dict = {"ok": True}
            except Exception as exc:
                got = {"error": builtin_class(exc), "message": str(exc)}
            if got != outcome:
                differ.append((value_name, got, outcome))
    assert not differ, differ
