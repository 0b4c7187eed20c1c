"""A whole corpus tokenized at once: term ids per token, the BM25 build's input (03-runtime §8.1).

The tokens are exactly :func:`urna.index.tokenize.tokenize`'s, doc by doc, in text order; only
the work is batched. Every document becomes one byte segment: an ASCII document its own bytes
(ASCII word characters are ``[A-Za-z0-9]``, lowercased byte for byte); the other documents
together go through one code point array (UTF-32), where the word-character ranges and the
one-to-one lowercase mappings of ``_unicode_tables`` are looked up with numpy, every other
character and every one-character word become NUL, and the result is UTF-8 again, cut per
document. A document holding a character whose lowercase is longer (U+0130) takes the
reference tokenizer, its tokens joined by NUL. The segments are joined by NUL and one
256-byte translation table lowercases ASCII letters and turns every other ASCII byte into NUL
(bytes >= 0x80 only occur inside tokens already lowercased). A token is then a maximal run
of non-NUL bytes of two or more bytes: an ASCII run of one byte is a one-character word
(dropped), and every other run holds two characters or more, so at least two bytes.

Documents go in batches of about 2M characters (small temporaries), tokenized side by side on
threads (numpy's passes release the GIL). Distinct tokens are found without a Python object
per token: a token of at most 16 bytes is its UTF-8 bytes zero-padded into two big-endian u64
words (no token holds a NUL, so the pair is the token), factorized by hashing rounds in numpy
(each round settles every token whose slot it won; the losers go to the next round with
another hash), first within each batch, then once over every batch's distinct keys, so only
the corpus's distinct terms become Python objects; longer tokens, rare in any language, go
through a dict. Distinct terms are then sorted by their bytes, which is UTF-8 byte order, the
order §8.2 stores them in; the order tokens were first seen in never shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..format.fanout import Fanout
from ._unicode_tables import LOWER, WORD_RANGES
from .tokenize import GROWS_WHEN_LOWERED, tokenize

_SEP = b"\x00"
# ASCII letters lowercased, digits kept, every other ASCII byte a separator; bytes >= 0x80 kept.
_TABLE = bytes(
    (b | 0x20) if 65 <= b <= 90 else b if (48 <= b <= 57 or 97 <= b <= 122 or b >= 128) else 0
    for b in range(256)
)
_WORD = 8  # bytes per key word
_SHORT = 2 * _WORD  # tokens up to this many bytes are factorized in numpy
_PAD = bytes(_SHORT)
_BATCH_CHARS = 1 << 21
# odd multipliers (from splitmix64 / murmur3): each hashing round takes the next pair
_MULS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xFF51AFD7ED558CCD,
         0xC4CEB9FE1A85EC53, 0x2545F4914F6CDD1D, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F)
_MAX_ROUNDS = 24  # then the few keys left go through a dict


@dataclass
class CorpusTokens:
    """Every token of a corpus as an id into ``terms``, documents one after another."""

    terms: list[str]  # distinct tokens in UTF-8 byte order
    term_ids: np.ndarray  # int32 (int64 past 2**31 terms), one per token: doc 0's tokens in
    # text order, then doc 1's...
    doc_lens: np.ndarray  # int64, tokens per document


def _segments(docs: Sequence[str]) -> list[bytes]:
    """Each doc's byte segment (see the module docstring)."""
    segments: list[bytes] = []
    wide: list[int] = []  # docs for the code point pass
    grows = _GROWS_RE.search
    for i, text in enumerate(docs):
        if text.isascii():
            segments.append(text.encode("ascii"))
        elif grows(text):
            segments.append("\x00".join(tokenize(text)).encode("utf-8"))
        else:
            segments.append(b"")
            wide.append(i)
    if wide:
        for i, seg in zip(wide, _unicode_segments([docs[i] for i in wide]), strict=True):
            segments[i] = seg
    return segments


_GROWS_RE = re.compile("|".join(map(re.escape, sorted(GROWS_WHEN_LOWERED))))
_TABLES: tuple[np.ndarray, ...] | None = None


