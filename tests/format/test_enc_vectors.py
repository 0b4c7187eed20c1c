"""Vector dtypes (02-encodings §10): layouts, quantisation, size rule, views, value check.

Byte examples are those of §10.2-10.4; the real-file agreement (float16 / int8 / int4 / mrl
variants of the conformance vectors) is in test_enc_reference.py. The property tests compare the
vectorised quantisers with a one-value-at-a-time transcription of the reference's arithmetic.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import (
    EmbeddingSizeMismatch,
    InvalidEmbeddingValue,
    InvalidInput,
    MalformedSectionPayload,
    UnsupportedDType,
    UnsupportedSectionEncoding,
    UnsupportedSectionVersion,
)
from urna.format.encodings import (
    dequantize,
    encode_embeddings,
    expected_embeddings_size,
    f16_view,
    int4_view,
    int8_view,
    validate_embedding_values,
)

F32 = np.float32


def test_float32_is_raw_little_endian():
    assert encode_embeddings(np.array([[1, 0, 0, 0]], F32), "float32") == (
        0, bytes.fromhex("0000803f000000000000000000000000"))


@pytest.mark.parametrize("value, hexed", [
    (1.0, "003c"), (-0.5, "00b8"), (0.1, "662e"), (1e-8, "0000"), (70000.0, "007c")])
def test_float16_rounding(value, hexed):
    assert encode_embeddings(np.array([[value]], F32), "float16") == (2, bytes.fromhex(hexed))


def test_int8_examples():
    enc, payload = encode_embeddings(np.array([[0.6, 0.8, 0, 0], [0, 0, 0, 0]], F32), "int8")
    assert enc == 3
    assert payload.hex() == "0100000000000000" "a069ce3b" "0000803f" "5f7f0000" "00000000"
    _, payload = encode_embeddings(np.array([[1, -1, 0.5, -0.5, 0, 0.25]], F32), "int8")
    assert payload[8:].hex() == "0402013c" "7f81" "40c0" "0020"


def test_int4_example():
    row = np.zeros((1, 64), F32)
    row[0, :4] = [1, -1, 0.5, 0.3]
    enc, payload = encode_embeddings(row, "int4")
    assert enc == 7
    assert payload[:10].hex() == "01000000" "01000000" "9230"
    assert payload[10:12].hex() == "9724" and payload[12:] == bytes(30)
    assert len(payload) == 8 + 2 + 32


def test_int4_needs_a_multiple_of_64():
    with pytest.raises(InvalidInput) as info:
        encode_embeddings(np.zeros((2, 100), F32), "int4")
    assert str(info.value) == (
        "invalid input: encode_int4_embeddings: dim=100 must be a nonzero multiple of 64")
    with pytest.raises(UnsupportedDType):
        encode_embeddings(np.zeros((1, 4), F32), "bfloat16")


@pytest.mark.parametrize("dtype, n, dim, size", [
    ("float32", 3, 4, 48), ("float16", 3, 4, 24), ("int8", 4, 8, 56), ("int8", 2, 4, 24),
    ("int8", 3, 5, 35), ("int4", 4, 128, 280), ("int4", 0, 0, 8),
    ("int4", 4, 100, None), ("bfloat16", 1, 1, None),
    ("float32", 2**40, 2**30, None), ("int8", 2**62, 1, None), ("int4", 2**63, 128, None)])
def test_expected_size(dtype, n, dim, size):
    assert expected_embeddings_size(dtype, n, dim) == size


def int8_payload(version=1, kind=0, n=2, dim=3, scales=(0.5, 0.25)) -> bytes:
    return (struct.pack("<II", version, kind) + struct.pack(f"<{n}f", *scales)
            + bytes(range(n * dim)))


def test_int8_view_and_its_checks():
    scales, codes = int8_view(int8_payload(), 2, 3)
    assert scales.tolist() == [0.5, 0.25] and codes.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(EmbeddingSizeMismatch) as info:
        int8_view(int8_payload()[:-1], 2, 3)
    assert (info.value.expected, info.value.got) == (22, 21)
    with pytest.raises(UnsupportedSectionVersion) as ver:
        int8_view(int8_payload(version=2), 2, 3)
    assert (ver.value.section_id, ver.value.version) == (4, 2)
    with pytest.raises(MalformedSectionPayload) as kind:
        int8_view(int8_payload(kind=1), 2, 3)
    assert (kind.value.section_id, kind.value.reason) == (4, "int8 scale_kind 1 not supported")
    with pytest.raises(EmbeddingSizeMismatch) as huge:
        int8_view(int8_payload(), 2**62, 8)
    assert huge.value.expected == 2**64 - 1


def int4_payload(version=1, kind=1, n=1, dim=64, scale=b"\x00\x3c") -> bytes:
    return (struct.pack("<II", version, kind) + scale * (n * dim // 64)
            + bytes([0x9F]) * (n * dim // 2))


def test_int4_view_and_its_checks():
    scales, packed = int4_view(int4_payload(), 1, 64)
    assert scales.dtype == np.float16 and scales.tolist() == [[1.0]]
    assert packed.shape == (1, 32)
    with pytest.raises(MalformedSectionPayload) as dim:
        int4_view(int4_payload(), 1, 96)
    assert dim.value.reason == "int4 dim=96 must be a nonzero multiple of 64"
    with pytest.raises(MalformedSectionPayload):
        int4_view(b"", 1, 0)
    with pytest.raises(EmbeddingSizeMismatch):
        int4_view(int4_payload()[:-1], 1, 64)
    with pytest.raises(UnsupportedSectionVersion):
        int4_view(int4_payload(version=0), 1, 64)
    with pytest.raises(MalformedSectionPayload) as kind:
        int4_view(int4_payload(kind=0), 1, 64)
    assert kind.value.reason == "int4 scale_kind 0 not supported"


def test_dequantize_materialises_code_times_scale():
    out = dequantize(3, int8_payload(), 2, 3)
    assert out.dtype == np.float32 and out.tolist() == [[0, 0.5, 1.0], [0.75, 1.0, 1.25]]
    # Nibbles 0xF (low, -1) and 0x9 (high, -7), scale 1.0; a stored -8 nibble reads back as -8.
    row = dequantize(7, int4_payload(), 1, 64)[0]
    assert row[:4].tolist() == [-1, -7, -1, -7]
    eight = struct.pack("<II", 1, 1) + b"\x00\x3c" + b"\x08" + bytes(31)
    assert dequantize(7, eight, 1, 64)[0, :2].tolist() == [-8, 0]
    half = np.array([[0.5, -2.0]], np.float16)
    assert dequantize(2, half.tobytes(), 1, 2).tolist() == [[0.5, -2.0]]
    assert f16_view(half.tobytes(), 1, 2).dtype == np.float16
    assert dequantize(0, np.array([[1.5, 2]], F32).tobytes(), 1, 2).tolist() == [[1.5, 2.0]]


@pytest.mark.parametrize("encoding, payload, n, dim", [
    (0, struct.pack("<2f", 1.0, math.nan), 1, 2),
    (0, struct.pack("<2f", 1.0, math.inf), 1, 2),
    (2, bytes.fromhex("003c007e"), 1, 2),  # f16 NaN
    (2, bytes.fromhex("00fc003c"), 1, 2),  # f16 -inf
    (3, int8_payload(scales=(0.5, math.inf)), 2, 3),
    (7, int4_payload(scale=b"\x00\x7c"), 1, 64),
])
def test_value_check_rejects_non_finite(encoding, payload, n, dim):
    with pytest.raises(InvalidEmbeddingValue) as info:
        validate_embedding_values(0x04, encoding, payload, n, dim)
    assert str(info.value) == "NaN or Inf detected in embeddings"


def test_value_check_accepts_and_dispatches():
    validate_embedding_values(0x04, 0, struct.pack("<3f", 1, 0, -2) + b"\x01", 1, 3)
    validate_embedding_values(0x04, 3, int8_payload(), 2, 3)
    validate_embedding_values(0x04, 7, int4_payload(), 1, 64)
    with pytest.raises(UnsupportedSectionEncoding) as info:
        validate_embedding_values(0x04, 1, b"", 0, 0)
    assert (info.value.section_id, info.value.encoding) == (4, 1)
    with pytest.raises(UnsupportedSectionVersion) as ver:
        validate_embedding_values(0x21, 3, int8_payload(version=9), 2, 3)
    assert (ver.value.section_id, ver.value.version) == (0x21, 9)


# --- the reference's arithmetic, one value at a time ---------------------------------------


def _round_away(x: float) -> float:
    if math.isinf(x):  # Rust's f32::round keeps infinities (a subnormal scale makes inv = inf)
        return x
    return math.copysign(math.floor(abs(x) + 0.5), x)


def scalar_int8(row: list[float]) -> bytes:
    m = F32(0)
    for v in row:
        m = max(m, abs(F32(v)))
    if m == 0:
        return struct.pack("<f", 1.0), bytes(len(row))
    scale = F32(m / F32(127))
    codes = []
    # a subnormal (or underflowed, 0) scale: inv = inf, 0 * inf
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        inv = F32(F32(1) / scale)
        for v in row:
            q = F32(F32(v) * inv)
            c = 0 if math.isnan(q) else int(max(-127, min(127, _round_away(float(q)))))
            codes.append(c & 0xFF)
    return struct.pack("<f", scale), bytes(codes)


def scalar_int4(row: list[float]) -> tuple[bytes, bytes]:
    scales, codes = b"", []
    for g in range(0, len(row), 64):
        block = [F32(v) for v in row[g:g + 64]]
        m = max([F32(0)] + [abs(v) for v in block])
        s16 = np.float16(F32(1) if m == 0 else F32(m / F32(7)))
        s = F32(s16)
        inv = F32(F32(1) / s) if s > 0 else F32(0)
        for v in block:
            q = F32(v * inv)
            codes.append(0 if math.isnan(q) else int(max(-7, min(7, _round_away(float(q))))))
        scales += s16.tobytes()
    packed = bytes(((codes[i] & 0xF) | ((codes[i + 1] & 0xF) << 4))
                   for i in range(0, len(codes), 2))
    return scales, packed


# Values on a coarse grid hit exact .5 ties; others come from the full f32 range near 1.
component = st.one_of(st.integers(-40, 40).map(lambda k: k / 32),
                      st.floats(-1, 1, width=32, allow_subnormal=True), st.just(0.0))


def _matches_scalar(rows: list[list[float]], dtype: str, scalar, scale_kind: int) -> bytes:
    """The payload is the scalar encoder's (version 1, scale kind, scales, codes), every time."""
    matrix = np.array(rows, F32)
    _, payload = encode_embeddings(matrix, dtype)
    parts = [scalar(r) for r in rows]
    assert payload == (struct.pack("<II", 1, scale_kind) + b"".join(p[0] for p in parts)
                       + b"".join(p[1] for p in parts))
    assert encode_embeddings(matrix, dtype)[1] == payload
    return payload


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(component, min_size=7, max_size=7),
                                                    min_size=n, max_size=n)))
