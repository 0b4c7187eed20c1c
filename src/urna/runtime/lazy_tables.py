"""Chunk ids (0x01), spans (0x03) and texts (0x02) proven decodable, decoded per record on use.

A search touches k records, yet decoding 100,000 ids and spans into Python objects costs
~0.2 s at open, and a retrieve of 3 hits used to decode all 19,000 texts of a file. Here the
caller proves, cheaply, that the eager decoder would succeed (``canonical.string_records`` /
``span_records``: prefix, count, every record inside the payload, no trailing byte, UTF-8)
and keeps the records' offsets; a record becomes a ``str`` when read. Whenever the proof does
not go through, ``None`` is returned and the caller decodes eagerly, so every malformed file
fails exactly as before, with the same error. On a verified body whose verdict proved the
records (the same bytes parsed whole before), :class:`WalkedTexts` and :class:`WalkedSpans`
skip the proof and walk the records only as far as the rows read.
:class:`TextsById` answers the reference's text-by-chunk-id map (the last ordinal wins on a
repeated id) for the few ids a result holds, without building it: lazy ids search their bytes,
and map their rows only once many were asked (:class:`LazyChunkIds`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, overload

from ..errors import UrnaError
from ..format.encodings.repack import BlockSpans, ColumnSpans, DigestIds

if TYPE_CHECKING:
    from ..format.sections.canonical import Prefix
from ..format.layout import (
    PREFIX,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_PAYLOAD_VERSION,
)
from ..format.sections.canonical import (
    ProvenSpans,
    ProvenStrings,
    SpanRecords,
    StringRecords,
    as_prefix,
    decode_spans,
    decode_texts,
    span_records,
    string_records,
)


class _Strings(Sequence):
    """The records of a checked string section (``canonical.StringRecords``, or a verified
    repacked 0x01's ``repack.DigestIds``) as a read-only sequence of ``str``, each decoded when
    read."""

    def __init__(self, records: StringRecords | DigestIds) -> None:
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
        return self._text(range(len(self))[i])

    def __iter__(self) -> Iterator[str]:
        return (self._text(i) for i in range(len(self)))

    def _text(self, i: int) -> str:
        return self._records.text(i)


class LazyChunkIds(_Strings):
    """The 0x01 chunk ids as a read-only sequence of ``str``.

    An id is looked up by searching the records' bytes for the first ``searches_before_map``
    lookups (a command-line call makes a few); after that the ids' rows are mapped once. A
    search reads on average half the id bytes: ~0.7 ms a ``cite`` or a retrieved hit's text
    on 100,000 ids, which a resident server would otherwise pay on every request.
    """

    searches_before_map = 64
    """Lookups searched in the bytes before the map is built (it costs about this many)."""

    def __init__(self, records: StringRecords | DigestIds) -> None:
        super().__init__(records)
        self._rows: dict[str, tuple[int, int]] | None = None  # id -> (first row, last row)
        self._searches = 0

    def _rows_by_id(self) -> dict[str, tuple[int, int]] | None:
        """Each id's first and last row, once enough lookups were searched; None before
        (this lookup counted)."""
        rows = self._rows
        if rows is None:
            self._searches += 1  # a race only miscounts: the map gives the same rows
            if self._searches <= self.searches_before_map:
                return None
            rows = {}
            for i, cid in enumerate(self):
                seen = rows.get(cid)
                rows[cid] = (i, i) if seen is None else (seen[0], i)
            self._rows = rows
        return rows

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        """The first row whose id is ``value``; ValueError when none is."""
        if isinstance(value, str):
            lo, hi, _ = slice(start, stop).indices(len(self))
            if lo == 0:  # the usual call: one map lookup, or one search of the bytes
                rows = self._rows_by_id()
                if rows is not None:
                    first = rows.get(value, (hi, hi))[0]
                    if first < hi:
                        return first
                else:
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
        rows = self._rows_by_id()
        if rows is not None:
            got = rows.get(value)
            if got is None or got[0] >= stop:
                return -1
            if got[1] < stop:
                return got[1]
        return self._records.find(value, stop, last=True)  # a repeat past ``stop``: rare


class LazyTexts(_Strings):
    """The 0x02 canonical texts as a read-only sequence of ``str``."""


class LazySpans(Sequence):
    """The 0x03 spans as a sequence of ``(source_uri, byte_start, byte_end)``; the blob
    overlay may replace entries (``spans[i] = ...``), as it does on the eager list."""

    def __init__(self, records: SpanRecords | ColumnSpans | BlockSpans | None) -> None:
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


class _ProvenRows:
    """The payload of a verified body whose verdict proved its records (a full parse of these
    very bytes succeeded), read row by row through one kept ``canonical.RecordWalk``: the
    payload is loaded on the first read (whole, or a zstd section as a ``canonical.Prefix``
    decoded only as far as the rows read), and walked only as far as the rows asked for.

    A row the walk cannot read (a prefix that is not ``version 1 | count``, a record past the
    payload, a body that is not UTF-8: the bytes are not the proven ones) is answered by the
    full parse of ``whole()`` (the decoded section; ``load()``'s bytes by default), so it
    raises the eager decoder's error. Thread-safe: one thread loads.

    ``kept``: ``(body digest, section id)`` of a verified body: the record starts an earlier
    call kept for these bytes are taken at load (no walk to a row), or the first load walks
    every record and keeps them (``runtime.verdicts.kept_starts``).
    """

    def __init__(self, load: Callable[[], bytes | memoryview | Prefix], count: int,
                 walker: Callable[[Prefix], ProvenStrings | ProvenSpans],
                 decode: Callable[[bytes, int], list[Any]],
                 whole: Callable[[], bytes | memoryview] | None = None,
                 kept: tuple[bytes, int] | None = None) -> None:
        self._load, self._count, self._walker, self._decode = load, count, walker, decode
        self._whole, self._kept = whole, kept
        self._source: Prefix | None = None
        self._walk: ProvenStrings | ProvenSpans | None = None
        self._eager: list[Any] | None = None
        self._lock = threading.Lock()

    def walk(self) -> ProvenStrings | ProvenSpans | None:
        """The kept walk (the payload loaded on the first call); None when the prefix is not
        the proven one."""
        if self._source is None:
            with self._lock:
                if self._source is None:
                    source = as_prefix(self._load())
                    if (source.extend(PREFIX.size) and PREFIX.unpack_from(source.data, 0)
                            == (SECTION_PAYLOAD_VERSION, self._count)):
                        self._walk = self._walker(source)
                        if self._kept is not None:
                            self._settle(self._walk, *self._kept)
                    self._source = source
        return self._walk

    def _settle(self, walk: ProvenStrings | ProvenSpans, body_digest: bytes,
                section_id: int) -> None:
        """Take the record starts kept for these verified bytes; else walk every record once
        and keep their starts for the next call (``runtime.verdicts``)."""
        from . import verdicts

        starts = verdicts.kept_starts(body_digest, section_id, self._count)
        if starts is not None:
            walk.adopt(starts)
        elif (self._count >= verdicts.STARTS_MIN_RECORDS
              and walk.bounds(self._count - 1) is not None and len(walk.starts) == self._count):
            verdicts.keep_starts(body_digest, section_id, walk.starts)

    def row(self, i: int) -> Any:
        """Row ``i``: read through the walk, else (bytes not the proven ones) parsed."""
        walk = self.walk()
        got = None if walk is None else walk.row(i)
        return got if got is not None else self.parsed(i)

    def parsed(self, i: int) -> Any:
        """Row ``i`` as the full parse gives it (its error when the payload is malformed)."""
        self.walk()
        eager = self._eager
        if eager is None:
            if self._whole is not None:
                raw = self._whole()
            else:
                assert self._source is not None
                raw = self._source.data
            eager = self._eager = self._decode(raw if isinstance(raw, bytes) else bytes(raw),
                                               self._count)
        return eager[i]


class WalkedTexts(LazyTexts):
    """The texts of a verified body whose verdict proved 0x02's records (``TEXT_RECORDS`` or
    ``CITE_RECORDS``): none is walked until read, then the records only up to the row asked
    for (``_ProvenRows``; ``load`` and ``whole`` as there)."""

    def __init__(self, load: Callable[[], bytes | memoryview | Prefix], count: int,
                 whole: Callable[[], bytes | memoryview] | None = None,
                 kept: tuple[bytes, int] | None = None) -> None:
        self._rows = _ProvenRows(load, count, ProvenStrings, decode_texts, whole, kept)
        self._count = count

    def __len__(self) -> int:
        return self._count

    def _text(self, i: int) -> str:
        return self._rows.row(i)


class WalkedSpans(LazySpans):
    """The spans of a verified body (a full open decoded these bytes before): nothing is read
    at open; the first read decodes the section (a zstd one only as far as the rows read) and
    walks its records only as far as the rows asked for (``_ProvenRows``)."""

    def __init__(self, load: Callable[[], bytes | memoryview | Prefix], count: int,
                 whole: Callable[[], bytes | memoryview] | None = None,
                 kept: tuple[bytes, int] | None = None) -> None:
        super().__init__(None)
        self._rows = _ProvenRows(load, count, ProvenSpans, decode_spans, whole, kept)
        self._count = count

    def __len__(self) -> int:
        return self._count

    def _span(self, i: int) -> tuple[str, int, int]:
        return self._rows.row(i)


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

    Lazy chunk ids answer each asked id themselves (``LazyChunkIds.last_index``: searched in
    place, then mapped once many were asked); any other sequence builds the reference's dict
    once, on the first ask.
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
            # later rows overwrite earlier ones: the last ordinal wins, as in the reference
            self._dict = {cid: i for i, cid in enumerate(islice(self._ids, stop))}
        return self._dict.get(chunk_id, -1)

    def get(self, chunk_id: str, default: Any = None) -> Any:
        """The text ``chunk_id`` maps to, else ``default`` (the ``dict.get`` of the old map)."""
        i = self.ordinal(chunk_id)
        return default if i < 0 else self._texts[i]
