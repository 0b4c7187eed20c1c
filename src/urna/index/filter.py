"""The ``where`` filter language: compile once against a schema, evaluate to a row mask.

A filter is a mapping (the Python form) or the same structure as JSON text (the JSON form,
``parse_where_json``)::

    {"lang": "pt", "year": {"$gte": 2020}, "source_uri": {"$glob": "docs/**/*.md"}}

* ``field: value`` is ``field: {"$eq": value}``; several keys in one mapping are ANDed, and so
  are several operators on one field.
* ``$eq $ne $in $nin`` on every type; ``$gt $gte $lt $lte`` on int, float, timestamp and string
  (code point order); ``$glob $prefix`` on strings; ``$contains`` on string lists;
  ``$exists: bool`` on every field; ``$and: [..] $or: [..] $not: {..}`` combine filters.
* On a string_list field equality is membership: ``{"tags": "x"}`` (= ``$eq``) and
  ``$contains`` match rows whose list holds "x", ``$in`` rows holding any listed value.
* Null (a row without the key): every comparison is false, so ``$ne``/``$nin`` (the negations
  of ``$eq``/``$in``) and ``$not`` are true there; ``$exists`` tests presence.
* Timestamps accept ISO-8601 text (``"2024-05-01"``, ``"2024-05-01T12:00:00Z"``), datetimes
  or epoch seconds; int and float fields accept any number (never a bool).
* Globs: ``*`` and ``?`` stay within one ``/`` segment, ``**`` crosses segments (``a/**/b``
  also matches ``a/b``), ``[abc]`` / ``[!abc]`` are character classes.
* The built-in fields ``source_uri``, ``chunk_id`` (strings) and ``byte_start``, ``byte_end``
  (ints) exist in every file, with or without a metadata section.

An unknown field, an unknown operator or an operand of the wrong type is a typed error
(``UnknownFilterField``, ``UnknownFilterOperator``, ``FilterTypeError``) naming it. String
predicates run once per distinct value (the column dictionary), never once per row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import (
    FilterError,
    FilterTypeError,
    InvalidFilterJson,
    UnknownFilterField,
    UnknownFilterOperator,
)
from ..format.sections.metadata import (
    BUILTIN_FIELD_TYPES,
    TYPE_BOOL,
    TYPE_FLOAT,
    TYPE_INT,
    TYPE_STRING,
    TYPE_STRING_LIST,
    TYPE_TIMESTAMP,
    MetadataColumn,
    MetadataTable,
    parse_timestamp,
)

MAX_DEPTH = 64
COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
FIELD_OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", *COMPARISONS, "$glob", "$prefix",
                             "$contains", "$exists"})
LOGICAL_OPERATORS = frozenset({"$and", "$or", "$not"})
_ORDERED_TYPES = frozenset({TYPE_INT, TYPE_FLOAT, TYPE_TIMESTAMP, TYPE_STRING})
_NUMPY_COMPARE: Mapping[str, Callable[[Any, Any], Any]] = {
    "$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}
_PY_COMPARE: Mapping[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
Mask = np.ndarray
Node = Callable[["RowFields"], Mask]


@dataclass(eq=False)
class RowFields:
    """Column access for one file's rows: the built-in fields plus its metadata table."""

    source_uris: Sequence[str]
    chunk_ids: Sequence[str]
    byte_starts: Sequence[int] | np.ndarray
    byte_ends: Sequence[int] | np.ndarray
    metadata: MetadataTable | None = None
    _builtins: dict[str, MetadataColumn] = field(default_factory=dict, repr=False)

    @property
    def n_rows(self) -> int:
        """Number of rows (chunks)."""
        return len(self.chunk_ids)

    @property
    def schema(self) -> dict[str, str]:
        """``{field: type}`` of every filterable field, built-ins first."""
        out = dict(BUILTIN_FIELD_TYPES)
        if self.metadata is not None:
            out.update(self.metadata.schema)
        return out

    def column(self, name: str) -> MetadataColumn:
        """The column of field ``name`` (built-in columns are built once, then cached)."""
        if name in BUILTIN_FIELD_TYPES:
            if name not in self._builtins:
                self._builtins[name] = self._builtin_column(name)
            return self._builtins[name]
        if self.metadata is None or name not in self.metadata.columns:
            raise UnknownFilterField(name)
        return self.metadata.column(name)

    def _builtin_column(self, name: str) -> MetadataColumn:
        n = self.n_rows
        valid = np.ones(n, dtype=bool)
        if BUILTIN_FIELD_TYPES[name] == TYPE_INT:
            raw = self.byte_starts if name == "byte_start" else self.byte_ends
            return MetadataColumn(name, TYPE_INT, valid, np.asarray(raw, dtype=np.int64))
        strings = self.source_uris if name == "source_uri" else self.chunk_ids
        if len(strings) != n:
            raise FilterError(f"filter: {len(strings)} source uris for {n} rows")
        uniques, codes = np.unique(np.asarray(list(strings), dtype=object), return_inverse=True)
        return MetadataColumn(name, TYPE_STRING, valid, codes.astype(np.uint32),
                              tuple(str(s) for s in uniques))


