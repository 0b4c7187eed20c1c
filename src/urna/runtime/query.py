"""Query arguments as the reference binding converts them, and the query vector's checks.

Conversions (the wheel's PyO3 binding, urna 0.5.1; tests/runtime/test_query_arguments.py pins
them against 10,713 recorded calls), from ``urna.argument_conversion``: counts go through
``__index__`` — ``k`` to a signed 32-bit int (``as_i32``), ef / hops / candidates / indexes to
an unsigned 64-bit one (``as_u64``); text to a ``str`` that encodes as UTF-8 (``as_str``); a
call whose arguments do not bind raises the binding's own TypeError (``method_binding``). Here:
the query vector to ``Vec<f32>`` (``as_f32``): any sequence but a ``str`` whose items are real
numbers, converted to f64 then f32; a bad one is ``invalid query vector: <Class>: <text>``.
The binding converts every argument but the query vector before the call runs, so the methods
convert in that order.

Checks, 03-runtime §3, in the reference's order: ``k <= 0`` -> InvalidK, empty -> EmptyQuery,
wrong length -> DimensionMismatch, NaN/Inf -> InvalidQueryValue, f32 norm == 0 ->
ZeroNormQuery, then ``q / norm`` in f32. The norm is accumulated sequentially in f32 (as the
reference does), so tiny queries underflow to zero-norm and huge ones normalise to zeros, like
the reference.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..argument_conversion import as_f64, as_i32, as_sequence, as_str, describe
from ..errors import (
    DimensionMismatch,
    EmptyQuery,
    InvalidK,
    InvalidQueryValue,
    UrnaError,
    ZeroNormQuery,
)

F32 = np.float32
# What a query vector may be given as, and a batch of them.
Vector = Sequence[float] | np.ndarray
Vectors = Sequence[Sequence[float]] | np.ndarray


def check_k(k: int) -> int:
    """Validate ``k`` as the reference's signed 32-bit k: an int, > 0."""
    k = as_i32(k)
    if k <= 0:
        raise InvalidK(k)
    return k


def as_optional_str(value: str | None) -> str | None:
    """An optional text argument: None, or :func:`as_str`."""
    return None if value is None else as_str(value)


def as_path(path: str | os.PathLike) -> str:
    """The path of ``urna.open``: a ``str`` as the binding takes it; ours also takes a str
    ``os.PathLike`` (the README's signature)."""
    if not isinstance(path, str) and isinstance(path, os.PathLike):
        given, path = path, os.fspath(path)
        if not isinstance(path, str):
            raise TypeError(f"{describe(given)} is not an instance of 'str'")
    return as_str(path)


def _invalid(exc: BaseException) -> UrnaError:
    return UrnaError(f"invalid query vector: {type(exc).__qualname__}: {exc}")


def _items(query: Any) -> np.ndarray:
    """The binding's ``Vec<f32>`` extraction, item by item (the path of unusual queries)."""
    try:
        values = [as_f64(v) for v in as_sequence(query)]
    except Exception as exc:  # whatever the sequence test or an item's conversion raised
        raise _invalid(exc) from exc
    return np.array(values, dtype=np.float64)


def as_f32(query: Vector) -> np.ndarray:
    """The query as a 1-D float32 array, converted as the binding converts it (f64, then f32);
    no normalisation, no checks beyond the conversion."""
    arr: np.ndarray | None = None
    if type(query) is np.ndarray:
        if query.ndim == 1 and query.dtype.kind in "fiub":
            arr = query
    elif type(query) is list or type(query) is tuple:
        try:  # numbers only: every other item (str, None, an array, a big int) goes item by item
            arr = np.array(query)
        except (TypeError, ValueError, OverflowError):
            arr = None
        if arr is not None and not (arr.ndim == 1 and arr.dtype.kind in "fiub"):
            arr = None
    if arr is None:
        arr = _items(query)
    if arr.dtype != F32:
        with np.errstate(over="ignore", invalid="ignore"):
            if arr.dtype.kind != "f" or arr.dtype.itemsize > 8:  # each item via a f64, as there
                arr = arr.astype(np.float64)
            arr = arr.astype(F32)
    return arr


def normalize(x: np.ndarray, dim: int) -> np.ndarray:
    """Checks 2-6 of §3 on a float32 vector; returns the L2-normalised copy."""
    if x.shape[0] == 0:
        raise EmptyQuery()
    if x.shape[0] != dim:
        raise DimensionMismatch(dim, x.shape[0])
    if not np.isfinite(x).all():
        raise InvalidQueryValue()
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        norm = np.sqrt(np.add.accumulate(x * x, dtype=F32)[-1], dtype=F32)
        if norm == F32(0.0):
            raise ZeroNormQuery()
        return np.ascontiguousarray(x / norm, dtype=F32)


def validate(x: np.ndarray, k: int, dim: int) -> np.ndarray:
    """The runtime checks of §3 on a converted query: k, then the vector; returns it normalised."""
    if k <= 0:
        raise InvalidK(k)
    return normalize(x, dim)


def prepare_batch(queries: Vectors, k: int, dim: int) -> tuple[np.ndarray, int]:
    """Validate a (m, dim) matrix of queries row by row; returns normalised rows and k."""
    k = check_k(k)
    rows: np.ndarray | list[np.ndarray]
    if isinstance(queries, np.ndarray) and queries.ndim == 2:
        rows = queries
    else:
        rows = [as_f32(q) for q in queries]
    out = np.empty((len(rows), dim), dtype=F32)
    for i, row in enumerate(rows):
        out[i] = normalize(as_f32(row), dim)
    return out, k
