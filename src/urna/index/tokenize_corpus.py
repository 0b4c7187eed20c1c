"""A whole corpus tokenized at once: term ids per token, the BM25 build's input (03-runtime §8.1).

The tokens are exactly :func:`urna.index.tokenize.tokenize`'s, doc by doc, in text order; only
the work is batched. Every document becomes one byte segment: an ASCII document its own bytes
(ASCII word characters are ``[A-Za-z0-9]``, lowercased byte for byte), any other document its
tokens from the reference tokenizer, UTF-8 encoded and joined by NUL. The segments are joined
by NUL and one 256-byte translation table lowercases ASCII letters and turns every other ASCII
byte into NUL (bytes >= 0x80 only occur inside the tokens of non-ASCII documents and stay).
A token is then a maximal run of non-NUL bytes of two or more bytes: an ASCII run of one byte
is a one-character word (dropped), and a reference token always has two characters, so at
least two bytes.

Distinct tokens are found without a Python object per token: a token of at most 16 bytes is
its UTF-8 bytes zero-padded into two big-endian u64 words (no token holds a NUL, so the pair is
the token), factorized by hashing rounds in numpy (each round settles every token whose slot
it won; the losers go to the next round with another hash); longer tokens, rare in any
language, go through a dict. Distinct terms are then sorted by their bytes, which is UTF-8 byte
order, the order §8.2 stores them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .tokenize import tokenize

_SEP = b"\x00"
# ASCII letters lowercased, digits kept, every other ASCII byte a separator; bytes >= 0x80 kept.
_TABLE = bytes(
    (b | 0x20) if 65 <= b <= 90 else b if (48 <= b <= 57 or 97 <= b <= 122 or b >= 128) else 0
    for b in range(256)
)
_WORD = 8  # bytes per key word
_SHORT = 2 * _WORD  # tokens up to this many bytes are factorized in numpy
_PAD = np.zeros(_SHORT, np.uint8)  # the key gather may read this far past the last token
# odd multipliers (from splitmix64 / murmur3): each hashing round takes the next pair
_MULS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xFF51AFD7ED558CCD,
         0xC4CEB9FE1A85EC53, 0x2545F4914F6CDD1D, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F)
_MAX_ROUNDS = 24  # then the few keys left go through a dict


@dataclass
class CorpusTokens:
    """Every token of a corpus as an id into ``terms``, documents one after another."""

    terms: list[str]  # distinct tokens in UTF-8 byte order
    term_ids: np.ndarray  # int64, one per token: doc 0's tokens in text order, then doc 1's...
    doc_lens: np.ndarray  # int64, tokens per document


def _segment(text: str) -> bytes:
    if text.isascii():
        return text.encode("ascii")
    return _SEP.join(t.encode("utf-8") for t in tokenize(text))


def tokenize_corpus(docs: Sequence[str]) -> CorpusTokens:
    """Tokenize every doc as :func:`~urna.index.tokenize.tokenize` does, into term ids."""
    segments = [_segment(text) for text in docs]
    raw = np.frombuffer(_SEP.join(segments).translate(_TABLE), dtype=np.uint8)
    buf = np.concatenate((raw, _PAD))
    word = np.zeros(len(buf) + 1, dtype=np.int8)
    word[1:] = buf != 0
    edges = np.flatnonzero(np.diff(word))  # run starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    keep = ends - starts >= 2
    starts, ends = starts[keep], ends[keep]
    seg_lens = np.fromiter(map(len, segments), dtype=np.int64, count=len(segments))
    seg_starts = np.cumsum(seg_lens + 1) - (seg_lens + 1)
    bounds = np.searchsorted(starts, np.append(seg_starts, len(raw) + 1))
    doc_lens = np.diff(bounds).astype(np.int64)
    terms, term_ids = _distinct_terms(buf, starts, ends)
    return CorpusTokens(terms, term_ids, doc_lens)


def _distinct_terms(buf: np.ndarray, starts: np.ndarray,
                    ends: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Sorted distinct tokens and each token's index into them."""
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
    reps, short_ids = _factorize(hi, lo)
    pairs = np.zeros((len(reps), 2), dtype=">u8")
    pairs[:, 0] = hi[reps]
    if lo is not None:
        pairs[:, 1] = lo[reps]
    names: list[bytes] = pairs.view("S16").reshape(-1).tolist()  # S16 drops the zero padding
    if every:
        ids = short_ids
    else:
        ids = np.empty(len(starts), dtype=np.int64)
        ids[short] = short_ids
        data = buf.tobytes()
        index = {name: i for i, name in enumerate(names)}
        ids[~short] = [index.setdefault(data[a:b], len(index))
                       for a, b in zip(starts[~short].tolist(), ends[~short].tolist(),
                                       strict=True)]
        names = list(index)
    order = sorted(range(len(names)), key=names.__getitem__)  # bytes order == UTF-8 order
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names), dtype=np.int64)
    return [names[i].decode("utf-8") for i in order], rank[ids]


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