@dataclass(frozen=True)
class Filter:
    """A compiled filter: ``mask(fields)`` gives one bool per row."""

    where: Mapping[str, Any]
    field_types: Mapping[str, str]
    _root: Node = field(repr=False)

    def mask(self, fields: RowFields) -> np.ndarray:
        """Boolean mask of length ``fields.n_rows``: True where the row passes."""
        schema = fields.schema
        for name, type_ in self.field_types.items():
            if name not in schema:
                raise UnknownFilterField(name)
            if schema[name] != type_:
                raise FilterTypeError(name, "$schema", f"compiled for {type_}, rows have "
                                      f"{schema[name]}")
        return np.asarray(self._root(fields), dtype=bool)


def selectivity(mask: np.ndarray) -> float:
    """Fraction of rows a mask keeps (0.0 for no rows)."""
    return float(mask.mean()) if mask.size else 0.0


def parse_where_json(text: str) -> dict[str, Any]:
    """The JSON form of a filter (e.g. the CLI's ``--where``) as a mapping."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidFilterJson(str(exc) or type(exc).__name__) from None
    if not isinstance(value, dict):
        raise InvalidFilterJson(f"expected an object, got {type(value).__name__}")
    return value


def compile_filter(where: Mapping[str, Any] | None,
                   schema: Mapping[str, str]) -> Filter | None:
    """Check ``where`` against the metadata ``schema`` once; None when there is nothing to do.

    ``schema`` is ``{name: type}`` of the metadata columns (``MetadataTable.schema``, or ``{}``
    for a file without metadata); the built-in fields are always available.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise FilterError(f"filter: expected a mapping, got {type(where).__name__}")
    if not where:
        return None
    full = dict(BUILTIN_FIELD_TYPES)
    full.update(schema)
    used: dict[str, str] = {}
    root = _Compiler(full, used).filter(where, 0)
    return Filter(where, used, root)


# --- compiler -------------------------------------------------------------------------------


def _all(nodes: list[Node]) -> Node:
    if len(nodes) == 1:
        return nodes[0]

    def run(f: RowFields) -> Mask:
        out = nodes[0](f).copy()
        for node in nodes[1:]:
            out &= node(f)
        return out
    return run


def _any(nodes: list[Node]) -> Node:
    def run(f: RowFields) -> Mask:
        out = nodes[0](f).copy()
        for node in nodes[1:]:
            out |= node(f)
        return out
    return run


