"""Vector dtypes of the embeddings section and the space bands: float32, float16, int8, int4.

02-encodings §10. Layouts (little-endian, row-major):

* float32 (id 0): ``n x dim`` f32.
* float16 (id 2): ``n x dim`` binary16, round-to-nearest-even from f32.
* int8 (id 3): ``u32 1 | u32 0 | n x f32 scale | n x dim i8``; scale = max|x| / 127.
* int4 (id 7): ``u32 1 | u32 1 | n x dim/64 f16 scale | n x dim/2 packed nibbles`` (even index
  in the low nibble); scale = f16(max|x| / 7) per 64-value group, codes against that stored scale.

Quantisation follows the reference bit for bit: arithmetic in f32, rounding half away from zero
(done in float64, exact for f32 inputs; ``np.round`` would round ties to even), a NaN product
gives code 0 and a NaN is skipped by the max |x| of its row or group. Views are zero-copy numpy
arrays over the payload; every size is checked with Python ints against the reference's 64-bit
overflow rule before a view is made (``vector_checks``, which also holds the NaN/Inf walk, so a
reader can check a slab without importing numpy).
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import (
    InvalidInput,
    MalformedSectionPayload,
    UnsupportedDType,
    UnsupportedSectionEncoding,
)
from ..dtypes import INT4_BLOCK, DType
from ..layout import ENCODING_FLOAT16, ENCODING_FLOAT32, ENCODING_INT4, ENCODING_INT8
from .vector_checks import (
    INT4_SCALE_KIND,
    INT8_SCALE_KIND,
    PAYLOAD_VERSION,
    PREFIX_SIZE,
    check_head,
    check_int4_dim,
    check_size,
)

_HEAD = struct.Struct("<II")


def _round_half_away(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    return np.sign(wide) * np.floor(np.abs(wide) + 0.5)


def _codes(products: np.ndarray, limit: int) -> np.ndarray:
    rounded = np.clip(_round_half_away(products), -limit, limit)
    return np.where(np.isnan(rounded), 0.0, rounded).astype(np.int8)


def _absmax(values: np.ndarray, axis: int) -> np.ndarray:
    """max |x| along ``axis`` with NaN skipped (0 for an all-NaN run), as the reference's
    comparison fold finds it; only space bands can hold NaN (the text embeddings refuse it)."""
    magnitude = np.abs(values)
    return np.where(np.isnan(magnitude), np.float32(0.0), magnitude).max(axis=axis)


def _as_matrix(matrix: np.ndarray) -> np.ndarray:
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim != 2:
        raise InvalidInput(f"embeddings must be a 2-d matrix, got {arr.ndim} dimensions")
    return arr


def encode_float16(matrix: np.ndarray) -> bytes:
    """float16 slab: round-to-nearest-even binary16 of every f32 value."""
    with np.errstate(over="ignore"):  # overflow to +-inf is the reference's result too
        return _as_matrix(matrix).astype("<f2").tobytes()


def encode_int8(matrix: np.ndarray) -> bytes:
    """int8 payload: per-row scale ``max|x| / 127``, codes clamped to -127..127."""
    x = _as_matrix(matrix)
    m = _absmax(x, 1) if x.shape[1] else np.zeros(x.shape[0], np.float32)
    zero = m == 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.where(zero, np.float32(1.0), m / np.float32(127.0)).astype(np.float32)
        inv = (np.float32(1.0) / scale).astype(np.float32)
        products = (x * inv[:, None]).astype(np.float32)
    codes = _codes(products, 127)
    codes[zero] = 0
    head = _HEAD.pack(PAYLOAD_VERSION, INT8_SCALE_KIND)
    return head + scale.astype("<f4").tobytes() + codes.tobytes()


def encode_int4(matrix: np.ndarray) -> bytes:
    """int4 payload: f16 absmax/7 scale per 64-group, nibble codes -7..7 against that scale."""
    x = _as_matrix(matrix)
    n, dim = x.shape
    if dim == 0 or dim % INT4_BLOCK:
        raise InvalidInput(f"encode_int4_embeddings: dim={dim} must be a nonzero multiple of 64")
    groups = x.reshape(n, dim // INT4_BLOCK, INT4_BLOCK)
    m = _absmax(groups, 2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale16 = np.where(m == 0, np.float32(1.0), m / np.float32(7.0)).astype(np.float32)
        scale16 = scale16.astype(np.float16)
        s = scale16.astype(np.float32)
        inv = np.where(s > 0, np.float32(1.0) / s, np.float32(0.0)).astype(np.float32)
        products = (groups * inv[:, :, None]).astype(np.float32)
    nib = _codes(products, 7).reshape(n, dim).view(np.uint8) & 0x0F
    packed = nib[:, 0::2] | (nib[:, 1::2] << 4)
    head = _HEAD.pack(PAYLOAD_VERSION, INT4_SCALE_KIND)
    return head + scale16.astype("<f2").tobytes() + packed.astype(np.uint8).tobytes()


def encode_embeddings(matrix: np.ndarray, dtype: str) -> tuple[int, bytes]:
    """(wire encoding, payload) of ``matrix`` (n x dim, f32 values) stored as ``dtype``."""
    parsed = DType.parse(dtype)
    if parsed is DType.FLOAT32:
        payload = _as_matrix(matrix).astype("<f4").tobytes()
    elif parsed is DType.FLOAT16:
        payload = encode_float16(matrix)
    elif parsed is DType.INT8:
        payload = encode_int8(matrix)
    elif parsed is DType.INT4:
        payload = encode_int4(matrix)
    else:
        raise UnsupportedDType(dtype)
    return parsed.encoding, payload


def f16_view(payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """Zero-copy (n, dim) float16 view of a float16 slab."""
    check_size(payload, DType.FLOAT16, n, dim)
    return np.frombuffer(payload, dtype="<f2", count=n * dim).reshape(n, dim)


def f32_view(payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """Zero-copy (n, dim) float32 view of a float32 slab."""
    check_size(payload, DType.FLOAT32, n, dim)
    return np.frombuffer(payload, dtype="<f4", count=n * dim).reshape(n, dim)


def int8_view(payload: bytes | memoryview, n: int, dim: int,
              section_id: int = 0x04) -> tuple[np.ndarray, np.ndarray]:
    """Parse an int8 payload: (scales f32 (n,), codes int8 (n, dim)), zero-copy."""
    check_size(payload, DType.INT8, n, dim)
    check_head(payload, section_id, INT8_SCALE_KIND, "int8")
    scales = np.frombuffer(payload, dtype="<f4", count=n, offset=PREFIX_SIZE)
    codes = np.frombuffer(payload, dtype=np.int8, count=n * dim, offset=PREFIX_SIZE + 4 * n)
    return scales, codes.reshape(n, dim)


def int4_view(payload: bytes | memoryview, n: int, dim: int,
              section_id: int = 0x04) -> tuple[np.ndarray, np.ndarray]:
    """Parse an int4 payload: (scales f16 (n, dim//64), packed uint8 (n, dim//2)), zero-copy."""
    check_int4_dim(dim, section_id)
    check_size(payload, DType.INT4, n, dim)
    check_head(payload, section_id, INT4_SCALE_KIND, "int4")
    groups = dim // INT4_BLOCK
    scales = np.frombuffer(payload, dtype="<f2", count=n * groups, offset=PREFIX_SIZE)
    packed = np.frombuffer(payload, dtype=np.uint8, count=n * dim // 2,
                           offset=PREFIX_SIZE + 2 * n * groups)
    return scales.reshape(n, groups), packed.reshape(n, dim // 2)


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """Sign-extended int4 codes (-8..7) from packed bytes, low nibble first: (n, 2 * cols) int8."""
    lo = (packed & 0x0F).astype(np.int8)
    hi = (packed >> 4).astype(np.int8)
    codes = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.int8)
    codes[:, 0::2] = lo
    codes[:, 1::2] = hi
    return np.where(codes >= 8, codes - 16, codes).astype(np.int8)


def dequantize(encoding: int, payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """(n, dim) float32 with each component materialised as the HNSW distance code sees it."""
    if encoding == ENCODING_FLOAT32:
        return f32_view(payload, n, dim).astype(np.float32)
    if encoding == ENCODING_FLOAT16:
        return f16_view(payload, n, dim).astype(np.float32)
    if encoding == ENCODING_INT8:
        scales, codes = int8_view(payload, n, dim)
        return (codes.astype(np.float32) * scales.astype(np.float32)[:, None]).astype(np.float32)
    if encoding == ENCODING_INT4:
        scales, packed = int4_view(payload, n, dim)
        codes = unpack_nibbles(packed).astype(np.float32)
        per_value = np.repeat(scales.astype(np.float32), INT4_BLOCK, axis=1)
        return (codes * per_value).astype(np.float32)
    raise UnsupportedSectionEncoding(0x04, encoding)


def fp_slab_view(payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """The 0x09 full-precision rerank slab as (n, dim) f32 or f16, typed by ``size // (n*dim)``."""
    cells = n * dim
    width = len(payload) // cells if cells else 0
    if width not in (4, 2):
        raise MalformedSectionPayload(
            0x09, f"fp slab {len(payload)} bytes is not f32/f16 for n={n} dim={dim}")
    dtype = "<f4" if width == 4 else "<f2"
    return np.frombuffer(payload, dtype=dtype, count=cells).reshape(n, dim)
