"""Distance kernels of the HNSW index: ``dist8`` (03-runtime §7.4), compiled with numba if present.

``dist(a, b) = 1 - dot8(a, b)`` in float32: eight lane accumulators over blocks of eight,
combined in a fixed tree, plus a sequential tail; no FMA (numba does not contract without
fastmath). The batched form measures four rows per pass so the four lane chains overlap;
every row still gets exactly the same lanes, hence the same bits.

Without numba the same functions run as plain Python (correct, slow).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .kernel_cache import check

check()  # before any kernel here is called, so none loads stale cached code

_numba_config: Any  # numba's config module (its flags are set at run time), or None

try:  # numba is the "fast" extra; the plain path gives the same answers
    from numba import njit as _njit
    from numba.core import config as _numba_config

    def jit(fn):
        """Compile ``fn`` with numba (cached on disk, no fastmath)."""
        return _njit(cache=True, nogil=True)(fn)

    def jit_no_refcount(fn):
        """``jit`` without numba's reference counting, for functions that allocate nothing.

        The loops called once per neighbour or heap operation: numba otherwise increments
        and decrements the count of every array passed in at each call (atomic operations,
        ~8% of a build).
        """
        return _njit(cache=True, nogil=True, _nrt=False)(fn)

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    def jit(fn):
        """Identity: run ``fn`` as plain Python."""
        return fn

    jit_no_refcount = jit

    _numba_config = None
    HAVE_NUMBA = False


_window_lock = threading.Lock()
_window_depth = 0
_window_saved = 0


class _SlpWindow:
    """The context manager ``vectorizing`` returns (a class: cheaper per query than a generator)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _window_depth, _window_saved
        if _numba_config is None:
            return
        with _window_lock:
            if _window_depth == 0:
                _window_saved = _numba_config.SLP_VECTORIZE
                _numba_config.SLP_VECTORIZE = 1
            _window_depth += 1

    def __exit__(self, *exc: object) -> None:
        global _window_depth
        if _numba_config is None:
            return
        with _window_lock:
            _window_depth -= 1
            if _window_depth == 0:
                _numba_config.SLP_VECTORIZE = _window_saved


_WINDOW = _SlpWindow()


def vectorizing() -> _SlpWindow:
    """Let LLVM's SLP vectoriser run while our kernels compile (numba keeps it off by default).

    SLP packs the eight independent lane accumulators of ``dist8`` into one SIMD register; it
    only regroups independent operations, never reassociates or fuses them, so results stay
    bit-identical. Compilation is lazy, so callers wrap each kernel call; once compiled (or
    loaded from numba's cache) the flag no longer matters. Nested and concurrent windows are
    counted, so the global flag is restored only when the last one closes.
    """
    return _WINDOW


_F32_ONE = np.float32(1.0)
_F32_ZERO = np.float32(0.0)


@jit
def dist8(a, b):
    """``1 - dot8(a, b)`` in float32: eight lanes, fixed reduction tree, sequential tail."""
    dim = a.shape[0]
    nb = dim // 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _F32_ZERO
    for c in range(nb):
        o = c * 8
        a0 += a[o] * b[o]
        a1 += a[o + 1] * b[o + 1]
        a2 += a[o + 2] * b[o + 2]
        a3 += a[o + 3] * b[o + 3]
        a4 += a[o + 4] * b[o + 4]
        a5 += a[o + 5] * b[o + 5]
        a6 += a[o + 6] * b[o + 6]
        a7 += a[o + 7] * b[o + 7]
    tail = _F32_ZERO
    for j in range(nb * 8, dim):
        tail += a[j] * b[j]
    dot = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + tail
    return _F32_ONE - dot


_U1, _U2, _U3, _U4, _U5, _U6, _U7, _U8 = (np.uint64(k) for k in range(1, 9))


