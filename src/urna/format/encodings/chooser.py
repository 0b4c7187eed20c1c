"""The writer's encoding choices under zstd text (02-encodings §4.2, §4.4, §8).

Every choice compares exact byte sizes and keeps the incumbent on a tie, in the reference's
candidate order; a size drift in any candidate would flip the winner and change the file, so a
candidate is computed in full unless a lower bound on its size (its fixed part plus the frames
made so far) already exceeds a finished candidate's size: then it cannot win and stops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from ...errors import InvalidInput, UnsupportedSectionEncoding
from ..fanout import Fanout
from ..layout import SECTION_DEDUP_MAP, SECTION_DICTIONARY
from ..sections.canonical import encode_texts
from .dedup import dedup, encode_map
from .fsst import fsst_parts
from .repack import chunk_ids_eligible, encode_chunk_ids, encode_spans
from .textcontainer import (
    KIND_FSST,
    KIND_TXT_STREAMS,
    KIND_ZSTD_DICT,
    txt_streams_frames,
    write_container,
)
from .zstd import zstd_compress
from .zstd_dict import dict_frames, train_dict

ENCODING_RAW = 0
ENCODING_ZSTD = 1
ENCODING_INTPACK = 4
ENCODING_ZSTD_DICT = 5
ENCODING_FSST = 9
ENCODING_TXT_STREAMS = 10


def choose_chunk_ids(raw_payload: bytes, chunk_ids: list[str]) -> tuple[int, bytes]:
    """0x01: the digest repack (id 4) when every id is canonical, else the raw payload."""
    if chunk_ids_eligible(chunk_ids):
        return ENCODING_INTPACK, encode_chunk_ids(chunk_ids)
    return ENCODING_RAW, raw_payload


def choose_spans(raw_payload: bytes, spans: list[tuple[str, int, int]]) -> tuple[int, bytes]:
    """0x03: the spans repack (id 4) if strictly smaller than zstd of the raw payload, else zstd."""
    packed = encode_spans(spans)
    compressed = zstd_compress(raw_payload)
    if len(packed) < len(compressed):
        return ENCODING_INTPACK, packed
    return ENCODING_ZSTD, compressed


Candidate = tuple[int, bytes, list[tuple[int, bytes]]]

# Frames between two looks at the bound: often enough to stop early, rarely enough to be free.
BOUND_CHECK_EVERY = 256
# write_container's fixed head (kind byte + u64 count); the packed offsets come on top of it.
CONTAINER_HEAD = 9


class SmallestSoFar:
    """The smallest total of the candidates finished so far, shared by the ones still running.

    A candidate whose size is already provably larger than a finished one's cannot be chosen
    (the choice is the strictly smallest, earliest on a tie), so it stops and counts as
    absent: the winner, and so the bytes, are the same whichever candidates stopped.
    """

    def __init__(self) -> None:
        self._total: int | None = None
        self._lock = threading.Lock()

    def offer(self, total: int) -> None:
        """Record a finished candidate's total size."""
        with self._lock:
            if self._total is None or total < self._total:
                self._total = total

    def beats(self, lower_bound: int) -> bool:
        """True when a finished candidate is strictly smaller than ``lower_bound``."""
        total = self._total
        return total is not None and total < lower_bound


def _collect(frames: Iterator[bytes], fixed: int, best: SmallestSoFar) -> list[bytes] | None:
    """All of ``frames``, or None once ``fixed`` + the frames so far exceed a finished total."""
    out: list[bytes] = []
    size = fixed
    if best.beats(size):
        return None
    for i, frame in enumerate(frames, 1):
        out.append(frame)
        size += len(frame)
        if i % BOUND_CHECK_EVERY == 0 and best.beats(size):
            return None
    return out


def _zstd_candidate(texts: list[str], best: SmallestSoFar) -> Candidate:
    return ENCODING_ZSTD, zstd_compress(encode_texts(texts)), []


def _txt_streams_candidate(texts: list[str], best: SmallestSoFar) -> Candidate | None:
    frames = _collect(txt_streams_frames(texts), CONTAINER_HEAD, best)
    if frames is None:
        return None
    return ENCODING_TXT_STREAMS, write_container(KIND_TXT_STREAMS, frames), []


