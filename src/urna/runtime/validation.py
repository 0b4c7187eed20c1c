"""What ``urna validate`` runs: ``VALIDATE_STEPS``, the one ordered list of its checks.

The reference's ``urna validate`` refuses whatever its open refuses, the optional sections
included: a resealed HNSW, BM25 or graph payload, a blob span overlay or a space band fails it
with the open's error. The list is ``format.verify.FORMAT_STEPS`` (which settles the required
sections, the dictionary, the dedup map and the blobs without numpy) with the runtime open's
own steps put before the content hash: on a file with any other section, the ``indexes`` step
runs every step the open makes after its NaN walk (``runtime.opening``: the rerank slab, 0x01
and 0x03, HNSW, BM25, the graph, the blob overlay, the spaces), in the open's order, no verdict
trusted. Its failure, or any other step's the open makes, is the outcome; a failure of the
full check's own parses waits for it (``format.verify.Checks``).

The CLI (``validate_bytes``), ``UrnaFile.validate(full=True)`` (``validate_opened``) and the
TUI's rows (``format.verify.Checks`` over ``VALIDATE_STEPS``) all run this list.

Nothing is checked twice or waited for needlessly: ``validate_bytes`` imports numpy and the
index decoders on a worker while the reader hashes, the passes that need neither (the 0x02
decode, then the content hash; the zstd sections the open's steps read,
``zstd_sections_opened``) run beside that import, and the open's steps take the 0x01 / 0x03
records validate's own steps proved (``opening.open_steps``' ``proven_ids`` /
``proven_spans``).
"""

from __future__ import annotations

import contextlib

from ..errors import UrnaError
from ..format.ahead import Job, start_quietly
from ..format.layout import (
    ENCODING_ZSTD,
    SECTION_BLOB_REFS,
    SECTION_BLOB_SPAN_OVERLAY,
    SECTION_BM25_INDEX,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_DEDUP_MAP,
    SECTION_DICTIONARY,
    SECTION_EMBEDDINGS,
    SECTION_ENTRY,
    SECTION_GRAPH_ADJACENCY,
    SECTION_HNSW_INDEX,
    SECTION_METADATA,
    SECTION_PROVENANCE,
    SECTION_SEARCH_CONTRACT,
    URNA_SECTION_ENTRY_SIZE,
    Header,
    section_name,
)
from ..format.reader import UrnaView
from ..format.verify import (
    CHUNK_IDS,
    CONTENT_HASH,
    FORMAT_STEPS,
    SPANS,
    Checking,
    Step,
    Verification,
    check_view,
)
from . import verdicts

# The sections format.verify decodes as the open does (0x18 is this project's metadata, which
# the reference ignores and the open decodes on first use); any other section needs the open's
# steps. Blob refs and data are not among them: the open reads 0x14 without 0x17 and refuses a
# 0x17 that is not raw or whose count is not 0x14's, which verify_blobs does not ask.
VERIFIED_WITHOUT_OPEN = frozenset({
    SECTION_CHUNK_IDS, SECTION_CHUNKS_CANONICAL, SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_EMBEDDINGS, SECTION_PROVENANCE, SECTION_SEARCH_CONTRACT, SECTION_DICTIONARY,
    SECTION_DEDUP_MAP, SECTION_METADATA,
})
INDEXES = "indexes"


def listed_sections(data: bytes | memoryview) -> set[int] | None:
    """The section ids the table lists, read with no check; None when it cannot be read."""
    try:
        header = Header.unpack(data)
        start, count = header.section_table_offset, header.section_table_count
        if count > len(data) // URNA_SECTION_ENTRY_SIZE:
            return None
        return {SECTION_ENTRY.unpack_from(data, start + i * URNA_SECTION_ENTRY_SIZE)[0]
                for i in range(count)}
    except Exception:  # noqa: BLE001 - any damage: the checks name it
        return None


def needs_open(view: UrnaView) -> bool:
    """Whether ``view`` lists a section only the runtime open decodes (HNSW, BM25, ...)."""
    return any(e.section_id not in VERIFIED_WITHOUT_OPEN for e in view.entries)


# The sections the open's steps read through ``view.decoded`` (``opening.open_steps``), each
# with the capability flag it needs (None: read whenever listed).
OPEN_DECODES: tuple[tuple[int, str | None], ...] = (
    (SECTION_HNSW_INDEX, None), (SECTION_BM25_INDEX, None),
    (SECTION_GRAPH_ADJACENCY, "graph_present"), (SECTION_BLOB_REFS, "blobs_present"),
    (SECTION_BLOB_SPAN_OVERLAY, "blobs_present"))


