"""Vector dtypes of the embeddings section and the space bands: float32, float16, int8, int4.

02-encodings §10. Layouts (little-endian, row-major):

* float32 (id 0): ``n x dim`` f32.
* float16 (id 2): ``n x dim`` binary16, round-to-nearest-even from f32.
* int8 (id 3): ``u32 1 | u32 0 | n x f32 scale | n x dim i8``; scale = max|x| / 127.
* int4 (id 7): ``u32 1 | u32 1 | n x dim/64 f16 scale | n x dim/2 packed nibbles`` (even index
  in the low nibble); scale = f16(max|x| / 7) per 64-value group, codes against that stored scale.

Quantisation follows the reference bit for bit: arithmetic in f32, rounding half away from zero
(done in float64, exact for f32 inputs; ``np.round`` would round ties to even), a NaN product
gives code 0. Views are zero-copy numpy arrays over the payload; every size is checked with Python
ints against the reference's 64-bit overflow rule before a view is made.
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import (
    EmbeddingSizeMismatch,
    InvalidEmbeddingValue,
    InvalidInput,
    MalformedSectionPayload,
    UnsupportedDType,
    UnsupportedSectionEncoding,
    UnsupportedSectionVersion,
)
from ..dtypes import INT4_BLOCK, QUANTISED_PREFIX_SIZE, DType
from ..layout import ENCODING_FLOAT16, ENCODING_FLOAT32, ENCODING_INT4, ENCODING_INT8

PAYLOAD_VERSION = 1
INT8_SCALE_KIND = 0
INT4_SCALE_KIND = 1
PREFIX_SIZE = QUANTISED_PREFIX_SIZE
_U64_MAX = (1 << 64) - 1
_HEAD = struct.Struct("<II")


def expected_embeddings_size(dtype: str, n: int, dim: int) -> int | None:
    """Exact slab size for ``n`` vectors of ``dim`` (None: unknown dtype, int4 dim, or overflow)."""
    parsed = DType.parse(dtype)
    return None if parsed is None else parsed.payload_size(n, dim)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    return np.sign(wide) * np.floor(np.abs(wide) + 0.5)


def _codes(products: np.ndarray, limit: int) -> np.ndarray:
    rounded = np.clip(_round_half_away(products), -limit, limit)
    return np.where(np.isnan(rounded), 0.0, rounded).astype(np.int8)


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
    m = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(x.shape[0], np.float32)
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
    m = np.abs(groups).max(axis=2)
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


def _check_size(payload: bytes | memoryview, dtype: DType, n: int, dim: int) -> int:
    want = dtype.payload_size(n, dim)
    if want is None:
        want = _U64_MAX  # the reference reports usize::MAX when the size is unknown
    if len(payload) != want:
        raise EmbeddingSizeMismatch(want, len(payload))
    return want


def _check_head(payload: bytes | memoryview, section_id: int, kind: int, name: str) -> None:
    version, got_kind = _HEAD.unpack_from(payload, 0)
    if version != PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(section_id, version)
    if got_kind != kind:
        raise MalformedSectionPayload(section_id, f"{name} scale_kind {got_kind} not supported")


def f16_view(payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """Zero-copy (n, dim) float16 view of a float16 slab."""
    _check_size(payload, DType.FLOAT16, n, dim)
    return np.frombuffer(payload, dtype="<f2", count=n * dim).reshape(n, dim)


def f32_view(payload: bytes | memoryview, n: int, dim: int) -> np.ndarray:
    """Zero-copy (n, dim) float32 view of a float32 slab."""
    _check_size(payload, DType.FLOAT32, n, dim)
    return np.frombuffer(payload, dtype="<f4", count=n * dim).reshape(n, dim)


def int8_view(payload: bytes | memoryview, n: int, dim: int,
              section_id: int = 0x04) -> tuple[np.ndarray, np.ndarray]:
    """Parse an int8 payload: (scales f32 (n,), codes int8 (n, dim)), zero-copy."""
    _check_size(payload, DType.INT8, n, dim)
    _check_head(payload, section_id, INT8_SCALE_KIND, "int8")
    scales = np.frombuffer(payload, dtype="<f4", count=n, offset=PREFIX_SIZE)
    codes = np.frombuffer(payload, dtype=np.int8, count=n * dim, offset=PREFIX_SIZE + 4 * n)
    return scales, codes.reshape(n, dim)


def int4_view(payload: bytes | memoryview, n: int, dim: int,
              section_id: int = 0x04) -> tuple[np.ndarray, np.ndarray]:
    """Parse an int4 payload: (scales f16 (n, dim//64), packed uint8 (n, dim//2)), zero-copy."""
    if dim == 0 or dim % INT4_BLOCK:
        raise MalformedSectionPayload(section_id,
                                      f"int4 dim={dim} must be a nonzero multiple of 64")
    _check_size(payload, DType.INT4, n, dim)
    _check_head(payload, section_id, INT4_SCALE_KIND, "int4")
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


_FINITE_BLOCK = 1 << 16  # values per step: the temporaries stay in cache, not 2x the slab


def _no_all_ones(words: np.ndarray, exponent: np.unsignedinteger) -> bool:
    words = words.reshape(-1)
    scratch = np.empty(min(len(words), _FINITE_BLOCK), dtype=words.dtype)
    for lo in range(0, len(words), _FINITE_BLOCK):
        part = scratch[:len(words) - lo] if lo + _FINITE_BLOCK > len(words) else scratch
        np.bitwise_and(words[lo:lo + _FINITE_BLOCK], exponent, out=part)
        if (part == exponent).any():
            return False
    return True


def _all_finite_f32(words: np.ndarray) -> bool:
    # isfinite is exactly "exponent not all ones" for binary32, and SIMD-vectorised
    values = words.reshape(-1).view("<f4")
    flags = np.empty(min(len(values), _FINITE_BLOCK), dtype=bool)
    for lo in range(0, len(values), _FINITE_BLOCK):
        part = values[lo:lo + _FINITE_BLOCK]
        out = flags[:len(part)]
        np.isfinite(part, out=out)
        if not out.all():
            return False
    return True


def _all_finite_f16(words: np.ndarray) -> bool:
    return _no_all_ones(words, np.uint16(0x7C00))


def validate_embedding_values(section_id: int, encoding: int, payload: bytes | memoryview,
                              n: int, dim: int) -> None:
    """Reject any NaN or infinite value or scale (§10.5); int8/int4 are parsed first.

    The reference reports 0x04 as the section of parse failures even for bands; callers that
    want its exact text pass ``section_id=0x04``.
    """
    if encoding == ENCODING_FLOAT32:
        ok = _all_finite_f32(np.frombuffer(payload, dtype="<u4", count=len(payload) // 4))
    elif encoding == ENCODING_FLOAT16:
        ok = _all_finite_f16(np.frombuffer(payload, dtype="<u2", count=len(payload) // 2))
    elif encoding == ENCODING_INT8:
        scales, _ = int8_view(payload, n, dim, section_id)
        ok = _all_finite_f32(scales.view("<u4"))
    elif encoding == ENCODING_INT4:
        scales, _ = int4_view(payload, n, dim, section_id)
        ok = _all_finite_f16(scales.view("<u2"))
    else:
        raise UnsupportedSectionEncoding(section_id, encoding)
    if not ok:
        raise InvalidEmbeddingValue()


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