@jit_no_refcount
def _lanes4(q, qi, vecs, i0, i1, i2, i3, acc):
    """The eight dot8 lane sums of ``q[qi]`` against four rows at once, into ``acc[0:32]``.

    Four rows give four independent dependency chains (one row alone is latency-bound);
    each lane is still summed sequentially over the blocks, so every row gets exactly
    ``dist8``'s lanes. Unsigned offsets spare numba's negative-index wraparound; rows are
    indexed, never sliced, so no array view (and no reference count) is made per call.
    """
    nb = vecs.shape[1] // 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _F32_ZERO
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = _F32_ZERO
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = _F32_ZERO
    d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = _F32_ZERO
    o = np.uint64(0)
    for _ in range(nb):
        q0 = q[qi, o]
        q1 = q[qi, o + _U1]
        q2 = q[qi, o + _U2]
        q3 = q[qi, o + _U3]
        q4 = q[qi, o + _U4]
        q5 = q[qi, o + _U5]
        q6 = q[qi, o + _U6]
        q7 = q[qi, o + _U7]
        a0 += q0 * vecs[i0, o]
        a1 += q1 * vecs[i0, o + _U1]
        a2 += q2 * vecs[i0, o + _U2]
        a3 += q3 * vecs[i0, o + _U3]
        a4 += q4 * vecs[i0, o + _U4]
        a5 += q5 * vecs[i0, o + _U5]
        a6 += q6 * vecs[i0, o + _U6]
        a7 += q7 * vecs[i0, o + _U7]
        b0 += q0 * vecs[i1, o]
        b1 += q1 * vecs[i1, o + _U1]
        b2 += q2 * vecs[i1, o + _U2]
        b3 += q3 * vecs[i1, o + _U3]
        b4 += q4 * vecs[i1, o + _U4]
        b5 += q5 * vecs[i1, o + _U5]
        b6 += q6 * vecs[i1, o + _U6]
        b7 += q7 * vecs[i1, o + _U7]
        c0 += q0 * vecs[i2, o]
        c1 += q1 * vecs[i2, o + _U1]
        c2 += q2 * vecs[i2, o + _U2]
        c3 += q3 * vecs[i2, o + _U3]
        c4 += q4 * vecs[i2, o + _U4]
        c5 += q5 * vecs[i2, o + _U5]
        c6 += q6 * vecs[i2, o + _U6]
        c7 += q7 * vecs[i2, o + _U7]
        d0 += q0 * vecs[i3, o]
        d1 += q1 * vecs[i3, o + _U1]
        d2 += q2 * vecs[i3, o + _U2]
        d3 += q3 * vecs[i3, o + _U3]
        d4 += q4 * vecs[i3, o + _U4]
        d5 += q5 * vecs[i3, o + _U5]
        d6 += q6 * vecs[i3, o + _U6]
        d7 += q7 * vecs[i3, o + _U7]
        o += _U8
    # consecutive stores: the SLP vectoriser's seeds, so each row's lanes become one vector
    acc[0] = a0
    acc[1] = a1
    acc[2] = a2
    acc[3] = a3
    acc[4] = a4
    acc[5] = a5
    acc[6] = a6
    acc[7] = a7
    acc[8] = b0
    acc[9] = b1
    acc[10] = b2
    acc[11] = b3
    acc[12] = b4
    acc[13] = b5
    acc[14] = b6
    acc[15] = b7
    acc[16] = c0
    acc[17] = c1
    acc[18] = c2
    acc[19] = c3
    acc[20] = c4
    acc[21] = c5
    acc[22] = c6
    acc[23] = c7
    acc[24] = d0
    acc[25] = d1
    acc[26] = d2
    acc[27] = d3
    acc[28] = d4
    acc[29] = d5
    acc[30] = d6
    acc[31] = d7


