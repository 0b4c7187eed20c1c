"""Query arguments as the reference binding converts them, and the query vector's checks.

Conversions (the wheel's PyO3 binding, urna 0.5.1; tests/runtime/test_query_arguments.py pins
them against 10,713 recorded calls): counts go through ``__index__`` — ``k`` to a signed 32-bit
int (``as_i32``), ef / hops / candidates / indexes to an unsigned 64-bit one (``as_u64``;
both in ``urna.argument_conversion``, with ``as_str``);
text to a ``str`` that encodes as UTF-8 (``as_str``); the query vector to ``Vec<f32>``
(``as_f32``): any sequence but a ``str`` whose items are real numbers, converted to f64 then
f32; a bad one is ``invalid query vector: <Class>: <text>``. A call whose arguments do not
bind raises the binding's own TypeError (``binding``). The binding converts every argument but
the query vector before the call runs, so the methods convert in that order.

Checks, 03-runtime §3, in the reference's order: ``k <= 0`` -> InvalidK, empty -> EmptyQuery,
wrong length -> DimensionMismatch, NaN/Inf -> InvalidQueryValue, f32 norm == 0 ->
ZeroNormQuery, then ``q / norm`` in f32. The norm is accumulated sequentially in f32 (as the
reference does), so tiny queries underflow to zero-norm and huge ones normalise to zeros, like
the reference.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ..argument_conversion import as_i32, as_str, describe
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
_P = ParamSpec("_P")
_R = TypeVar("_R")


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


def _is_sequence(value: object) -> bool:
    # The binding's test is CPython's PySequence_Check (a type with sq_item, never a dict):
    # no Python spelling matches it (numpy scalars have __getitem__ and are not sequences).
    import ctypes

    return bool(ctypes.pythonapi.PySequence_Check(ctypes.py_object(value)))


def _items(query: Any) -> np.ndarray:
    """The binding's ``Vec<f32>`` extraction, item by item (the path of unusual queries)."""
    if isinstance(query, str):
        raise UrnaError("invalid query vector: TypeError: Can't extract `str` to `Vec`")
    if not _is_sequence(query):
        raise UrnaError(f"invalid query vector: TypeError: {describe(query)} is not an instance "
                        "of 'Sequence'")
    try:
        # ldexp(x, 0) is x through PyFloat_AsDouble: the binding's f64 conversion, its errors
        values = [math.ldexp(v, 0) for v in query]
    except Exception as exc:  # whatever an item's __float__ / __index__ / __iter__ raised
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


def binding(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Wrap a method so that a call whose arguments do not bind raises the reference binding's
    TypeError text (PyO3's: ``self`` not counted, too many positionals reported first; a method
    without parameters says ``takes no arguments`` / ``takes no keyword arguments``)."""
    code = fn.__code__
    names = code.co_varnames[1:code.co_argcount]  # after self / cls
    keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    required = len(names) - len(fn.__defaults__ or ())
    label = f"{fn.__qualname__}()"

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            tb = exc.__traceback__
            if tb is None or tb.tb_next is not None:  # raised inside fn: not the binding
                raise
            text = _unbound(label, names, required, keyword_only, args[1:], kwargs)
            if text is None:
                raise
            raise TypeError(text) from None

    return call


def _unbound(label: str, names: tuple[str, ...], required: int, keyword_only: tuple[str, ...],
             args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """PyO3's message for arguments that do not bind, in its order of checks."""
    if not names:  # METH_NOARGS: keywords are looked at first
        if any(k not in keyword_only for k in kwargs):
            return f"{label} takes no keyword arguments"
        return f"{label} takes no arguments ({len(args)} given)" if args else None
    if len(args) > len(names):
        was = "was" if len(args) == 1 else "were"
        takes = (f"from {required} to {len(names)}" if required != len(names)
                 else str(len(names)))
        return f"{label} takes {takes} positional arguments but {len(args)} {was} given"
    for k in kwargs:
        if k in keyword_only:
            continue
        if k not in names:
            return f"{label} got an unexpected keyword argument '{k}'"
        if names.index(k) < len(args):
            return f"{label} got multiple values for argument '{k}'"
    missing = [n for i, n in enumerate(names[:required]) if i >= len(args) and n not in kwargs]
    if not missing:
        return None
    quoted = [f"'{n}'" for n in missing]
    listed = (quoted[0] if len(quoted) == 1 else " and ".join(quoted) if len(quoted) == 2
              else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
    return (f"{label} missing {len(missing)} required positional "
            f"argument{'s' if len(missing) > 1 else ''}: {listed}")


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
