"""LLVM vector IR building blocks shared by the numba kernels that read stored rows directly.

The exact scan's screens (``_scan_kernels``) and the HNSW beam's packed-row decoder
(``_hnsw_dist``) both build IR over raw row addresses: typed vectors, unaligned loads, f32
broadcasts and the int4 nibble split. Generic IR only (no target intrinsics), so every CPU
can run what these build. Imports llvmlite alone; numba is needed by the callers.
"""

from __future__ import annotations

from llvmlite import ir

I8, I16, I32, F32 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.FloatType()


def vec(t: ir.Type, n: int) -> ir.VectorType:
    """The vector type of ``n`` lanes of ``t``."""
    return ir.VectorType(t, n)


def load(builder: ir.IRBuilder, addr: ir.Value, step: ir.Value, size: int,
         vty: ir.VectorType) -> ir.Value:
    """The vector at byte address ``addr + step * size`` (unaligned)."""
    at = builder.add(addr, builder.mul(step, ir.Constant(addr.type, size)))
    return builder.load(builder.inttoptr(at, vty.as_pointer()), align=1)


def splat(builder: ir.IRBuilder, scalar: ir.Value, lanes: int) -> ir.Value:
    """``lanes`` copies of the f32 ``scalar`` (a broadcast)."""
    one = builder.insert_element(ir.Constant(vec(F32, lanes), ir.Undefined), scalar,
                                 ir.Constant(I32, 0))
    return builder.shuffle_vector(one, one, ir.Constant(vec(I32, lanes), [0] * lanes))


def nibbles(builder: ir.IRBuilder, packed: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The low and high nibbles of packed int4 bytes as bytes, each reading as its value + 8
    (the bytes flipped by ``0x88``: no sign extension, one mask, one shift)."""
    width = packed.type.count
    nib = ir.Constant(vec(I8, width), [15] * width)
    y = builder.xor(packed, ir.Constant(vec(I8, width), [0x88] * width))
    low = builder.and_(y, nib)
    return low, builder.and_(builder.lshr(y, ir.Constant(vec(I8, width), [4] * width)), nib)