@jit_no_refcount
def _finish(q, qi, vecs, row, acc, base):
    """Combine one row's lanes with dot8's fixed tree, add its sequential tail, return 1 - dot."""
    dim = vecs.shape[1]
    tail = _F32_ZERO
    for j in range((dim // 8) * 8, dim):
        tail += q[qi, j] * vecs[row, j]
    dot = (((acc[base] + acc[base + 1]) + (acc[base + 2] + acc[base + 3]))
           + ((acc[base + 4] + acc[base + 5]) + (acc[base + 6] + acc[base + 7])) + tail)
    return _F32_ONE - dot


@jit_no_refcount
def dists(q, qi, vecs, rows, start, count, out, out_start, acc):
    """``out[out_start + j] = dist8(q[qi], vecs[rows[start + j]])`` for j < count, four rows a pass.

    The query is a row of a matrix (a search passes its vector as one row, the build a row of
    the corpus), so no caller slices a row out to measure it.
    """
    last = start + count - 1
    for g in range(start, start + count, 4):
        i0 = rows[g]
        i1 = rows[min(g + 1, last)]  # a short final group repeats its last row
        i2 = rows[min(g + 2, last)]
        i3 = rows[min(g + 3, last)]
        _lanes4(q, qi, vecs, i0, i1, i2, i3, acc)
        o = out_start + g - start
        out[o] = _finish(q, qi, vecs, i0, acc, 0)
        if g + 1 <= last:
            out[o + 1] = _finish(q, qi, vecs, i1, acc, 8)
        if g + 2 <= last:
            out[o + 2] = _finish(q, qi, vecs, i2, acc, 16)
        if g + 3 <= last:
            out[o + 3] = _finish(q, qi, vecs, i3, acc, 24)


@jit_no_refcount
def dist_one(q, qi, vecs, row, acc):
    """``dist8(q[qi], vecs[row])`` for one row (entry points; kept small so it compiles fast)."""
    nb = vecs.shape[1] // 8
    for lane in range(8):
        acc[lane] = _F32_ZERO
    o = np.uint64(0)
    for _ in range(nb):
        for lane in range(8):
            acc[lane] += q[qi, o + np.uint64(lane)] * vecs[row, o + np.uint64(lane)]
        o += _U8
    return _finish(q, qi, vecs, row, acc, 0)


# --- packed stores: quantised rows decoded four at a time into a small f32 buffer -----------
# A store is ``(codes, scales)``: float32 rows (scales unused), float16 rows as their uint16
# bits, int8 codes with per-row f32 scales, or int4 nibbles (uint8, low nibble = even column)
# with per-group f32 scales (the file's f16 group scales widened, which is exact). Each decoded
# value is the f32 product ``dequantize`` computes, so distances keep the f32 rows' bits.

_IOTA4 = np.arange(4, dtype=np.int32)
# 2^(e-25) for a binary16 exponent field e >= 1: (1024 + mantissa) * it is the half's value
_HALF_POW2 = np.array([2.0 ** (max(e, 1) - 25) for e in range(32)], dtype=np.float32)


def half_to_f32(h):
    """One binary16 value (its uint16 bits) as float32, exactly (finite halves only)."""
    h = int(h)
    e = (h >> 10) & 31
    mant = (h & 1023) + (1024 if e > 0 else 0)  # subnormals: m * 2^-24, as e = 1 scales
    v = np.float32(mant) * _HALF_POW2[e]
    return -v if h & 0x8000 else v


@jit_no_refcount
def decode_f16_row(bits, row, out):
    """Row ``row`` of binary16 ``bits`` as float32 values (exact; finite halves only)."""
    for j in range(bits.shape[1]):
        out[j] = half_to_f32(bits[row, j])


@jit_no_refcount
def _decode_f16_store_row(bits, scales, row, out):
    """``decode_f16_row`` with the store's (unused) scales, so every decoder takes the same."""
    decode_f16_row(bits, row, out)


@jit_no_refcount
def decode_i8_row(codes, scales, row, out):
    """Row ``row`` of int8 ``codes`` times its f32 scale."""
    s = scales[row]
    for j in range(codes.shape[1]):
        out[j] = np.float32(codes[row, j]) * s


@jit_no_refcount
def decode_i4_row(packed, scales, row, out):
    """Row ``row`` of packed int4 nibbles (low nibble first) times its groups' f32 scales."""
    for g in range(scales.shape[1]):
        s = scales[row, g]
        for b in range(32):  # one 64-column group: 32 bytes
            p = np.int32(packed[row, 32 * g + b])
            out[64 * g + 2 * b] = np.float32(((p & 15) ^ 8) - 8) * s
            out[64 * g + 2 * b + 1] = np.float32(((p >> 4) ^ 8) - 8) * s


def _decode_plain(codes, scales, row, out):
    """The plain-Python decoder for the store's kind (numba picks one at compile time)."""
    if codes.dtype == np.uint16:
        _decode_f16_store_row(codes, scales, row, out)
    elif codes.dtype == np.int8:
        decode_i8_row(codes, scales, row, out)
    else:
        decode_i4_row(codes, scales, row, out)


def store_dists(q, qi, codes, scales, rows, count, out, acc, rowbuf):
    """``out[j] = dist8(q[qi], row rows[j])`` for j < count over a (possibly packed) store.

    float32 rows are read in place; packed rows are decoded four at a time into ``rowbuf``
    (4, dim) float32, so nothing beyond those four rows is ever dequantised.
    """
    if codes.dtype == np.float32:
        dists(q, qi, codes, rows, 0, count, out, 0, acc)
        return
    for g in range(0, count, 4):
        cnt = min(4, count - g)
        for r in range(cnt):
            _decode_plain(codes, scales, rows[g + r], rowbuf[r])
        dists(q, qi, rowbuf, _IOTA4, 0, cnt, out, g, acc)


def store_dist_one(q, qi, codes, scales, row, acc, rowbuf):
    """``dist8(q[qi], row)`` for one row of a (possibly packed) store."""
    if codes.dtype == np.float32:
        return dist_one(q, qi, codes, row, acc)
    _decode_plain(codes, scales, row, rowbuf[0])
    return dist_one(q, qi, rowbuf, 0, acc)


def prefetch_row(vecs, row):
    """Hint the CPU to start loading row ``row`` of ``vecs`` (a no-op without numba)."""


if HAVE_NUMBA:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic, overload

    def _pick(codes, f32_impl, packed_impl):
        return f32_impl if codes.dtype == types.float32 else packed_impl

    from .vector_ir import F32, I8, I32, load, nibbles, splat, vec

    @intrinsic
    def _i4_group_to_f32(typingctx, src, scale, dst):
        """The 32 packed int4 bytes at address ``src`` as 64 f32 values times ``scale`` at
        address ``dst``, low nibble first: ``decode_i4_row``'s values, built as vectors (each
        an exact small integer converted, then one IEEE f32 product, as the scalar loop)."""
        sig = types.void(types.uintp, types.float32, types.uintp)

        def codegen(context, builder, signature, args):
            src, scale, dst = args
            zero = ir.Constant(src.type, 0)
            low, high = nibbles(builder, load(builder, src, zero, 0, vec(I8, 32)))  # v + 8
            order = ir.Constant(vec(I32, 64), [k // 2 + 32 * (k % 2) for k in range(64)])
            values = builder.sub(builder.shuffle_vector(low, high, order),
                                 ir.Constant(vec(I8, 64), [8] * 64))
            floats = builder.fmul(builder.sitofp(values, vec(F32, 64)), splat(builder, scale, 64))
            builder.store(floats, builder.inttoptr(dst, vec(F32, 64).as_pointer()), align=4)
            return context.get_dummy_value()

        return sig, codegen

    @jit_no_refcount
    def _decode_i4_row_vectors(packed, scales, row, out):
        """``decode_i4_row`` (the same bits), a 64-column group at a time as vectors: ~5x
        faster here than the scalar loop, which the beam runs on every packed row it reads."""
        base = packed.ctypes.data + row * packed.strides[0]
        at = out.ctypes.data
        for g in range(scales.shape[1]):
            _i4_group_to_f32(base + 32 * g, scales[row, g], at + 256 * g)

    def _decoder(codes):
        if codes.dtype == types.uint16:
            return _decode_f16_store_row
        if codes.dtype == types.int8:
            return decode_i8_row
        return _decode_i4_row_vectors

    # numba's typed options dict does not list _nrt (jit_no_refcount's flag)
    _NO_REFCOUNT: Any = {"nogil": True, "_nrt": False}

    @overload(store_dists, jit_options=_NO_REFCOUNT)
    def _store_dists_typed(q, qi, codes, scales, rows, count, out, acc, rowbuf):
        def f32_impl(q, qi, codes, scales, rows, count, out, acc, rowbuf):
            dists(q, qi, codes, rows, 0, count, out, 0, acc)

        decode = _decoder(codes)

        def packed_impl(q, qi, codes, scales, rows, count, out, acc, rowbuf):
            for g in range(0, count, 4):
                cnt = min(4, count - g)
                for r in range(cnt):
                    decode(codes, scales, rows[g + r], rowbuf[r])
                dists(q, qi, rowbuf, _IOTA4, 0, cnt, out, g, acc)

        return _pick(codes, f32_impl, packed_impl)

    @overload(store_dist_one, jit_options=_NO_REFCOUNT)
    def _store_dist_one_typed(q, qi, codes, scales, row, acc, rowbuf):
        def f32_impl(q, qi, codes, scales, row, acc, rowbuf):
            return dist_one(q, qi, codes, row, acc)

        decode = _decoder(codes)

        def packed_impl(q, qi, codes, scales, row, acc, rowbuf):
            decode(codes, scales, row, rowbuf[0])
            return dist_one(q, qi, rowbuf, 0, acc)

        return _pick(codes, f32_impl, packed_impl)

    _PREFETCH_LINES = 4  # the row's first cache lines; the hardware streamer fetches the rest

    @intrinsic
    def _prefetch_row_typed(typingctx, vecs, row):
        if not isinstance(vecs, types.Array) or vecs.ndim != 2:
            return None

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            stride0 = cgutils.unpack_tuple(builder, ary.strides)[0]
            r = context.cast(builder, args[1], signature.args[1], types.intp)
            i8p = ir.IntType(8).as_pointer()
            start = builder.gep(builder.bitcast(ary.data, i8p), [builder.mul(r, stride0)])
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0")
            for line in range(_PREFETCH_LINES):  # read, keep in all levels, data cache
                addr = builder.gep(start, [ir.Constant(ir.IntType(64), 64 * line)])
                builder.call(fn, [addr, i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(vecs, row), codegen

    @intrinsic
    def _half_to_f32_typed(typingctx, h):
        if not isinstance(h, types.Integer) or h.bitwidth != 16:
            return None

        def codegen(context, builder, signature, args):
            # fpext half -> float is exact; on x86 it is the F16C conversion
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

        return types.float32(h), codegen

    @overload(half_to_f32, jit_options={"nogil": True})
    def _half_to_f32_overload(h):
        return lambda h: _half_to_f32_typed(h)

    @overload(prefetch_row, jit_options={"nogil": True})
    def _prefetch_row_overload(vecs, row):
        return lambda vecs, row: _prefetch_row_typed(vecs, row)