def _negate(node: Node) -> Node:
    return lambda f: ~node(f)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled regex of a glob (``*``, ``**``, ``?``, ``[..]``), for ``fullmatch``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (j := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1:j]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            chars = "".join("\\" + ch if ch in "\\^[]" else ch for ch in body)
            out.append("[" + ("^" if negate else "") + chars + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


class _Compiler:
    """Turns a ``where`` mapping into a tree of mask closures, checking types on the way."""

    def __init__(self, schema: Mapping[str, str], used: dict[str, str]) -> None:
        self.schema = schema
        self.used = used

    def filter(self, where: Any, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise FilterError(f"filter: nested deeper than {MAX_DEPTH} levels")
        if not isinstance(where, Mapping) or not where:
            raise FilterError(f"filter: expected a non-empty mapping, got {where!r}")
        nodes = []
        for key, value in where.items():
            if not isinstance(key, str):
                raise FilterError(f"filter: keys must be strings, got {key!r}")
            if key in ("$and", "$or"):
                if not isinstance(value, list | tuple) or not value:
                    raise FilterError(f"filter: {key} takes a non-empty list of filters")
                children = [self.filter(child, depth + 1) for child in value]
                nodes.append(_all(children) if key == "$and" else _any(children))
            elif key == "$not":
                nodes.append(_negate(self.filter(value, depth + 1)))
            elif key.startswith("$"):
                raise UnknownFilterOperator(key)
            else:
                nodes.append(self.field(key, value))
        return _all(nodes)

    def field(self, name: str, spec: Any) -> Node:
        if name not in self.schema:
            raise UnknownFilterField(name)
        type_ = self.schema[name]
        self.used[name] = type_
        if isinstance(spec, Mapping):
            if not spec:
                raise FilterTypeError(name, "{}", "empty operator mapping")
            nodes = []
            for op, operand in spec.items():
                if not isinstance(op, str) or not op.startswith("$"):
                    raise FilterTypeError(name, str(op), "nested objects are not filters; "
                                          "operators start with $")
                nodes.append(self.operator(name, type_, op, operand))
            return _all(nodes)
        return self.operator(name, type_, "$eq", spec)

    def operator(self, name: str, type_: str, op: str, operand: Any) -> Node:
        if op not in FIELD_OPERATORS:
            raise UnknownFilterOperator(op, name)
        if op == "$exists":
            if not isinstance(operand, bool):
                raise FilterTypeError(name, op, f"takes true or false, got {operand!r}")
            return lambda f: f.column(name).valid.copy() if operand else ~f.column(name).valid
        if op in ("$ne", "$nin"):
            return _negate(self.operator(name, type_, "$eq" if op == "$ne" else "$in", operand))
        if op == "$in":
            if not isinstance(operand, list | tuple | set | frozenset):
                raise FilterTypeError(name, op, f"takes a list, got {operand!r}")
            values = [self.operand(name, type_, op, v) for v in operand]
            return self.membership(name, type_, values)
        if type_ == TYPE_STRING_LIST and op in ("$eq", "$contains"):
            return self.membership(name, type_, [self.operand(name, type_, op, operand)])
        if op == "$contains":
            raise FilterTypeError(name, op, f"applies to string lists, not {type_}")
        if op in ("$glob", "$prefix"):
            if type_ != TYPE_STRING:
                raise FilterTypeError(name, op, f"applies to strings, not {type_}")
            text = self.operand(name, type_, op, operand)
            if op == "$prefix":
                return self.string_predicate(name, lambda s: s.startswith(text))
            try:
                regex = glob_regex(text)
            except re.error as exc:
                raise FilterTypeError(name, op, f"bad glob {text!r}: {exc}") from None
            return self.string_predicate(name, lambda s: regex.fullmatch(s) is not None)
        value = self.operand(name, type_, op, operand)
        if op == "$eq":
            return self.membership(name, type_, [value])
        if type_ not in _ORDERED_TYPES:
            raise FilterTypeError(name, op, f"no order on {type_}")
        if type_ == TYPE_STRING:
            compare = _PY_COMPARE[op]
            return self.string_predicate(name, lambda s: compare(s, value))
        ufunc = _NUMPY_COMPARE[op]
        if isinstance(value, int) and not _I64_MIN <= value <= _I64_MAX:
            value = float(value)  # numpy cannot hold it as int64; as a float it orders right
        return lambda f: ufunc(f.column(name).values, value) & f.column(name).valid

    def operand(self, name: str, type_: str, op: str, value: Any) -> Any:
        """Check one operand against the field type; give it in the column's value space."""
        if type_ in (TYPE_STRING, TYPE_STRING_LIST):
            if not isinstance(value, str):
                raise FilterTypeError(name, op, f"expects a string, got {value!r}")
            return value
        if type_ == TYPE_BOOL:
            if not isinstance(value, bool):
                raise FilterTypeError(name, op, f"expects true or false, got {value!r}")
            return value
        if type_ == TYPE_TIMESTAMP:
            if isinstance(value, str | int | float | datetime):
                us = parse_timestamp(value)
                if us is not None:
                    return us
            raise FilterTypeError(name, op, f"expects an ISO-8601 time or epoch seconds, "
                                  f"got {value!r}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise FilterTypeError(name, op, f"expects a number, got {value!r}")
        return value

    def membership(self, name: str, type_: str, values: list[Any]) -> Node:
        if type_ in (TYPE_STRING, TYPE_STRING_LIST):
            wanted = set(values)
            return self.string_predicate(name, wanted.__contains__)
        if type_ == TYPE_FLOAT and values:
            wanted_floats = np.asarray(values, dtype=np.float64)
            return lambda f: np.isin(f.column(name).values, wanted_floats) & f.column(name).valid
        if type_ in (TYPE_INT, TYPE_TIMESTAMP):
            # Only whole numbers inside int64 can equal an int64 cell; the rest match nothing.
            whole = [int(v) for v in values if isinstance(v, int) or float(v).is_integer()]
            kept = np.asarray([v for v in whole if _I64_MIN <= v <= _I64_MAX], dtype=np.int64)
            if kept.size:
                return lambda f: np.isin(f.column(name).values, kept) & f.column(name).valid
        if type_ == TYPE_BOOL and values:
            wanted_bools = np.asarray(values, dtype=bool)
            return lambda f: np.isin(f.column(name).values, wanted_bools) & f.column(name).valid
        return lambda f: np.zeros(f.n_rows, dtype=bool)

    def string_predicate(self, name: str, test: Callable[[str], bool]) -> Node:
        """Run ``test`` once per dictionary entry, then spread it over the rows."""
        def run(f: RowFields) -> Mask:
            col = f.column(name)
            if not col.dictionary:
                return np.zeros(f.n_rows, dtype=bool)
            hit = np.fromiter((test(s) for s in col.dictionary), dtype=bool,
                              count=len(col.dictionary))
            if col.type == TYPE_STRING:
                return hit[col.values] & col.valid
            assert col.offsets is not None
            counts = np.concatenate(([0], np.cumsum(hit[col.values], dtype=np.int64)))
            return (counts[col.offsets[1:]] - counts[col.offsets[:-1]] > 0) & col.valid
        return run
