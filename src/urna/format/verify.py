"""The full integrity check behind ``urna validate`` (01-container §12.3, 04-surface §2.3).

Runs every check the file format allows before reporting anything: the 19 reader checks,
the NaN/Inf walk of 0x04, the search contract, the decoded canonical sections (with their
record counts) and, when 0x17 exists, every inlined blob against its 0x14 SHA-256.

The three SHA-256 passes run side by side: the reader hashes the body and the section
checksums on workers (``format.ahead``), and here the content hash (a third pass over the
slab) runs on a worker while this thread parses the 0x02 records. Each outcome is claimed in
the reference's order, so the first error is the reference's.
"""

from __future__ import annotations

from ..errors import MalformedSectionPayload
from .ahead import Job, Lane
from .hashing import sha256_digest
from .layout import (
    SECTION_BLOB_DATA,
    SECTION_BLOB_REFS,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
)
from .reader import UrnaView
from .record import FrozenRecord
from .sections.canonical import span_records, string_records


class Verification(FrozenRecord):
    """What a successful full check established."""

    __slots__ = _fields = ("n_sections", "blobs_verified", "file_hash", "content_hash")
    n_sections: int
    blobs_verified: int | None
    file_hash: str
    content_hash: str

    def __init__(self, n_sections: int, blobs_verified: int | None, file_hash: str,
                 content_hash: str) -> None:
        self._set(n_sections, blobs_verified, file_hash, content_hash)


def verify_blobs(view: UrnaView) -> int | None:
    """Check every inlined blob of 0x17 against its 0x14 digest; None when there is no 0x17."""
    from .sections.blobs import decode_blob_data, decode_blob_refs

    data_entry = view.entry(SECTION_BLOB_DATA)
    if data_entry is None:
        return None
    payload = view.payload(data_entry)
    table, data_start = decode_blob_data(payload)
    has_refs = view.entry(SECTION_BLOB_REFS) is not None
    refs = decode_blob_refs(view.decoded(SECTION_BLOB_REFS)) if has_refs else []
    verified = 0
    for i, (offset, length) in enumerate(table):
        if i >= len(refs) or not refs[i].inlined:
            continue
        blob = payload[data_start + offset:data_start + offset + length]
        if sha256_digest(blob) != refs[i].content_hash:
            raise MalformedSectionPayload(SECTION_BLOB_DATA, f"blob {i} ({refs[i].original_uri}) "
                                          "does not match its blob_refs sha256")
        verified += 1
    return verified


def verify(data: bytes | memoryview) -> Verification:
    """Run the full check over a file's bytes; raises the first typed error found."""
    return verify_view(UrnaView.from_bytes(data))


def verify_view(view: UrnaView) -> Verification:
    """The full check's steps after the reader's, on a view that passed them."""
    texts_entry = view.entry(SECTION_CHUNKS_CANONICAL)
    assert texts_entry is not None  # a required section (reader step 16)
    with Lane() as lane:
        # Every outcome below is claimed in the reference's order (NaN walk, contract, 0x01,
        # 0x03, 0x02, content hash); the work starts earlier. The 0x02 decode (zstd, which
        # releases the GIL; its expansion bounded by the decoder) runs on a worker beside the
        # NaN walk and the smaller tables; the content hash, which reads the decoded tables,
        # then runs on a worker beside the 0x02 record parse.
        texts = lane.start(texts_entry.size, view.decoded, SECTION_CHUNKS_CANONICAL)
        ids = Job.now(view.decoded, SECTION_CHUNK_IDS)
        spans = ids if ids.failed else Job.now(view.decoded, SECTION_CHUNKS_ORIGINAL_SPANS)
        view.validate_embeddings_values()
        view.search_contract()
        n = view.header.n_embeddings
        # The parses of the three tables, without building their strings (the same checks).
        string_records(ids.result(), n, SECTION_CHUNK_IDS)
        span_records(spans.result(), n)
        decoded_texts = texts.result()
        hashed = view.check_embeddings_layout().size + len(decoded_texts)
        content = lane.start(hashed, view.content_hash)
        string_records(decoded_texts, view.header.n_chunks, SECTION_CHUNKS_CANONICAL)
        content_hash = content.result()
    blobs = verify_blobs(view)
    return Verification(len(view.entries), blobs, view.file_hash(), content_hash)
