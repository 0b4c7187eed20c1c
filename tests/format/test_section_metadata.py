"""Section 0x18 metadata: the byte layout, round trips, determinism and the encoder's checks."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import InvalidInput
from urna.format.encodings.zstd import zstd_decompress
from urna.format.layout import SECTION_METADATA
from urna.format.sections.metadata import decode_metadata, encode_metadata

BUILTINS = {"source_uri", "chunk_id", "byte_start", "byte_end"}


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def hand_payload(body: bytes, n_rows: int) -> bytes:
    """A payload assembled by hand from the documented layout (any zstd frame will do)."""
    frame = zstandard.ZstdCompressor().compress(body)
    return struct.pack("<IQQ", 1, n_rows, len(body)) + frame


# rows [{"a": 1}, None, {"a": -2, "s": "x"}], written out from the module docstring
HAND_BODY = (
    u32(2)
    + u32(1) + b"a" + bytes([1]) + bytes([0b101]) + struct.pack("<qqq", 1, 0, -2)
    + u32(1) + b"s" + bytes([4]) + bytes([0b100]) + u32(1) + u32(1) + b"x" + u32(0) * 3
)


def test_the_layout_is_the_documented_one() -> None:
    payload = encode_metadata([{"a": 1}, None, {"s": "x", "a": -2}], 3)
    assert payload[:20] == struct.pack("<IQQ", 1, 3, len(HAND_BODY))
    assert zstd_decompress(payload[20:]) == HAND_BODY


def test_a_hand_written_payload_decodes() -> None:
    table = decode_metadata(hand_payload(HAND_BODY, 3), 3)
    assert table.schema == {"a": "int", "s": "string"}
    assert [table.row(i) for i in range(3)] == [{"a": 1}, {}, {"a": -2, "s": "x"}]
    assert table.column("a").valid.tolist() == [True, False, True]
    assert table.column("s").dictionary == ("x",)


def test_every_type_round_trips_with_nulls() -> None:
    when = datetime(2021, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    rows = [
        {"s": "pt", "i": -(2**63), "f": -0.5, "b": True, "t": when, "l": ["x", "y", "x"]},
        {"s": None, "i": None},
        None,
        {"s": "", "i": 2**63 - 1, "f": math.inf, "b": False, "t": datetime(1969, 12, 31,
         tzinfo=UTC), "l": []},
    ]
    table = decode_metadata(encode_metadata(rows, 4), 4)
    assert table.schema == {"b": "bool", "f": "float", "i": "int", "l": "string_list",
                            "s": "string", "t": "timestamp"}
    assert table.row(0) == rows[0] | {"l": ["x", "y", "x"]}
    assert table.row(1) == {}
    assert table.row(2) == {}
    assert table.row(3) == {"s": "", "i": 2**63 - 1, "f": math.inf, "b": False,
                            "t": datetime(1969, 12, 31, tzinfo=UTC), "l": []}
    # an empty list is a value, a missing key is null
    assert table.column("l").valid.tolist() == [True, False, False, True]


def test_declared_types_keep_all_null_columns_and_parse_timestamps() -> None:
    rows = [{"when": "2024-05-01T12:00:00Z"}, {"when": 0}, {"when": "2024-05-01"}]
    table = decode_metadata(
        encode_metadata(rows, 3, types={"when": "timestamp", "empty": "string"}), 3)
    assert table.schema == {"empty": "string", "when": "timestamp"}
    assert [table.row(i)["when"] for i in range(3)] == [
        datetime(2024, 5, 1, 12, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2024, 5, 1, tzinfo=UTC)]
    assert not table.column("empty").valid.any()


def test_ints_and_floats_mix_into_a_float_column_and_offsets_are_kept() -> None:
    t = datetime(2020, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    table = decode_metadata(encode_metadata([{"x": 1}, {"x": 2.5}, {"t": t}], 3), 3)
    assert table.schema == {"t": "timestamp", "x": "float"}
    assert table.row(0) == {"x": 1.0}
    assert table.row(2)["t"] == datetime(2020, 1, 1, 0, tzinfo=UTC)


def test_key_order_does_not_change_the_bytes() -> None:
    a = [{"b": 1, "a": "x", "c": ["q", "p"]}, {"a": "y"}]
    b = [{"c": ["q", "p"], "a": "x", "b": 1}, {"a": "y"}]
    assert encode_metadata(a, 2) == encode_metadata(b, 2)


def test_no_rows_and_no_metadata() -> None:
    assert decode_metadata(encode_metadata([], 0), 0).schema == {}
    table = decode_metadata(encode_metadata([None, {}], 2), 2)
    assert table.schema == {} and table.row(1) == {}
    with pytest.raises(IndexError):
        table.row(2)


@pytest.mark.parametrize(("rows", "types", "needle"), [
    ([{"k": 1}, {"k": "x"}], None, "mixed value types"),
    ([{"k": {"nested": 1}}], None, "unsupported value"),
    ([{"k": [1, 2]}], None, "unsupported value"),
    ([{"source_uri": "x"}], None, "shadows a built-in"),
    ([{"": 1}], None, "non-empty strings"),
    ([{1: 1}], None, "non-empty strings"),
    ([{"k": math.nan}], None, "NaN"),
    ([{"k": 2**63}], None, "64 bits"),
    ([{"k": True}], {"k": "int"}, "is not a int"),
    ([{"k": "yesterday"}], {"k": "timestamp"}, "is not a timestamp"),
    ([{"k": 1}], {"k": "date"}, "unknown type"),
    (["row"], None, "not a mapping"),
])
def test_encoder_rejects_bad_input(rows, types, needle) -> None:
    with pytest.raises(InvalidInput, match=needle):
        encode_metadata(rows, len(rows), types=types)


def test_encoder_rejects_a_row_count_mismatch() -> None:
    with pytest.raises(InvalidInput, match="2 rows but the file has 3"):
        encode_metadata([{}, {}], 3)


# --- properties -----------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_names = _text.filter(lambda s: s and s not in BUILTINS)
_VALUES = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": _text,
    "timestamp": st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                              timezones=st.just(UTC)),
    "string_list": st.lists(_text, max_size=4),
}


@st.composite
def tables(draw):
    schema = draw(st.dictionaries(_names, st.sampled_from(sorted(_VALUES)), max_size=5))
    n = draw(st.integers(0, 10))
    rows = []
    for _ in range(n):
        if draw(st.booleans()) and draw(st.booleans()):
            rows.append(None)
            continue
        row = {}
        for name, type_ in schema.items():
            choice = draw(st.integers(0, 3))
            if choice == 0:
                continue  # key missing
            row[name] = None if choice == 1 else draw(_VALUES[type_])
        rows.append(row)
    return schema, rows


def _present(row):
    return {k: v for k, v in (row or {}).items() if v is not None}


@settings(max_examples=150, deadline=None)
@given(tables())
def test_round_trip_property(case) -> None:
    schema, rows = case
    table = decode_metadata(encode_metadata(rows, len(rows), types=schema), len(rows))
    assert table.schema == schema
    for i, row in enumerate(rows):
        got = table.row(i)
        want = _present(row)
        assert got.keys() == want.keys()
        for k, v in want.items():
            if schema[k] == "float":  # bit for bit, so -0.0 stays -0.0
                assert struct.pack("<d", got[k]) == struct.pack("<d", v)
            else:
                assert got[k] == v


@settings(max_examples=60, deadline=None)
@given(tables(), st.randoms(use_true_random=False))
def test_bytes_do_not_depend_on_key_order(case, rnd) -> None:
    schema, rows = case
    shuffled = []
    for row in rows:
        if row is None:
            shuffled.append(None)
            continue
        items = list(row.items())
        rnd.shuffle(items)
        shuffled.append(dict(items))
    types = dict(reversed(list(schema.items())))
    assert encode_metadata(rows, len(rows), types=schema) == \
        encode_metadata(shuffled, len(rows), types=types)


def test_column_arrays_have_the_documented_dtypes() -> None:
    table = decode_metadata(encode_metadata(
        [{"i": 1, "f": 1.5, "b": True, "s": "a", "l": ["a"],
          "t": datetime(2000, 1, 1, tzinfo=UTC)}], 1), 1)
    assert table.column("i").values.dtype == np.int64
    assert table.column("t").values.tolist() == [946684800 * 1_000_000]
    assert table.column("f").values.dtype == np.float64
    assert table.column("b").values.dtype == np.bool_
    assert table.column("s").values.dtype == np.uint32
    assert table.column("l").offsets.tolist() == [0, 1]
    assert SECTION_METADATA == 0x18
