"""Section 0x18 metadata: typed per-chunk metadata columns (an urna-py extension, issue #16).

The reference 0.5.1 reader loads any optional section whose encoding is legal for the text
class and whose checksum matches, then ignores it; optional sections are outside content_hash
(01-container §9.2, §10.4), so adding this section moves neither content_hash nor citations.

Payload (written with wire encoding 0 = raw; all integers little-endian)::

    u32 version = 1 | u64 n_rows        the common 12-byte prefix; n_rows = the file's n_chunks
    u64 body_len                        length of the body once decompressed
    zstd frame                          the body, level 19 (format/encodings/zstd)

Body::

    u32 n_columns
    n_columns x column, in ascending UTF-8 byte order of the names (unique, non-empty,
    never a built-in field name: source_uri, chunk_id, byte_start, byte_end):
        u32 name_len | name (UTF-8) | u8 type tag
        validity: ceil(n_rows / 8) bytes, bit i (LSB first) set = row i has a value;
                  padding bits are zero
        values, one slot per row (a null row's slot holds zeros / an empty list):
          1 int          n_rows x i64
          2 float        n_rows x f64 (never NaN)
          3 bool         n_rows x u8 (0 or 1)
          4 string       dictionary, then n_rows x u32 index into it
          5 timestamp    n_rows x i64 microseconds since 1970-01-01T00:00:00Z
          6 string_list  dictionary, then (n_rows + 1) x u32 offsets (offsets[0] = 0,
                         non-decreasing), then offsets[n_rows] x u32 indices into it
    dictionary = u32 n_entries | n_entries x (u32 len | UTF-8), strictly ascending, unique

The same rows give the same bytes whatever the key order of each row (columns and
dictionaries are sorted). The decoder bounds every count by the bytes present before it
allocates, checks indices, tags, offsets, padding and null slots, and reports failures as
``MalformedSectionPayload`` with section id 0x18 (``SectionCountMismatch`` when the row
count differs from the file's, ``UnsupportedSectionVersion`` for another version).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import numpy as np

from ...errors import (
    InvalidInput,
    MalformedSectionPayload,
    SectionCountMismatch,
    UnsupportedSectionEncoding,
    UnsupportedSectionVersion,
)
from ..cursor import Cursor, decode_utf8, lp
from ..encodings.zstd import ZstdFailure, decompress_cap, decompress_into, new_dctx, zstd_compress
from ..layout import ENCODING_RAW, PREFIX, SECTION_METADATA, SECTION_PAYLOAD_VERSION

METADATA_PAYLOAD_VERSION = SECTION_PAYLOAD_VERSION
TYPE_INT = "int"
TYPE_FLOAT = "float"
TYPE_BOOL = "bool"
TYPE_STRING = "string"
TYPE_TIMESTAMP = "timestamp"
TYPE_STRING_LIST = "string_list"
TYPE_TAGS = {TYPE_INT: 1, TYPE_FLOAT: 2, TYPE_BOOL: 3, TYPE_STRING: 4, TYPE_TIMESTAMP: 5,
             TYPE_STRING_LIST: 6}
TAG_TYPES = {tag: name for name, tag in TYPE_TAGS.items()}
METADATA_TYPES = frozenset(TYPE_TAGS)
# Fields every file has without a metadata section; a metadata key may not shadow them.
BUILTIN_FIELD_TYPES: Mapping[str, str] = {
    "source_uri": TYPE_STRING, "chunk_id": TYPE_STRING,
    "byte_start": TYPE_INT, "byte_end": TYPE_INT,
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_EOF = "metadata: want {k} bytes at offset {pos}, have {len}"
# u32 name len + 1 name byte + u8 tag: the smallest column when n_rows == 0
_MIN_COLUMN_SIZE = 6


def _malformed(reason: str) -> MalformedSectionPayload:
    return MalformedSectionPayload(SECTION_METADATA, f"metadata: {reason}")


@dataclass(frozen=True)
class MetadataColumn:
    """One typed column: ``valid[i]`` says whether row i has a value.

    ``values`` is int64 (int, timestamp in microseconds), float64, bool, or, for string and
    string_list, uint32 indices into ``dictionary``; string_list rows are
    ``values[offsets[i]:offsets[i + 1]]``.
    """

    name: str
    type: str
    valid: np.ndarray
    values: np.ndarray
    dictionary: tuple[str, ...] = ()
    offsets: np.ndarray | None = None

    def value(self, i: int) -> Any:
        """The Python value of row ``i`` (None when the row has no value)."""
        if not self.valid[i]:
            return None
        if self.type == TYPE_STRING:
            return self.dictionary[int(self.values[i])]
        if self.type == TYPE_STRING_LIST:
            assert self.offsets is not None
            lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
            return [self.dictionary[int(c)] for c in self.values[lo:hi]]
        if self.type == TYPE_TIMESTAMP:
            return micros_to_datetime(int(self.values[i]))
        if self.type == TYPE_BOOL:
            return bool(self.values[i])
        if self.type == TYPE_INT:
            return int(self.values[i])
        return float(self.values[i])


@dataclass(frozen=True)
class MetadataTable:
    """The decoded metadata section: ``n_rows`` rows, columns by name (sorted)."""

    n_rows: int
    columns: Mapping[str, MetadataColumn]

    @property
    def schema(self) -> dict[str, str]:
        """``{column name: type name}``."""
        return {name: col.type for name, col in self.columns.items()}

    def column(self, name: str) -> MetadataColumn:
        """The column called ``name`` (KeyError when absent)."""
        return self.columns[name]

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as ``{name: value}``; keys whose value is null are left out."""
        if not 0 <= i < self.n_rows:
            raise IndexError(i)
        out = {}
        for name, col in self.columns.items():
            v = col.value(i)
            if v is not None:
                out[name] = v
        return out