def _code_point_tables() -> tuple[np.ndarray, ...]:
    """(word-range starts, ends, lowercase keys, values, ASCII lowercase with 0 for non-word).

    The ASCII table has a 129th entry, 1, that marks every code point >= 128 for a lookup.
    """
    global _TABLES
    if _TABLES is None:
        pairs = sorted((cp, ord(low)) for cp, low in LOWER.items() if len(low) == 1)
        ascii_low = np.zeros(129, dtype=np.uint32)
        ascii_low[128] = 1
        for cp in range(128):
            if chr(cp).isalnum():
                ascii_low[cp] = ord(chr(cp).lower())
        _TABLES = (np.array([lo for lo, _ in WORD_RANGES], dtype=np.uint32),
                   np.array([hi for _, hi in WORD_RANGES], dtype=np.uint32),
                   np.array([k for k, _ in pairs], dtype=np.uint32),
                   np.array([v for _, v in pairs], dtype=np.uint32), ascii_low)
    return _TABLES


def _unicode_segments(texts: list[str]) -> list[bytes]:
    """The segments of ``texts`` (none holding a character of GROWS_WHEN_LOWERED)."""
    starts_t, ends_t, low_keys, low_vals, ascii_low = _code_point_tables()
    # lone surrogates (no word characters) pass through as code points and become NUL
    cp = np.frombuffer("\x00".join(texts).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    low = ascii_low[np.minimum(cp, 128)]  # ASCII done; 1 marks the rest
    big = np.flatnonzero(low == 1)
    c = cp[big].astype(np.uint32)
    r = np.searchsorted(starts_t, c, side="right") - 1  # >= 0: every c >= 128 > starts_t[0]
    is_word = c <= ends_t[r]
    j = np.minimum(np.searchsorted(low_keys, c), len(low_keys) - 1)
    lowered = np.where(low_keys[j] == c, low_vals[j], c)
    low[big] = np.where(is_word, lowered, 0)
    # a word character alone is no token; ASCII ones the byte pass drops (one byte), the
    # others (two bytes or more) are dropped here
    w = big[is_word]
    before = np.where(w > 0, low[np.maximum(w - 1, 0)], 0)
    after = np.where(w + 1 < len(low), low[np.minimum(w + 1, len(low) - 1)], 0)
    low[w[(before == 0) & (after == 0)]] = 0
    text = str(memoryview(low.astype("<u4", copy=False)), "utf-32-le").encode("utf-8")
    # byte offset of code point i: i plus the extra UTF-8 bytes of the code points before it
    v = low[big]
    extra = (v >= 0x80).astype(np.int64) + (v >= 0x800) + (v >= 0x10000)
    extra_before = np.concatenate(([0], np.cumsum(extra)))
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    first = np.cumsum(lens + 1) - (lens + 1)

    def byte_at(i: np.ndarray) -> list[int]:
        return (i + extra_before[np.searchsorted(big, i)]).tolist()

    return [text[a:b] for a, b in zip(byte_at(first), byte_at(first + lens), strict=True)]


def tokenize_corpus(docs: Sequence[str]) -> CorpusTokens:
    """Tokenize every doc as :func:`~urna.index.tokenize.tokenize` does, into term ids."""
    ranges = _batches(docs)
    with Fanout(len(ranges)) as fan:  # numpy's passes release the GIL: batches side by side
        jobs = [fan.start(_tokenize_batch, docs[lo:hi]) for lo, hi in ranges]
    batches: list[_Batch] = [job.result() for job in jobs]
    # one factorization of every batch's distinct short tokens, then the long ones by a dict
    hi = np.concatenate([b.hi for b in batches]) if batches else np.zeros(0, np.uint64)
    wide = any(b.lo is not None for b in batches)
    lo = np.concatenate([np.zeros(len(b.hi), np.uint64) if b.lo is None else b.lo
                         for b in batches]) if wide else None
    reps, global_ids = _factorize(hi, lo)
    names = _key_bytes(hi[reps], None if lo is None else lo[reps])
    long_ids: dict[bytes, int] = {}
    id_parts: list[np.ndarray] = []
    offset = 0
    for b in batches:
        ids = global_ids[offset + b.local_ids]
        offset += len(b.hi)
        if b.long:
            out = np.empty(len(b.short), dtype=np.int64)
            out[b.short] = ids
            add = long_ids.setdefault
            out[~b.short] = [add(t, len(names) + len(long_ids)) for t in b.long]
            ids = out
        id_parts.append(ids)
    names += list(long_ids)
    order = sorted(range(len(names)), key=names.__getitem__)  # bytes order == UTF-8 order
    id_type = np.int32 if len(names) < 1 << 31 else np.int64  # half the memory of int64
    rank = np.empty(len(names), dtype=id_type)
    rank[order] = np.arange(len(names), dtype=id_type)
    ids = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int64)
    doc_lens = np.concatenate([b.doc_lens for b in batches]) if batches else np.zeros(0, np.int64)
    return CorpusTokens([names[i].decode("utf-8") for i in order], rank[ids], doc_lens)