def _dict_candidate(texts: list[str], best: SmallestSoFar) -> Candidate | None:
    dictionary = train_dict(texts)
    if dictionary is None:
        return None
    frames = _collect(dict_frames(texts, dictionary), CONTAINER_HEAD + len(dictionary), best)
    if frames is None:
        return None
    return (ENCODING_ZSTD_DICT, write_container(KIND_ZSTD_DICT, frames),
            [(SECTION_DICTIONARY, dictionary)])


def _fsst_candidate(texts: list[str], best: SmallestSoFar) -> Candidate | None:
    between, codes = fsst_parts(texts)
    frames = _collect(codes, CONTAINER_HEAD + len(between), best)
    if frames is None:
        return None
    return ENCODING_FSST, write_container(KIND_FSST, frames, between), []


def _dedup_candidate(texts: list[str], best: SmallestSoFar) -> Candidate | None:
    pool, refs = dedup(texts)
    if len(pool) >= len(texts):
        return None
    return ENCODING_ZSTD, zstd_compress(encode_texts(pool)), [(SECTION_DEDUP_MAP, encode_map(refs))]


# The five candidates of §8, in the reference's order (a None result is an absent candidate).
_CANDIDATES = (_zstd_candidate, _txt_streams_candidate, _dict_candidate, _fsst_candidate,
               _dedup_candidate)
# The order they start in: the whole-text frame (the usual winner, one long libzstd call)
# first; then the cheap dedup check; then the others by how much of their work comes before
# the first look at the bound (fsst's table, the dictionary's training), so the ones that are
# all frames start last, when a finished size is most likely there to stop them.
_START_ORDER = (0, 4, 3, 2, 1)


def _total(candidate: Candidate) -> int:
    return len(candidate[1]) + sum(len(body) for _, body in candidate[2])


def _finished(make: Callable[[list[str], SmallestSoFar], Candidate | None], texts: list[str],
              best: SmallestSoFar) -> Candidate | None:
    candidate = make(texts, best)
    if candidate is not None:
        best.offer(_total(candidate))
    return candidate


def _candidates(texts: list[str], threads: int) -> Iterator[Candidate]:
    """The candidates that can still win, on up to ``threads`` threads, in the §8 order.

    libzstd releases the GIL, so they can run side by side. On one thread the whole-text
    frame is made first, so the per-text candidates usually stop part way (its size is the
    bound): less work in all, the better trade when another job holds the other cores.
    """
    best = SmallestSoFar()
    with Fanout(threads) as fan:
        jobs = {i: fan.start(_finished, _CANDIDATES[i], texts, best) for i in _START_ORDER}
        for i in range(len(_CANDIDATES)):
            candidate = jobs[i].result()
            if candidate is not None:
                yield candidate


def choose_chunks_canonical(texts: list[str], threads: int = len(_CANDIDATES)
                            ) -> tuple[int, bytes, list[tuple[int, bytes]]]:
    """0x02: the smallest of the five candidates; returns (encoding, payload, aux raw sections).

    ``threads`` caps the threads the candidates use (``URNA_THREADS`` caps it too); the
    choice and its bytes never depend on it.
    """
    best: Candidate | None = None
    best_total = 0
    for candidate in _candidates(texts, threads):
        total = _total(candidate)
        if best is None or total < best_total:
            best, best_total = candidate, total
    assert best is not None  # the zstd candidate always exists and is never stopped
    return best


def encode_smallest(candidates: list[int], payload: bytes) -> tuple[int, bytes]:
    """Strictly smallest of the raw (0) / zstd (1) encodings, earliest on a tie (§1.3)."""
    best: tuple[int, bytes] | None = None
    for encoding in candidates:
        if encoding == ENCODING_RAW:
            body = bytes(payload)
        elif encoding == ENCODING_ZSTD:
            body = zstd_compress(payload)
        else:
            raise UnsupportedSectionEncoding(0, encoding)
        if best is None or len(body) < len(best[1]):
            best = (encoding, body)
    if best is None:
        raise InvalidInput("encode_smallest: no candidate encodings")
    return best
