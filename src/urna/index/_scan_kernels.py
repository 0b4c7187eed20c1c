"""numba screens for the exact scan: approximate scores of rows at close to the read rate.

Only a screen: every final score comes from the exact kernels (:mod:`_row_scores_jit` /
:mod:`row_scores`), so these may reassociate and fuse (``fastmath`` reassoc + contract, never
``nnan`` / ``ninf``: a NaN or inf still propagates and makes the caller score every row). The
caller (:func:`urna.index.exact.screen_bound`) widens the cut-off by a proven bound on how far
a screened score can be from the exact one.

* float32: one reassociated f32 dot per row.
* float16: the halves widened in registers (``fpext half -> float``: F16C's ``vcvtph2ps``).
* int8, portable: exact integer dot of the codes with the query as int16 levels
  (:func:`_dot_i8_i16`: 32 codes sign-extended per step, the ``pmaddwd`` pattern), then
  ``* (scale * qscale)``. With VNNI (:func:`_dot_i8_vnni`): the query as int8 levels, the
  codes flipped by ``0x80`` so they read as c + 128 unsigned, one ``vpdpbusd`` per 64 codes,
  ``128 * sum(q)`` taken back off; no widening at all.
* int4, portable: per 64-component group, the 32 bytes widened to 16 bits, the nibbles read
  as value + 8 (a flip by ``0x88``, one mask, one shift), two accumulating ``pmaddwd``
  against the int16 query halves from ``-8 x`` the lanes' query sums, the 16 exact int32
  lanes converted and fused into 16 f32 lanes times the group's scale; one horizontal sum per
  row (:func:`_dot_i4_i16`). With VNNI (:func:`_dot_i4_vnni`, :func:`_block_i4_vnni`): 64
  bytes (two groups) a step, the nibbles as bytes straight into ``vpdpbusd`` against the int8
  query halves, lanes 0-7 scaled by one group's scale and 8-15 by the next; four rows at a
  time share one horizontal-sum tree. For the common widths (:data:`UNROLLED_PAIRS`) the
  whole range is one unrolled loop (:func:`_unrolled_i4_vnni`): the query's vectors stay in
  registers, a step's four rows are summed in an exact integer tree to two lanes per row and
  group before one conversion and one product per 16 lanes, and every line of the rows and
  their scales ahead is prefetched. On AVX2 without VNNI (:func:`_scan_i4_avx2`): the same
  int32 lanes from ``vpmaddubsw`` + ``vpmaddwd``, one 32-byte group at a time for four rows.

Each dtype has one row function and two loops over it: a row range (``screen_*``) and a
list of rows (``screen_*_rows``, the filtered scan); both prefetch ahead in software
(:data:`PREFETCH_BYTES`, :data:`PREFETCH_ROWS`). The loops only score: keeping a top-k
heap inside them measured 10-20% slower than one :func:`kth_largest` pass afterwards (~5% of
an int8 scan), as its branches get in the way of the streaming loads.

The portable integer screens are generic LLVM vector IR (no target intrinsics), so they lower
to whatever the CPU has (VNNI ``vpdpwssd``, AVX2 ``vpmaddwd`` or narrower); the ``*_vnni``
screens call ``vpdpbusd`` itself and the ``*_avx2`` ones ``vpmaddubsw``, each chosen only when
numba targets this CPU and it has the instructions (:data:`RUNNABLE`, :data:`SCREENS`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _row_scores_jit
from .kernel_cache import check
from .vector_ir import F32 as _F32
from .vector_ir import I8 as _I8
from .vector_ir import I16 as _I16
from .vector_ir import I32 as _I32
from .vector_ir import load as _load
from .vector_ir import nibbles as _nibbles
from .vector_ir import splat as _splat
from .vector_ir import vec as _vec

check()  # before any kernel here is called, so none loads stale cached code

_screen = numba.njit(nogil=True, cache=True, boundscheck=False,
                     fastmath={"reassoc", "contract"})
_row = numba.njit(nogil=True, cache=True, boundscheck=False, inline="always",
                  fastmath={"reassoc", "contract"})
_plain = numba.njit(nogil=True, cache=True, boundscheck=False)


def _madd(builder: ir.IRBuilder, a16: ir.Value, b16: ir.Value) -> ir.Value:
    """``pmaddwd``: 32 x int16 times 32 x int16, adjacent products summed into 16 x int32."""
    prod = builder.mul(builder.sext(a16, _vec(_I32, 32)), builder.sext(b16, _vec(_I32, 32)))
    even = ir.Constant(_vec(_I32, 16), [2 * t for t in range(16)])
    odd = ir.Constant(_vec(_I32, 16), [2 * t + 1 for t in range(16)])
    return builder.add(builder.shuffle_vector(prod, prod, even),
                       builder.shuffle_vector(prod, prod, odd))


def _reduce(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list) -> ir.Value:
    fnty = ir.FunctionType(ret, [a.type for a in args])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    return builder.call(fn, args, fastmath=("reassoc",) if ret == _F32 else ())


def _scaled(builder: ir.IRBuilder, ints: ir.Value, sc: ir.Value, g: ir.Value) -> ir.Value:
    """Exact int32 lanes as f32 times group ``g``'s f32 scale (at address ``sc + 4 g``)."""
    lanes = ints.type.count
    at = builder.add(sc, builder.mul(g, ir.Constant(sc.type, 4)))
    scale = builder.load(builder.inttoptr(at, _F32.as_pointer()), align=4)
    return builder.fmul(builder.sitofp(ints, _vec(_F32, lanes)), _splat(builder, scale, lanes),
                        flags=("contract",))


@intrinsic
def _dot_i8_i16(typingctx, row, q, steps):
    """The exact int32 dot of ``steps * 32`` int8 codes at ``row`` with int16 ``q`` (addresses)."""
    sig = types.int32(types.uintp, types.uintp, types.intp)

    def codegen(context, builder, signature, args):
        row, q, steps = args
        acc = cgutils.alloca_once_value(builder, ir.Constant(_vec(_I32, 16), None))
        with cgutils.for_range(builder, steps) as loop:
            codes = builder.sext(_load(builder, row, loop.index, 32, _vec(_I8, 32)),
                                 _vec(_I16, 32))
            part = _madd(builder, codes, _load(builder, q, loop.index, 64, _vec(_I16, 32)))
            builder.store(builder.add(builder.load(acc), part), acc)
        return _reduce(builder, "llvm.vector.reduce.add.v16i32", _I32, [builder.load(acc)])

    return sig, codegen


@intrinsic
def _dot_i4_i16(typingctx, row, qe, qo, corr, sc, groups):
    """``sum_g s_g * (nibbles_g . q_g)`` for one packed int4 row (addresses; f32 lanes).

    The bytes are flipped by ``0x88`` so each nibble reads as its value + 8 (no sign
    extension: one mask and one shift), and ``corr`` (16 int32 per group: -8 times each lane's
    query sum) takes the +8 back out of the exact integer lanes.
    """
    sig = types.float32(types.uintp, types.uintp, types.uintp, types.uintp, types.uintp,
                        types.intp)

    def codegen(context, builder, signature, args):
        row, qe, qo, corr, sc, groups = args
        acc = cgutils.alloca_once_value(builder, ir.Constant(_vec(_F32, 16), None))
        flip = ir.Constant(_vec(_I8, 32), [0x88] * 32)
        four = ir.Constant(_vec(_I16, 32), [4] * 32)
        with cgutils.for_range(builder, groups) as loop:
            g = loop.index
            w = builder.zext(builder.xor(_load(builder, row, g, 32, _vec(_I8, 32)), flip),
                             _vec(_I16, 32))
            high = builder.lshr(w, four)
            low = builder.sub(w, builder.shl(high, four))
            # (-corr + low . qe) + high . qo: two accumulating pmaddwd (vpdpwssd with VNNI)
            part = builder.add(_load(builder, corr, g, 64, _vec(_I32, 16)),
                               _madd(builder, low, _load(builder, qe, g, 64, _vec(_I16, 32))))
            part = builder.add(part,
                               _madd(builder, high, _load(builder, qo, g, 64, _vec(_I16, 32))))
            prod = _scaled(builder, part, sc, g)
            builder.store(builder.fadd(builder.load(acc), prod, flags=("contract",)), acc)
        return _reduce(builder, "llvm.vector.reduce.fadd.v16f32", _F32,
                       [ir.Constant(_F32, 0.0), builder.load(acc)])

    return sig, codegen


