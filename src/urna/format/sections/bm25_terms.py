"""The version-2 term table of section 0x08 read in place (03-runtime §8.3, issue #20).

The table is ``n_terms`` records ``u32 len | UTF-8 name | u32 df``. A query looks up ten terms
of tens of thousands, so nothing here builds a Python object per term until asked:

- **Record starts** come from vectorized byte tests, not a walk: a record whose name is 1-255
  bytes long starts with a byte that is not 0 and three that are; among such positions, a df
  field of a small df (followed by the next record's length) is dropped. A guess is kept only
  as far as it chains exactly (each start is the one before plus 8 plus its length, the first
  is where the table starts), so it is the walk itself; where it stops, one record is walked
  and guessing resumes, and after a few rounds the rest is walked record by record.
- **Names are checked** as one UTF-8 string: the 8 framing bytes around each name set to a
  line feed, so the string is valid exactly when every name is.
- **Lookups** in a table in strict byte order (what every writer produces) binary-search the
  first 8 name bytes as big-endian ``u64`` keys, then the names; the order itself is checked
  on those keys (a tie, on the next 8 bytes, then on the bytes). Any other table is looked
  up through a dict of its names (the last of a repeated name wins, as in the eager decoder).

A table that runs past the buffer or holds a name that is not UTF-8 is refused (None), and
the caller's cursor reads it record by record to name the fault, as the reference does.
"""

from __future__ import annotations

import bisect
import operator
import struct
import threading
from collections.abc import Iterator, Sequence
from itertools import islice

import numpy as np

_U32 = struct.Struct("<I")
_GUESS_ROUNDS = 8      # guesses before the rest is walked record by record
_BYTES_PER_TERM = 16   # window of a guess: this many bytes per term still to find, at first
_KEY_BYTES = 8
_NL = 0x0A
# A binary search costs ~5 us, a dict lookup ~0.05 us, a dict of 20,000 names ~4 ms: after
# this many lookups (a server's queries, not one question's) the names go into a dict.
_DICT_AFTER = 2048
_NAMES_AFTER = 4096  # names decoded one by one (~0.4 us each) before all are (~2 ms)
# a name's first 1..8 bytes of a big-endian u64 (index: the name's length, at most 8)
_KEY_MASKS = np.array([0] + [((1 << (8 * j)) - 1) << (8 * (8 - j)) for j in range(1, 9)],
                      dtype=np.uint64)


def _words(buf: bytes | memoryview, dtype: str) -> np.ndarray:
    """The ``dtype`` word (``"<u4"`` or ``">u8"``) at every byte offset of ``buf`` that has one
    (a zero-copy view: one gather reads a word at any offsets)."""
    size = np.dtype(dtype).itemsize
    return np.ndarray((max(len(buf) - size + 1, 0),), dtype=dtype, buffer=buf, strides=(1,))


