"""The dtype wire tables (01-container §1.2, 0x15 codes) and the hashing forms, against the spec."""

from __future__ import annotations

import pytest

from urna.format.dtypes import DTYPE_ENCODINGS, SPACE_DTYPE_CODES, SPACE_DTYPES, DType
from urna.format.hashing import (
    sha256_bytes,
    sha256_file,
    sha256_file_hex,
    sha256_hex,
    sha256_pieces,
    sorted_json_sha256_ascii,
    sorted_json_sha256_utf8,
)

HELLO = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


def test_dtype_compares_as_its_manifest_name():
    assert DType.INT8 == "int8"
    assert f"{DType.FLOAT16}" == "float16"
    assert DType.parse("int4") is DType.INT4
    assert DType.parse("float64") is None
    assert DType.parse(7) is None


def test_wire_codes_match_the_spec():
    assert DTYPE_ENCODINGS == {"float32": 0, "float16": 2, "int8": 3, "int4": 7}
    assert SPACE_DTYPE_CODES == {"float32": 0, "float16": 1, "int8": 2, "int4": 3}
    assert SPACE_DTYPES == {0: "float32", 1: "float16", 2: "int8", 3: "int4"}
    assert [d.encoding for d in DType] == [0, 2, 3, 7]
    assert DType.from_space_code(2) is DType.INT8
    assert DType.from_space_code(4) is None


@pytest.mark.parametrize(("dtype", "quantised", "full"), [
    (DType.FLOAT32, False, True), (DType.FLOAT16, False, False),
    (DType.INT8, True, False), (DType.INT4, True, False)])
def test_precision_properties(dtype, quantised, full):
    assert dtype.is_quantised is quantised
    assert dtype.full_precision is full


def test_payload_sizes_follow_the_layouts():
    # 02-encodings §10: f32 4/value, f16 2/value, int8 8 + 4n + n*dim, int4 8 + 2n*dim/64 + n*dim/2
    assert DType.FLOAT32.payload_size(3, 64) == 768
    assert DType.FLOAT16.payload_size(3, 64) == 384
    assert DType.INT8.payload_size(3, 64) == 8 + 12 + 192
    assert DType.INT4.payload_size(3, 128) == 8 + 12 + 192
    assert DType.INT4.payload_size(3, 100) is None
    assert DType.FLOAT32.payload_size(1 << 40, 1 << 30) is None


def test_hash_forms(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    assert sha256_bytes(b"hello") == "sha256:" + HELLO
    assert sha256_hex(memoryview(b"hello")) == HELLO
    assert sha256_pieces([b"he", memoryview(b"ll"), b"o"]) == "sha256:" + HELLO
    assert sha256_file_hex(path) == HELLO
    assert sha256_file(path) == "sha256:" + HELLO


def test_sorted_json_variants_differ_only_on_non_ascii():
    value = {"b": "\u00e9", "a": 1}
    # printf '{"a":1,"b":"\\u00e9"}' | sha256sum, and the same with a UTF-8 e-acute
    assert sorted_json_sha256_ascii(value) == (
        "sha256:6071e7aa781e8adc235db31b17e6d0ee414a17031b1744a38fbf2cd17effcbce")
    assert sorted_json_sha256_utf8(value) == (
        "sha256:09ad9fd2fb648cb2f62141215828ea00a62c299db05d20aa9ade2f527a301cc6")
    assert sorted_json_sha256_ascii({"a": 1}) == sorted_json_sha256_utf8({"a": 1})