def _vpdpbusd(builder: ir.IRBuilder, acc: ir.Value, u8: ir.Value, s8: ir.Value) -> ir.Value:
    """AVX-512 VNNI ``vpdpbusd``: acc + the sums of 4 adjacent u8 x s8 products per lane."""
    lanes = acc.type.count
    vt = _vec(_I32, lanes)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                        f"llvm.x86.avx512.vpdpbusd.{32 * lanes}")
    return builder.call(fn, [acc, builder.bitcast(u8, vt), builder.bitcast(s8, vt)])


@intrinsic
def _dot_i8_vnni(typingctx, row, q, steps):
    """``sum (c + 128) * q`` over ``steps * 64`` int8 codes at ``row``, int8 ``q`` (VNNI)."""
    sig = types.int32(types.uintp, types.uintp, types.intp)

    def codegen(context, builder, signature, args):
        row, q, steps = args
        acc = cgutils.alloca_once_value(builder, ir.Constant(_vec(_I32, 16), None))
        flip = ir.Constant(_vec(_I8, 64), [0x80] * 64)  # c ^ 0x80 reads as c + 128 unsigned
        with cgutils.for_range(builder, steps) as loop:
            codes = builder.xor(_load(builder, row, loop.index, 64, _vec(_I8, 64)), flip)
            builder.store(_vpdpbusd(builder, builder.load(acc), codes,
                                    _load(builder, q, loop.index, 64, _vec(_I8, 64))), acc)
        return _reduce(builder, "llvm.vector.reduce.add.v16i32", _I32, [builder.load(acc)])

    return sig, codegen


