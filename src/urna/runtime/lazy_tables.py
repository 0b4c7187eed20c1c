"""Chunk ids (0x01), spans (0x03) and texts (0x02) proven decodable, decoded per record on use.

A search touches k records, yet decoding 100,000 ids and spans into Python objects costs
~0.2 s at open, and a retrieve of 3 hits used to decode all 19,000 texts of a file. Here the
caller proves, cheaply, that the eager decoder would succeed (``canonical.string_records`` /
``span_records``: prefix, count, every record inside the payload, no trailing byte, UTF-8)
and keeps the records' offsets; a record becomes a ``str`` when read. Whenever the proof does
not go through, ``None`` is returned and the caller decodes eagerly, so every malformed file
fails exactly as before, with the same error.
:class:`TextsById` answers the reference's text-by-chunk-id map (the last ordinal wins on a
repeated id) for the few ids a result holds, without building it.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from ..errors import UrnaError
from ..format.layout import PREFIX, SECTION_CHUNK_IDS, SECTION_CHUNKS_CANONICAL
from ..format.sections.canonical import (
    SpanRecords,
    StringRecords,
    span_records,
    string_records,
)

_U32 = struct.Struct("<I")
_SPAN_TAIL = struct.Struct("<QQ")


class _Strings(Sequence):
    """The records of a checked string section (``canonical.StringRecords``) as a read-only
    sequence of ``str``, each decoded when read."""

    def __init__(self, records: StringRecords) -> None:
        self._records = records

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i):
        """Record ``i`` (a list for a slice)."""
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._records.text(range(len(self))[i])

    def __iter__(self) -> Iterator[str]:
        return (self._records.text(i) for i in range(len(self)))


class LazyChunkIds(_Strings):
    """The 0x01 chunk ids as a read-only sequence of ``str``."""

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        """The first row whose id is ``value``; ValueError when none is."""
        if isinstance(value, str):
            lo, hi, _ = slice(start, stop).indices(len(self))
            if lo == 0:  # the usual call: one search of the bytes
                row = self._records.find(value, hi)
                if row >= 0:
                    return row
            else:
                for j in range(lo, hi):
                    if self[j] == value:
                        return j
        raise ValueError(f"{value!r} is not in the chunk ids")

    def last_index(self, value: str, stop: int) -> int:
        """The last row below ``stop`` whose id is ``value``; -1 when none is."""
        return self._records.find(value, stop, last=True)


class LazyTexts(_Strings):
    """The 0x02 canonical texts as a read-only sequence of ``str``."""


class LazySpans(Sequence):
    """The 0x03 spans as a sequence of ``(source_uri, byte_start, byte_end)``; the blob
    overlay may replace entries (``spans[i] = ...``), as it does on the eager list."""

    def __init__(self, records: SpanRecords | None) -> None:
        self._records = records
        self._replaced: dict[int, tuple[str, int, int]] = {}

    def __len__(self) -> int:
        return len(self._records) if self._records is not None else 0

    def _span(self, i: int) -> tuple[str, int, int]:
        assert self._records is not None
        return self._records.span(i)

    def __getitem__(self, i):
        """The span of row ``i`` (a list for a slice)."""
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        if i in self._replaced:
            return self._replaced[i]
        return self._span(i)

    def __iter__(self) -> Iterator[tuple[str, int, int]]:
        return (self[i] for i in range(len(self)))

    def __setitem__(self, i: int, span: tuple[str, int, int]) -> None:
        self._replaced[range(len(self))[i]] = span


class WalkedSpans(LazySpans):
    """The spans of a verified body (a full open decoded these bytes before): nothing is read
    at open; the first read decodes the section and walks its records only as far as the
    rows asked for (UTF-8 bodies, as the eager decoder accepted them)."""

    def __init__(self, load: Callable[[], bytes | memoryview], count: int) -> None:
        super().__init__(None)
        self._load, self._count = load, count
        self._pos = -1  # where the next record starts; -1: the section is not read yet
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def _span(self, i: int) -> tuple[str, int, int]:
        records = self._records
        if records is None or i >= len(records.starts):
            records = self._walk_to(i)
        return records.span(i)

    def _walk_to(self, i: int) -> SpanRecords:
        """The records, walked at least as far as row ``i`` (one thread at a time)."""
        with self._lock:
            records = self._records
            if records is None:
                records, self._pos = SpanRecords(bytes(self._load()), []), PREFIX.size
            data, starts, pos, unpack = records.data, records.starts, self._pos, _U32.unpack_from
            append = starts.append
            try:
                for _ in range(i + 1 - len(starts)):
                    length = unpack(data, pos)[0]
                    append(pos + 4)  # SpanRecords keeps where each URI begins
                    pos += length + 20  # u32 length, the URI, u64 start, u64 end
            except struct.error:  # never for a verified body: the eager decoder says why
                from ..format.sections.canonical import decode_spans

                decode_spans(data, self._count)
                raise
            self._pos, self._records = pos, records
            return records


def lazy_chunk_ids(raw: bytes | memoryview, expected: int) -> LazyChunkIds | None:
    """Chunk ids decoded on use, or None when the eager decoder must judge the payload."""
    try:
        return LazyChunkIds(string_records(raw, expected, SECTION_CHUNK_IDS))
    except UrnaError:
        return None


def lazy_spans(raw: bytes | memoryview, expected: int) -> LazySpans | None:
    """Spans decoded on use, or None when the eager decoder must judge the payload."""
    try:
        return LazySpans(span_records(raw, expected))
    except UrnaError:
        return None


def lazy_texts(raw: bytes | memoryview, expected: int, *,
               utf8_checked: bool = False) -> LazyTexts | None:
    """Canonical texts decoded on use, or None when the eager decoder must judge the payload
    (``utf8_checked``: as for ``canonical.string_records``)."""
    try:
        return LazyTexts(string_records(raw, expected, SECTION_CHUNKS_CANONICAL,
                                        utf8_checked=utf8_checked))
    except UrnaError:
        return None


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
