"""Chunk ids (0x01), spans (0x03) and texts (0x02) proven decodable, decoded per record on use.

A search touches k records, yet decoding 100,000 ids and spans into Python objects costs
~0.2 s at open, and a retrieve of 3 hits used to decode all 19,000 texts of a file. Here the
caller proves, cheaply, that the eager decoder would succeed (prefix, count, every record
inside the payload, no trailing byte, UTF-8: pure ASCII for ids and spans, one validation of
all bodies for texts) and keeps the records' offsets; a record becomes a ``str`` when read.
Whenever the proof does not go through, ``None`` is returned and the caller decodes eagerly,
so every malformed file fails exactly as before, with the same error.
:class:`TextsById` answers the reference's text-by-chunk-id map (the last ordinal wins on a
repeated id) for the few ids a result holds, without building it.
"""

from __future__ import annotations

import bisect
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

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
    out = [0] * count  # variable lengths: one bounded walk, no decoding
    pos, step, unpack = PREFIX.size, 4 + tail, _U32.unpack_from
    try:
        for i in range(count):
            out[i] = pos
            pos += unpack(data, pos)[0] + step
    except struct.error:  # a length field past the end: positions only grow, so it is short
        return None
    return np.asarray(out, dtype=np.int64) if pos == end_all else None


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


def _bodies_utf8(data: bytes, starts: np.ndarray) -> bool:
    """True when every record body (``lp`` records, no tail) is valid UTF-8.

    ASCII bytes are whole characters and never part of a multi-byte one, so the bodies are
    valid exactly when every maximal run of bytes >= 0x80 inside one body is valid UTF-8 on
    its own: only those runs are decoded (joined by an ASCII separator, one decode).
    """
    raw = np.frombuffer(data, np.uint8)
    high = raw >= 0x80
    high[:PREFIX.size] = False
    if len(starts):  # the length fields split the bodies' runs
        high[(starts[:, None] + np.arange(4)).ravel()] = False
    at = np.flatnonzero(high)
    if at.size == 0:
        return True
    # the high bytes in order, a line feed wherever one run ends and the next begins
    joined = np.insert(raw[at], np.flatnonzero(np.diff(at) != 1) + 1, 0x0A)
    try:
        joined.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _Records(Sequence):
    """Records of one section at known offsets, each decoded when read."""

    def __init__(self, data: bytes, starts: np.ndarray) -> None:
        self._data = data
        self._starts = starts.tolist()

    def __len__(self) -> int:
        return len(self._starts)

    def _start(self, i: int) -> int:
        return self._starts[i]

    def _body(self, i: int) -> tuple[str, int]:
        pos = self._start(i)
        end = pos + 4 + _U32.unpack_from(self._data, pos)[0]
        return self._data[pos + 4:end].decode("ascii"), end

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))

    def _find_record(self, body: bytes, stop: int, last: bool) -> int:
        """The first (or ``last``) row below ``stop`` whose body is ``body``; -1 when none is.

        A record is ``u32 len | body``, so row i holds ``body`` exactly when the bytes at its
        start are ``len(body) | body``; a match elsewhere (inside another record) is skipped.
        """
        stop = min(stop, len(self._starts))
        if stop <= 0:
            return -1
        needle = _U32.pack(len(body)) + body
        lo = self._starts[0]
        hi = self._starts[stop] if stop < len(self._starts) else len(self._data)
        starts, data = self._starts, self._data
        while lo < hi:
            at = data.rfind(needle, lo, hi) if last else data.find(needle, lo, hi)
            if at < 0:
                return -1
            row = bisect.bisect_left(starts, at)
            if row < stop and starts[row] == at:
                return row
            if last:
                hi = at + len(needle) - 1  # a match ending before this one's end
            else:
                lo = at + 1
        return -1


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
            lo, hi, _ = slice(start, stop).indices(len(self))
            if lo == 0:  # the usual call: one search of the bytes
                row = self._find_record(value.encode("utf-8"), hi, last=False)
                if row >= 0:
                    return row
            else:
                for j in range(lo, hi):
                    if self[j] == value:
                        return j
        raise ValueError(f"{value!r} is not in the chunk ids")

    def last_index(self, value: str, stop: int) -> int:
        """The last row below ``stop`` whose id is ``value``; -1 when none is."""
        return self._find_record(value.encode("utf-8"), stop, last=True)


