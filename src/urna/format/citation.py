"""Resolving a citation against a file (01-container §9.4).

A citation proves three things once resolved: the file passes every reader check, its
decoded canonical content hashes to the citation's content hash, and it holds a chunk with
the citation's id. The text and span returned are the stored ones; nothing is re-derived.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CitationError
from .encodings.repack import DigestIds, column_span, digest_ids
from .identity import format_citation, parse_citation
from .layout import (
    ENCODING_INTPACK,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
)
from .reader import UrnaView
from .record import FrozenRecord
from .sections.canonical import (
    StringRecords,
    proven_span,
    proven_string,
    span_records,
    string_records,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar


class ResolvedCitation(FrozenRecord):
    """A citation resolved to its stored canonical text and source span."""

    # typed as the base's: LivingCitation (runtime.catalog) extends the fields
    _fields: ClassVar[tuple[str, ...]] = ("citation_id", "chunk_id", "content_hash", "ordinal",
                                          "text", "source_uri", "byte_start", "byte_end")
    __slots__ = _fields
    citation_id: str
    chunk_id: str
    content_hash: str
    ordinal: int
    text: str
    source_uri: str
    byte_start: int
    byte_end: int

    def __init__(self, citation_id: str, chunk_id: str, content_hash: str, ordinal: int,
                 text: str, source_uri: str, byte_start: int, byte_end: int) -> None:
        self._set(citation_id, chunk_id, content_hash, ordinal, text, source_uri, byte_start,
                  byte_end)


def locate_citation(citation: str, content_hash: str,
                    chunk_ids: Sequence[str] | StringRecords | DigestIds) -> tuple[str, int]:
    """(chunk_id, ordinal) a citation names in a file; CitationError on another corpus or chunk."""
    expected_hash, wanted = parse_citation(citation)
    if expected_hash != content_hash:
        raise CitationError(
            f"content_hash mismatch: citation says {expected_hash} but file is {content_hash}")
    try:
        return wanted, chunk_ids.index(wanted)
    except ValueError:
        raise CitationError(f"chunk_id {wanted} not found in file") from None


def resolve_citation(view: UrnaView, citation: str, *,
                     records_checked: bool = False) -> ResolvedCitation:
    """Resolve ``citation`` in ``view``; CitationError on a wrong corpus or a missing chunk.

    Checks in order: the content hash, 0x01 parsed with ``n_chunks`` records, the citation,
    then 0x02 and 0x03 parsed the same way; only the cited record is built.
    ``records_checked``: these same bytes passed those parses before (a verdict), so their
    UTF-8 is not walked again, a repacked 0x01 is searched as digests, and 0x02 / 0x03 are
    walked only up to the cited record (and decoded only so far: ``UrnaView.decoded_prefix``).
    """
    actual = view.content_hash(keep_texts=True)
    n = view.header.n_chunks
    ids: StringRecords | DigestIds | None = None
    entry = view.entry(SECTION_CHUNK_IDS)
    if records_checked and entry is not None and entry.encoding == ENCODING_INTPACK:
        ids = digest_ids(view.payload(entry))  # the ids searched as digests, none decoded
    if ids is None:
        ids = string_records(view.decoded(SECTION_CHUNK_IDS), n, SECTION_CHUNK_IDS,
                             utf8_checked=records_checked)
    wanted, ordinal = locate_citation(citation, actual, ids)
    # Proven records are walked (and, on a verified body, decoded) up to the cited one only;
    # else each table is parsed whole.
    text = (proven_string(view.decoded_prefix(SECTION_CHUNKS_CANONICAL), ordinal)
            if records_checked else None)
    if text is None:
        text = string_records(view.decoded(SECTION_CHUNKS_CANONICAL), n,
                              SECTION_CHUNKS_CANONICAL, utf8_checked=records_checked).text(ordinal)
    span = None
    if records_checked:
        spans_entry = view.entry(SECTION_CHUNKS_ORIGINAL_SPANS)
        if spans_entry is not None and spans_entry.encoding == ENCODING_INTPACK:
            span = column_span(view.payload(spans_entry), ordinal)  # one block per column
        if span is None:
            span = proven_span(view.decoded_prefix(SECTION_CHUNKS_ORIGINAL_SPANS), ordinal)
    if span is None:
        span = span_records(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), n,
                            utf8_checked=records_checked).span(ordinal)
    uri, start, end = span
    return ResolvedCitation(format_citation(actual, wanted), wanted, actual, ordinal, text, uri,
                            start, end)
