"""fsst (wire encoding 9, container kind 2): a static 255-symbol table and 1-byte codes.

02-encodings §6.4. The table ranks every 1..8-byte substring of the concatenated texts by
``(len - 1) * count`` descending, ties by the bytes ascending, and keeps 255. A substring in the
overall top 255 is in the top 255 of its own length, so each length is ranked on its own
(vectorised: each window packed big-endian into a u64) and only the union is merged.

The encoder reproduces the reference's trie walk, early "no match" included: with 8 or more bytes
left a code is emitted only when the next 8 bytes are an 8-byte symbol; with fewer left only when
the whole tail is a prefix of some symbol, and then the longest symbol that prefixes it wins.
Anything else is ``0xFF`` + the raw byte.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..cursor import decode_utf8
from ._canonical import build_canonical
from .textcontainer import KIND_FSST, malformed, parse_container, write_container

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

MAX_SYMBOL_LEN = 8
N_CODES = 255
ESCAPE = 0xFF
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")


def _windows_be(data: bytes) -> np.ndarray:
    """u64 of each 8-byte window read big-endian (``data`` must be zero-padded by 7 bytes)."""
    import numpy as np  # the encoder's table ranking only: decoding never imports numpy

    n = len(data) - 7
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    view = np.ndarray(shape=(n,), dtype=">u8", buffer=data, offset=0, strides=(1,))
    return view.astype(np.uint64)


def _length_counts(ordered: np.ndarray, tail: np.ndarray, length: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``length``-byte prefixes of the windows and their counts, ascending.

    ``ordered`` is every window sorted; masking to a big-endian prefix keeps that order, so
    one sort serves all eight lengths. ``tail`` holds the last ``length - 1`` windows, which
    run into the padding and are not substrings of that length: they are taken back out.
    """
    import numpy as np

    mask = np.uint64(((1 << (8 * length)) - 1) << (8 * (8 - length)))
    masked = ordered & mask
    starts = np.flatnonzero(np.concatenate(([True], masked[1:] != masked[:-1])))
    values = masked[starts]
    counts = np.diff(np.append(starts, len(masked))).astype(np.int64)
    if len(tail):
        np.subtract.at(counts, np.searchsorted(values, tail & mask), 1)
        keep = counts > 0
        values, counts = values[keep], counts[keep]
    return values, counts


def build_table(corpus: bytes) -> list[bytes]:
    """The ranked symbol list (code = index) for ``corpus``."""
    import numpy as np

    n = len(corpus)
    packed = _windows_be(corpus + bytes(7))
    ordered = np.sort(packed)
    ranked: list[tuple[int, int, int]] = []  # (-gain, packed value, length)
    for length in range(1, MAX_SYMBOL_LEN + 1):
        if n < length:
            break
        values, counts = _length_counts(ordered, packed[n - length + 1:], length)
        gains = counts * (length - 1)
        order = np.lexsort((values, -gains))[:N_CODES]
        ranked.extend(zip((-gains[order]).tolist(), values[order].tolist(),
                          [length] * len(order), strict=True))
    ranked.sort()
    return [v.to_bytes(8, "big")[:length] for _, v, length in ranked[:N_CODES]]


def serialize_table(symbols: list[bytes]) -> bytes:
    """``u16 k`` then per symbol ``u8 len`` + bytes."""
    return _U16.pack(len(symbols)) + b"".join(bytes([len(s)]) + s for s in symbols)


class _Encoder:
    """Greedy per-text coder over a fixed table."""

    def __init__(self, symbols: list[bytes]) -> None:
        import numpy as np

        self.codes = {s: i for i, s in enumerate(symbols)}
        self.prefixes = {s[:k] for s in symbols for k in range(1, len(s) + 1)}
        eight = [(s, i) for i, s in enumerate(symbols) if len(s) == MAX_SYMBOL_LEN]
        self.keys8 = np.array([int.from_bytes(s, "big") for s, _ in eight], dtype=np.uint64)

    @staticmethod
    def _escape(run: bytes, out: bytearray) -> None:
        if run:
            buf = bytearray(2 * len(run))
            buf[0::2] = bytes([ESCAPE]) * len(run)
            buf[1::2] = run
            out += buf

    def hits8(self, corpus: bytes) -> np.ndarray:
        """Offsets in ``corpus`` where an 8-byte symbol starts (one pass for every text)."""
        import numpy as np

        if len(corpus) < MAX_SYMBOL_LEN or not len(self.keys8):
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.isin(_windows_be(corpus), self.keys8))

    def encode(self, text: bytes, hits: list[int] | None = None) -> bytes:
        """Codes of one text; ``hits`` are its 8-byte symbol offsets (default: ``hits8(text)``)."""
        out = bytearray()
        n = len(text)
        p = 0
        if n >= MAX_SYMBOL_LEN:
            if hits is None:
                hits = self.hits8(text).tolist()
            for h in hits:
                if h < p:
                    continue
                self._escape(text[p:h], out)
                out.append(self.codes[text[h:h + MAX_SYMBOL_LEN]])
                p = h + MAX_SYMBOL_LEN
        stop = max(p, n - MAX_SYMBOL_LEN + 1)
        self._escape(text[p:stop], out)
        p = stop
        while p < n:  # fewer than 8 bytes left: the tail rule
            tail = text[p:]
            match = None
            if tail in self.prefixes:
                for k in range(len(tail), 0, -1):
                    if tail[:k] in self.codes:
                        match = k
                        break
            if match is None:
                out += bytes([ESCAPE, text[p]])
                p += 1
            else:
                out.append(self.codes[tail[:match]])
                p += match
        return bytes(out)