def _guess(raw: np.ndarray, at: int, want: int, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts (absolute) and name lengths of the records from ``at`` that the byte tests find
    and that chain exactly: at most ``want``, possibly none."""
    end = min(len(raw), at + window)
    if end - at < 8:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    zero = raw[at:end] == 0
    cand = ~zero[:-3]
    cand &= zero[1:-2]
    cand &= zero[2:-1]
    cand &= zero[3:]
    # a small df's field is followed by the next record's length: drop it
    cand[:-4] &= ~cand[4:]
    starts = np.flatnonzero(cand)[:want]
    if len(starts) == 0 or starts[0] != 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lens = raw[at + starts].astype(np.int64)
    nexts = starts + 8 + lens
    broken = np.flatnonzero(nexts[:-1] != starts[1:])
    n = int(broken[0]) + 1 if len(broken) else len(starts)
    # the last kept record's df must lie inside the buffer
    n = int(np.searchsorted(nexts[:n], len(raw) - at, side="right"))
    return starts[:n] + at, lens[:n]


def record_starts(buf: bytes | memoryview, pos: int,
                  n_terms: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(int64 start of each record, int64 name length of each, end of the table) of the
    ``n_terms`` records at ``pos``, or None when one runs past the buffer."""
    if n_terms < 0 or 8 * n_terms > len(buf) - pos:  # each record takes >= 8 bytes
        return None
    raw = np.frombuffer(buf, np.uint8)
    starts_parts: list[np.ndarray] = []
    lens_parts: list[np.ndarray] = []
    done, at, bytes_per_term = 0, pos, _BYTES_PER_TERM
    for _ in range(_GUESS_ROUNDS):
        if done == n_terms:
            break
        starts, lens = _guess(raw, at, n_terms - done, bytes_per_term * (n_terms - done) + 64)
        if len(starts) == 0:  # a record the tests miss (long or empty name): walk it
            step = _walk(buf, at, 1)
            if step is None:
                return None
            starts, lens = step[0], step[1]
        starts_parts.append(starts)
        lens_parts.append(lens)
        done += len(starts)
        at = int(starts[-1] + 8 + lens[-1])
        bytes_per_term *= 2  # the window ran out, or a break: look further next time
    if done < n_terms:
        rest = _walk(buf, at, n_terms - done)
        if rest is None:
            return None
        starts_parts.append(rest[0])
        lens_parts.append(rest[1])
        at = rest[2]
    if not starts_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pos
    return np.concatenate(starts_parts), np.concatenate(lens_parts), at


def _walk(buf: bytes | memoryview, pos: int,
          count: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The exact record-by-record walk of ``count`` records from ``pos``."""
    starts = [0] * count
    unpack = _U32.unpack_from
    try:
        for i in range(count):
            starts[i] = pos
            pos += unpack(buf, pos)[0] + 8
    except struct.error:
        return None
    if pos > len(buf):  # the last df runs past the end
        return None
    at = np.asarray(starts, dtype=np.int64)
    return at, _words(buf, "<u4")[at].astype(np.int64), pos


def _keys(buf: bytes | memoryview, at: np.ndarray, lens: np.ndarray, skip: int) -> np.ndarray:
    """Bytes ``skip:skip + 8`` of each name (name ``i`` at ``at[i]``, ``lens[i]`` long), zero
    padded, as big-endian ``u64``."""
    first = at + skip
    take = np.clip(lens - skip, 0, _KEY_BYTES)
    words = _words(buf, ">u8")
    inside = first < len(words)  # a short name at the buffer's very end has no whole word
    out = np.zeros(len(at), np.uint64)
    out[inside] = words[first[inside]] & _KEY_MASKS[take[inside]]
    for i in np.flatnonzero(~inside).tolist():
        out[i] = _key(bytes(buf[int(first[i]):int(first[i] + take[i])]))
    return out


def _key(raw: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(raw[:_KEY_BYTES].ljust(_KEY_BYTES, b"\0"), "big"))


class TermTable(Sequence[str]):
    """The records of a checked version-2 term table, read in place: ``table[i]`` is name
    ``i``, ``dfs[i]`` its document frequency, ``end`` the offset after the table."""

    def __init__(self, buf: bytes | memoryview, pos: int, starts: np.ndarray, lens: np.ndarray,
                 dfs: np.ndarray, end: int) -> None:
        self.buf, self.pos, self.end = buf, pos, end
        self.starts, self.lens, self.dfs = starts, lens, dfs
        self._names: list[str] | None = None
        self._keys: np.ndarray | None = None
        self._strict: bool | None = None
        self._by_name: dict[str, int] | None = None
        self._by_order: NameOrder | None = None
        self._finds = self._gets = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self._names is not None:
            return self._names[i]
        self._gets += 1
        if self._gets > _NAMES_AFTER:  # a walk over many names: decode them all at once
            return self.names()[i]
        return self._raw_name(i).decode("utf-8")

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.find(term) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        """Every name, in table order (decoded once, then kept)."""
        if self._names is None:
            self._names = _decoded_names(self.buf, self.pos, self.end, self.starts, self.lens)
        return self._names

    # -- lookups -----------------------------------------------------------------------------
    def strictly_sorted(self) -> bool:
        """Whether the names are in strictly increasing byte order (sorted, none repeated)."""
        if self._strict is None:
            with self._lock:
                if self._strict is None:
                    self._strict = self._check_order()
        return self._strict

    def _check_order(self) -> bool:
        at = self.starts + 4
        keys = _keys(self.buf, at, self.lens, 0)
        self._keys = keys
        if len(keys) < 2:
            return True
        if bool((keys[1:] < keys[:-1]).any()):
            return False
        ties = np.flatnonzero(keys[1:] == keys[:-1])
        if len(ties):  # the next 8 bytes of the tied pairs
            a = _keys(self.buf, at[ties], self.lens[ties], _KEY_BYTES)
            b = _keys(self.buf, at[ties + 1], self.lens[ties + 1], _KEY_BYTES)
            if bool((b < a).any()):
                return False
            ties = ties[a == b]
        # still tied after 16 bytes: the bytes decide
        return all(self._raw_name(i) < self._raw_name(i + 1) for i in ties.tolist())

    def _raw_name(self, i: int) -> bytes:
        at = int(self.starts[i]) + 4
        return bytes(self.buf[at:at + int(self.lens[i])])

    def find(self, term: str) -> int | None:
        """The index of name ``term`` (the last, if repeated), or None."""
        by_name = self._by_name
        if by_name is not None:
            return by_name.get(term)
        self._finds += 1  # racing threads may miss a count: the dict just comes later
        if self._finds > _DICT_AFTER or not self.strictly_sorted():
            return self._name_dict().get(term)
        try:
            raw = term.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: never a stored name
            return None
        keys = self._keys
        assert keys is not None  # set by the order check
        k = _key(raw)
        lo = int(np.searchsorted(keys, k, side="left"))
        hi = int(np.searchsorted(keys, k, side="right"))
        i = bisect.bisect_left(self, term, lo, hi)
        return i if i < hi and self[i] == term else None

    def prefixed(self, prefix: str) -> list[int]:
        """Indexes of the names that begin with ``prefix``, in byte order."""
        if not self.strictly_sorted():
            if self._by_order is None:
                self._by_order = NameOrder(self.names())
            return self._by_order.prefixed(prefix)
        raw = prefix.encode("utf-8", "surrogatepass")
        keys = self._keys
        assert keys is not None
        head = raw[:_KEY_BYTES]
        lo_key = _key(head)
        pad = 8 * (_KEY_BYTES - len(head))
        hi_key = np.uint64(int(lo_key) | ((1 << pad) - 1))
        lo = int(np.searchsorted(keys, lo_key, side="left"))
        hi = int(np.searchsorted(keys, hi_key, side="right"))
        if len(raw) <= _KEY_BYTES:  # a key in range and a name as long as the prefix: a match
            return (np.flatnonzero(self.lens[lo:hi] >= len(raw)) + lo).tolist()
        return [i for i in range(lo, hi) if self._raw_name(i).startswith(raw)]

    def _name_dict(self) -> dict[str, int]:
        if self._by_name is None:
            self._by_name = {name: i for i, name in enumerate(self.names())}
        return self._by_name



class NameOrder:
    """Names in code point order (= UTF-8 byte order) with their indexes: prefix lookups over a
    list of names that may not be sorted (a version-1 payload, a hand-made one)."""

    __slots__ = ("names", "ids")

    def __init__(self, names: Sequence[str]) -> None:
        names = list(names)
        ids = list(range(len(names)))
        if any(map(operator.gt, names, islice(names, 1, None))):  # C-level pairs
            ids.sort(key=names.__getitem__)
            names = [names[i] for i in ids]
        self.names, self.ids = names, ids

    def prefixed(self, prefix: str) -> list[int]:
        """Indexes of the names that begin with ``prefix``, in code point order."""
        names, at = self.names, bisect.bisect_left(self.names, prefix)
        out = []
        while at < len(names) and names[at].startswith(prefix):
            out.append(self.ids[at])
            at += 1
        return out


def _framed_text(buf: bytes | memoryview, pos: int, end: int, starts: np.ndarray,
                 lens: np.ndarray) -> tuple[str, bool] | None:
    """The table as text, its framing bytes turned to line feeds, and whether those are its
    only line feeds; None when a name is not UTF-8."""
    table = bytearray(buf[pos:end])
    view, at = np.frombuffer(table, np.uint8), starts - pos
    for field in (at, at + 4 + lens):  # each record's length and df
        for j in range(4):
            view[field + j] = _NL
    only_framing = int(np.count_nonzero(view == _NL)) == 8 * len(starts)
    try:
        return table.decode("utf-8"), only_framing
    except UnicodeDecodeError:
        return None


def _decoded_names(buf: bytes | memoryview, pos: int, end: int, starts: np.ndarray,
                   lens: np.ndarray) -> list[str]:
    if len(starts) == 0:
        return []
    framed = _framed_text(buf, pos, end, starts, lens)
    if framed is not None and framed[1]:
        return framed[0][4:-4].split("\n" * 8)
    return [bytes(buf[s + 4:s + 4 + n]).decode("utf-8")
            for s, n in zip(starts.tolist(), lens.tolist(), strict=True)]


def read_term_table(buf: bytes | memoryview, pos: int, n_terms: int, *,
                    names: bool = False) -> TermTable | None:
    """The ``n_terms`` records at ``pos`` with every name checked as UTF-8, or None when a
    record runs past the buffer or a name is not UTF-8 (``names``: decode them all now)."""
    found = record_starts(buf, pos, n_terms)
    if found is None:
        return None
    starts, lens, end = found
    dfs = _words(buf, "<u4")[starts + 4 + lens].astype(np.int64)
    table = TermTable(buf, pos, starts, lens, dfs, end)
    if n_terms == 0:
        return table
    framed = _framed_text(buf, pos, end, starts, lens)
    if framed is None:
        return None
    if names:
        text, only_framing = framed
        table._names = (text[4:-4].split("\n" * 8) if only_framing
                        else _decoded_names(buf, pos, end, starts, lens))
    return table