@dataclass
class _Batch:
    """One batch's tokens: its distinct short tokens as keys, and which one each token is."""

    hi: np.ndarray  # uint64, first key word of each distinct short token (<= 16 bytes)
    lo: np.ndarray | None  # uint64, second key word, or None when every one is 0
    local_ids: np.ndarray  # int64, per short token (in text order): its row in hi / lo
    short: np.ndarray  # bool, per token: short (the others are in ``long``, in text order)
    long: list[bytes]  # the tokens longer than 16 bytes, rare in any language
    doc_lens: np.ndarray  # int64, tokens per doc


def _batches(docs: Sequence[str]) -> list[tuple[int, int]]:
    """Consecutive doc ranges of about _BATCH_CHARS characters each.

    Batches keep every temporary array small: on a VM a first touch of fresh memory costs
    more than the work done in it, and small arrays reuse the allocator's pages.
    """
    # a batch ends at the first doc whose running size (chars + 1 per doc) reaches the limit
    ends = np.cumsum(np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)) + 1)
    out, start, base = [], 0, 0
    while start < len(docs):
        last = int(np.searchsorted(ends, base + _BATCH_CHARS))  # first end >= the limit
        if last >= len(docs):
            out.append((start, len(docs)))
            break
        out.append((start, last + 1))
        start, base = last + 1, int(ends[last])
    return out


def _tokenize_batch(docs: Sequence[str]) -> _Batch:
    """The tokens of ``docs``, factorized within the batch."""
    segments = _segments(docs)
    segments.append(_PAD)  # the key gather may read this far past the last token
    buf = np.frombuffer(_SEP.join(segments).translate(_TABLE), dtype=np.uint8)
    end = len(buf) - len(_PAD) - 1  # where the padding starts
    word = np.zeros(len(buf) + 1, dtype=np.int8)
    np.not_equal(buf, 0, out=word[1:], casting="unsafe")
    edges = np.flatnonzero(np.diff(word))  # run starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    keep = ends - starts >= 2
    starts, ends = starts[keep], ends[keep]
    seg_lens = np.fromiter(map(len, segments[:-1]), dtype=np.int64, count=len(docs))
    seg_starts = np.cumsum(seg_lens + 1) - (seg_lens + 1)
    bounds = np.searchsorted(starts, np.append(seg_starts, end + 1))
    doc_lens = np.diff(bounds).astype(np.int64)
    lens = ends - starts
    short = lens <= _SHORT
    every = bool(short.all())
    s, n = (starts, lens) if every else (starts[short], lens[short])
    # each short token's bytes as two big-endian words, zero-padded past its end (gathered as
    # native little-endian words, then byte-swapped: numpy gathers non-native words slowly)
    words = np.ndarray((len(buf) - _WORD + 1,), dtype="<u8", buffer=buf.data, strides=(1,))
    hi = _first_bytes(words[s].byteswap(), n)
    lo = None
    if len(n) and int(n.max()) > _WORD:
        lo = np.zeros(len(s), dtype=np.uint64)
        two = np.flatnonzero(n > _WORD)
        lo[two] = _first_bytes(words[s[two] + _WORD].byteswap(), n[two] - _WORD)
    reps, local_ids = _factorize(hi, lo)
    long: list[bytes] = []
    if not every:
        data = buf.tobytes()
        long = [data[a:b] for a, b in zip(starts[~short].tolist(), ends[~short].tolist(),
                                          strict=True)]
    return _Batch(hi[reps], None if lo is None else lo[reps], local_ids, short, long, doc_lens)


