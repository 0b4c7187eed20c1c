"""numba screens for the exact scan: approximate scores of a row range at close to the read rate.

Only a screen: every final score comes from the exact kernels (:mod:`_row_scores_jit` /
:mod:`row_scores`), so these may reassociate and fuse (``fastmath`` reassoc + contract, never
``nnan`` / ``ninf``: a NaN or inf still propagates and makes the caller score every row). The
caller (:func:`urna.index.exact.screen_bound`) widens the cut-off by a proven bound on how far
a screened score can be from the exact one.

* float32: one reassociated f32 dot per row.
* float16: the halves widened in registers (``fpext half -> float``: F16C's ``vcvtph2ps``).
* int8: integer dot of the codes with the query quantised to int16 (``vpmaddwd``), then
  ``* (scale * qscale)``.
* int4: the nibbles unpacked and sign-extended in registers (two int8 shifts), an exact
  integer dot per 64-component group, then ``acc += part * scale_g``.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_screen = numba.njit(nogil=True, cache=True, boundscheck=False,
                     fastmath={"reassoc", "contract"})
_plain = numba.njit(nogil=True, cache=True, boundscheck=False)


@intrinsic
def _half_to_f32(typingctx, h):
    """Exact binary16 bits -> binary32 (one ``fpext``; vectorises to ``vcvtph2ps``)."""
    sig = types.float32(types.uint16)

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return sig, codegen


@_screen
def screen_f32(M, q, lo, hi, out):
    """``out[i] ~ M[i] . q`` for rows ``lo..hi`` (float32 rows)."""
    for i in range(lo, hi):
        acc = np.float32(0.0)
        for j in range(M.shape[1]):
            acc += M[i, j] * q[j]
        out[i] = acc


@_screen
def screen_f16(H, q, lo, hi, out):
    """``out[i] ~ H[i] . q`` for rows ``lo..hi`` (float16 rows as their uint16 bits)."""
    for i in range(lo, hi):
        acc = np.float32(0.0)
        for j in range(H.shape[1]):
            acc += _half_to_f32(H[i, j]) * q[j]
        out[i] = acc


@_screen
def screen_i8(C, scales, qi, qscale, lo, hi, out):
    """``out[i] ~ scales[i] * qscale * (C[i] . qi)``: exact integer dot, then two f32 products."""
    for i in range(lo, hi):
        acc = 0  # an int64 accumulator: LLVM matches this pattern to vpmaddwd, int32 not
        for j in range(C.shape[1]):
            acc += np.int32(C[i, j]) * np.int32(qi[j])
        out[i] = np.float32(np.int32(acc)) * (scales[i] * qscale)  # |acc| < 2^31 by the levels


@_screen
def screen_i4(P, scales, qe, qo, qscale, lo, hi, out):
    """int4 rows (packed nibbles, f32 group scales) against the int16 query halves ``qe``/``qo``.

    ``out[i] ~ qscale * sum_g part_g * s_g``; ``part_g`` an exact integer dot per group.
    """
    groups = scales.shape[1]
    for i in range(lo, hi):
        acc = np.float32(0.0)
        for g in range(groups):
            part = 0  # int64 accumulator and int8 shifts: the pattern LLVM maps to vpdpwssd
            for b in range(32):
                c = g * 32 + b
                x = np.int8(P[i, c])
                low = np.int8(x << np.int8(4)) >> np.int8(4)  # arithmetic shifts sign-extend
                high = x >> np.int8(4)
                part += np.int32(low) * np.int32(qe[c]) + np.int32(high) * np.int32(qo[c])
            acc += np.float32(np.int32(part)) * scales[i, g]  # |part| <= 2^24 by the levels
        out[i] = acc * qscale


@_plain
def kth_largest(s, k):
    """The ``k``-th largest value of ``s`` (1 <= k <= len(s), no NaN): a size-k min-heap."""
    heap = np.empty(k, dtype=s.dtype)
    for t in range(k):  # heapify the first k values
        heap[t] = s[t]
    for start in range(k // 2 - 1, -1, -1):
        _sift(heap, start, k)
    top = heap[0]
    for t in range(k, s.shape[0]):
        v = s[t]
        if v > top:
            heap[0] = v
            _sift(heap, 0, k)
            top = heap[0]
    return top


@_plain
def _sift(heap, pos, size):
    v = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] < v:
            heap[pos] = heap[child]
            pos = child
        else:
            break
    heap[pos] = v


KERNELS = {"float32": screen_f32, "float16": screen_f16, "int8": screen_i8,
           "int4": screen_i4}