def test_int8_matches_scalar_reference(rows):
    matrix = np.array(rows, F32)
    payload = _matches_scalar(rows, "int8", scalar_int8, 0)
    scales, _ = int8_view(payload, len(rows), 7)
    err = np.abs(dequantize(3, payload, len(rows), 7) - matrix)
    assert (err <= scales[:, None] * 0.5 + 1e-7).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: st.lists(st.lists(component, min_size=128, max_size=128),
                                                    min_size=n, max_size=n)))
def test_int4_matches_scalar_reference(rows):
    _matches_scalar(rows, "int4", scalar_int4, 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-65504, 65504, width=32), min_size=1, max_size=16))
def test_float16_roundtrip_is_exact_for_representable_values(values):
    halves = np.array([values], F32).astype(np.float16).astype(F32)
    _, payload = encode_embeddings(halves, "float16")
    assert np.array_equal(dequantize(2, payload, 1, len(values)), halves)


def test_fp_slab_dtype_is_inferred_from_its_size():
    from urna.format.encodings import fp_slab_view
    assert fp_slab_view(np.ones((2, 3), F32).tobytes(), 2, 3).dtype == np.dtype("<f4")
    assert fp_slab_view(np.ones((2, 3), np.float16).tobytes(), 2, 3).dtype == np.dtype("<f2")
    for payload, n, dim in ((bytes(18), 2, 3), (bytes(8), 0, 3)):
        with pytest.raises(MalformedSectionPayload) as info:
            fp_slab_view(payload, n, dim)
        assert (info.value.section_id, info.value.reason) == (
            9, f"fp slab {len(payload)} bytes is not f32/f16 for n={n} dim={dim}")