def _key_bytes(hi: np.ndarray, lo: np.ndarray | None) -> list[bytes]:
    """The tokens whose key words are ``hi`` and ``lo`` (the zero padding dropped)."""
    pairs = np.zeros((len(hi), 2), dtype=">u8")
    pairs[:, 0] = hi
    if lo is not None:
        pairs[:, 1] = lo
    return pairs.view("S16").reshape(-1).tolist()  # S16 drops the zero padding


def _first_bytes(word: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``word`` (8 big-endian bytes) with the bytes past the first ``n`` (>= 1) zeroed."""
    if len(n) == 0 or int(n.min()) >= _WORD:
        return word
    cut = ((_WORD - np.minimum(n, _WORD)) * 8).astype(np.uint64)
    return (word >> cut) << cut


def _factorize(hi: np.ndarray, lo: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(a representative index per distinct (hi, lo) key, each key's distinct id).

    ``lo`` None means every key's second word is 0.
    """
    n = len(hi)
    ids = np.empty(n, dtype=np.int64)
    reps: list[np.ndarray] = []
    todo: np.ndarray | None = None  # None: every key (saves gathers in the first round)
    found = 0
    for r in range(_MAX_ROUNDS):
        count = n if todo is None else len(todo)
        if count == 0:
            break
        h = hi if todo is None else hi[todo]
        w = None if lo is None else (lo if todo is None else lo[todo])
        # a table of ~count/8 slots: later rounds settle whatever the first one leaves
        bits = int(min(max(count // 8, 1 << 10), 1 << 20)).bit_length()
        x = h * np.uint64(_MULS[r % 8])
        if w is not None:
            x ^= w * np.uint64(_MULS[(r + 3) % 8])
        x ^= x >> np.uint64(31)
        x *= np.uint64(_MULS[(r + 5) % 8])
        slot = (x >> np.uint64(64 - bits)).astype(np.intp)
        owner: np.ndarray = np.full(1 << bits, -1,
                                    dtype=np.int64 if count >= 1 << 31 else np.int32)
        owner[slot] = np.arange(count, dtype=owner.dtype)  # some key of each slot wins it
        won = np.flatnonzero(owner >= 0)
        winners = owner[won]
        # a key settles when it equals its slot's winner (compared through the small table)
        table = np.zeros(1 << bits, dtype=np.uint64)
        table[won] = h[winners]
        settled = table[slot] == h
        if w is not None:
            table[won] = w[winners]
            settled &= table[slot] == w
        slot_id = np.zeros(1 << bits, dtype=np.int64)
        slot_id[won] = np.arange(found, found + len(won), dtype=np.int64)
        found += len(won)
        if todo is None:
            ids[settled] = slot_id[slot[settled]]
            reps.append(winners.astype(np.int64))
            todo = np.flatnonzero(~settled)
        else:
            ids[todo[settled]] = slot_id[slot[settled]]
            reps.append(todo[winners])
            todo = todo[~settled]
    if todo is None:
        todo = np.arange(n, dtype=np.int64)
    if len(todo):  # hashing rounds exhausted (never seen): settle the rest exactly
        low = np.zeros(len(todo), np.uint64) if lo is None else lo[todo]
        index: dict[tuple[int, int], int] = {}
        for i, key in zip(todo.tolist(), zip(hi[todo].tolist(), low.tolist(), strict=True),
                          strict=True):
            j = index.get(key)
            if j is None:
                j = index[key] = found + len(index)
                reps.append(np.array([i], dtype=np.int64))
            ids[i] = j
    rep = np.concatenate(reps) if reps else np.zeros(0, np.int64)
    return rep, ids
