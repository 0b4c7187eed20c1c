"""The writer's encoding choices under zstd text (02-encodings §4.2, §4.4, §8).

Every choice compares exact byte sizes and keeps the incumbent on a tie, in the reference's
candidate order; a size drift in any candidate would flip the winner and change the file, so each
candidate is computed in full.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import InvalidInput, UnsupportedSectionEncoding
from ..fanout import Fanout
from ..layout import SECTION_DEDUP_MAP, SECTION_DICTIONARY
from ..sections.canonical import encode_texts
from .dedup import dedup, encode_map
from .fsst import encode_fsst
from .repack import chunk_ids_eligible, encode_chunk_ids, encode_spans
from .textcontainer import encode_txt_streams
from .zstd import zstd_compress
from .zstd_dict import encode_zstd_dict, train_dict

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


def _zstd_candidate(texts: list[str]) -> Candidate:
    return ENCODING_ZSTD, zstd_compress(encode_texts(texts)), []


def _txt_streams_candidate(texts: list[str]) -> Candidate:
    return ENCODING_TXT_STREAMS, encode_txt_streams(texts), []


def _dict_candidate(texts: list[str]) -> Candidate | None:
    dictionary = train_dict(texts)
    if dictionary is None:
        return None
    return (ENCODING_ZSTD_DICT, encode_zstd_dict(texts, dictionary),
            [(SECTION_DICTIONARY, dictionary)])


def _fsst_candidate(texts: list[str]) -> Candidate:
    return ENCODING_FSST, encode_fsst(texts), []


def _dedup_candidate(texts: list[str]) -> Candidate | None:
    pool, refs = dedup(texts)
    if len(pool) >= len(texts):
        return None
    return ENCODING_ZSTD, zstd_compress(encode_texts(pool)), [(SECTION_DEDUP_MAP, encode_map(refs))]


# The five candidates of §8, in the reference's order (a None result is an absent candidate).
_CANDIDATES = (_zstd_candidate, _txt_streams_candidate, _dict_candidate, _fsst_candidate,
               _dedup_candidate)


def _candidates(texts: list[str]) -> Iterator[Candidate]:
    """The candidates, computed side by side (libzstd releases the GIL), yielded in order."""
    with Fanout(len(_CANDIDATES)) as fan:
        jobs = [fan.start(make, texts) for make in _CANDIDATES]
        for job in jobs:
            candidate = job.result()
            if candidate is not None:
                yield candidate


def choose_chunks_canonical(texts: list[str]) -> tuple[int, bytes, list[tuple[int, bytes]]]:
    """0x02: the smallest of the five candidates; returns (encoding, payload, aux raw sections)."""
    best: Candidate | None = None
    best_total = 0
    for encoding, payload, aux in _candidates(texts):
        total = len(payload) + sum(len(body) for _, body in aux)
        if best is None or total < best_total:
            best, best_total = (encoding, payload, aux), total
    assert best is not None  # the zstd candidate always exists
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
