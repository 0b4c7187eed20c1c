"""Raw forms of the canonical sections 0x01, 0x02, 0x03, 0x05, 0x06 (01-container §8).

Each payload starts with ``u32 version = 1 | u64 count``. Decoders check, in this order:
the 12-byte prefix, the version, the count against the caller's expectation, each
length against the bytes left, UTF-8, and trailing bytes.
"""

from __future__ import annotations

import json
import struct
import sys
import threading
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import repeat

from ...errors import (
    InvalidInput,
    MalformedSectionPayload,
    SectionCountMismatch,
    UnsupportedSectionVersion,
)
from ..cursor import Cursor, decode_utf8, lp
from ..layout import (
    PREFIX,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_PAYLOAD_VERSION,
    SECTION_PROVENANCE,
    SECTION_SEARCH_CONTRACT,
    U32_MAX,
    pack_prefix,
)

_SPAN_TAIL = struct.Struct("<QQ")  # byte_start, byte_end
_U32 = struct.Struct("<I")
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays unimported on cite's path
    from typing import Protocol, TypeVar

    _T = TypeVar("_T")

    class Prefix(Protocol):
        """Decoded bytes from a payload's start, decoded on demand (``encodings.zstd``'s
        ``DecodedPrefix``, or ``WholePayload``)."""

        @property
        def data(self) -> bytes | memoryview:
            """The bytes decoded so far."""
            ...

        def extend(self, n: int) -> bool:
            """Whether ``data`` holds (now) at least ``n`` bytes."""
            ...

CONTRACT_KEYS = ("metric", "score_type", "normalize", "index_type", "rerank_policy")


def _lp_checked(data: bytes) -> bytes:
    if len(data) > U32_MAX:
        raise InvalidInput(f"string too long: {len(data)} bytes")
    return lp(data)


def encode_strings(strings: list[str]) -> bytes:
    """``prefix(n)`` then ``n x lp(utf8)``: the raw form of 0x01 and 0x02."""
    return pack_prefix(len(strings)) + b"".join(_lp_checked(s.encode("utf-8")) for s in strings)


encode_chunk_ids = encode_strings
encode_texts = encode_strings


def encode_spans(spans: list[tuple[str, int, int]]) -> bytes:
    """Raw 0x03: ``prefix(n)`` then ``lp(uri) | u64 start | u64 end`` per chunk."""
    parts = [pack_prefix(len(spans))]
    for uri, start, end in spans:
        parts.append(_lp_checked(uri.encode("utf-8")))
        parts.append(_SPAN_TAIL.pack(start, end))
    return b"".join(parts)


def _open(raw: bytes | memoryview, section_id: int, expected: int | None) -> tuple[Cursor, int]:
    if len(raw) < PREFIX.size:
        raise MalformedSectionPayload(section_id, "payload shorter than 12 byte prefix")
    version, count = PREFIX.unpack_from(raw, 0)
    if version != SECTION_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(section_id, version)
    if expected is not None and count != expected:
        raise SectionCountMismatch(section_id, expected, count)
    return Cursor(raw, section_id, PREFIX.size), count


def _scan_strings(raw: bytes, count: int) -> list[bytes] | None:
    """Fast path: split ``count`` length-prefixed records; None if anything does not fit."""
    starts = _walked_starts(raw, count)
    if starts is None:
        return None
    return [raw[lo:hi - 4] for lo, hi in zip(starts, starts[1:], strict=False)]


def decode_string_bodies(raw: bytes | memoryview, expected: int | None,
                        section_id: int) -> list[bytes]:
    """Parse ``prefix(n) + n x lp(utf8)`` with the reference's checks; UTF-8-checked bodies.

    A fast scan handles well-formed payloads; anything irregular is re-read record by record
    with the bounded cursor, as the reference reads it, so a short payload fails at the record
    that runs out (with its offset). Each record consumes >= 4 bytes, which bounds the loop.
    """
    cur, count = _open(raw, section_id, expected)
    bodies = _scan_strings(bytes(raw), count)
    if bodies is not None:
        try:
            for body in bodies:
                body.decode("utf-8")
            return bodies
        except UnicodeDecodeError:
            pass  # the cursor below reports the first bad record exactly
    out = []
    for _ in range(count):
        body = cur.lp_bytes()
        decode_utf8(body, section_id)
        out.append(body)
    cur.expect_end()
    return out