def zstd_sections_opened(view: UrnaView) -> list[int]:
    """The zstd sections among ``OPEN_DECODES`` that the open's steps decode on ``view``."""
    ext = view.manifest.capabilities_ext
    out = []
    for section_id, flag in OPEN_DECODES:
        entry = view.entry(section_id)
        if entry is None or entry.encoding != ENCODING_ZSTD:
            continue
        if flag is None or (ext is not None and getattr(ext, flag, None) is True):
            out.append(section_id)
    return out


def _decode_quietly(view: UrnaView, section_ids: list[int]) -> None:
    for section_id in section_ids:
        with contextlib.suppress(UrnaError):  # the open's own decode raises it, in its order
            view.decoded(section_id)  # kept by the view for the open's steps


def _start_index_decodes(c: Checking) -> None:
    # zstd releases the GIL: the sections decode beside the import of numpy, not after it
    ids = zstd_sections_opened(c.view)
    if ids:
        c.start(INDEXES, sum(e.size for e in c.view.entries if e.section_id in ids),
                _decode_quietly, c.view, ids)


def _indexes(c: Checking) -> str:
    view = c.view
    others = sorted({e.section_id for e in view.entries} - VERIFIED_WITHOUT_OPEN)
    c.settle(INDEXES)  # the decodes ahead are over: the open's steps read what they kept
    if not others:
        return "none to decode"
    # numpy and the index decoders: only files with such sections import them
    from .opening import open_steps  # the open's steps after its NaN walk, in its order

    # 0x01 and 0x03 as this run's own steps proved them: the open does not prove them again
    open_steps(view, proven_ids=c.proven_ids, proven_spans=c.proven_spans)
    return "decoded as the open does: " + ", ".join(section_name(i) or "unknown" for i in others)


# The open's steps after its NaN walk: its errors are the open's; it parses 0x01 and 0x03
# again after the rerank slab (unless handed this run's proofs, which exist only when those
# rows passed), so on these files a failure of those two rows waits for it.
OPEN_STEPS = Step(INDEXES, _indexes, opens=True, repeats=frozenset({CHUNK_IDS, SPANS}),
                  applies=needs_open, ahead=_start_index_decodes, early=True)
_AT = [s.name for s in FORMAT_STEPS].index(CONTENT_HASH)  # the open ends with the content hash
VALIDATE_STEPS: tuple[Step, ...] = (*FORMAT_STEPS[:_AT], OPEN_STEPS, *FORMAT_STEPS[_AT:])
# What a full open of these bytes leaves to validate (``validate_opened``).
LEFT_BY_OPEN: tuple[Step, ...] = tuple(s for s in VALIDATE_STEPS if not s.opens)

# What a passed validate settled on these bytes, beyond the reader's checks: everything an open
# checks (its value walks and index decodes) and the three canonical tables' records.
SETTLED = frozenset({verdicts.OPEN, verdicts.CITE_RECORDS, verdicts.TEXT_RECORDS})


def _import_open() -> None:
    from . import opening  # noqa: F401 - loaded for the steps to come; an error is theirs


def _start_loading_open(data: bytes | memoryview) -> Job | None:
    """Start importing the open's decoders (numpy and the index sections) on a worker when the
    section table lists a section only they read: the import then overlaps the reader's
    hashing, and the steps before ``indexes`` take numpy's walks (the NaN walk's)."""
    listed = listed_sections(data)
    if listed is None or listed <= VERIFIED_WITHOUT_OPEN:
        return None
    return start_quietly(_import_open)


def validate_bytes(data: bytes | memoryview, path: str | None = None) -> Verification:
    """Run ``urna validate``'s checks over a file's bytes; raises the first typed error found.

    ``path``: the file the bytes were read from; a pass is kept as its open verdict
    (``runtime.verdicts``), so the next open, search or cite of the same bytes hashes once.
    """
    loading = _start_loading_open(data)
    try:
        view = UrnaView.from_bytes(data)
    except BaseException:
        if loading is not None:
            loading.wait()
        raise
    # The steps wait for the import; the 0x02 decode (zstd, no GIL) starts before, beside it.
    result = check_view(view, VALIDATE_STEPS, loading=loading)
    if path is not None:
        verdicts.keep_view(path, data, view, SETTLED)
    return result


def validate_opened(view: UrnaView) -> Verification:
    """``validate_bytes`` for the view of a passed open: a full open of these bytes proved
    every step it makes (the reader's, the NaN walk, its decodes, the content hash), so only
    validate's own run; a view trusted on a kept verdict gets every check again."""
    if view.trusted:
        return validate_bytes(view.buf)
    return check_view(view, LEFT_BY_OPEN)
