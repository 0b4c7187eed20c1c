"""Wire encoding 4, the repack container: chunk_ids as raw digests, spans as intpack columns.

02-encodings §4. The first byte selects the body (0 = chunk_ids, 1 = spans), never the section
id. Both bodies decode to the exact raw payload of §2, so content_hash does not depend on the
choice. Decoders bound every count by the bytes present; errors are
``MalformedSectionPayload`` (0x01 / 0x03 / 0 inside) that the dispatcher re-tags.
"""

from __future__ import annotations

import re
import struct
from itertools import chain

from ...errors import MalformedSectionPayload
from ..cursor import Cursor, decode_utf8
from ..layout import SECTION_CHUNK_IDS, SECTION_CHUNKS_ORIGINAL_SPANS
from ._canonical import byte_view
from .intpack_scan import INTPACK_BLOCK, block_values, read_directory

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    import numpy as np

KIND_CHUNK_IDS = 0
KIND_SPANS = 1
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_PREFIX = struct.Struct("<IQ")
_MASK64 = (1 << 64) - 1
_CANONICAL_ID = re.compile(r"sha256:[0-9a-f]{64}\Z")
_ID_HEAD = _U32.pack(71) + b"sha256:"


def chunk_ids_eligible(chunk_ids: list[str]) -> bool:
    """Whether every id is ``sha256:`` + 64 lowercase hex (else the writer stores 0x01 raw)."""
    return all(_CANONICAL_ID.match(cid) for cid in chunk_ids)


def encode_chunk_ids(chunk_ids: list[str]) -> bytes:
    """Kind 0: ``00 | u32 n | n x 32-byte digest``; ids must be eligible."""
    if not chunk_ids_eligible(chunk_ids):
        raise ValueError("chunk ids are not all canonical sha256:<64 lowercase hex>")
    digests = b"".join(bytes.fromhex(cid[7:]) for cid in chunk_ids)
    return bytes([KIND_CHUNK_IDS]) + _U32.pack(len(chunk_ids)) + digests


def _decode_chunk_ids(body: memoryview) -> bytes:
    if len(body) < 4:
        raise MalformedSectionPayload(SECTION_CHUNK_IDS, "chunk_ids intpack: truncated count")
    count = _U32.unpack_from(body, 0)[0]
    digests = body[4:]
    if len(digests) != 32 * count:
        raise MalformedSectionPayload(SECTION_CHUNK_IDS,
                                      "chunk_ids intpack: digest body size mismatch")
    if count == 0:
        return _PREFIX.pack(1, 0)
    # One hex pass with a separator between digests, the separator then replaced by the next
    # record's head: ``lp("sha256:" + hex)`` per id without a Python step per id.
    hexed = digests.hex(",", 32).encode("ascii")
    return _PREFIX.pack(1, count) + _ID_HEAD + hexed.replace(b",", _ID_HEAD)


class DigestIds:
    """The ids of a kind-0 body read from its digests, none decoded until asked for: the
    records' interface (``canonical.StringRecords``'s ``len``, ``text``, ``find``, ``index``)
    over the digests, so a search or cite names a few ids without hexing all of them."""

    __slots__ = ("_digests",)

    def __init__(self, digests: bytes) -> None:
        self._digests = digests

    def __len__(self) -> int:
        return len(self._digests) // 32

    def text(self, i: int) -> str:
        """Id ``i`` as the decoded 0x01 spells it."""
        return "sha256:" + self._digests[32 * i:32 * i + 32].hex()

    def find(self, wanted: str, stop: int | None = None, *, last: bool = False) -> int:
        """The first (or ``last``) ordinal below ``stop`` whose id is ``wanted``; -1 when none
        is. A decoded id is ``sha256:`` + 64 lowercase hex, so no other text equals one, and a
        digest matched across two records is none."""
        n = len(self)
        stop = n if stop is None else max(0, min(stop, n))
        if not _CANONICAL_ID.match(wanted):
            return -1
        needle, digests, hi = bytes.fromhex(wanted[7:]), self._digests, 32 * stop
        if last:
            at = digests.rfind(needle, 0, hi)
            while at > 0 and at % 32:
                at = digests.rfind(needle, 0, at + 31)  # a match starting before this one
        else:
            at = digests.find(needle, 0, hi)
            while at > 0 and at % 32:
                at = digests.find(needle, at + 1, hi)
        return at // 32 if at >= 0 else -1

    def index(self, wanted: str) -> int:
        """The first ordinal whose id is ``wanted``; ValueError when none is."""
        i = self.find(wanted)
        if i < 0:
            raise ValueError(wanted)
        return i


