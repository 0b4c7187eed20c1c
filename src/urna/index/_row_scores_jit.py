"""numba versions of :mod:`urna.index.row_scores` for long scans: the same operations, row by row.

Bit-identity with the numpy definitions rests on: ``contract`` (and no other fast-math flag)
on the lane kernels only, so each ``lane + q * r`` becomes one hardware fma and nothing is
reassociated; the tails and every sequential sum compiled without fast-math (no fusing). A
machine without a hardware fma would round twice, so :func:`load` checks the compiled kernels
against the numpy ones on a fixed block and refuses them (the numpy path then runs) if any bit
differs.
"""

from __future__ import annotations

import numba
import numpy as np

from . import row_scores
from .kernel_cache import check

check()  # before any kernel here is called, so none loads stale cached code

_plain = numba.njit(nogil=True, cache=True, boundscheck=False)
_fused = numba.njit(nogil=True, cache=True, boundscheck=False, fastmath={"contract"})


@_plain
def _tail(M, q, i, start):
    t = np.float32(0.0)
    for j in range(start, M.shape[1]):
        t += M[i, j] * q[j]
    return t


@_fused
def _lanes(M, q, i):
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    nb = M.shape[1] // 8
    for c in range(nb):
        o = c * 8
        a0 = a0 + q[o] * np.float32(M[i, o])
        a1 = a1 + q[o + 1] * np.float32(M[i, o + 1])
        a2 = a2 + q[o + 2] * np.float32(M[i, o + 2])
        a3 = a3 + q[o + 3] * np.float32(M[i, o + 3])
        a4 = a4 + q[o + 4] * np.float32(M[i, o + 4])
        a5 = a5 + q[o + 5] * np.float32(M[i, o + 5])
        a6 = a6 + q[o + 6] * np.float32(M[i, o + 6])
        a7 = a7 + q[o + 7] * np.float32(M[i, o + 7])
    return a0, a1, a2, a3, a4, a5, a6, a7