class LazyTexts(_Records):
    """The 0x02 canonical texts as a read-only sequence of ``str`` (UTF-8 proven at build)."""

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i):
        """The text of row ``i`` (a list for a slice)."""
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        pos = self._starts[range(len(self))[i]]
        end = pos + 4 + _U32.unpack_from(self._data, pos)[0]
        return self._data[pos + 4:end].decode("utf-8")


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


class WalkedSpans(LazySpans):
    """The spans of a verified body (a full open decoded these bytes before): nothing is read
    at open; the first read decodes the section and walks its records only as far as the
    rows asked for (UTF-8 bodies, as the eager decoder accepted them)."""

    def __init__(self, load: Callable[[], bytes | memoryview], count: int) -> None:
        self._load, self._count = load, count
        self._data = b""
        self._starts: list[int] = []
        self._pos = -1  # where the next record starts; -1: the section is not read yet
        self._replaced = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def _start(self, i: int) -> int:
        if i >= len(self._starts):
            with self._lock:
                if self._pos < 0:
                    self._data, self._pos = bytes(self._load()), PREFIX.size
                data, starts, pos, unpack = self._data, self._starts, self._pos, _U32.unpack_from
                try:
                    while len(starts) <= i:
                        step = 4 + unpack(data, pos)[0] + 16
                        starts.append(pos)
                        pos += step
                except struct.error:  # never for a verified body: the eager decoder says why
                    from ..format.sections.canonical import decode_spans

                    decode_spans(data, self._count)
                    raise
                self._pos = pos
        return self._starts[i]

    def _body(self, i: int) -> tuple[str, int]:
        pos = self._start(i)
        end = pos + 4 + _U32.unpack_from(self._data, pos)[0]
        return self._data[pos + 4:end].decode("utf-8"), end


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


def lazy_texts(raw: bytes | memoryview, expected: int) -> LazyTexts | None:
    """Canonical texts decoded on use, or None when the eager decoder must judge the payload."""
    data = bytes(raw)
    if not _prefix_ok(data, expected):
        return None
    starts = _record_starts(data, expected, 0)
    if starts is None or not _bodies_utf8(data, starts):
        return None
    return LazyTexts(data, starts)


class TextsById:
    """The stored text of a chunk id, as the reference's map gives it: the text of the last
    ordinal holding that id (among the first ``len(texts)``), ``""`` for an unknown id.

    Lazy chunk ids are searched in place for each asked id; any other sequence builds the
    reference's dict once, on the first ask.
    """

    def __init__(self, chunk_ids: Sequence[str], texts: Sequence[str]) -> None:
        self._ids, self._texts = chunk_ids, texts
        self._dict: dict[str, int] | None = None

    def ordinal(self, chunk_id: str) -> int:
        """The ordinal whose text ``chunk_id`` maps to; -1 when it maps to none."""
        stop = min(len(self._texts), len(self._ids))
        if isinstance(self._ids, LazyChunkIds):
            return self._ids.last_index(chunk_id, stop)
        if self._dict is None:
            self._dict = {cid: i for i, cid in enumerate(self._ids) if i < stop}
        return self._dict.get(chunk_id, -1)

    def get(self, chunk_id: str, default: Any = None) -> Any:
        """The text ``chunk_id`` maps to, else ``default`` (the ``dict.get`` of the old map)."""
        i = self.ordinal(chunk_id)
        return default if i < 0 else self._texts[i]