def digest_ids(payload: bytes | memoryview) -> DigestIds | None:
    """A kind-0 chunk_ids payload's ids as ``DigestIds``, for a payload known to decode (a
    verified body's); None for any other payload (decode it instead)."""
    view = byte_view(payload)
    if len(view) < 5 or view[0] != KIND_CHUNK_IDS:
        return None
    count = _U32.unpack_from(view, 1)[0]
    return DigestIds(bytes(view[5:])) if len(view) - 5 == 32 * count else None


def encode_spans(spans: list[tuple[str, int, int]]) -> bytes:
    """Kind 1: URI pool in first-seen order plus three intpack columns (index, start, length)."""
    from .intpack import pack_u64s  # numpy, for the columns: chunk ids never need it

    pool: dict[str, int] = {}
    idx: list[int] = []
    starts: list[int] = []
    lens: list[int] = []
    for uri, start, end in spans:
        idx.append(pool.setdefault(uri, len(pool)))
        starts.append(start)
        lens.append((end - start) & _MASK64)
    out = [bytes([KIND_SPANS]), _U32.pack(len(spans) & 0xFFFFFFFF), _U32.pack(len(pool))]
    for uri in pool:
        raw = uri.encode("utf-8")
        out.append(_U32.pack(len(raw)) + raw)
    for col in (idx, starts, lens):
        blob = pack_u64s(col)
        out.append(_U32.pack(len(blob)) + blob)
    return b"".join(out)


def spans_columns(
        body: bytes | memoryview) -> tuple[int, list[bytes], np.ndarray, np.ndarray, np.ndarray]:
    """Parse a kind-1 body (after the kind byte) with every check of §4.3, without rebuilding.

    Returns (count, uri pool, uri index, byte_start, length) columns; the rebuild cannot fail
    after this, so a caller may compare ``count`` before paying for the raw form.
    """
    from .intpack import unpack_u64s

    cur = Cursor(body, SECTION_CHUNKS_ORIGINAL_SPANS)
    count = cur.u32()
    n_uris = cur.u32()
    # Every pooled URI costs at least its 4-byte length: refuse a claim the bytes cannot hold.
    if n_uris > cur.remaining // 4:
        raise MalformedSectionPayload(SECTION_CHUNKS_ORIGINAL_SPANS,
                                      "spans intpack: uri pool count exceeds payload")
    pool = []
    for _ in range(n_uris):
        raw = cur.lp_bytes()
        decode_utf8(raw, SECTION_CHUNKS_ORIGINAL_SPANS)
        pool.append(raw)
    cols = [unpack_u64s(cur.view(cur.u32())) for _ in range(3)]
    if any(len(col) != count for col in cols):
        raise MalformedSectionPayload(SECTION_CHUNKS_ORIGINAL_SPANS,
                                      "spans intpack: column length mismatch")
    cur.expect_end()
    idx, starts, lens = cols
    if count and int(idx.max()) >= n_uris:
        raise MalformedSectionPayload(SECTION_CHUNKS_ORIGINAL_SPANS,
                                      "spans intpack: uri index out of range")
    return count, pool, idx, starts, lens


def column_span(payload: bytes | memoryview, i: int) -> tuple[str, int, int] | None:
    """Record ``i`` of a spans repack (kind byte first) that decoded whole before (a verified
    body's), read from one block of each column without numpy: a cite needs one span, not
    numpy's import and 20,000 records. None when the payload is not such a body (or ``i`` is
    past it): the full decode then decides, with its errors."""
    spans = BlockSpans.of(payload)
    if spans is None or not 0 <= i < len(spans):
        return None
    try:
        return spans.span(i)
    except (MalformedSectionPayload, IndexError, UnicodeDecodeError, struct.error):
        return None