def fsst_parts(texts: list[str]) -> tuple[bytes, Iterator[bytes]]:
    """V3's bytes between offsets and codes (``u32 table_len`` + table), then each text's codes."""
    import numpy as np

    raw = [t.encode("utf-8") for t in texts]
    corpus = b"".join(raw)
    symbols = build_table(corpus)
    table = serialize_table(symbols)
    coder = _Encoder(symbols)
    # A window of the joined corpus lying inside one text is that text's window.
    hits = coder.hits8(corpus)
    ends = np.cumsum([len(r) for r in raw], dtype=np.int64)
    starts = ends - np.array([len(r) for r in raw], dtype=np.int64)
    lo = np.searchsorted(hits, starts)
    hi = np.searchsorted(hits, ends - MAX_SYMBOL_LEN, side="right")
    codes = (coder.encode(r, (hits[a:b] - s).tolist() if b > a else [])
             for r, s, a, b in zip(raw, starts.tolist(), lo.tolist(), hi.tolist(), strict=True))
    return _U32.pack(len(table)) + table, codes


def encode_fsst(texts: list[str]) -> bytes:
    """V3 payload: offsets, ``u32 table_len``, the table, then each text's codes."""
    between, codes = fsst_parts(texts)
    return write_container(KIND_FSST, list(codes), between)


def _parse_table(buf: memoryview) -> tuple[list[bytes], int]:
    if len(buf) < 2:
        raise malformed("fsst: truncated table count")
    k = _U16.unpack_from(buf, 0)[0]
    if k > N_CODES:
        raise malformed("fsst: table count exceeds 255")
    pos = 2
    symbols = []
    for _ in range(k):
        if pos >= len(buf):
            raise malformed("fsst: truncated symbol len")
        length = buf[pos]
        if length == 0 or length > MAX_SYMBOL_LEN:
            raise malformed("fsst: symbol len out of range")
        pos += 1
        if pos + length > len(buf):
            raise malformed("fsst: truncated symbol bytes")
        symbols.append(bytes(buf[pos:pos + length]))
        pos += length
    return symbols, pos


def _decode_one(symbols: list[bytes], codes: bytes) -> bytes:
    out = bytearray()
    i = 0
    n = len(codes)
    k = len(symbols)
    while i < n:
        c = codes[i]
        if c == ESCAPE:
            if i + 1 >= n:
                raise malformed("fsst: trailing escape")
            out.append(codes[i + 1])
            i += 2
        else:
            if c >= k:
                raise malformed("fsst: code out of table range")
            out += symbols[c]
            i += 1
    return bytes(out)


def decode_fsst(payload: bytes | memoryview) -> bytes:
    """Rebuild the raw chunks_canonical payload from a V3 payload."""
    box = parse_container(payload, KIND_FSST, check_final=False)
    framed = box.region
    if len(framed) < 4:
        raise malformed("fsst: truncated region header")
    table_len = _U32.unpack_from(framed, 0)[0]
    symbols, used = _parse_table(framed[4:])
    if used != table_len:
        raise malformed("fsst: declared table length mismatch")
    streams = framed[4 + table_len:]
    if box.offsets[-1] != len(streams):
        raise malformed("fsst: final offset != streams length")
    bodies = []
    for i in range(box.count):
        body = _decode_one(symbols, bytes(box.frame(i, streams)))
        decode_utf8(body, 0x02, "fsst: ")
        bodies.append(body)
    return build_canonical(bodies)
