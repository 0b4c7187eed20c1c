"""The where filter language: every operator on a hand-built table, the typed errors, the JSON
form, and a property: the compiled mask equals a plain row-by-row evaluation."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from urna.errors import (
    FilterError,
    FilterTypeError,
    InvalidFilterJson,
    UnknownFilterField,
    UnknownFilterOperator,
    UrnaError,
)
from urna.format.sections.metadata import decode_metadata, encode_metadata
from urna.index.filter import RowFields, compile_filter, parse_where_json, selectivity

ROWS = [
    {"lang": "pt", "year": 2020, "score": 0.5, "draft": True, "tags": ["a", "b"],
     "when": datetime(2024, 1, 1, tzinfo=UTC)},
    {"lang": "en", "year": 2019, "score": 1.5, "draft": False, "tags": [],
     "when": datetime(2023, 6, 1, 12, tzinfo=UTC)},
    None,
    {"lang": "pt", "year": 2022, "tags": ["b"]},
    {"lang": "de", "year": None, "score": -1.0, "draft": True, "tags": ["c", "a"],
     "when": datetime(1970, 1, 1, tzinfo=UTC)},
    {"lang": "pt-BR", "year": 2021, "draft": False},
]
URIS = ["docs/a.md", "docs/guide/b.md", "src/c.py", "docs/guide/deep/d.md", "README.md",
        "docs/e.txt"]
TABLE = decode_metadata(encode_metadata(ROWS, 6), 6)
FIELDS = RowFields(URIS, [f"c{i}" for i in range(6)], [10 * i for i in range(6)],
                   [10 * i + 5 for i in range(6)], TABLE)
ALL = list(range(6))


def rows_of(where, fields=FIELDS, schema=None) -> list[int]:
    f = compile_filter(where, TABLE.schema if schema is None else schema)
    assert f is not None
    mask = f.mask(fields)
    assert mask.dtype == np.bool_ and mask.shape == (fields.n_rows,)
    return np.flatnonzero(mask).tolist()


@pytest.mark.parametrize(("where", "expected"), [
    ({"lang": "pt"}, [0, 3]),
    ({"lang": {"$eq": "pt"}}, [0, 3]),
    ({"lang": {"$ne": "pt"}}, [1, 2, 4, 5]),
    ({"lang": {"$in": ["en", "de"]}}, [1, 4]),
    ({"lang": {"$nin": ["en", "de"]}}, [0, 2, 3, 5]),
    ({"lang": {"$in": []}}, []),
    ({"lang": {"$nin": []}}, ALL),
    ({"lang": {"$prefix": "pt"}}, [0, 3, 5]),
    ({"lang": {"$glob": "p?"}}, [0, 3]),
    ({"lang": {"$gt": "en"}}, [0, 3, 5]),
    ({"lang": {"$lte": "en"}}, [1, 4]),
    ({"year": {"$gte": 2020}}, [0, 3, 5]),
    ({"year": {"$gt": 2020, "$lt": 2022}}, [5]),
    ({"year": {"$lte": 2019.5}}, [1]),
    ({"year": 2021}, [5]),
    ({"year": 2021.0}, [5]),
    ({"year": {"$in": [2019, 2022.0, 2020.5, 2**70]}}, [1, 3]),
    ({"year": {"$gt": 2**70}}, []),
    ({"year": {"$gt": -(2**70)}}, [0, 1, 3, 5]),
    ({"year": {"$exists": False}}, [2, 4]),
    ({"score": {"$lt": 0}}, [4]),
    ({"score": 0.5}, [0]),
    ({"score": {"$in": [1.5, 7]}}, [1]),
    ({"score": {"$gte": -math.inf}}, [0, 1, 4]),
    ({"draft": True}, [0, 4]),
    ({"draft": {"$ne": True}}, [1, 2, 3, 5]),
    ({"draft": {"$in": [False]}}, [1, 5]),
    ({"tags": "a"}, [0, 4]),
    ({"tags": {"$ne": "a"}}, [1, 2, 3, 5]),
    ({"tags": {"$contains": "b"}}, [0, 3]),
    ({"tags": {"$in": ["c", "b"]}}, [0, 3, 4]),
    ({"tags": {"$nin": ["a"]}}, [1, 2, 3, 5]),
    ({"tags": {"$exists": True}}, [0, 1, 3, 4]),
    ({"when": {"$gte": "2024-01-01"}}, [0]),
    ({"when": {"$lt": "2024-01-01T00:00:00Z", "$gt": 0}}, [1]),
    ({"when": {"$gte": 0}}, [0, 1, 4]),
    ({"when": "1970-01-01T00:00:00+00:00"}, [4]),
    ({"when": {"$lt": 1_700_000_000}}, [1, 4]),
    ({"when": {"$in": [datetime(2023, 6, 1, 14, tzinfo=UTC) - timedelta(hours=2)]}}, [1]),
    ({"source_uri": {"$glob": "docs/**/*.md"}}, [0, 1, 3]),
    ({"source_uri": {"$glob": "docs/*.md"}}, [0]),
    ({"source_uri": {"$glob": "*.md"}}, [4]),
    ({"source_uri": {"$glob": "**"}}, ALL),
    ({"source_uri": {"$glob": "docs/[!e]*"}}, [0]),
    ({"source_uri": {"$glob": "docs/[ae].*"}}, [0, 5]),
    ({"source_uri": {"$prefix": "docs/guide/"}}, [1, 3]),
    ({"chunk_id": "c3"}, [3]),
    ({"byte_start": {"$gte": 20}, "byte_end": {"$lte": 45}}, [2, 3, 4]),
    ({"$or": [{"lang": "en"}, {"draft": True}]}, [0, 1, 4]),
    ({"$and": [{"lang": "pt"}, {"year": {"$gt": 2020}}]}, [3]),
    ({"$not": {"lang": "pt"}}, [1, 2, 4, 5]),
    ({"$not": {"year": {"$gt": 2020}}}, [0, 1, 2, 4]),
    ({"lang": "pt", "source_uri": {"$glob": "docs/**"}}, [0, 3]),
])
def test_operators(where, expected) -> None:
    assert rows_of(where) == expected


def test_the_json_form_is_the_python_form() -> None:
    text = '{"lang": "pt", "year": {"$gte": 2020}, "source_uri": {"$glob": "docs/**/*.md"}}'
    where = parse_where_json(text)
    assert where == json.loads(text)
    assert rows_of(where) == [0, 3]


def test_builtins_work_without_a_metadata_section() -> None:
    bare = RowFields(URIS, [f"c{i}" for i in range(6)], np.arange(6) * 10, np.arange(6) * 10 + 5)
    assert rows_of({"source_uri": {"$glob": "docs/**"}, "byte_start": {"$lt": 30}}, bare,
                   {}) == [0, 1]
    with pytest.raises(UnknownFilterField, match="'lang'"):
        compile_filter({"lang": "pt"}, {})


def test_nothing_to_filter() -> None:
    assert compile_filter(None, TABLE.schema) is None
    assert compile_filter({}, TABLE.schema) is None


def test_selectivity() -> None:
    f = compile_filter({"lang": "pt"}, TABLE.schema)
    assert f is not None
    assert selectivity(f.mask(FIELDS)) == pytest.approx(2 / 6)
    assert selectivity(np.zeros(0, dtype=bool)) == 0.0


@pytest.mark.parametrize(("where", "field"), [
    ({"nope": 1}, "nope"),
    ({"$or": [{"lang": "pt"}, {"$not": {"Lang": "pt"}}]}, "Lang"),
])
def test_unknown_field_is_named(where, field) -> None:
    with pytest.raises(UnknownFilterField) as info:
        compile_filter(where, TABLE.schema)
    assert info.value.field == field and repr(field) in str(info.value)


@pytest.mark.parametrize(("where", "operator", "field"), [
    ({"lang": {"$regex": "x"}}, "$regex", "lang"),
    ({"$xor": [{"lang": "pt"}]}, "$xor", None),
    ({"$and": [{"year": {"$between": [1, 2]}}]}, "$between", "year"),
])
def test_unknown_operator_is_named(where, operator, field) -> None:
    with pytest.raises(UnknownFilterOperator) as info:
        compile_filter(where, TABLE.schema)
    assert (info.value.operator, info.value.field) == (operator, field)
    assert repr(operator) in str(info.value)


@pytest.mark.parametrize(("where", "field", "operator"), [
    ({"year": "2020"}, "year", "$eq"),
    ({"year": True}, "year", "$eq"),
    ({"year": {"$gt": None}}, "year", "$gt"),
    ({"lang": 1}, "lang", "$eq"),
    ({"lang": {"$in": "pt"}}, "lang", "$in"),
    ({"lang": {"$in": ["pt", 3]}}, "lang", "$in"),
    ({"lang": {"$contains": "p"}}, "lang", "$contains"),
    ({"lang": {"$exists": 1}}, "lang", "$exists"),
    ({"lang": {"nested": 1}}, "lang", "nested"),
    ({"lang": {}}, "lang", "{}"),
    ({"draft": 1}, "draft", "$eq"),
    ({"draft": {"$gt": True}}, "draft", "$gt"),
    ({"tags": {"$gt": "a"}}, "tags", "$gt"),
    ({"tags": ["a"]}, "tags", "$eq"),
    ({"year": {"$glob": "2*"}}, "year", "$glob"),
    ({"year": {"$prefix": "2"}}, "year", "$prefix"),
    ({"score": math.nan}, "score", "$eq"),
    ({"when": "yesterday"}, "when", "$eq"),
    ({"when": {"$gt": True}}, "when", "$gt"),
    ({"byte_start": "0"}, "byte_start", "$eq"),
    ({"source_uri": {"$glob": "[z-a]"}}, "source_uri", "$glob"),
])
def test_wrong_types_name_the_field_and_operator(where, field, operator) -> None:
    with pytest.raises(FilterTypeError) as info:
        compile_filter(where, TABLE.schema)
    assert (info.value.field, info.value.operator) == (field, operator)
    assert repr(field) in str(info.value)


@pytest.mark.parametrize("where", [
    {"$and": []}, {"$or": {"lang": "pt"}}, {"$not": []}, {"$not": {}}, {1: "x"},
    {"$and": ["lang"]},
])
def test_malformed_structure_is_a_filter_error(where) -> None:
    with pytest.raises(FilterError):
        compile_filter(where, TABLE.schema)


def test_a_non_mapping_filter_is_a_filter_error() -> None:
    with pytest.raises(FilterError, match="expected a mapping"):
        compile_filter(["lang"], TABLE.schema)  # type: ignore[arg-type]


def test_deep_nesting_is_refused_not_a_crash() -> None:
    where: dict = {"lang": "pt"}
    for _ in range(10_000):
        where = {"$not": where}
    with pytest.raises(FilterError, match="nested deeper"):
        compile_filter(where, TABLE.schema)


@pytest.mark.parametrize("text", ["{", "[1]", '"pt"', "", "{" * 100_000, "null",
                                  '{"a": NaN'])
def test_bad_json_is_a_typed_error(text) -> None:
    with pytest.raises(InvalidFilterJson):
        parse_where_json(text)


def test_a_filter_checks_the_rows_it_is_applied_to() -> None:
    f = compile_filter({"lang": "pt"}, TABLE.schema)
    assert f is not None
    bare = RowFields(URIS, [f"c{i}" for i in range(6)], [0] * 6, [0] * 6)
    with pytest.raises(UnknownFilterField):
        f.mask(bare)
    other = decode_metadata(encode_metadata([{"lang": 1}] * 6, 6), 6)
    with pytest.raises(FilterTypeError, match="compiled for string"):
        f.mask(RowFields(URIS, [f"c{i}" for i in range(6)], [0] * 6, [0] * 6, other))


def test_errors_are_urna_errors() -> None:
    for cls in (FilterError, FilterTypeError, InvalidFilterJson, UnknownFilterField,
                UnknownFilterOperator):
        assert issubclass(cls, UrnaError) and issubclass(cls, ValueError)


# --- property: compiled mask == plain evaluation row by row ---------------------------------

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
WORDS = ["", "a", "ab", "b", "docs", "é"]
PATHS = ["a.md", "docs/a.md", "docs/x/b.md", "docs/x/y/c.txt", "src/a.py", "docs/.md"]
TIMES = [EPOCH, datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, 0, 0, 1, tzinfo=UTC),
         datetime(1969, 7, 20, 20, 17, tzinfo=UTC)]
SCHEMA = {"s": "string", "i": "int", "f": "float", "b": "bool", "t": "timestamp",
          "l": "string_list"}
_VALUE = {
    "s": st.sampled_from(WORDS), "i": st.integers(-3, 3),
    "f": st.sampled_from([-1.5, -0.0, 0.0, 0.5, 2.0, math.inf]), "b": st.booleans(),
    "t": st.sampled_from(TIMES), "l": st.lists(st.sampled_from(WORDS), max_size=3),
}
_OPERAND = {
    "s": st.sampled_from(WORDS), "i": st.one_of(st.integers(-4, 4), st.sampled_from([0.5, 2.0])),
    "f": st.one_of(st.sampled_from([-1.5, 0.0, 0.5, 2.0, math.inf]), st.integers(-2, 2)),
    "b": st.booleans(), "l": st.sampled_from(WORDS),
    "t": st.sampled_from(TIMES).flatmap(lambda d: st.sampled_from([
        d, d.isoformat(), (d - EPOCH).total_seconds(), int((d - EPOCH).total_seconds())])),
    "source_uri": st.sampled_from(PATHS), "chunk_id": st.sampled_from(["c0", "c1", "c9"]),
    "byte_start": st.integers(-1, 8), "byte_end": st.integers(-1, 8),
}
_KIND = {**{k: k for k in SCHEMA}, "source_uri": "s", "chunk_id": "s", "byte_start": "i",
         "byte_end": "i"}
_OPS = {
    "s": ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$prefix", "$exists"],
    "i": ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"],
    "f": ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"],
    "t": ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"],
    "b": ["$eq", "$ne", "$in", "$nin", "$exists"],
    "l": ["$eq", "$ne", "$in", "$nin", "$contains", "$exists"],
}
GLOBS = ["*", "**", "docs/*", "docs/**", "docs/**/*.md", "**/*.md", "?.md", "docs/?/*",
         "*/*.md", "docs/**/c.txt", "a.md"]


@st.composite
def leaves(draw):
    if draw(st.integers(0, 4)) == 0:  # globs have the most corner cases: draw them often
        return {"source_uri": {"$glob": draw(st.sampled_from(GLOBS))}}
    name = draw(st.sampled_from(sorted(_KIND)))
    kind = _KIND[name]
    op = draw(st.sampled_from(_OPS[kind]))
    if op == "$exists":
        return {name: {op: draw(st.booleans())}}
    if op in ("$in", "$nin"):
        return {name: {op: draw(st.lists(_OPERAND[name if name in _OPERAND else kind],
                                         max_size=3))}}
    operand = draw(_OPERAND[name if name in _OPERAND else kind])
    return {name: operand} if op == "$eq" and draw(st.booleans()) else {name: {op: operand}}


def expressions():
    return st.recursive(leaves(), lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
    ), max_leaves=6)


@st.composite
def row_sets(draw):
    n = draw(st.integers(0, 8))
    rows = [None if draw(st.integers(0, 5)) == 0 else
            {k: v for k in SCHEMA if (v := draw(st.one_of(st.none(), _VALUE[k]))) is not None}
            for _ in range(n)]
    uris = [draw(st.sampled_from(PATHS)) for _ in range(n)]
    starts = [draw(st.integers(0, 6)) for _ in range(n)]
    return rows, uris, starts


def glob_match(pattern: str, s: str) -> bool:
    """Plain recursive glob: * and ? stay in a segment, ** crosses, **/ may match nothing."""
    if not pattern:
        return not s
    if pattern.startswith("**/"):
        rest = pattern[3:]
        return glob_match(rest, s) or any(
            s[k] == "/" and glob_match(rest, s[k + 1:]) for k in range(len(s)))
    if pattern.startswith("**"):
        return any(glob_match(pattern[2:], s[k:]) for k in range(len(s) + 1))
    if pattern[0] == "*":
        return any(glob_match(pattern[1:], s[k:]) for k in range(len(s) + 1) if "/" not in s[:k])
    if pattern[0] == "?":
        return bool(s) and s[0] != "/" and glob_match(pattern[1:], s[1:])
    return bool(s) and s[0] == pattern[0] and glob_match(pattern[1:], s[1:])


def as_time(v):
    if isinstance(v, datetime):
        return v
    if isinstance(v, str):
        return datetime.fromisoformat(v)
    return EPOCH + timedelta(seconds=v)


def oracle(expr: dict, row: dict) -> bool:
    """The filter semantics, one row at a time, in plain Python."""
    for key, spec in expr.items():
        if key == "$and":
            ok = all(oracle(e, row) for e in spec)
        elif key == "$or":
            ok = any(oracle(e, row) for e in spec)
        elif key == "$not":
            ok = not oracle(spec, row)
        else:
            ops = spec if isinstance(spec, dict) else {"$eq": spec}
            ok = all(field_test(key, op, operand, row.get(key)) for op, operand in ops.items())
        if not ok:
            return False
    return True


def field_test(name: str, op: str, operand, value) -> bool:
    if op == "$exists":
        return (value is not None) == operand
    if op == "$ne":
        return not field_test(name, "$eq", operand, value)
    if op == "$nin":
        return not field_test(name, "$in", operand, value)
    if value is None:
        return False
    is_time = _KIND[name] == "t"
    if op == "$in":
        return any(field_test(name, "$eq", x, value) for x in operand)
    if _KIND[name] == "l":
        return operand in value  # $eq and $contains on a list: membership
    if is_time:
        operand = as_time(operand)
    if op == "$eq":
        return value == operand
    if op == "$glob":
        return glob_match(operand, value)
    if op == "$prefix":
        return value.startswith(operand)
    return {"$gt": value > operand, "$gte": value >= operand, "$lt": value < operand,
            "$lte": value <= operand}[op]


@settings(max_examples=examples(400, 100), deadline=None)
@given(row_sets(), expressions())
def test_mask_equals_the_row_by_row_oracle(data, expr) -> None:
    rows, uris, starts = data
    n = len(rows)
    table = decode_metadata(encode_metadata(rows, n, types=SCHEMA), n)
    ids = [f"c{i}" for i in range(n)]
    fields = RowFields(uris, ids, starts, [s + 2 for s in starts], table)
    compiled = compile_filter(expr, table.schema)
    assert compiled is not None
    got = compiled.mask(fields).tolist()
    builtins = [{"source_uri": uris[i], "chunk_id": ids[i], "byte_start": starts[i],
                 "byte_end": starts[i] + 2} for i in range(n)]
    want = [oracle(expr, {**(rows[i] or {}), **builtins[i]}) for i in range(n)]
    assert got == want
