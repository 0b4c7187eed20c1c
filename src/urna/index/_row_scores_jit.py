"""numba versions of :mod:`urna.index.row_scores` for long scans: the same operations, row by row.

Bit-identity with the numpy definitions rests on: ``contract`` (and no other fast-math flag)
on the lane kernels only, so each ``lane + q * r`` becomes one hardware fma and nothing is
reassociated; the tails and every sequential sum compiled without fast-math (no fusing). A
machine without a hardware fma would round twice, so :func:`load` checks the compiled kernels
against the numpy ones on a fixed block and refuses them (the numpy path then runs) if any bit
differs.
"""

from __future__ import annotations

import numpy as np

from . import row_scores


def _build() -> dict:
    import numba

    plain = numba.njit(nogil=True, cache=True, boundscheck=False)
    fused = numba.njit(nogil=True, cache=True, boundscheck=False, fastmath={"contract"})

    @plain
    def tail(M, q, i, start):
        t = np.float32(0.0)
        for j in range(start, M.shape[1]):
            t += M[i, j] * q[j]
        return t

    @fused
    def lanes(M, q, i):
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

    @plain
    def lane_sum(M, q, i):
        a0, a1, a2, a3, a4, a5, a6, a7 = lanes(M, q, i)
        s = a0 + a1
        s = s + a2
        s = s + a3
        s = s + a4
        s = s + a5
        s = s + a6
        s = s + a7
        return s + tail(M, q, i, (M.shape[1] // 8) * 8)

    @plain
    def f32(M, q, rows, out):
        for t in range(rows.shape[0]):
            out[t] = lane_sum(M, q, rows[t])

    @plain
    def i8(C, scales, q, rows, out):
        for t in range(rows.shape[0]):
            i = rows[t]
            out[t] = lane_sum(C, q, i) * scales[i]

    two112 = np.float32(2.0 ** 112)  # exact power of two: rescales a shifted half to its value

    @plain
    def f16(H, q, rows, out):
        d = H.shape[1]
        bits = np.empty(d, dtype=np.uint32)
        vals = bits.view(np.float32)
        for t in range(rows.shape[0]):
            i = rows[t]
            # exact binary16 -> binary32 widening: exponent+mantissa moved into place, scaled
            # by 2^112 (exact for subnormal halves too), then the sign; rows are finite
            for j in range(d):
                bits[j] = np.uint32(H[i, j] & 0x7FFF) << np.uint32(13)
            acc = np.float32(0.0)
            for j in range(d):
                sign = np.float32(1.0) - np.float32(2.0) * np.float32(H[i, j] >> 15)
                acc += ((vals[j] * two112) * sign) * q[j]
            out[t] = acc

    @plain
    def i4(P, scales, q, rows, out):
        for t in range(rows.shape[0]):
            i = rows[t]
            acc = np.float32(0.0)
            for g in range(scales.shape[1]):
                part = np.float32(0.0)
                for b in range(32):
                    byte = np.int32(P[i, g * 32 + b])
                    lo = ((byte & 0x0F) ^ 8) - 8
                    hi = ((byte >> 4) ^ 8) - 8
                    part += q[g * 64 + 2 * b] * np.float32(lo)
                    part += q[g * 64 + 2 * b + 1] * np.float32(hi)
                acc += part * scales[i, g]
            out[t] = acc

    return {"f32": f32, "i8": i8, "f16": f16, "i4": i4}


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
    """The compiled kernels, or None when numba is missing or they would change a bit."""
    try:
        import numba  # noqa: F401
    except Exception:  # numba is an optional extra; its absence means the numpy path
        return None
    k = _build()
    return k if _agrees(k) else None