def decode_strings(raw: bytes | memoryview, expected: int | None, section_id: int) -> list[str]:
    """Parse ``prefix(n) + n x lp(utf8)`` to strings."""
    cur, count = _open(raw, section_id, expected)
    bodies = _scan_strings(bytes(raw), count)
    if bodies is not None:
        try:  # one decode per body, which is also its UTF-8 check
            return [body.decode("utf-8") for body in bodies]
        except UnicodeDecodeError:
            pass
    return [body.decode("utf-8") for body in decode_string_bodies(raw, expected, section_id)]


class StringRecords:
    """The records of a checked ``prefix(n) + n x lp(utf8)`` payload, sliced on demand.

    ``starts[i]`` is where body ``i`` begins and ``starts[i + 1] - 4`` where it ends (the last
    entry is the payload length + 4). Built by ``string_records``; a caller that wants one
    record of many (``cite``) pays for the walk, not for ``n`` strings.
    """

    __slots__ = ("data", "starts")

    def __init__(self, data: bytes, starts: Sequence[int]) -> None:
        self.data = data
        self.starts = starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def body(self, i: int) -> bytes:
        """The UTF-8 bytes of record ``i``."""
        return self.data[self.starts[i]:self.starts[i + 1] - 4]

    def text(self, i: int) -> str:
        """Record ``i`` as a string."""
        return self.body(i).decode("utf-8")

    def index(self, wanted: str) -> int:
        """The first record equal to ``wanted``; ValueError when none is (as ``list.index``)."""
        i = self.find(wanted)
        if i < 0:
            raise ValueError(wanted)
        return i

    def find(self, wanted: str, stop: int | None = None, *, last: bool = False) -> int:
        """The first (or ``last``) record below ``stop`` equal to ``wanted``; -1 when none is.

        Record i holds ``wanted`` exactly when ``lp(wanted)`` starts 4 bytes before its body;
        a match elsewhere (inside another record) is skipped. One search of the bytes.
        """
        try:
            needle = lp(wanted.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: no decoded record can equal it
            return -1
        n = len(self)
        stop = n if stop is None else max(0, min(stop, n))
        if stop == 0:
            return -1
        starts, data = self.starts, self.data
        lo, hi = starts[0] - 4, starts[stop] - 4  # record `stop`'s length field ends the range
        while lo < hi:
            at = data.rfind(needle, lo, hi) if last else data.find(needle, lo, hi)
            if at < 0:
                return -1
            i = _position(starts, at + 4)
            if i is not None and i < stop:
                return i
            if last:
                hi = at + len(needle) - 1  # a match starting before this one
            else:
                lo = at + 1
        return -1


def _position(starts: Sequence[int], start: int) -> int | None:
    """``i`` with ``starts[i] == start`` among the record starts, else None."""
    if isinstance(starts, range):
        if start in starts[:-1]:
            return starts.index(start)
        return None
    i = bisect_left(starts, start, 0, len(starts) - 1)
    return i if i < len(starts) - 1 and starts[i] == start else None


def _fixed_starts(data: bytes, count: int) -> range | None:
    """The record starts when every record has one length (chunk ids do), checked by columns."""
    rest = len(data) - PREFIX.size
    if count == 0 or rest % count:
        return None
    stride = rest // count
    if stride < 4 or stride - 4 > U32_MAX:
        return None
    head = _U32.pack(stride - 4)
    for j in range(4):  # byte j of every length prefix, one strided slice each
        if data[PREFIX.size + j::stride] != head[j:j + 1] * count:
            return None
    return range(PREFIX.size + 4, PREFIX.size + 4 + stride * count + 1, stride)


class RecordWalk:
    """The record starts of an ``lp(body) + tail`` payload (strings: tail 0, spans: 16),
    walked from the 12-byte prefix only as far as a caller asks, and kept.

    The one walk of these records: the full proof (``_record_starts``) and the on-demand reads
    of proven payloads (``ProvenStrings``, ``ProvenSpans``) both take it. Thread-safe: one
    thread extends ``starts`` at a time; an entry, once there, never changes. Each step
    consumes >= 4 bytes, so a walk never passes the payload's end by more than one record.
    """

    __slots__ = ("_lock", "data", "end", "starts", "tail")

    def __init__(self, data: bytes, tail: int) -> None:
        self.data, self.tail = data, tail
        self.starts: list[int] = []  # where each walked record's body begins
        self.end = PREFIX.size  # where the last walked record ends (its tail included)
        self._lock = threading.Lock()

    def walk(self, n: int) -> bool:
        """Walk until ``n`` record starts are known; False when the payload ends before."""
        if len(self.starts) >= n:
            return True
        with self._lock:
            starts, data, step = self.starts, self.data, 4 + self.tail
            walked: list[int] = []  # joined at once: a reader never sees a start taken back
            append, unpack = walked.append, _U32.unpack_from
            pos = self.end + 4  # where the next body begins, if its length field fits
            try:  # a length field past the end raises: no bounds test in the loop
                for _ in repeat(None, n - len(starts)):
                    append(pos)
                    pos += unpack(data, pos - 4)[0] + step
            except struct.error:
                walked.pop()  # its length field does not fit; ``pos`` is still its body
            starts.extend(walked)
            self.end = pos - 4
            return len(starts) >= n

    def bounds(self, i: int) -> tuple[int, int] | None:
        """Where record ``i``'s body begins and ends; None when it (or its tail) does not lie
        inside the payload."""
        if i < 0 or not self.walk(i + 1):
            return None
        start = self.starts[i]
        end = start + _U32.unpack_from(self.data, start - 4)[0]
        return (start, end) if end + self.tail <= len(self.data) else None


def _record_starts(data: bytes, count: int, tail: int) -> list[int] | None:
    """Where each of ``count`` ``lp(body) + tail bytes`` records' body begins, or None if they
    do not fill ``data`` exactly (the strings' walk with ``tail`` 0, the spans' with 16)."""
    if count > (len(data) - PREFIX.size) // (4 + tail):
        return None  # each record takes at least its 4-byte length and its tail
    walk = RecordWalk(data, tail)
    return walk.starts if walk.walk(count) and walk.end == len(data) else None


# Records of payloads these very bytes proved well formed before (a verdict of the same body:
# count, every length, no trailing byte, UTF-8): a record is read by walking the lengths up
# to it, not the whole payload, and the walk is kept for the next read. None when the walk
# leaves the payload or the bytes do not decode (then they are not the proven ones, and the
# full parse decides).

class WholePayload:
    """A payload decoded whole, as a ``Prefix``."""

    __slots__ = ("data",)

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data

    def extend(self, n: int) -> bool:
        """Whether the payload holds ``n`` bytes."""
        return len(self.data) >= n


def as_prefix(raw: bytes | memoryview | Prefix) -> Prefix:
    """``raw`` as a ``Prefix`` (bytes held whole become a ``WholePayload``)."""
    return WholePayload(raw) if isinstance(raw, (bytes, memoryview)) else raw


_NO_WALK = sys.maxsize // 2  # an end no length field lies at: a walk from it stops at once


class _ProvenWalk(RecordWalk):
    """The walk of a proven payload held whole or as a ``Prefix`` (a zstd section decoded
    only as far as the records read); thread-safe as the walk is: one thread extends the
    prefix at a time."""

    __slots__ = ("_grow", "prefix")

    def __init__(self, raw: bytes | memoryview | Prefix, tail: int) -> None:
        self.prefix = as_prefix(raw)
        super().__init__(self.prefix.data, tail)  # type: ignore[arg-type]  # any buffer unpacks
        self._grow = threading.Lock()

    def _reach(self, n: int) -> bool:
        """Whether the payload holds ``n`` bytes (the prefix extended so far if need be)."""
        if len(self.data) >= n:
            return True
        with self._grow:
            ok = self.prefix.extend(n)
            self.data = self.prefix.data  # type: ignore[assignment]
        return ok

    def bounds(self, i: int) -> tuple[int, int] | None:
        """Where record ``i``'s body begins and ends; None when it (or its tail) does not lie
        inside the payload, or does not end where the next record's length field begins."""
        if i < 0:
            return None
        while not self.walk(i + 1):
            # the walk stopped at a length field past the bytes so far (record len(starts)'s)
            if not self._reach(self.end + 4):
                return None
        starts = self.starts
        start = starts[i]
        if start < PREFIX.size + 4 or not self._reach(start):
            return None
        end = start + _U32.unpack_from(self.data, start - 4)[0]
        if i + 1 < len(starts) and starts[i + 1] != end + self.tail + 4:
            return None  # kept starts (``adopt``) that are not these bytes' records
        return (start, end) if self._reach(end + self.tail) else None

    def adopt(self, starts: Sequence[int]) -> None:
        """Take every record's start, found by an earlier walk of these same proven bytes
        (``runtime.verdicts.kept_starts``): a row is then read without walking to it. A walk
        past them never resumes (a row past the records is the full parse's to answer)."""
        with self._lock:
            self.starts = starts  # type: ignore[assignment]  # any sequence of ints
            self.end = _NO_WALK


class ProvenStrings(_ProvenWalk):
    """A proven 0x01 / 0x02 payload, read record by record."""

    __slots__ = ()

    def __init__(self, data: bytes | memoryview | Prefix) -> None:
        super().__init__(data, 0)

    def text(self, i: int) -> str | None:
        """Record ``i`` as a string; None when it is not inside the payload or not UTF-8."""
        at = self.bounds(i)
        try:
            return None if at is None else str(self.data[at[0]:at[1]], "utf-8")
        except UnicodeDecodeError:
            return None

    row = text


class ProvenSpans(_ProvenWalk):
    """A proven 0x03 payload, read record by record."""

    __slots__ = ()

    def __init__(self, data: bytes | memoryview | Prefix) -> None:
        super().__init__(data, _SPAN_TAIL.size)

    def span(self, i: int) -> tuple[str, int, int] | None:
        """``(source_uri, byte_start, byte_end)`` of record ``i``; None as for ``text``."""
        at = self.bounds(i)
        if at is None:
            return None
        try:
            return (str(self.data[at[0]:at[1]], "utf-8"),
                    *_SPAN_TAIL.unpack_from(self.data, at[1]))
        except UnicodeDecodeError:
            return None

    row = span


def _as_bytes(raw: bytes | memoryview) -> bytes:
    return raw if isinstance(raw, bytes) else bytes(raw)


def proven_string(raw: bytes | memoryview | Prefix, i: int) -> str | None:
    """Record ``i`` of a proven 0x01 / 0x02 payload, held whole or as a ``Prefix`` decoded up
    to that record (one read: ``ProvenStrings``)."""
    return ProvenStrings(raw).text(i)


def proven_span(raw: bytes | memoryview | Prefix, i: int) -> tuple[str, int, int] | None:
    """Record ``i`` of a proven 0x03 payload (as for ``proven_string``: ``ProvenSpans``)."""
    return ProvenSpans(raw).span(i)


def _walked_starts(data: bytes, count: int) -> list[int] | None:
    """The record starts of ``count`` length-prefixed strings, then ``len(data) + 4`` (so
    record i ends at ``starts[i + 1] - 4``), or None if they do not fit."""
    starts = _record_starts(data, count, 0)
    if starts is not None:
        starts.append(len(data) + 4)
    return starts


def _records_ascii(data: bytes) -> bool:
    """Whether every record byte is ASCII (lengths and bodies alike): then each body is UTF-8.
    The 12-byte prefix is left out: a count of 128 or more has a byte past 0x7f. The whole
    payload is tested first, in place; only a prefix past 0x7f costs the copy of the rest."""
    if data.isascii():
        return True
    if data[:PREFIX.size].isascii():
        return False  # the byte past 0x7f is a record's
    return data[PREFIX.size:].isascii()


# From this many records a process that has numpy loaded (the open or validate of a file with
# indexes) checks the bodies' UTF-8 in one pass (``masked_utf8``); this module never imports
# numpy itself (cite, and validate of a file without indexes, do without it).
_MASKED_MIN_RECORDS = 256
# Bytes per incremental decode: each call's string stays under 64 KiB (even at 4 bytes a code
# point), below glibc's mmap threshold, so a fresh process (the CLI) reuses heap memory for it
# instead of mapping and faulting in a new region per string (~3 ms of validate's 0x02 check).
_DECODE_STEP = 1 << 14
_MASK_BLOCK = 1 << 18  # bytes of records masked at a time: one reused buffer, in cache


def masked_utf8(data: bytes, starts: Sequence[int], gap: int, tail: int) -> bool:
    """Whether every body of a walked payload is UTF-8 (``starts``: where each body begins;
    ``gap``: the bytes before each later body, its length and the record before's tail;
    ``tail``: the bytes after the last body).

    The bodies are read in blocks of whole records (``_MASK_BLOCK`` bytes at most, unless one
    record is larger): each block is copied into one reused buffer whose gap bytes become line
    feeds, then decoded incrementally as one text. An ASCII byte between two bodies leaves each
    one's validity its own (it is never part of a multi-byte sequence and ends an unfinished
    one), and a block ends where a body ends, so it is decoded as final. The buffer stays in
    cache and costs a fresh process no new pages (a copy of the whole payload cost validate's
    0x02 check ~4 ms of page faults).
    """
    import numpy as np

    if not starts:
        return True
    src = np.frombuffer(data, dtype=np.uint8)
    bodies = np.asarray(starts, dtype=np.int64)
    n, end = len(bodies), len(data) - tail
    room = np.empty(min(_MASK_BLOCK, end - int(bodies[0])), dtype=np.uint8)
    r0 = 0
    while r0 < n:
        lo = int(bodies[r0])
        # the block is records r0..r1-1, and ends `gap` bytes before body r1 begins (at the
        # payload's last body byte for the last record): the most records that fit the buffer
        past = int(np.searchsorted(bodies, lo + len(room) + gap, "right"))
        r1 = n if past == n and end - lo <= len(room) else past - 1
        if r1 == r0:  # one record larger than the buffer: its body alone, in place
            hi = int(bodies[r0 + 1]) - gap if r0 + 1 < n else end
            if not _utf8(src[lo:hi].data):
                return False
            r0 += 1
            continue
        hi = int(bodies[r1]) - gap if r1 < n else end
        part = room[:hi - lo]
        np.copyto(part, src[lo:hi])
        inner = bodies[r0 + 1:r1] - lo
        for j in range(1, gap + 1):
            part[inner - j] = 0x0A
        if not _utf8(part.data):
            return False
        r0 = r1
    return True


def _utf8(view: memoryview) -> bool:
    """Whether ``view``'s bytes are UTF-8, decoded ``_DECODE_STEP`` bytes at a time."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(view), _DECODE_STEP):
            decoder.decode(view[at:at + _DECODE_STEP])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


def _masked_pays(n_records: int) -> bool:
    return n_records >= _MASKED_MIN_RECORDS and "numpy" in sys.modules


def _bodies_utf8(records: StringRecords) -> bool:
    if _records_ascii(records.data):
        return True
    if _masked_pays(len(records)):
        return masked_utf8(records.data, records.starts[:-1], 4, 0)
    try:
        for i in range(len(records)):
            body = records.body(i)
            if not body.isascii():
                body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def string_records(raw: bytes | memoryview, expected: int | None, section_id: int, *,
                   utf8_checked: bool = False) -> StringRecords:
    """``decode_string_bodies``'s checks and outcome, as ``StringRecords`` (no string built).

    ``utf8_checked``: these very bytes passed this parse before (a verdict of the same body),
    so the bodies' UTF-8 is not walked again; the structure is, since it locates the records.
    Any failure is raised by ``decode_string_bodies`` itself, so the error is its error.
    """
    _open(raw, section_id, expected)
    data = _as_bytes(raw)
    count = PREFIX.unpack_from(data, 0)[1]
    starts = _fixed_starts(data, count)
    records = StringRecords(data, starts if starts is not None else
                            _walked_starts(data, count) or [])
    if records.starts and (utf8_checked or _bodies_utf8(records)):
        return records
    decode_string_bodies(raw, expected, section_id)  # raises the first failure, in its words
    raise AssertionError("a payload the record walk refused passed the reader")


def decode_chunk_ids(raw: bytes | memoryview, expected: int | None) -> list[str]:
    """Decode raw 0x01 to chunk id strings."""
    return decode_strings(raw, expected, SECTION_CHUNK_IDS)


def decode_texts(raw: bytes | memoryview, expected: int | None) -> list[str]:
    """Decode raw 0x02 to canonical texts."""
    return decode_strings(raw, expected, SECTION_CHUNKS_CANONICAL)


def decode_spans(raw: bytes | memoryview, expected: int | None) -> list[tuple[str, int, int]]:
    """Decode raw 0x03 to ``(source_uri, byte_start, byte_end)`` tuples."""
    cur, count = _open(raw, SECTION_CHUNKS_ORIGINAL_SPANS, expected)
    data = bytes(raw)
    starts = _record_starts(data, count, _SPAN_TAIL.size)
    if starts is not None:  # fast path; the cursor below explains any failure
        records = SpanRecords(data, starts)
        try:
            return [records.span(i) for i in range(count)]
        except UnicodeDecodeError:
            pass
    out = []
    for _ in range(count):
        uri = cur.lp_str()
        out.append((uri, cur.u64(), cur.u64()))  # two reads: a short tail names 8 bytes
    cur.expect_end()
    return out


class SpanRecords:
    """The records of a checked raw 0x03 payload, decoded on demand (see ``span_records``)."""

    __slots__ = ("data", "starts")

    def __init__(self, data: bytes, starts: list[int]) -> None:
        self.data = data
        self.starts = starts  # where each record's URI begins (after its length)

    def __len__(self) -> int:
        return len(self.starts)

    def span(self, i: int) -> tuple[str, int, int]:
        """``(source_uri, byte_start, byte_end)`` of record ``i``."""
        start = self.starts[i]
        end = start + _U32.unpack_from(self.data, start - 4)[0]
        return (self.data[start:end].decode("utf-8"), *_SPAN_TAIL.unpack_from(self.data, end))


def span_records(raw: bytes | memoryview, expected: int | None, *,
                 utf8_checked: bool = False) -> SpanRecords:
    """``decode_spans``'s checks and outcome, as ``SpanRecords`` (no tuple built).

    ``utf8_checked`` as for ``string_records``; any failure is ``decode_spans``'s own error.
    """
    _, count = _open(raw, SECTION_CHUNKS_ORIGINAL_SPANS, expected)
    data = _as_bytes(raw)
    starts = _record_starts(data, count, _SPAN_TAIL.size)
    if starts is not None and (utf8_checked or _records_ascii(data) or _uris_utf8(data, starts)):
        return SpanRecords(data, starts)
    decode_spans(raw, expected)  # raises the first failure, in its words
    raise AssertionError("a payload the span walk refused passed the reader")


def _uris_utf8(data: bytes, starts: list[int]) -> bool:
    if _masked_pays(len(starts)):
        return masked_utf8(data, starts, 4 + _SPAN_TAIL.size, _SPAN_TAIL.size)
    unpack = _U32.unpack_from
    try:
        for start in starts:
            uri = data[start:start + unpack(data, start - 4)[0]]
            if not uri.isascii():
                uri.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def encode_json_section(json_bytes: bytes, too_large: str) -> bytes:
    """``u32 1 | u64 len | json``: the form of 0x05 provenance and 0x06 search_contract."""
    if len(json_bytes) > U32_MAX:
        raise InvalidInput(too_large)
    return pack_prefix(len(json_bytes)) + json_bytes


def encode_provenance(json_bytes: bytes) -> bytes:
    """Raw 0x05 from compact provenance JSON bytes."""
    return encode_json_section(json_bytes, "provenance JSON too large")


def encode_contract(fields: dict[str, str]) -> bytes:
    """Raw 0x06 from the five contract fields, in the reference's key order."""
    body = "{" + ",".join(f'"{k}":{json.dumps(fields[k], ensure_ascii=False)}'
                          for k in CONTRACT_KEYS) + "}"
    return encode_json_section(body.encode("utf-8"), "search_contract JSON too large")


def _json_section(raw: bytes | memoryview, section_id: int, parse: Callable[[bytes], _T]) -> _T:
    """Parse a ``u32 1 | u64 len | json`` payload; the JSON is parsed before the trailing-byte
    check, as the reference does (a bad JSON body with bytes after it is a ``Json`` error)."""
    if len(raw) < PREFIX.size:
        raise MalformedSectionPayload(section_id, "payload shorter than prefix")
    version, length = PREFIX.unpack_from(raw, 0)
    if version != SECTION_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(section_id, version)
    cur = Cursor(raw, section_id, PREFIX.size)
    value = parse(cur.take(length))
    cur.expect_end()
    return value


def decode_contract(raw: bytes | memoryview) -> dict[str, str]:
    """Decode raw 0x06 to its five fields, read the way serde's derived struct reads them."""
    from ..json_text import STR, Struct, deserialize

    spec = Struct("SearchContract", tuple((key, STR) for key in CONTRACT_KEYS))
    return _json_section(raw, SECTION_SEARCH_CONTRACT, lambda body: deserialize(body, spec))


def decode_provenance(raw: bytes | memoryview) -> object:
    """Decode raw 0x05 to its JSON value."""
    from ..json_text import parse_json

    return _json_section(raw, SECTION_PROVENANCE, parse_json)
