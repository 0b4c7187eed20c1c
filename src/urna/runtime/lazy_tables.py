"""Chunk ids (0x01) and spans (0x03) validated at open, decoded per record on first use.

A search touches k records, yet decoding 100,000 ids and spans into Python objects costs
~0.2 s at open. Here the open proves, cheaply, that the eager decoder would succeed (prefix,
count, every record inside the payload, no trailing byte, pure ASCII so UTF-8 cannot fail),
and keeps the records' offsets; a record becomes a ``str`` when read. Whenever the proof does
not go through, ``None`` is returned and the caller decodes eagerly, so every malformed file
fails exactly as before, with the same error.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from ..format.layout import PREFIX, SECTION_PAYLOAD_VERSION

_U32 = struct.Struct("<I")
_SPAN_TAIL = struct.Struct("<QQ")


def _prefix_ok(data: bytes, expected: int) -> bool:
    if len(data) < PREFIX.size:
        return False
    version, count = PREFIX.unpack_from(data, 0)
    return version == SECTION_PAYLOAD_VERSION and count == expected


def _record_starts(data: bytes, count: int, tail: int) -> np.ndarray | None:
    """Offsets of ``count`` records ``lp(body) + tail bytes`` filling ``data``; None if not."""
    end_all = len(data)
    if count == 0:
        return np.empty(0, np.int64) if end_all == PREFIX.size else None
    first = _U32.unpack_from(data, PREFIX.size)[0] if end_all >= PREFIX.size + 4 else -1
    stride = 4 + first + tail
    if first >= 0 and end_all == PREFIX.size + count * stride:
        starts = PREFIX.size + stride * np.arange(count, dtype=np.int64)
        lens = np.frombuffer(data, np.uint8)[PREFIX.size:].reshape(count, stride)[:, :4]
        if (np.ascontiguousarray(lens).view("<u4").ravel() == first).all():
            return starts
    if count * (4 + tail) > end_all - PREFIX.size:  # each record takes >= 4 + tail bytes
        return None
    out = np.empty(count, np.int64)  # variable lengths: one bounded walk, no decoding
    pos, unpack = PREFIX.size, _U32.unpack_from
    for i in range(count):
        if pos + 4 > end_all:
            return None
        out[i] = pos
        pos += 4 + unpack(data, pos)[0] + tail
        if pos > end_all:
            return None
    return out if pos == end_all else None


def _bodies_ascii(data: bytes, starts: np.ndarray, tail: int) -> bool:
    """True when every record body (between its length and its tail) is 7-bit ASCII."""
    raw = np.frombuffer(data, np.uint8)
    gaps = np.diff(np.append(starts, len(data)))
    if len(starts) > 0 and bool((gaps == gaps[0]).all()):
        # one stride: the bodies are one column block of a 2-D view
        rows = raw[PREFIX.size:].reshape(len(starts), -1)
        return bool(rows[:, 4:rows.shape[1] - tail].max(initial=0) < 0x80)
    high = np.flatnonzero(raw >= 0x80)  # few: the high bytes of lengths and tails
    if high.size == 0:
        return True
    ends = np.append(starts[1:], len(data)) - tail
    record = np.searchsorted(starts, high, side="right") - 1
    valid = record >= 0
    high, record = high[valid], record[valid]
    return not bool(((high >= starts[record] + 4) & (high < ends[record])).any())


class _Records(Sequence):
    """Records of one section at known offsets, each decoded when read."""

    def __init__(self, data: bytes, starts: np.ndarray) -> None:
        self._data = data
        self._starts = starts.tolist()

    def __len__(self) -> int:
        return len(self._starts)

    def _body(self, i: int) -> tuple[str, int]:
        pos = self._starts[i]
        end = pos + 4 + _U32.unpack_from(self._data, pos)[0]
        return self._data[pos + 4:end].decode("ascii"), end

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))


class LazyChunkIds(_Records):
    """The 0x01 chunk ids as a read-only sequence of ``str``."""

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i):
        """The id of row ``i`` (a list for a slice)."""
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._body(range(len(self))[i])[0]

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        """The first row whose id is ``value``; ValueError when none is."""
        if isinstance(value, str):
            stop = len(self) if stop is None else stop
            for j in range(*slice(start, stop).indices(len(self))):
                if self[j] == value:
                    return j
        raise ValueError(f"{value!r} is not in the chunk ids")


class LazySpans(_Records):
    """The 0x03 spans as a sequence of ``(source_uri, byte_start, byte_end)``; the blob
    overlay may replace entries (``spans[i] = ...``), as it does on the eager list."""

    def __init__(self, data: bytes, starts: np.ndarray) -> None:
        super().__init__(data, starts)
        self._replaced: dict[int, tuple[str, int, int]] = {}

    def __getitem__(self, i):
        """The span of row ``i`` (a list for a slice)."""
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        if i in self._replaced:
            return self._replaced[i]
        uri, end = self._body(i)
        start, stop = _SPAN_TAIL.unpack_from(self._data, end)
        return (uri, start, stop)

    def __setitem__(self, i: int, span: tuple[str, int, int]) -> None:
        self._replaced[range(len(self))[i]] = span


def lazy_chunk_ids(raw: bytes | memoryview, expected: int) -> LazyChunkIds | None:
    """Chunk ids decoded on use, or None when the eager decoder must judge the payload."""
    data = bytes(raw)
    if not _prefix_ok(data, expected):
        return None
    starts = _record_starts(data, expected, 0)
    if starts is None or not _bodies_ascii(data, starts, 0):
        return None
    return LazyChunkIds(data, starts)


def lazy_spans(raw: bytes | memoryview, expected: int) -> LazySpans | None:
    """Spans decoded on use, or None when the eager decoder must judge the payload."""
    data = bytes(raw)
    if not _prefix_ok(data, expected):
        return None
    starts = _record_starts(data, expected, 16)
    if starts is None or not _bodies_ascii(data, starts, 16):
        return None
    return LazySpans(data, starts)