def _i4_vnni_query(builder: ir.IRBuilder, qe: ir.Value, qo: ir.Value, corr: ir.Value,
                   t: ir.Value, width: int) -> tuple:
    """Step ``t``'s query vectors: the int8 halves and the ``-8 x`` lane sums (addresses)."""
    return (_load(builder, qe, t, width, _vec(_I8, width)),
            _load(builder, qo, t, width, _vec(_I8, width)),
            _load(builder, corr, t, width, _vec(_I32, width // 4)))


def _i4_vnni_step(builder: ir.IRBuilder, row: ir.Value, qe: ir.Value, qo: ir.Value,
                  corr: ir.Value, sc: ir.Value, t: ir.Value, width: int) -> ir.Value:
    """One step of ``width`` packed bytes (64: two groups, 32: one) as f32 lanes."""
    return _i4_vnni_lanes(builder, row, _i4_vnni_query(builder, qe, qo, corr, t, width), sc, t,
                          width)


def _i4_vnni_lanes(builder: ir.IRBuilder, row: ir.Value, query: tuple, sc: ir.Value,
                   t: ir.Value, width: int) -> ir.Value:
    """:func:`_i4_vnni_step` with the step's query vectors given (:func:`_i4_vnni_query`)."""
    lanes, groups = width // 4, width // 32
    low, high = _nibbles(builder, _load(builder, row, t, width, _vec(_I8, width)))
    q_even, q_odd, acc = query  # acc: -8 x the lanes' query sums
    acc = _vpdpbusd(builder, acc, low, q_even)
    acc = _vpdpbusd(builder, acc, high, q_odd)
    # the step's group scales in one load (vmovsd + one permute, not two inserts)
    scales = _load(builder, sc, t, 4 * groups, _vec(_F32, groups))
    spread = ir.Constant(_vec(_I32, lanes), [lane // 8 for lane in range(lanes)])
    scales = builder.shuffle_vector(scales, scales, spread)  # 8 lanes per group
    return builder.fmul(builder.sitofp(acc, _vec(_F32, lanes)), scales, flags=("contract",))


@intrinsic
def _dot_i4_vnni(typingctx, row, qe, qo, corr, sc, groups):
    """``sum_g s_g * (nibbles_g . q_g)`` for one packed int4 row, int8 query halves (VNNI)."""
    sig = types.float32(types.uintp, types.uintp, types.uintp, types.uintp, types.uintp,
                        types.intp)

    def codegen(context, builder, signature, args):
        row, qe, qo, corr, sc, groups = args
        acc = cgutils.alloca_once_value(builder, ir.Constant(_vec(_F32, 16), None))
        pairs = builder.sdiv(groups, ir.Constant(groups.type, 2))
        with cgutils.for_range(builder, pairs) as loop:
            prod = _i4_vnni_step(builder, row, qe, qo, corr, sc, loop.index, 64)
            builder.store(builder.fadd(builder.load(acc), prod, flags=("contract",)), acc)
        total = _reduce(builder, "llvm.vector.reduce.fadd.v16f32", _F32,
                        [ir.Constant(_F32, 0.0), builder.load(acc)])
        out = cgutils.alloca_once_value(builder, total)
        last = builder.sub(groups, ir.Constant(groups.type, 1))
        with builder.if_then(builder.icmp_signed("!=", builder.mul(
                pairs, ir.Constant(groups.type, 2)), groups)):  # an odd last group: 32 bytes
            prod = _i4_vnni_step(builder, row, qe, qo, corr, sc, last, 32)
            tail = _reduce(builder, "llvm.vector.reduce.fadd.v8f32", _F32,
                           [ir.Constant(_F32, 0.0), prod])
            builder.store(builder.fadd(builder.load(out), tail), out)
        return builder.load(out)

    return sig, codegen


BLOCK_ROWS = 4  # int4 VNNI rows a step (8 measured slower on a slab out of cache here)


def _pick(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, idx: list) -> ir.Value:
    """The lanes ``idx`` of ``a`` then ``b`` (a shuffle)."""
    return builder.shuffle_vector(a, b, ir.Constant(_vec(_I32, len(idx)), idx))


def _fadd(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    return builder.fadd(a, b, flags=("reassoc", "contract"))


def _sum4(builder: ir.IRBuilder, accs: list) -> ir.Value:
    """The horizontal sums of four 16-lane f32 vectors as one 4-lane vector (a shuffle tree)."""
    return _sum4_lanes(builder, [_fadd(builder, _pick(builder, a, a, list(range(8))),
                                       _pick(builder, a, a, list(range(8, 16))))
                                 for a in accs])


def _sum4_lanes(builder: ir.IRBuilder, x: list) -> ir.Value:
    """The horizontal sums of four 8-lane f32 vectors as one 4-lane vector (a shuffle tree)."""
    def pick(a: ir.Value, b: ir.Value, idx: list) -> ir.Value:
        return _pick(builder, a, b, idx)

    def add(a: ir.Value, b: ir.Value) -> ir.Value:
        return _fadd(builder, a, b)

    # y: 4 partial sums of row 0 then row 1 (of rows 2, 3); z: 2 of each row; then 1
    y01 = add(pick(x[0], x[1], [0, 1, 2, 3, 8, 9, 10, 11]),
              pick(x[0], x[1], [4, 5, 6, 7, 12, 13, 14, 15]))
    y23 = add(pick(x[2], x[3], [0, 1, 2, 3, 8, 9, 10, 11]),
              pick(x[2], x[3], [4, 5, 6, 7, 12, 13, 14, 15]))
    z = add(pick(y01, y23, [0, 1, 4, 5, 8, 9, 12, 13]),
            pick(y01, y23, [2, 3, 6, 7, 10, 11, 14, 15]))
    return add(pick(z, z, [0, 2, 4, 6]), pick(z, z, [1, 3, 5, 7]))


@intrinsic
def _block_i4_vnni(typingctx, row, stride, qe, qo, corr, sc, sc_stride, pairs, qscale, out):
    """``BLOCK_ROWS`` consecutive packed int4 rows from ``row`` (an even group count), times
    ``qscale``, into ``out``'s f32 (addresses): the rows' steps interleave (sharing the query
    loads) and each four share one horizontal sum tree."""
    sig = types.void(types.uintp, types.intp, types.uintp, types.uintp, types.uintp,
                     types.uintp, types.intp, types.intp, types.float32, types.uintp)

    def codegen(context, builder, signature, args):
        row, stride, qe, qo, corr, sc, sc_stride, pairs, qscale, out = args
        count = range(BLOCK_ROWS)
        rows = [builder.add(row, builder.mul(ir.Constant(row.type, r), stride)) for r in count]
        scs = [builder.add(sc, builder.mul(ir.Constant(sc.type, r), sc_stride)) for r in count]
        accs = [cgutils.alloca_once_value(builder, ir.Constant(_vec(_F32, 16), None))
                for _ in count]
        with cgutils.for_range(builder, pairs) as loop:
            for r in count:
                prod = _i4_vnni_step(builder, rows[r], qe, qo, corr, scs[r], loop.index, 64)
                builder.store(builder.fadd(builder.load(accs[r]), prod, flags=("contract",)),
                              accs[r])
        _scale_store(builder, [builder.load(a) for a in accs], qscale, out)
        return context.get_dummy_value()

    return sig, codegen


def _scale_store(builder: ir.IRBuilder, accs: list, qscale: ir.Value, out: ir.Value) -> None:
    """The four rows' sums of ``accs`` (16 f32 lanes each) times ``qscale`` into ``out``."""
    _scale_store4(builder, _sum4(builder, accs), qscale, out)


def _scale_store4(builder: ir.IRBuilder, sums: ir.Value, qscale: ir.Value,
                  out: ir.Value) -> None:
    """Four f32 ``sums`` times ``qscale`` into ``out`` (qscale in the vector: no scalar pass)."""
    builder.store(builder.fmul(sums, _splat(builder, qscale, 4)),
                  builder.inttoptr(out, _vec(_F32, 4).as_pointer()), align=1)


def _prefetch_line(builder: ir.IRBuilder, addr: ir.Value, locality: int = 3) -> None:
    """``llvm.prefetch`` (read, data) of the line at byte address ``addr``; ``locality`` 3
    keeps it in every cache level (``prefetcht0``), 2 from L2 out (``prefetcht1``)."""
    ptr = ir.IntType(8).as_pointer()
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [ptr, _I32, _I32, _I32]),
        "llvm.prefetch.p0i8")
    builder.call(fn, [builder.inttoptr(addr, ptr), ir.Constant(_I32, 0),
                      ir.Constant(_I32, locality), ir.Constant(_I32, 1)])


def _fetch_lines(builder: ir.IRBuilder, base: ir.Value, offset: ir.Value, end: ir.Value,
                 lines, locality: int) -> None:
    """Prefetch ``lines`` (a count, or an IR value) 64-byte lines from ``base + offset``,
    started no further than ``end``."""
    at = builder.add(base, offset)
    at = builder.select(builder.icmp_unsigned(">", at, end), end, at)
    if isinstance(lines, int):
        for line in range(lines):
            _prefetch_line(builder, builder.add(at, ir.Constant(at.type, 64 * line)), locality)
        return
    with cgutils.for_range(builder, lines) as loop:
        offset = builder.mul(loop.index, ir.Constant(at.type, 64))
        _prefetch_line(builder, builder.add(at, offset), locality)


# How far ahead the unrolled int4 scan prefetches every line of a block of rows (and its
# scales), and into which levels: into L2 (prefetcht1) beat into L1 (prefetcht0) at every
# distance tried (6-48 KB), a whole query 0.85-0.9x; 24 KB ahead was the best of those (A/B in
# one process). On top of that every line of the block INT4_NEAR_BLOCKS on is prefetched
# into L1: 1-6 blocks all helped, 3 most (the scan 0.87x with the scales' prefetch as well).
INT4_AHEAD_BYTES = 24 * 1024
INT4_LOCALITY = 2
INT4_NEAR_BLOCKS = 3


def _i4_vnni_ints(builder: ir.IRBuilder, row: ir.Value, query: tuple, t: ir.Value) -> ir.Value:
    """Step ``t``'s exact int32 lanes of one row (64 bytes: lanes 0-7 the step's first group,
    8-15 its second), the ``-8 x`` offsets already in (:func:`_i4_vnni_query`)."""
    low, high = _nibbles(builder, _load(builder, row, t, 64, _vec(_I8, 64)))
    q_even, q_odd, acc = query
    return _vpdpbusd(builder, _vpdpbusd(builder, acc, low, q_even), high, q_odd)


# Lane labels (row of the block, group of the step, position) of the integer tree below: a
# step's lanes, then the two rows' sums of 4 (rows 0, 1 / 2, 3), then 2 per row and group
# with the row fastest, so the block's f32 sum is two halvings of one vector.
_TREE_IN = [[(r, j // 8, j % 8) for j in range(16)] for r in range(BLOCK_ROWS)]
_TREE_MID = [[(r, g, p) for g in range(2) for r in pair for p in range(4)]
             for pair in ((0, 1), (2, 3))]
_TREE_OUT = [(r, g, p) for g in range(2) for p in range(2) for r in range(BLOCK_ROWS)]


def _tree_add(builder: ir.IRBuilder, a: tuple, b: tuple, out: list, half: int) -> tuple:
    """The lanes ``out`` (labels) from the labelled vectors ``a``, ``b``: lane (r, g, p) is
    the sum of their lanes (r, g, p) and (r, g, p + half); exact int32 adds."""
    where = {lab: i for i, lab in enumerate(a[1])}
    where.update({lab: 16 + i for i, lab in enumerate(b[1])})

    def pick(shift: int) -> ir.Value:
        idx = [where[(r, g, p + shift)] for r, g, p in out]
        return builder.shuffle_vector(a[0], b[0], ir.Constant(_vec(_I32, 16), idx))

    return builder.add(pick(0), pick(half)), out


def _i4_vnni_block_step(builder: ir.IRBuilder, rows: list, query: tuple, scales: ir.Value,
                        groups: int, t: int) -> ir.Value:
    """Step ``t`` of a block of 4 rows as 16 f32 lanes: the rows' int32 lanes summed in an
    integer tree to 2 per row and group (still exact: |lane| <= 32 x 8 x 127 < 2^24), then
    converted and times their group's scale (``scales``: the block's, row by row)."""
    step = ir.Constant(rows[0].type, t)
    v = [(_i4_vnni_ints(builder, rows[r], query, step), _TREE_IN[r]) for r in range(BLOCK_ROWS)]
    low = _tree_add(builder, v[0], v[1], _TREE_MID[0], 4)
    high = _tree_add(builder, v[2], v[3], _TREE_MID[1], 4)
    ints, _ = _tree_add(builder, low, high, _TREE_OUT, 2)
    spread = [r * groups + 2 * t + g for r, g, _ in _TREE_OUT]
    sc = builder.shuffle_vector(scales, scales, ir.Constant(_vec(_I32, 16), spread))
    return builder.fmul(builder.sitofp(ints, _vec(_F32, 16)), sc, flags=("contract",))


def _unrolled_i4_vnni(pairs: int):
    """An intrinsic scanning ``blocks`` blocks of ``BLOCK_ROWS`` packed int4 rows of ``pairs``
    64-byte steps (VNNI): the steps unrolled, so the query's vectors are loaded once into
    registers for every row; a step's four rows share one integer tree and one conversion
    and product per 16 lanes (:func:`_i4_vnni_block_step`); every line of the block (and its
    scales) ``ahead`` bytes on prefetched into L2, of the block ``INT4_NEAR_BLOCKS`` on into
    L1 (no further than ``last``, the address of the last block; ``sc_last`` of its scales)."""
    groups = 2 * pairs
    sc_lines = -(-4 * groups * BLOCK_ROWS // 64)  # consecutive blocks: every line covered

    @intrinsic
    def scan(typingctx, row, stride, qe, qo, corr, sc, sc_stride, qscale, out, blocks, ahead,
             last, sc_last):
        sig = types.void(types.uintp, types.intp, types.uintp, types.uintp, types.uintp,
                         types.uintp, types.intp, types.float32, types.uintp, types.intp,
                         types.intp, types.uintp, types.uintp)

        def codegen(context, builder, signature, args):
            (row, stride, qe, qo, corr, sc, sc_stride, qscale, out, blocks, ahead, last,
             sc_last) = args
            query = [_i4_vnni_query(builder, qe, qo, corr, ir.Constant(row.type, t), 64)
                     for t in range(pairs)]
            block = builder.mul(stride, ir.Constant(stride.type, BLOCK_ROWS))
            sc_block = builder.mul(sc_stride, ir.Constant(sc_stride.type, BLOCK_ROWS))
            sc_ahead = builder.mul(builder.sdiv(ahead, stride), sc_stride)
            near = builder.mul(block, ir.Constant(block.type, INT4_NEAR_BLOCKS))

            with cgutils.for_range(builder, blocks) as loop:
                first = builder.add(row, builder.mul(loop.index, block))
                scs = builder.add(sc, builder.mul(loop.index, sc_block))
                _fetch_lines(builder, first, ahead, last, BLOCK_ROWS * pairs, INT4_LOCALITY)
                _fetch_lines(builder, scs, sc_ahead, sc_last, sc_lines, INT4_LOCALITY)
                _fetch_lines(builder, first, near, last, BLOCK_ROWS * pairs, 3)
                rows = [builder.add(first, builder.mul(ir.Constant(row.type, r), stride))
                        for r in range(BLOCK_ROWS)]
                ptr = builder.inttoptr(scs, _vec(_F32, BLOCK_ROWS * groups).as_pointer())
                scales = builder.load(ptr, align=4)  # the block's scales, row by row
                acc = None
                for t in range(pairs):
                    prod = _i4_vnni_block_step(builder, rows, query[t], scales, groups, t)
                    acc = prod if acc is None else builder.fadd(acc, prod, flags=("contract",))
                _store4(builder, acc, qscale,
                        builder.add(out, builder.mul(loop.index,
                                                     ir.Constant(out.type, 4 * BLOCK_ROWS))))
            return context.get_dummy_value()

        return sig, codegen

    return scan


def _store4(builder: ir.IRBuilder, acc: ir.Value, qscale: ir.Value, out: ir.Value) -> None:
    """The four rows' sums of ``acc`` (16 f32 lanes, the row fastest) times ``qscale``."""
    half = _fadd(builder, _pick(builder, acc, acc, list(range(8))),
                 _pick(builder, acc, acc, list(range(8, 16))))
    sums = _fadd(builder, _pick(builder, half, half, [0, 1, 2, 3]),
                 _pick(builder, half, half, [4, 5, 6, 7]))
    _scale_store4(builder, sums, qscale, out)


# Step counts (dims 128 ... 2048) with an unrolled int4 VNNI scan; other widths take the
# generic block loop. With the query in registers and every line prefetched the scan of
# 100,000 x 384 took ~0.75x the CPU time of that loop (A/B in one process).
UNROLLED_PAIRS = (1, 2, 3, 4, 6, 8, 12, 16)
_SCAN_1, _SCAN_2, _SCAN_3, _SCAN_4, _SCAN_6, _SCAN_8, _SCAN_12, _SCAN_16 = (
    _unrolled_i4_vnni(p) for p in UNROLLED_PAIRS)


# --- int4 on AVX2 (no VNNI) ------------------------------------------------------------------
#
# The same exact int32 lanes as the VNNI screen (lane i: bytes 4i..4i+3 of a 32-byte group,
# the -8 x offsets added), from ``vpmaddubsw`` + ``vpmaddwd``, one 32-byte group at a time;
# each group's 8 lanes converted and fused into 8 f32 lanes times its scale. Four rows a step
# share the group's query vectors (16 ymm registers hold them, the four accumulators and the
# masks; the VNNI loop's query for a whole row would spill) and one horizontal-sum tree.

def _nibble_dot_avx2(builder: ir.IRBuilder, low: ir.Value, q_even: ir.Value, high: ir.Value,
                     q_odd: ir.Value) -> ir.Value:
    """The 8 int32 lanes of ``vpdpbusd(vpdpbusd(0, low, q_even), high, q_odd)`` for 32 nibble
    bytes (each <= 15): two ``vpmaddubsw`` (a pair's |sum| <= 2 x 15 x 128, the two sums'
    <= 7,680: int16, never saturated), their sum, one ``vpmaddwd`` by ones."""
    b32, w16, d8 = _vec(_I8, 32), _vec(_I16, 16), _vec(_I32, 8)
    ubsw = cgutils.get_or_insert_function(builder.module, ir.FunctionType(w16, [b32, b32]),
                                          "llvm.x86.avx2.pmadd.ub.sw")
    wd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d8, [w16, w16]),
                                        "llvm.x86.avx2.pmadd.wd")
    pairs = builder.add(builder.call(ubsw, [low, q_even]), builder.call(ubsw, [high, q_odd]))
    return builder.call(wd, [pairs, ir.Constant(w16, [1] * 16)])


def _i4_avx2_group(builder: ir.IRBuilder, row: ir.Value, g: ir.Value, query: tuple) -> ir.Value:
    """Group ``g`` of one packed int4 row as its 8 exact int32 lanes (offsets taken off)."""
    low, high = _nibbles(builder, _load(builder, row, g, 32, _vec(_I8, 32)))
    q_even, q_odd, corr = query
    return builder.add(_nibble_dot_avx2(builder, low, q_even, high, q_odd), corr)


def _i4_avx2_query(builder: ir.IRBuilder, qe: ir.Value, qo: ir.Value, corr: ir.Value,
                   g: ir.Value) -> tuple:
    """Group ``g``'s query vectors: the int8 halves and the 8 lanes' ``-8 x`` sums."""
    return (_load(builder, qe, g, 32, _vec(_I8, 32)), _load(builder, qo, g, 32, _vec(_I8, 32)),
            _load(builder, corr, g, 32, _vec(_I32, 8)))


@intrinsic
def _dot_i4_avx2(typingctx, row, qe, qo, corr, sc, groups):
    """``sum_g s_g * (nibbles_g . q_g)`` for one packed int4 row, int8 query halves (AVX2)."""
    sig = types.float32(types.uintp, types.uintp, types.uintp, types.uintp, types.uintp,
                        types.intp)

    def codegen(context, builder, signature, args):
        row, qe, qo, corr, sc, groups = args
        acc = cgutils.alloca_once_value(builder, ir.Constant(_vec(_F32, 8), None))
        with cgutils.for_range(builder, groups) as loop:
            g = loop.index
            ints = _i4_avx2_group(builder, row, g, _i4_avx2_query(builder, qe, qo, corr, g))
            prod = _scaled(builder, ints, sc, g)
            builder.store(builder.fadd(builder.load(acc), prod, flags=("contract",)), acc)
        return _reduce(builder, "llvm.vector.reduce.fadd.v8f32", _F32,
                       [ir.Constant(_F32, 0.0), builder.load(acc)])

    return sig, codegen


@intrinsic
def _scan_i4_avx2(typingctx, row, stride, qe, qo, corr, sc, sc_stride, groups, qscale, out,
                  blocks, ahead, last, sc_last):
    """``blocks`` blocks of ``BLOCK_ROWS`` packed int4 rows from ``row`` times ``qscale`` into
    ``out`` (addresses): per group, its query vectors loaded once for the block's four rows;
    every line of the block ``ahead`` bytes on (and of its scales) prefetched into L2, of the
    block ``INT4_NEAR_BLOCKS`` on into L1 (no further than ``last`` / ``sc_last``)."""
    sig = types.void(types.uintp, types.intp, types.uintp, types.uintp, types.uintp,
                     types.uintp, types.intp, types.intp, types.float32, types.uintp,
                     types.intp, types.intp, types.uintp, types.uintp)

    def codegen(context, builder, signature, args):
        (row, stride, qe, qo, corr, sc, sc_stride, groups, qscale, out, blocks, ahead, last,
         sc_last) = args
        count = range(BLOCK_ROWS)
        block = builder.mul(stride, ir.Constant(stride.type, BLOCK_ROWS))
        sc_block = builder.mul(sc_stride, ir.Constant(sc_stride.type, BLOCK_ROWS))
        sc_ahead = builder.mul(builder.sdiv(ahead, stride), sc_stride)
        near = builder.mul(block, ir.Constant(block.type, INT4_NEAR_BLOCKS))
        line = ir.Constant(block.type, 64)
        lines = builder.sdiv(builder.add(block, ir.Constant(block.type, 63)), line)
        sc_lines = builder.sdiv(builder.add(sc_block, ir.Constant(block.type, 63)), line)
        accs = [cgutils.alloca_once_value(builder, ir.Constant(_vec(_F32, 8), None))
                for _ in count]
        with cgutils.for_range(builder, blocks) as loop:
            first = builder.add(row, builder.mul(loop.index, block))
            scs = builder.add(sc, builder.mul(loop.index, sc_block))
            _fetch_lines(builder, first, ahead, last, lines, INT4_LOCALITY)
            _fetch_lines(builder, scs, sc_ahead, sc_last, sc_lines, INT4_LOCALITY)
            _fetch_lines(builder, first, near, last, lines, 3)
            rows = [builder.add(first, builder.mul(ir.Constant(row.type, r), stride))
                    for r in count]
            row_scs = [builder.add(scs, builder.mul(ir.Constant(sc.type, r), sc_stride))
                       for r in count]
            for acc in accs:
                builder.store(ir.Constant(_vec(_F32, 8), None), acc)
            with cgutils.for_range(builder, groups) as group:
                g = group.index
                query = _i4_avx2_query(builder, qe, qo, corr, g)
                for r in count:
                    prod = _scaled(builder, _i4_avx2_group(builder, rows[r], g, query),
                                   row_scs[r], g)
                    builder.store(builder.fadd(builder.load(accs[r]), prod,
                                               flags=("contract",)), accs[r])
            at = builder.add(out, builder.mul(loop.index, ir.Constant(out.type, 4 * BLOCK_ROWS)))
            _scale_store4(builder, _sum4_lanes(builder, [builder.load(a) for a in accs]),
                          qscale, at)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _half_to_f32(typingctx, h):
    """Exact binary16 bits -> binary32 (one ``fpext``; vectorises to ``vcvtph2ps``)."""
    sig = types.float32(types.uint16)

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return sig, codegen


@intrinsic
def _prefetch(typingctx, addr):
    """A software prefetch of the cache line at byte address ``addr`` (never faults)."""
    sig = types.void(types.uintp)

    def codegen(context, builder, signature, args):
        _prefetch_line(builder, args[0])
        return context.get_dummy_value()

    return sig, codegen


# How far ahead a range scan prefetches (one line a row). The hardware prefetchers stop at
# each 4 KB page, so a scan of the mapped slab waits on a TLB walk and DRAM at every page; one
# software prefetch per row this far ahead took the float32 scan from 1.08-1.25x to 0.85-0.94x
# numpy's plain sum over the same bytes (32-256 rows ahead all did).
PREFETCH_BYTES = 96 * 1024
# Rows ahead a row list (the filtered scan) prefetches, the first line of each: a list of 2-10%
# of the rows then screened 1.3-4x faster (all lines of each measured no better).
PREFETCH_ROWS = 8


@_row
def _ahead(A, i, hi):
    """Prefetch the start of the row ``PREFETCH_BYTES`` past row ``i`` (clamped below ``hi``)."""
    step = max(1, PREFETCH_BYTES // max(1, A.strides[0]))
    _prefetch(A.ctypes.data + min(i + step, hi - 1) * A.strides[0])


@_row
def _ahead_lines(A, i, hi):
    """Prefetch every line of the row ``PREFETCH_BYTES`` past row ``i`` (clamped below ``hi``)."""
    step = max(1, PREFETCH_BYTES // max(1, A.strides[0]))
    base = A.ctypes.data + min(i + step, hi - 1) * A.strides[0]
    for offset in range(0, A.strides[0], 64):
        _prefetch(base + offset)


@_row
def _ahead_rows(A, rows, t, hi):
    """Prefetch the start of the row ``PREFETCH_ROWS`` further down the list ``rows``."""
    _prefetch(A.ctypes.data + rows[min(t + PREFETCH_ROWS, hi - 1)] * A.strides[0])


# --- one row ----------------------------------------------------------------------------------

@_row
def _row_f32(M, q, i):
    acc = np.float32(0.0)
    for j in range(M.shape[1]):
        acc += M[i, j] * q[j]
    return acc


@_row
def _row_f16(H, q, i):
    acc = np.float32(0.0)
    for j in range(H.shape[1]):
        acc += _half_to_f32(H[i, j]) * q[j]
    return acc


@_row
def _row_i8(C, scales, qi, qscale, i):
    d = C.shape[1]
    steps = d // 32
    acc = _dot_i8_i16(C.ctypes.data + i * C.strides[0], qi.ctypes.data, steps)
    for j in range(steps * 32, d):  # the tail of a width that is not a multiple of 32
        acc += np.int32(C[i, j]) * np.int32(qi[j])
    return np.float32(acc) * (scales[i] * qscale)  # |acc| < 2^31 by the levels


@_row
def _row_i4(P, scales, qe, qo, corr, qscale, i):
    got = _dot_i4_i16(P.ctypes.data + i * P.strides[0], qe.ctypes.data, qo.ctypes.data,
                      corr.ctypes.data, scales.ctypes.data + i * scales.strides[0],
                      scales.shape[1])
    return got * qscale


@_row
def _row_i8_vnni(C, scales, q8, qfix, qscale, i):
    d = C.shape[1]
    steps = d // 64
    acc = _dot_i8_vnni(C.ctypes.data + i * C.strides[0], q8.ctypes.data, steps) - qfix
    for j in range(steps * 64, d):
        acc += np.int32(C[i, j]) * np.int32(q8[j])
    return np.float32(acc) * (scales[i] * qscale)  # |acc| <= 255 * 127 * dim < 2^31


@_row
def _row_i4_vnni(P, scales, qe, qo, corr, qscale, i):
    got = _dot_i4_vnni(P.ctypes.data + i * P.strides[0], qe.ctypes.data, qo.ctypes.data,
                       corr.ctypes.data, scales.ctypes.data + i * scales.strides[0],
                       scales.shape[1])
    return got * qscale


@_row
def _row_i4_avx2(P, scales, qe, qo, corr, qscale, i):
    got = _dot_i4_avx2(P.ctypes.data + i * P.strides[0], qe.ctypes.data, qo.ctypes.data,
                       corr.ctypes.data, scales.ctypes.data + i * scales.strides[0],
                       scales.shape[1])
    return got * qscale


# --- loops: a row range, or a list of rows ----------------------------------------------------

@_screen
def screen_f32(M, q, lo, hi, out):
    """``out[i] ~ M[i] . q`` for rows ``lo..hi`` (float32 rows)."""
    for i in range(lo, hi):
        _ahead(M, i, hi)
        out[i] = _row_f32(M, q, i)


@_screen
def screen_f32_rows(M, q, rows, lo, hi, out):
    """``out[t] ~ M[rows[t]] . q`` for ``t`` in ``lo..hi``."""
    for t in range(lo, hi):
        _ahead_rows(M, rows, t, hi)
        out[t] = _row_f32(M, q, rows[t])


@_screen
def screen_f16(H, q, lo, hi, out):
    """``out[i] ~ H[i] . q`` for rows ``lo..hi`` (float16 rows as their uint16 bits)."""
    for i in range(lo, hi):
        _ahead(H, i, hi)
        out[i] = _row_f16(H, q, i)


@_screen
def screen_f16_rows(H, q, rows, lo, hi, out):
    """``out[t] ~ H[rows[t]] . q`` for ``t`` in ``lo..hi``."""
    for t in range(lo, hi):
        _ahead_rows(H, rows, t, hi)
        out[t] = _row_f16(H, q, rows[t])


@_screen
def screen_i8(C, scales, qi, qscale, lo, hi, out):
    """``out[i] ~ scales[i] * qscale * (C[i] . qi)``: exact integer dot, then two f32 products."""
    for i in range(lo, hi):
        _ahead(C, i, hi)
        out[i] = _row_i8(C, scales, qi, qscale, i)


@_screen
def screen_i8_rows(C, scales, qi, qscale, rows, lo, hi, out):
    """``out[t]`` for row ``rows[t]``, ``t`` in ``lo..hi`` (as :func:`screen_i8`)."""
    for t in range(lo, hi):
        _ahead_rows(C, rows, t, hi)
        out[t] = _row_i8(C, scales, qi, qscale, rows[t])


@_screen
def screen_i4(P, scales, qe, qo, corr, qscale, lo, hi, out):
    """int4 rows (packed nibbles, f32 group scales) against the int16 query halves ``qe``/``qo``.

    ``out[i] ~ qscale * sum_g s_g * part_g``; ``part_g`` exact integers in 16 lanes per group.
    """
    for i in range(lo, hi):
        _ahead(P, i, hi)
        out[i] = _row_i4(P, scales, qe, qo, corr, qscale, i)


@_screen
def screen_i4_rows(P, scales, qe, qo, corr, qscale, rows, lo, hi, out):
    """``out[t]`` for row ``rows[t]``, ``t`` in ``lo..hi`` (as :func:`screen_i4`)."""
    for t in range(lo, hi):
        _ahead_rows(P, rows, t, hi)
        out[t] = _row_i4(P, scales, qe, qo, corr, qscale, rows[t])


@_screen
def screen_f16_lines(H, q, lo, hi, out):
    """As :func:`screen_f16`, every line of a row prefetched (:func:`_ahead_lines`)."""
    for i in range(lo, hi):
        _ahead_lines(H, i, hi)
        out[i] = _row_f16(H, q, i)


@_screen
def screen_i8_lines(C, scales, qi, qscale, lo, hi, out):
    """As :func:`screen_i8`, every line of a row prefetched (:func:`_ahead_lines`)."""
    for i in range(lo, hi):
        _ahead_lines(C, i, hi)
        out[i] = _row_i8(C, scales, qi, qscale, i)


@_screen
def screen_i8_vnni(C, scales, q8, qfix, qscale, lo, hi, out):
    """As :func:`screen_i8` with an int8 query: ``vpdpbusd`` on the codes read as c + 128."""
    for i in range(lo, hi):
        _ahead(C, i, hi)
        out[i] = _row_i8_vnni(C, scales, q8, qfix, qscale, i)


@_screen
def screen_i8_vnni_rows(C, scales, q8, qfix, qscale, rows, lo, hi, out):
    """``out[t]`` for row ``rows[t]``, ``t`` in ``lo..hi`` (as :func:`screen_i8_vnni`)."""
    for t in range(lo, hi):
        _ahead_rows(C, rows, t, hi)
        out[t] = _row_i8_vnni(C, scales, q8, qfix, qscale, rows[t])


@_row
def _scan_unrolled(P, scales, qe, qo, corr, qscale, lo, blocks, hi, out):
    """``blocks`` blocks of rows from ``lo`` by the unrolled scan of this width; False when
    there is none (:data:`UNROLLED_PAIRS`)."""
    pairs = scales.shape[1] // 2
    stride, sc_stride = P.strides[0], scales.strides[0]
    row, sc = P.ctypes.data + lo * stride, scales.ctypes.data + lo * sc_stride
    q = (qe.ctypes.data, qo.ctypes.data, corr.ctypes.data)
    at = out.ctypes.data + lo * 4
    ahead = max(BLOCK_ROWS, INT4_AHEAD_BYTES // max(1, stride)) * stride
    last = P.ctypes.data + (hi - BLOCK_ROWS) * stride
    sc_last = scales.ctypes.data + (hi - BLOCK_ROWS) * sc_stride
    if pairs == 3:
        _SCAN_3(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 6:
        _SCAN_6(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 4:
        _SCAN_4(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 8:
        _SCAN_8(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 2:
        _SCAN_2(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 1:
        _SCAN_1(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 12:
        _SCAN_12(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    elif pairs == 16:
        _SCAN_16(row, stride, *q, sc, sc_stride, qscale, at, blocks, ahead, last, sc_last)
    else:
        return False
    return True


@_screen
def screen_i4_vnni(P, scales, qe, qo, corr, qscale, lo, hi, out):
    """As :func:`screen_i4` with int8 query halves: ``vpdpbusd`` on the nibbles read as c + 8."""
    groups = scales.shape[1]
    start = lo
    blocks = (hi - lo) // BLOCK_ROWS
    if groups % 2 == 0 and blocks > 0 and _scan_unrolled(P, scales, qe, qo, corr, qscale,
                                                         lo, blocks, hi, out):
        start = lo + blocks * BLOCK_ROWS
    elif groups % 2 == 0:  # blocks of BLOCK_ROWS rows, then the rest one by one
        pairs = groups // 2
        for i in range(lo, hi - BLOCK_ROWS + 1, BLOCK_ROWS):
            _ahead(P, i, hi)
            _block_i4_vnni(P.ctypes.data + i * P.strides[0], P.strides[0], qe.ctypes.data,
                           qo.ctypes.data, corr.ctypes.data,
                           scales.ctypes.data + i * scales.strides[0], scales.strides[0],
                           pairs, qscale, out.ctypes.data + i * 4)
            start = i + BLOCK_ROWS
    for i in range(start, hi):
        out[i] = _row_i4_vnni(P, scales, qe, qo, corr, qscale, i)


@_screen
def screen_i4_vnni_rows(P, scales, qe, qo, corr, qscale, rows, lo, hi, out):
    """``out[t]`` for row ``rows[t]``, ``t`` in ``lo..hi`` (as :func:`screen_i4_vnni`)."""
    for t in range(lo, hi):
        _ahead_rows(P, rows, t, hi)
        out[t] = _row_i4_vnni(P, scales, qe, qo, corr, qscale, rows[t])


@_screen
def screen_i4_avx2(P, scales, qe, qo, corr, qscale, lo, hi, out):
    """As :func:`screen_i4_vnni` on AVX2: the same int32 lanes from ``vpmaddubsw`` +
    ``vpmaddwd``, blocks of ``BLOCK_ROWS`` rows group by group (:func:`_scan_i4_avx2`)."""
    blocks = (hi - lo) // BLOCK_ROWS
    if blocks > 0:
        stride, sc_stride = P.strides[0], scales.strides[0]
        ahead = max(BLOCK_ROWS, INT4_AHEAD_BYTES // max(1, stride)) * stride
        _scan_i4_avx2(P.ctypes.data + lo * stride, stride, qe.ctypes.data, qo.ctypes.data,
                      corr.ctypes.data, scales.ctypes.data + lo * sc_stride, sc_stride,
                      scales.shape[1], qscale, out.ctypes.data + lo * 4, blocks, ahead,
                      P.ctypes.data + (hi - BLOCK_ROWS) * stride,
                      scales.ctypes.data + (hi - BLOCK_ROWS) * sc_stride)
    for i in range(lo + blocks * BLOCK_ROWS, hi):
        out[i] = _row_i4_avx2(P, scales, qe, qo, corr, qscale, i)


@_screen
def screen_i4_avx2_rows(P, scales, qe, qo, corr, qscale, rows, lo, hi, out):
    """``out[t]`` for row ``rows[t]``, ``t`` in ``lo..hi`` (as :func:`screen_i4_avx2`)."""
    for t in range(lo, hi):
        _ahead_rows(P, rows, t, hi)
        out[t] = _row_i4_avx2(P, scales, qe, qo, corr, qscale, rows[t])


@_plain
def quantise_query(q, levels, head, lane, qi, qe, qo, corr):
    """The query as integer ``levels`` into ``qi`` (and, for int4, its halves ``qe`` / ``qo``
    and the ``-8 x`` lane sums ``corr``, ``lane`` bytes a lane); returns ``(qscale,
    |q - q'|, |q'|, 128 x the sum of qi[:head], |q|)`` with the norms in f64, rounded up."""
    top = 0.0
    for j in range(q.shape[0]):
        top = max(top, abs(np.float64(q[j])))
    qscale = np.float32(top / levels) if top > 0 else np.float32(1.0)
    if not np.isfinite(qscale) or qscale == 0:
        qscale = np.float32(1.0)
    step = np.float64(qscale)
    err2 = 0.0
    norm2 = 0.0
    qnorm2 = 0.0
    fix = 0
    for j in range(q.shape[0]):
        qnorm2 += np.float64(q[j]) * np.float64(q[j])
        v = min(max(np.rint(np.float64(q[j]) / step), -levels), levels)
        if not np.isfinite(v):
            v = 0.0  # a NaN query: err below is NaN too, and the caller scans every row
        qi[j] = v
        part = v * step  # exact: 16 x 24 bits
        err2 += (np.float64(q[j]) - part) ** 2
        norm2 += part * part
        if j < head:
            fix += 128 * np.int64(v)
    for c in range(qe.shape[0]):
        qe[c] = qi[2 * c]
        qo[c] = qi[2 * c + 1]
    for t in range(corr.shape[0]):
        acc = 0
        for b in range(lane):
            acc += np.int32(qe[t * lane + b]) + np.int32(qo[t * lane + b])
        corr[t] = -8 * acc
    return (qscale, np.sqrt(err2) * (1 + 1e-9), np.sqrt(norm2) * (1 + 1e-9), fix,
            np.sqrt(qnorm2) * (1 + 1e-9))


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


@_plain
def _key(b):
    """An f32's bits as an int32 that sorts as the float does (-0.0 just below +0.0)."""
    return b ^ ((b >> np.int32(31)) & np.int32(0x7FFFFFFF))


@_plain
def _block_max(bits, lo, hi):
    """The largest key of ``bits[lo:hi]`` and whether any of them is inf or NaN (1 / 0)."""
    top = np.int32(-2 ** 31)
    bad = np.int32(0)
    block = bits[lo:hi]  # (a slice vectorises; indexing bits[lo + t] does not)
    for t in range(block.shape[0]):  # integers only: a vector max and or
        b = block[t]
        v = _key(b)
        top = v if v > top else top  # (builtin max does not vectorise here)
        bad |= (((b >> np.int32(23)) & np.int32(0xFF)) + np.int32(1)) >> np.int32(8)
    return top, bad


_SELECT_BLOCK = 128  # scores per block: a block whose largest key cannot matter is skipped


@_plain
def screened_rows(bits, k, delta2, cand):
    """The rows whose screened score is >= the k-th largest minus ``delta2``, rounded down in
    f32 (the caller's proven cut), written to ``cand`` in order; returns their count, or -1
    when a score is inf or NaN. ``bits`` are the f32 scores viewed as int32, 1 <= k <= n."""
    n = bits.shape[0]
    heap = np.empty(k, dtype=np.int32)  # a min-heap of the k largest keys so far
    for t in range(k):
        heap[t] = _key(bits[t])
    for start in range(k // 2 - 1, -1, -1):
        _sift(heap, start, k)
    top = heap[0]
    bad = np.int32(0)
    # each block's largest key, kept for the cut below: the scores are read once for both
    maxima = np.empty((n + _SELECT_BLOCK - 1) // _SELECT_BLOCK, dtype=np.int32)
    for b in range(maxima.shape[0]):
        lo = b * _SELECT_BLOCK
        hi = min(n, lo + _SELECT_BLOCK)
        most, worse = _block_max(bits, lo, hi)
        maxima[b] = most
        bad |= worse
        if most > top:
            for j in range(max(lo, k), hi):  # the first k are in the heap already
                v = _key(bits[j])
                if v > top:
                    heap[0] = v
                    _sift(heap, 0, k)
                    top = heap[0]
    if bad:
        return -1
    f = np.empty(1, dtype=np.float32)
    fb = f.view(np.int32)
    fb[0] = _key(top)  # the key map is its own inverse
    x = np.float64(f[0]) - delta2
    f[0] = np.float32(x)
    if np.float64(f[0]) > x:  # one step down: an f32 compare must not lose a row
        if f[0] == 0:
            fb[0] = np.int32(-2 ** 31 + 1)  # the negative subnormal closest to 0
        elif f[0] > 0:
            fb[0] -= 1
        else:
            fb[0] += 1
    cut = np.int32(-1) if f[0] == 0 else _key(fb[0])  # -0.0 and +0.0 both pass a zero cut
    count = 0
    for b in range(maxima.shape[0]):
        lo = b * _SELECT_BLOCK
        hi = min(n, lo + _SELECT_BLOCK)
        if maxima[b] >= cut:
            for j in range(lo, hi):
                if _key(bits[j]) >= cut:
                    cand[count] = j
                    count += 1
    return count


@_plain
def _ranked(cand, scores, k, ids, best):
    """The first ``k`` of ``cand`` by (score desc, row asc) into ``ids`` / ``best``; returns
    how many, or -1 when a score is NaN (the caller ranks in numpy then)."""
    count = cand.shape[0]
    neg = np.empty(count, dtype=np.float32)
    negative_zero = np.zeros(count, dtype=np.int8)
    any_negative_zero = False
    ascending = True
    for j in range(count):
        s = scores[j]
        if s != s:
            return -1
        neg[j] = -s
        if s == 0 and math.copysign(1.0, s) < 0:  # total order: -0.0 ranks after +0.0
            negative_zero[j] = 1
            any_negative_zero = True
        if j and cand[j] < cand[j - 1]:
            ascending = False
    order = np.arange(count)
    if not ascending:  # a row list in any order: by row first, so the stable sorts below
        order = np.argsort(cand, kind="mergesort")  # break score ties by row
    if any_negative_zero:
        order = order[np.argsort(negative_zero[order], kind="mergesort")]
    order = order[np.argsort(neg[order], kind="mergesort")]
    m = min(k, count)
    for j in range(m):
        ids[j] = cand[order[j]]
        best[j] = scores[order[j]]
    return m


@_plain
def _candidates(s, k, delta2, rows, mapped, found):
    """:func:`screened_rows` of the screen ``s``, as slab rows (``rows[t]`` when ``mapped``)."""
    count = screened_rows(s.view(np.int32), k, delta2, found)
    if count > 0 and mapped:
        for j in range(count):
            found[j] = rows[found[j]]
    return count


# After a screen, per dtype: the cut, the exact per-row kernel (_row_scores_jit, the same
# bits as row_scores) on the rows past it, and the ranking, in one call: the Python steps
# this replaces cost ~0.15-0.3 ms a query, most of an int4 scan's floor.

@_plain
def finish_f32(M, q, s, k, delta2, rows, mapped, found, exact, ids, best):
    """The exact top-k of float32 rows ``M`` from the screen ``s``; returns how many, or -1."""
    count = _candidates(s, k, delta2, rows, mapped, found)
    if count < 0:
        return -1
    _row_scores_jit.f32(M, q, found[:count], exact[:count])
    return _ranked(found[:count], exact[:count], k, ids, best)


@_plain
def finish_f16(H, q, s, k, delta2, rows, mapped, found, exact, ids, best):
    """As :func:`finish_f32` for float16 rows (their uint16 bits)."""
    count = _candidates(s, k, delta2, rows, mapped, found)
    if count < 0:
        return -1
    _row_scores_jit.f16(H, q, found[:count], exact[:count])
    return _ranked(found[:count], exact[:count], k, ids, best)


@_plain
def finish_i8(C, scales, q, s, k, delta2, rows, mapped, found, exact, ids, best):
    """As :func:`finish_f32` for int8 rows."""
    count = _candidates(s, k, delta2, rows, mapped, found)
    if count < 0:
        return -1
    _row_scores_jit.i8(C, scales, q, found[:count], exact[:count])
    return _ranked(found[:count], exact[:count], k, ids, best)


@_plain
def finish_i4(P, scales, q, s, k, delta2, rows, mapped, found, exact, ids, best):
    """As :func:`finish_f32` for int4 rows (f32 group scales)."""
    count = _candidates(s, k, delta2, rows, mapped, found)
    if count < 0:
        return -1
    _row_scores_jit.i4(P, scales, q, found[:count], exact[:count])
    return _ranked(found[:count], exact[:count], k, ids, best)


# A whole single-thread query, screen and finish, in one call: after a long scan every Python
# step runs from cold caches, so the few left between the two cost ~0.1 ms here.

@_plain
def top_f32(M, qs, q, k, delta2, out, found, exact, ids, best):
    """The exact top-k of every float32 row (screen with ``qs``, cut, exact rescoring with
    ``q``, ranking); returns how many, or -1 when a screened score is not finite or an exact
    one NaN. (``qs`` is ``q``: the float screens take the query as it is.)"""
    screen_f32(M, qs, 0, M.shape[0], out)
    return finish_f32(M, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_f16(H, qs, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for float16 rows (their uint16 bits)."""
    screen_f16(H, qs, 0, H.shape[0], out)
    return finish_f16(H, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i8(C, scales, qi, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for int8 rows, screened by :func:`screen_i8`."""
    screen_i8(C, scales, qi, qscale, 0, C.shape[0], out)
    return finish_i8(C, scales, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_f16_lines(H, qs, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f16`, screened by :func:`screen_f16_lines`."""
    screen_f16_lines(H, qs, 0, H.shape[0], out)
    return finish_f16(H, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i8_lines(C, scales, qi, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_i8`, screened by :func:`screen_i8_lines`."""
    screen_i8_lines(C, scales, qi, qscale, 0, C.shape[0], out)
    return finish_i8(C, scales, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i8_vnni(C, scales, q8, qfix, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for int8 rows, screened by :func:`screen_i8_vnni`."""
    screen_i8_vnni(C, scales, q8, qfix, qscale, 0, C.shape[0], out)
    return finish_i8(C, scales, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i4(P, scales, qe, qo, corr, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for int4 rows, screened by :func:`screen_i4`."""
    screen_i4(P, scales, qe, qo, corr, qscale, 0, P.shape[0], out)
    return finish_i4(P, scales, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i4_vnni(P, scales, qe, qo, corr, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for int4 rows, screened by :func:`screen_i4_vnni`."""
    screen_i4_vnni(P, scales, qe, qo, corr, qscale, 0, P.shape[0], out)
    return finish_i4(P, scales, q, out, k, delta2, found, False, found, exact, ids, best)


@_plain
def top_i4_avx2(P, scales, qe, qo, corr, qscale, q, k, delta2, out, found, exact, ids, best):
    """As :func:`top_f32` for int4 rows, screened by :func:`screen_i4_avx2`."""
    screen_i4_avx2(P, scales, qe, qo, corr, qscale, 0, P.shape[0], out)
    return finish_i4(P, scales, q, out, k, delta2, found, False, found, exact, ids, best)


def _host_features() -> dict:
    """The CPU features the compiled code may use: this CPU's when numba targets it, none when
    it targets another (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``: a cache built for other
    machines takes no target intrinsics)."""
    import os

    from llvmlite import binding

    if os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"):
        return {}
    try:
        return dict(binding.get_host_cpu_features())
    except RuntimeError:
        return {}


_RANGE = {"float32": screen_f32, "float16": screen_f16, "int8": screen_i8, "int4": screen_i4}
_ROWS = {"float32": screen_f32_rows, "float16": screen_f16_rows, "int8": screen_i8_rows,
         "int4": screen_i4_rows}
_AFTER = {"kth": kth_largest, "quantise": quantise_query, "select": screened_rows,
          "finish": {"float32": finish_f32, "float16": finish_f16, "int8": finish_i8,
                     "int4": finish_i4}}
_TOP = {"float32": top_f32, "float16": top_f16, "int8": top_i8, "int4": top_i4}
PORTABLE: dict = {"bits": {"int8": 16, "int4": 16}, "range": _RANGE, "rows": _ROWS,
                  "top": _TOP} | _AFTER
"""Generic vector IR on any CPU: the integer screens take the query as int16 levels."""
WITH_AVX2: dict = {"bits": {"int8": 16, "int4": 8},
                   "range": _RANGE | {"float16": screen_f16_lines, "int8": screen_i8_lines,
                                      "int4": screen_i4_avx2},
                   "rows": _ROWS | {"int4": screen_i4_avx2_rows},
                   "top": _TOP | {"float16": top_f16_lines, "int8": top_i8_lines,
                                  "int4": top_i4_avx2}} | _AFTER
"""AVX2: int4 as int8 query halves (``vpmaddubsw``); int8 as the portable screen (int8 codes
against an int8 query would saturate ``vpmaddubsw``'s int16 pairs). float16 and int8 rows
prefetch every line: on a Zen 3 (AVX2, 2 cores) that took int8 from 1.6-1.7x to 1.1-1.2x its
read floor and float16 from 1.28x to 1.17x, where float32 got slower (1.08x -> 1.33x: its
24 prefetches a row) and so keeps one line a row (``bench_exact.py``, one run each way)."""
WITH_VNNI: dict = {"bits": {"int8": 8, "int4": 8},
                   "range": _RANGE | {"int8": screen_i8_vnni, "int4": screen_i4_vnni},
                   "rows": _ROWS | {"int8": screen_i8_vnni_rows, "int4": screen_i4_vnni_rows},
                   "top": _TOP | {"int8": top_i8_vnni, "int4": top_i4_vnni}} | _AFTER
"""AVX-512 VNNI: the integer screens take the query as int8 levels (``vpdpbusd``)."""


def _runnable(features: dict) -> dict:
    """The screen tiers a CPU with ``features`` can run, by name, fastest first."""
    tiers = {}
    if all(features.get(f, False) for f in ("avx512f", "avx512bw", "avx512vl", "avx512vnni")):
        tiers["vnni"] = WITH_VNNI
    if features.get("avx2", False):
        tiers["avx2"] = WITH_AVX2
    tiers["portable"] = PORTABLE
    return tiers


RUNNABLE = _runnable(_host_features())
"""Every tier this machine can run (the tests run each), fastest first."""
SCREENS = next(iter(RUNNABLE.values()))
"""This machine's screens: ``bits`` (the integer query width per dtype), ``range`` and
``rows`` loops, the compiled steps around them (``kth``, ``quantise``, ``select``,
``finish``) and whole single-thread queries (``top``)."""