@_plain
def _lane_sum(M, q, i):
    a0, a1, a2, a3, a4, a5, a6, a7 = _lanes(M, q, i)
    s = a0 + a1
    s = s + a2
    s = s + a3
    s = s + a4
    s = s + a5
    s = s + a6
    s = s + a7
    return s + _tail(M, q, i, (M.shape[1] // 8) * 8)


@_plain
def f32(M, q, rows, out):
    """float32 rows: the lane order (fma lanes, their sum, + tail)."""
    for t in range(rows.shape[0]):
        out[t] = _lane_sum(M, q, rows[t])


@_plain
def i8(C, scales, q, rows, out):
    """int8 rows: the lane order on the widened codes, then * scale."""
    for t in range(rows.shape[0]):
        i = rows[t]
        out[t] = _lane_sum(C, q, i) * scales[i]

two112 = np.float32(2.0 ** 112)  # exact power of two: rescales a shifted half to its value


@_plain
def _widen(H, i, bits, vals, out):
    # exact binary16 -> binary32: exponent+mantissa moved into place, scaled by 2^112
    # (exact for subnormal halves too), then the sign; rows are finite (checked at open)
    for j in range(H.shape[1]):
        bits[j] = np.uint32(H[i, j] & 0x7FFF) << np.uint32(13)
    for j in range(H.shape[1]):
        sign = np.float32(1.0) - np.float32(2.0) * np.float32(H[i, j] >> 15)
        out[j] = (vals[j] * two112) * sign


@_plain
def f16(H, q, rows, out):
    """float16 rows (uint16 view): sequential sums of the widened values."""
    # four rows per pass: four independent sequential chains (one alone is latency-bound)
    d = H.shape[1]
    bits = np.empty(d, dtype=np.uint32)
    vals = bits.view(np.float32)
    w = np.empty((4, d), dtype=np.float32)
    count = rows.shape[0]
    for g in range(0, count, 4):
        last = count - 1
        for r in range(4):
            _widen(H, rows[min(g + r, last)], bits, vals, w[r])
        s0 = s1 = s2 = s3 = np.float32(0.0)
        for j in range(d):
            s0 += w[0, j] * q[j]
            s1 += w[1, j] * q[j]
            s2 += w[2, j] * q[j]
            s3 += w[3, j] * q[j]
        out[g] = s0
        if g + 1 < count:
            out[g + 1] = s1
        if g + 2 < count:
            out[g + 2] = s2
        if g + 3 < count:
            out[g + 3] = s3


@_plain
def _nib(byte, high):
    v = (byte >> 4) if high else (byte & 0x0F)
    return np.float32((v ^ 8) - 8)


@_plain
def i4(P, scales, q, rows, out):
    """int4 rows: per-group sequential parts, acc += part * scale_g."""
    count = rows.shape[0]
    for g4 in range(0, count, 4):
        last = count - 1
        i0 = rows[g4]
        i1 = rows[min(g4 + 1, last)]
        i2 = rows[min(g4 + 2, last)]
        i3 = rows[min(g4 + 3, last)]
        a0 = a1 = a2 = a3 = np.float32(0.0)
        for g in range(scales.shape[1]):
            p0 = p1 = p2 = p3 = np.float32(0.0)
            for b in range(32):
                c = g * 32 + b
                qe = q[2 * c]
                qo = q[2 * c + 1]
                x0 = np.int32(P[i0, c])
                x1 = np.int32(P[i1, c])
                x2 = np.int32(P[i2, c])
                x3 = np.int32(P[i3, c])
                p0 += qe * _nib(x0, False)
                p1 += qe * _nib(x1, False)
                p2 += qe * _nib(x2, False)
                p3 += qe * _nib(x3, False)
                p0 += qo * _nib(x0, True)
                p1 += qo * _nib(x1, True)
                p2 += qo * _nib(x2, True)
                p3 += qo * _nib(x3, True)
            a0 += p0 * scales[i0, g]
            a1 += p1 * scales[i1, g]
            a2 += p2 * scales[i2, g]
            a3 += p3 * scales[i3, g]
        out[g4] = a0
        if g4 + 1 < count:
            out[g4 + 1] = a1
        if g4 + 2 < count:
            out[g4 + 2] = a2
        if g4 + 3 < count:
            out[g4 + 3] = a3


KERNELS = {"f32": f32, "i8": i8, "f16": f16, "i4": i4}


def _agrees(k: dict) -> bool:
    """The compiled kernels give the numpy definitions' bits on a fixed awkward block."""
    rng = np.random.default_rng(5)
    dim = 136  # the f32 block has dim + 3 columns: 17 lane blocks and a 3-wide tail
    m = rng.standard_normal((64, dim + 3)).astype(np.float32) * np.float32(1e3)
    q = rng.standard_normal(dim + 3).astype(np.float32)
    rows = np.arange(64, dtype=np.int64)
    out = np.empty(64, dtype=np.float32)
    k["f32"](m, q, rows, out)
    if out.tobytes() != row_scores.score_block("float32", m, None, q).tobytes():
        return False
    codes = rng.integers(-127, 128, (64, 128), dtype=np.int8)
    scales = rng.random(64).astype(np.float32)
    k["i8"](codes, scales, q[:128], rows, out)
    want = row_scores.score_block("int8", codes, scales, q[:128])
    if out.tobytes() != want.tobytes():
        return False
    halves = (m[:, :dim] * np.float32(1e-3)).astype(np.float16)
    k["f16"](halves.view(np.uint16), q[:dim], rows, out)
    if out.tobytes() != row_scores.score_block("float16", halves, None, q[:dim]).tobytes():
        return False
    packed = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    sc4 = rng.random((64, 2)).astype(np.float32)
    k["i4"](packed, sc4, q[:128], rows, out)
    return out.tobytes() == row_scores.score_block("int4", packed, sc4, q[:128]).tobytes()


def load() -> dict | None:
    """The compiled kernels, or None when they would change a bit (no hardware fma)."""
    from ._hnsw_dist import vectorizing

    k = KERNELS
    with vectorizing():  # compilation happens on these first calls; SLP only regroups lanes
        ok = _agrees(k)
    return k if ok else None