# Blocks (of all three columns) a BlockSpans decodes one by one; past them the columns are
# decoded whole. A search reads at most 3 x k blocks; 20,000 records read one by one took 150
# ms from blocks against 41 ms from whole columns.
_BLOCKS_BEFORE_WHOLE = 48


class BlockSpans:
    """The spans of a kind-1 body that decoded whole before (a verified body's), the records'
    interface (``len`` and ``span``) read on demand: the URI pool and the columns' directories
    parsed once, each record from one 128-value block of each column (decoded
    once), without numpy. A search of a trusted file reads three spans of 20,000; decoding
    every column took longer than the rest of its open."""

    __slots__ = ("_count", "_pool", "_blobs", "_blocks", "_uris", "_whole")

    def __init__(self, count: int, pool: list[bytes], blobs: list[memoryview]) -> None:
        self._count, self._pool, self._blobs = count, pool, blobs
        self._blocks: dict[tuple[int, int], list[int]] = {}
        self._uris: dict[int, str] = {}
        self._whole: list[np.ndarray] | None = None  # the columns, once a reader walks them

    @classmethod
    def of(cls, payload: bytes | memoryview) -> BlockSpans | None:
        """The spans of a kind-1 payload (kind byte first) whose pool and column directories
        parse; None for any other payload (decode it whole instead, with its errors)."""
        view = byte_view(payload)
        if len(view) < 1 or view[0] != KIND_SPANS:
            return None
        cur = Cursor(view[1:], SECTION_CHUNKS_ORIGINAL_SPANS)
        try:
            count, n_uris = cur.u32(), cur.u32()
            if n_uris > cur.remaining // 4:
                return None
            pool = [cur.lp_bytes() for _ in range(n_uris)]
            blobs = [cur.view(cur.u32()) for _ in range(3)]  # uri index, start, length
            if any(read_directory(blob)[0] != count for blob in blobs):
                return None
        except MalformedSectionPayload:
            return None
        return cls(count, pool, blobs)

    def __len__(self) -> int:
        return self._count

    def _value(self, column: int, i: int) -> int:
        whole = self._whole
        if whole is not None:
            return int(whole[column][i])
        b, k = divmod(i, INTPACK_BLOCK)
        block = self._blocks.get((column, b))
        if block is None:
            if len(self._blocks) >= _BLOCKS_BEFORE_WHOLE:  # a walk of the table (a filter, a
                from .intpack import unpack_u64s  # listing): numpy decodes ~4x faster

                self._whole = [unpack_u64s(blob) for blob in self._blobs]
                return int(self._whole[column][i])
            block = self._blocks[(column, b)] = block_values(self._blobs[column], self._count,
                                                             b)
        return block[k]

    def span(self, i: int) -> tuple[str, int, int]:
        """``(source_uri, byte_start, byte_end)`` of record ``i`` (the end wraps mod 2^64)."""
        i = range(self._count)[i]
        j, start, length = self._value(0, i), self._value(1, i), self._value(2, i)
        uri = self._uris.get(j)
        if uri is None:
            uri = self._uris[j] = self._pool[j].decode("utf-8")
        return uri, start, (start + length) & _MASK64


class ColumnSpans:
    """The spans of a kind-1 body read from its checked columns on demand: the records'
    interface (``canonical.SpanRecords``' ``len`` and ``span``), no tuple built until asked
    (a search reads three spans of 20,000)."""

    __slots__ = ("_uris", "_idx", "_starts", "_lens")

    def __init__(self, pool: list[bytes], idx: np.ndarray, starts: np.ndarray,
                 lens: np.ndarray) -> None:
        self._uris = [raw.decode("utf-8") for raw in pool]  # checked UTF-8 by spans_columns
        self._idx, self._starts, self._lens = idx, starts, lens

    def __len__(self) -> int:
        return len(self._idx)

    def span(self, i: int) -> tuple[str, int, int]:
        """``(source_uri, byte_start, byte_end)`` of record ``i`` (the end wraps mod 2^64)."""
        start = int(self._starts[i])
        return self._uris[int(self._idx[i])], start, (start + int(self._lens[i])) & _MASK64


