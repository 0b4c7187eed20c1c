"""The reference's per-row scores in numpy, in its exact f32 operation order (03-runtime §2.3).

One job: score a block of rows against a normalised f32 query with the very operations the
reference's kernels perform, vectorised across rows (and across the eight SIMD lanes), so a
score is bit-identical to the reference wheel's on every machine and never needs a compiler.

Orders (``lanes`` is the reference's AVX2 backend, ``sequential`` its scalar one):

* float32, ``lanes``: eight accumulators, ``lane = fma(q, r, lane)`` over the ``dim // 8``
  blocks, the eight lanes summed left to right, then ``+ tail`` (the sequential sum of the
  last ``dim % 8`` rounded products).
* int8: the float32 order on the widened codes, then ``* scale`` once.
* float16 (both orders) and every ``sequential`` sum: the rounded products summed left to
  right from 0 (``add.accumulate`` is strictly sequential).
* int4 (both orders): per 64-component group a sequential ``part``; ``acc += part * scale_g``.

A fused multiply-add has no numpy ufunc; :func:`fma32` computes it exactly: the product of two
f32 is exact in f64, the f64 sum is rounded to odd (TwoSum gives its error; an inexact even
result steps one ulp towards the exact value), and round-to-odd at 53 bits followed by the
cast to 24 bits rounds correctly (53 >= 24 + 2).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
F64 = np.float64
ORDERS = ("lanes", "sequential")


@np.errstate(over="ignore", invalid="ignore")
def fma32(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``round_f32(p + c)`` for an exact f64 product ``p`` of two f32 and f32 values ``c``."""
    c64 = c.astype(F64)
    s = p + c64
    b = s - p
    err = (p - (s - b)) + (c64 - b)  # TwoSum: s + err == p + c exactly (finite s)
    bits = s.view(np.int64)
    fix = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    if fix.any():
        step = np.where((err > 0) == (s > 0), 1, -1)
        s = np.where(fix, bits + step, bits).view(F64)
    return s.astype(F32)


@np.errstate(over="ignore", invalid="ignore")
def _sequential(prod: np.ndarray) -> np.ndarray:
    """Left-to-right f32 sums of the rows of ``prod`` (rows, width), from 0."""
    # the leading 0 column starts every sum at +0.0, so all-(-0.0) products give +0.0
    padded = np.zeros((prod.shape[0], prod.shape[1] + 1), dtype=F32)
    padded[:, 1:] = prod
    return np.add.accumulate(padded, axis=1, dtype=F32)[:, -1]


@np.errstate(over="ignore", invalid="ignore")
def _lanes(vals: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The AVX2 order over f32 ``vals`` (rows, dim): eight fma lanes, their sum, + tail."""
    rows, dim = vals.shape
    nb = dim // 8
    p = vals[:, :nb * 8].astype(F64) * q[:nb * 8].astype(F64)  # exact products
    p = np.ascontiguousarray(p.reshape(rows, nb, 8).transpose(1, 0, 2))  # block-major
    acc = np.zeros((rows, 8), dtype=F32)
    for c in range(nb):
        acc = fma32(p[c], acc)
    total = acc[:, 0]
    for lane in range(1, 8):
        total = total + acc[:, lane]
    tail = _sequential(vals[:, nb * 8:] * q[nb * 8:])
    return total + tail


def _dot(vals: np.ndarray, q: np.ndarray, order: str) -> np.ndarray:
    if order == "lanes":
        return _lanes(vals, q)
    with np.errstate(over="ignore", invalid="ignore"):
        return _sequential(vals * q)


def unpack_int4(packed: np.ndarray) -> np.ndarray:
    """Packed nibbles (rows, dim/2) -> int8 codes (rows, dim); low nibble = even component."""
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty(p.shape[:-1] + (p.shape[-1] * 2,), dtype=np.int8)
    out[..., 0::2] = ((p & 0x0F).astype(np.int8) ^ 8) - 8
    out[..., 1::2] = ((p >> 4).astype(np.int8) ^ 8) - 8
    return out


# finite but huge scales overflow to inf, as in f32
@np.errstate(over="ignore", invalid="ignore")
def dequantized(dtype: str, a: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
    """Stored rows ``a`` of ``dtype`` as float32 values (02-encodings §2.2, element-wise):
    float16 widened, int8 codes times their row's scale, int4 nibbles times their group's."""
    if dtype == "float32":
        return np.asarray(a, dtype=F32)
    if dtype == "float16":
        return a.astype(F32)
    assert scales is not None  # quantised rows always carry their scales
    if dtype == "int8":
        return a.astype(F32) * scales[:, None]
    m, groups = a.shape[0], scales.shape[1]
    codes = unpack_int4(a).astype(F32).reshape(m, groups, 64)
    return (codes * np.asarray(scales, dtype=F32).reshape(m, groups, 1)).reshape(m, 64 * groups)


@np.errstate(over="ignore", invalid="ignore")
def score_block(dtype: str, a: np.ndarray, scales: np.ndarray | None, q: np.ndarray,
                order: str = "lanes") -> np.ndarray:
    """Scores of the rows ``a`` (stored form of ``dtype``; ``scales`` rows alike) against ``q``."""
    if dtype == "float32":
        return _dot(np.asarray(a, dtype=F32), q, order)
    if dtype == "float16":  # the reference has no f16 SIMD path on x86: sequential
        return _sequential(a.astype(F32) * q)
    if dtype == "int8":
        assert scales is not None
        return _dot(a.astype(F32), q, order) * scales
    assert scales is not None
    codes = unpack_int4(a).astype(F32)
    acc: np.ndarray = np.zeros(a.shape[0], dtype=F32)
    sc = scales.astype(F32)
    for g in range(sc.shape[1]):  # groups in order, scale applied per finished group
        part = _sequential(codes[:, g * 64:(g + 1) * 64] * q[g * 64:(g + 1) * 64])
        acc = acc + part * sc[:, g]
    return acc
