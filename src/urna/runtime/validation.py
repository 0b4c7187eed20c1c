"""What ``urna validate`` runs: every check a full open makes, then the format-level ones.

The reference's ``urna validate`` refuses whatever its open refuses, the optional sections
included: a resealed HNSW, BM25 or graph payload, a blob span overlay or a space band fails it
with the open's error. ``format.verify`` settles the required sections, the dictionary, the
dedup map and the blobs without numpy, so a file holding only those is checked there; a file
with any other section runs the runtime's full open (every step, in the open's order, no
verdict trusted) and then the format-level check's own steps on the opened view.
"""

from __future__ import annotations

from ..format.layout import (
    SECTION_BLOB_DATA,
    SECTION_BLOB_REFS,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_DEDUP_MAP,
    SECTION_DICTIONARY,
    SECTION_EMBEDDINGS,
    SECTION_ENTRY,
    SECTION_METADATA,
    SECTION_PROVENANCE,
    SECTION_SEARCH_CONTRACT,
    URNA_SECTION_ENTRY_SIZE,
    Header,
)
from ..format.reader import UrnaView
from ..format.verify import Verification, verify_view
from . import verdicts

# The sections format.verify decodes (0x18 is this project's metadata, which the reference
# ignores and the open decodes on first use); any other section needs the full open.
VERIFIED_WITHOUT_OPEN = frozenset({
    SECTION_CHUNK_IDS, SECTION_CHUNKS_CANONICAL, SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_EMBEDDINGS, SECTION_PROVENANCE, SECTION_SEARCH_CONTRACT, SECTION_DICTIONARY,
    SECTION_DEDUP_MAP, SECTION_BLOB_REFS, SECTION_BLOB_DATA, SECTION_METADATA,
})


def listed_sections(data: bytes | memoryview) -> set[int] | None:
    """The section ids the table lists, read with no check; None when it cannot be read.

    It only picks the path: both paths start with the reader's checks of header and table.
    """
    try:
        header = Header.unpack(data)
        start, count = header.section_table_offset, header.section_table_count
        if count > len(data) // URNA_SECTION_ENTRY_SIZE:
            return None
        return {SECTION_ENTRY.unpack_from(data, start + i * URNA_SECTION_ENTRY_SIZE)[0]
                for i in range(count)}
    except Exception:  # noqa: BLE001 - any damage: the checks below name it
        return None


# What a passed validate settled on these bytes, beyond the reader's checks: everything an open
# checks (its value walks and index decodes) and the three canonical tables' records.
SETTLED = frozenset({verdicts.OPEN, verdicts.CITE_RECORDS, verdicts.TEXT_RECORDS})


def validate_bytes(data: bytes | memoryview, path: str | None = None) -> Verification:
    """Run ``urna validate``'s checks over a file's bytes; raises the first typed error found.

    ``path``: the file the bytes were read from; a pass is kept as its open verdict
    (``runtime.verdicts``), so the next open, search or cite of the same bytes hashes once.
    """
    listed = listed_sections(data)
    if listed is None or listed <= VERIFIED_WITHOUT_OPEN:
        view = UrnaView.from_bytes(data)
    else:
        from .opening import open_state  # numpy and the index decoders: only files with them

        # The open's steps first, in its order (the reference's validate fails as its open
        # does); then the format-level checks the open leaves to first use (the canonical
        # tables' records, the inlined blobs) on the same view, whose hashes are kept.
        view = open_state(data).view
    result = verify_view(view)
    if path is not None:
        verdicts.keep_view(path, data, view, SETTLED)
    return result