# A streamed rebuild joins records into pieces of about this many bytes: the raw form of a
# legal file can be far larger than its payload (every record may name one long URI).
SPANS_PIECE_BYTES = 1 << 22


class _SpansRebuild:
    """What rebuilding a kind-1 body's raw payload needs, from its checked columns."""

    __slots__ = ("count", "heads", "idx", "tails", "uri_lens")

    def __init__(self, body: memoryview) -> None:
        import numpy as np  # the columns are numpy arrays already

        count, pool, idx, starts, lens = spans_columns(body)
        self.count = count
        self.heads = [_U32.pack(len(uri)) + uri for uri in pool]
        self.idx = idx
        # The (start, end) tails as 16-byte little-endian records built in one numpy pass
        # (uint64 addition wraps mod 2^64, as the end must).
        tails = np.empty((count, 2), dtype="<u8")
        tails[:, 0] = starts
        np.add(starts, lens, out=tails[:, 1], casting="unsafe")
        self.tails = tails.view("V16").ravel()
        self.uri_lens = np.fromiter(map(len, pool), dtype=np.int64,
                                    count=len(pool))[idx.astype(np.intp)]

    def record_ends(self) -> np.ndarray:
        """Where each record ends in the raw payload, less its 12-byte prefix."""
        import numpy as np

        return np.cumsum(self.uri_lens + 20)  # u32 length, URI, two u64

    def records(self, lo: int, hi: int) -> bytes:
        """Records ``lo`` to ``hi`` joined: each pooled head with its tail, no Python step per
        record beyond the join's."""
        heads = map(self.heads.__getitem__, self.idx[lo:hi].tolist())
        return b"".join(chain.from_iterable(zip(heads, self.tails[lo:hi].tolist(),
                                                strict=True)))


def spans_raw_pieces(body: memoryview) -> tuple[int, Iterator[bytes]]:
    """The raw payload a kind-1 body rebuilds as ``(length, pieces)`` of about
    ``SPANS_PIECE_BYTES`` each (one long record alone), for a hash that never holds it whole.
    The columns are checked here, so the pieces cannot fail once this returns."""
    import numpy as np

    rebuild = _SpansRebuild(body)
    ends = rebuild.record_ends()
    total = int(ends[-1]) if rebuild.count else 0
    # Cut after the record that crosses each multiple of the piece size.
    marks = np.arange(SPANS_PIECE_BYTES, total, SPANS_PIECE_BYTES, dtype=np.int64)
    cuts = sorted(set(np.searchsorted(ends, marks, side="left").tolist()) - {rebuild.count})

    def pieces() -> Iterator[bytes]:
        yield _PREFIX.pack(1, rebuild.count)
        lo = 0
        for cut in [*cuts, rebuild.count - 1] if rebuild.count else []:
            if cut >= lo:
                yield rebuild.records(lo, cut + 1)
                lo = cut + 1

    return _PREFIX.size + total, pieces()


def _decode_spans(body: memoryview) -> bytes:
    rebuild = _SpansRebuild(body)
    return _PREFIX.pack(1, rebuild.count) + rebuild.records(0, rebuild.count)


def decode_repack(payload: bytes | memoryview) -> bytes:
    """Rebuild the raw chunk_ids or spans payload from an id-4 payload (kind byte first)."""
    view = byte_view(payload)
    if len(view) == 0:
        raise MalformedSectionPayload(0, "intpack repack: empty payload")
    kind = view[0]
    if kind == KIND_CHUNK_IDS:
        return _decode_chunk_ids(view[1:])
    if kind == KIND_SPANS:
        return _decode_spans(view[1:])
    raise MalformedSectionPayload(0, f"intpack repack: unknown kind {kind}")
