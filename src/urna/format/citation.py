"""Resolving a citation against a file (01-container §9.4).

A citation proves three things once resolved: the file passes every reader check, its
decoded canonical content hashes to the citation's content hash, and it holds a chunk with
the citation's id. The text and span returned are the stored ones; nothing is re-derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CitationError
from .identity import format_citation, parse_citation
from .layout import SECTION_CHUNK_IDS, SECTION_CHUNKS_CANONICAL, SECTION_CHUNKS_ORIGINAL_SPANS
from .reader import UrnaView
from .sections.canonical import decode_chunk_ids, decode_spans, decode_texts


@dataclass(frozen=True)
class ResolvedCitation:
    """A citation resolved to its stored canonical text and source span."""

    citation_id: str
    chunk_id: str
    content_hash: str
    ordinal: int
    text: str
    source_uri: str
    byte_start: int
    byte_end: int


def resolve_citation(view: UrnaView, citation: str) -> ResolvedCitation:
    """Resolve ``citation`` in ``view``; raises CitationError on a wrong corpus or a missing chunk."""
    expected_hash, wanted = parse_citation(citation)
    actual = view.content_hash()
    if expected_hash != actual:
        raise CitationError(f"content_hash mismatch: citation says {expected_hash} but file is {actual}")
    n = view.header.n_chunks
    ids = decode_chunk_ids(view.decoded(SECTION_CHUNK_IDS), n)
    try:
        ordinal = ids.index(wanted)
    except ValueError:
        raise CitationError(f"chunk_id {wanted} not found in file") from None
    text = decode_texts(view.decoded(SECTION_CHUNKS_CANONICAL), n)[ordinal]
    uri, start, end = decode_spans(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), n)[ordinal]
    return ResolvedCitation(format_citation(actual, wanted), wanted, actual, ordinal, text, uri,
                            start, end)
