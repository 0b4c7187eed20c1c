"""Query arguments: k / size checks and the query vector's validation and normalisation.

03-runtime §3, in the reference's order: ``k <= 0`` -> InvalidK, empty -> EmptyQuery, wrong
length -> DimensionMismatch, NaN/Inf -> InvalidQueryValue, f32 norm == 0 -> ZeroNormQuery,
then ``q / norm`` in f32. The norm is accumulated sequentially in f32 (as the reference does),
so tiny queries underflow to zero-norm and huge ones normalise to zeros, like the reference.
Accepts lists, tuples and numpy arrays of any real dtype (converted to f32 first, as the
reference's binding converts to ``Vec<f32>``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

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
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def as_i32(k: int) -> int:
    """Convert ``k`` as the binding does: an int in the signed 32-bit range (no sign check)."""
    k = operator.index(k)  # TypeError for floats, like the binding
    if not I32_MIN <= k <= I32_MAX:
        raise OverflowError("out of range integral type conversion attempted")
    return k


def check_k(k: int) -> int:
    """Validate ``k`` as the reference's signed 32-bit k: an int, > 0."""
    k = as_i32(k)
    if k <= 0:
        raise InvalidK(k)
    return k


def check_size(value: int) -> int:
    """Validate an unsigned size argument (ef, hops, candidates)."""
    value = operator.index(value)
    if value < 0:
        raise OverflowError("can't convert negative int to unsigned")
    return value


def as_f32(query: Sequence[float] | np.ndarray) -> np.ndarray:
    """The query as a 1-D float32 array (no normalisation, no checks beyond the type)."""
    if isinstance(query, (str, bytes)):
        kind = type(query).__name__
        raise UrnaError(f"invalid query vector: TypeError: Can't extract `{kind}` to `Vec`")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.asarray(query)
            if arr.dtype.kind not in "fiub":
                raise TypeError(f"query values must be numbers, got {arr.dtype}")
            arr = arr.astype(F32, copy=False)
    except (TypeError, ValueError) as exc:
        raise UrnaError(f"invalid query vector: {type(exc).__name__}: {exc}") from exc
    if arr.ndim != 1:
        raise UrnaError(f"invalid query vector: expected one vector, got shape {arr.shape}")
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