# --- values ---------------------------------------------------------------------------------


def micros_to_datetime(us: int) -> datetime:
    """Microseconds since the epoch as an aware UTC datetime (clamped to datetime's range)."""
    try:
        return EPOCH + timedelta(microseconds=us)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC) if us > 0 else \
            datetime.min.replace(tzinfo=UTC)


def datetime_to_micros(value: datetime) -> int:
    """An aware or naive (taken as UTC) datetime as microseconds since the epoch."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def parse_timestamp(value: Any) -> int | None:
    """ISO-8601 text, a datetime or epoch seconds as microseconds; None when not a timestamp."""
    if isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return datetime_to_micros(value)
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        us = round(value * 1_000_000)
        return us if _I64_MIN <= us <= _I64_MAX else None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return datetime_to_micros(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def _infer_type(key: str, values: list[Any]) -> str:
    kinds = set()
    for v in values:
        if isinstance(v, bool):
            kinds.add(TYPE_BOOL)
        elif isinstance(v, int):
            kinds.add(TYPE_INT)
        elif isinstance(v, float):
            kinds.add(TYPE_FLOAT)
        elif isinstance(v, str):
            kinds.add(TYPE_STRING)
        elif isinstance(v, datetime):
            kinds.add(TYPE_TIMESTAMP)
        elif isinstance(v, list | tuple) and all(isinstance(x, str) for x in v):
            kinds.add(TYPE_STRING_LIST)
        else:
            raise InvalidInput(f"metadata key {key!r}: unsupported value {v!r}")
    if kinds == {TYPE_INT, TYPE_FLOAT}:
        return TYPE_FLOAT
    if len(kinds) != 1:
        raise InvalidInput(f"metadata key {key!r}: mixed value types {sorted(kinds)}")
    return kinds.pop()


def _bad(key: str, type_: str, value: Any) -> InvalidInput:
    return InvalidInput(f"metadata key {key!r}: {value!r} is not a {type_}")


def _convert(key: str, type_: str, value: Any) -> Any:
    """Check one non-null value against ``type_`` and give its stored form."""
    if type_ == TYPE_BOOL:
        if not isinstance(value, bool):
            raise _bad(key, type_, value)
        return value
    if type_ == TYPE_INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(key, type_, value)
        if not _I64_MIN <= value <= _I64_MAX:
            raise InvalidInput(f"metadata key {key!r}: {value} does not fit in 64 bits")
        return value
    if type_ == TYPE_FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad(key, type_, value)
        f = float(value)
        if math.isnan(f):
            raise InvalidInput(f"metadata key {key!r}: NaN is not storable")
        return f
    if type_ == TYPE_STRING:
        if not isinstance(value, str):
            raise _bad(key, type_, value)
        return value
    if type_ == TYPE_TIMESTAMP:
        us = parse_timestamp(value)
        if us is None:
            raise _bad(key, type_, value)
        return us
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise _bad(key, type_, value)
    return list(value)


# --- encoder --------------------------------------------------------------------------------


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"metadata key {name!r}: keys must be non-empty strings")
    if name in BUILTIN_FIELD_TYPES:
        raise InvalidInput(f"metadata key {name!r} shadows a built-in field")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"metadata key {name!r}: not valid UTF-8") from exc
    return name


def _dictionary(strings: list[str]) -> tuple[list[str], dict[str, int]]:
    entries = sorted(set(strings), key=lambda s: s.encode("utf-8"))
    return entries, {s: i for i, s in enumerate(entries)}


def _pack_dictionary(entries: list[str]) -> bytes:
    return _U32.pack(len(entries)) + b"".join(lp(s.encode("utf-8")) for s in entries)


def _encode_column(name: str, type_: str, cells: list[Any]) -> bytes:
    n = len(cells)
    valid = np.array([c is not None for c in cells], dtype=bool)
    out = [lp(name.encode("utf-8")), bytes([TYPE_TAGS[type_]]),
           np.packbits(valid, bitorder="little").tobytes()]
    if type_ in (TYPE_INT, TYPE_TIMESTAMP):
        out.append(np.array([0 if c is None else c for c in cells], dtype="<i8").tobytes())
    elif type_ == TYPE_FLOAT:
        out.append(np.array([0.0 if c is None else c for c in cells], dtype="<f8").tobytes())
    elif type_ == TYPE_BOOL:
        out.append(np.array([bool(c) for c in cells], dtype=np.uint8).tobytes())
    elif type_ == TYPE_STRING:
        entries, index = _dictionary([c for c in cells if c is not None])
        codes = np.array([0 if c is None else index[c] for c in cells], dtype="<u4")
        out += [_pack_dictionary(entries), codes.tobytes()]
    else:
        items = [s for c in cells if c is not None for s in c]
        entries, index = _dictionary(items)
        lengths = [0 if c is None else len(c) for c in cells]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] > 0xFFFFFFFF:
            raise InvalidInput(f"metadata key {name!r}: more than 2^32-1 list items")
        out += [_pack_dictionary(entries), offsets.astype("<u4").tobytes(),
                np.array([index[s] for s in items], dtype="<u4").tobytes()]
    return b"".join(out)


def encode_metadata(rows: Sequence[Mapping[str, Any] | None], n_rows: int,
                    types: Mapping[str, str] | None = None) -> bytes:
    """The 0x18 payload (raw wire encoding) for ``rows``: one mapping (or None) per chunk.

    A key missing from a row, or mapped to None, is null there. Column types are inferred
    (bool, int, float when ints and floats mix, str, datetime, list of str) unless ``types``
    names them (``{"date": "timestamp"}`` also accepts ISO-8601 text and epoch seconds); a key
    listed in ``types`` is stored even when every row is null, a key with only nulls and no
    declared type is not stored.
    """
    if len(rows) != n_rows:
        raise InvalidInput(f"metadata has {len(rows)} rows but the file has {n_rows} chunks")
    declared = dict(types or {})
    for name, type_ in declared.items():
        _check_name(name)
        if type_ not in METADATA_TYPES:
            raise InvalidInput(f"metadata key {name!r}: unknown type {type_!r}")
    seen: dict[str, list[Any]] = {name: [] for name in declared}
    for i, row in enumerate(rows):
        if row is None:
            continue
        if not isinstance(row, Mapping):
            raise InvalidInput(f"metadata row {i} is not a mapping")
        for key, value in row.items():
            if value is not None:
                seen.setdefault(_check_name(key), []).append(value)
    schema = {key: declared.get(key) or _infer_type(key, values)
              for key, values in seen.items() if values or key in declared}
    columns = []
    for name in sorted(schema, key=lambda s: s.encode("utf-8")):
        type_ = schema[name]
        cells = [None if row is None or row.get(name) is None else _convert(name, type_, row[name])
                 for row in rows]
        columns.append(_encode_column(name, type_, cells))
    body = _U32.pack(len(columns)) + b"".join(columns)
    head = PREFIX.pack(METADATA_PAYLOAD_VERSION, n_rows) + _U64.pack(len(body))
    return head + zstd_compress(body)


# --- decoder --------------------------------------------------------------------------------


def _decompress_body(payload: memoryview) -> bytes:
    cur = Cursor(payload, SECTION_METADATA, eof=_EOF)
    cur.pos = PREFIX.size
    body_len = cur.u64()
    frame = payload[cur.pos:]
    cap = decompress_cap(len(frame))
    if body_len > cap:
        raise _malformed(f"body of {body_len} bytes exceeds the cap {cap}")
    if not len(frame):
        raise _malformed("missing zstd frame")
    try:
        body = decompress_into(new_dctx(), frame, body_len)
    except ZstdFailure as exc:
        raise _malformed(f"zstd decompression failed: {exc}") from None
    if len(body) != body_len:
        raise _malformed(f"body is {len(body)} bytes, header says {body_len}")
    return body


def _read_dictionary(cur: Cursor, name: str) -> tuple[str, ...]:
    count = cur.u32()
    if count > cur.remaining // 4:
        raise _malformed(f"column {name!r}: dictionary of {count} entries past the end")
    raw = [cur.lp_bytes() for _ in range(count)]
    if any(a >= b for a, b in zip(raw, raw[1:], strict=False)):
        raise _malformed(f"column {name!r}: dictionary not strictly ascending")
    return tuple(decode_utf8(b, SECTION_METADATA, "metadata: dictionary ") for b in raw)


def _read_array(cur: Cursor, count: int, dtype: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return np.frombuffer(cur.view(count * width), dtype=dtype).copy()


def _check_codes(name: str, codes: np.ndarray, n_dict: int) -> None:
    if codes.size and int(codes.max()) >= n_dict:
        raise _malformed(f"column {name!r}: dictionary index {int(codes.max())} "
                         f"out of range ({n_dict} entries)")


def _read_column(cur: Cursor, n: int, previous: bytes | None) -> MetadataColumn:
    raw_name = cur.lp_bytes()
    name = decode_utf8(raw_name, SECTION_METADATA, "metadata: column name ")
    if not raw_name or name in BUILTIN_FIELD_TYPES:
        raise _malformed(f"bad column name {name!r}")
    if previous is not None and raw_name <= previous:
        raise _malformed(f"column {name!r} out of order or duplicated")
    tag = cur.u8()
    if tag not in TAG_TYPES:
        raise _malformed(f"column {name!r}: unknown type tag {tag}")
    type_ = TAG_TYPES[tag]
    bits = np.frombuffer(cur.view((n + 7) // 8), dtype=np.uint8)
    valid = np.unpackbits(bits, count=n, bitorder="little").astype(bool) if n else \
        np.zeros(0, dtype=bool)
    if n % 8 and bits[-1] >> (n % 8):
        raise _malformed(f"column {name!r}: validity padding bits set")
    dictionary: tuple[str, ...] = ()
    offsets = None
    if type_ in (TYPE_INT, TYPE_TIMESTAMP):
        values = _read_array(cur, n, "<i8").astype(np.int64)
    elif type_ == TYPE_FLOAT:
        values = _read_array(cur, n, "<f8").astype(np.float64)
        if np.isnan(values).any():
            raise _malformed(f"column {name!r}: NaN value")
    elif type_ == TYPE_BOOL:
        raw = _read_array(cur, n, "u1")
        if raw.size and int(raw.max()) > 1:
            raise _malformed(f"column {name!r}: bool byte {int(raw.max())}")
        values = raw.astype(bool)
    elif type_ == TYPE_STRING:
        dictionary = _read_dictionary(cur, name)
        values = _read_array(cur, n, "<u4")
        _check_codes(name, values[valid], len(dictionary))  # null slots are checked zero below
    else:
        dictionary = _read_dictionary(cur, name)
        offsets = _read_array(cur, n + 1, "<u4").astype(np.int64)
        steps = np.diff(offsets)
        if offsets[0] != 0 or (steps < 0).any():
            raise _malformed(f"column {name!r}: list offsets not non-decreasing from 0")
        if (steps[~valid] != 0).any():
            raise _malformed(f"column {name!r}: a null row has list items")
        values = _read_array(cur, int(offsets[-1]), "<u4")
        _check_codes(name, values, len(dictionary))
    if type_ != TYPE_STRING_LIST and values[~valid].any():
        raise _malformed(f"column {name!r}: a null row has a non-zero value")
    return MetadataColumn(name, type_, valid, values, dictionary, offsets)


def decode_metadata(payload: bytes | memoryview, n_rows: int) -> MetadataTable:
    """Decode a raw-encoded 0x18 payload of a file with ``n_rows`` chunks."""
    view = memoryview(payload)
    cur = Cursor(view, SECTION_METADATA, eof=_EOF)
    version = cur.u32()
    if version != METADATA_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(SECTION_METADATA, version)
    stored_rows = cur.u64()
    if stored_rows != n_rows:
        raise SectionCountMismatch(SECTION_METADATA, n_rows, stored_rows)
    body = Cursor(_decompress_body(view), SECTION_METADATA, eof=_EOF)
    n_columns = body.u32()
    if n_columns > body.remaining // _MIN_COLUMN_SIZE:
        raise _malformed(f"{n_columns} columns declared past the end")
    columns: dict[str, MetadataColumn] = {}
    previous = None
    for _ in range(n_columns):
        col = _read_column(body, n_rows, previous)
        previous = col.name.encode("utf-8")
        columns[col.name] = col
    body.expect_end()
    return MetadataTable(n_rows, columns)


class SectionSource(Protocol):
    """What ``read_metadata`` needs from a reader (``format.reader.UrnaView`` has it)."""

    @property
    def header(self) -> Any:
        """The file header (``n_chunks`` is read)."""

    def entry(self, section_id: int) -> Any:
        """The first table entry of ``section_id`` or None."""

    def payload(self, entry: Any) -> memoryview:
        """The physical bytes of ``entry``."""


def read_metadata(view: SectionSource) -> MetadataTable | None:
    """The file's metadata table, or None when it has no 0x18 section."""
    entry = view.entry(SECTION_METADATA)
    if entry is None:
        return None
    if entry.encoding != ENCODING_RAW:
        raise UnsupportedSectionEncoding(SECTION_METADATA, entry.encoding)
    return decode_metadata(view.payload(entry), view.header.n_chunks)
