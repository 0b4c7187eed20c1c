"""``urna validate`` decodes the open's zstd sections ahead (issue #20).

zstd releases the GIL, so validate decodes the compressed sections the open's steps will read
(HNSW, BM25, graph, blob tables: ``validation.zstd_sections_opened``) beside the import of
numpy, and the open's steps read what the view kept. Claims: the list names every zstd section
``opening.open_steps`` decodes, on every reference file and on each one recompressed; and a
section whose decode fails ahead still fails where the open fails, with the open's error.
"""

from __future__ import annotations

import pytest

from helpers.mutate import replace_payload
from helpers.outcomes import verdict
from helpers.vectors import REF
from urna.format.encodings import zstd_compress
from urna.format.layout import (
    ENCODING_ZSTD,
    SECTION_BLOB_DATA,
    SECTION_BM25_INDEX,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_EMBEDDINGS_FP,
    SECTION_HNSW_INDEX,
    encoding_legal,
)
from urna.format.reader import UrnaView
from urna.format.sections.canonical import span_records, string_records
from urna.runtime.opening import open_steps
from urna.runtime.validation import validate_bytes, zstd_sections_opened

FILES = sorted(p.name for p in REF.glob("*.urna"))


def _decoded_by_open(view: UrnaView) -> set[int]:
    """The sections ``open_steps`` reads through ``view.decoded`` on ``view`` when handed the
    0x01 / 0x03 records validate's own steps proved (as validate runs it)."""
    n = view.header.n_embeddings
    ids = string_records(view.decoded(SECTION_CHUNK_IDS), n, SECTION_CHUNK_IDS)
    spans = span_records(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), n)
    read: set[int] = set()
    real = view.decoded

    def spy(section_id: int):
        read.add(section_id)
        return real(section_id)

    view.decoded = spy  # type: ignore[method-assign]
    open_steps(view, proven_ids=ids, proven_spans=spans)
    return read


def _zstd_opened(data: bytes) -> tuple[set[int], list[int]]:
    view = UrnaView.from_bytes(data)
    listed = zstd_sections_opened(view)
    zstd = {e.section_id for e in view.entries if e.encoding == ENCODING_ZSTD}
    return _decoded_by_open(view) & zstd, listed


@pytest.mark.parametrize("name", FILES)
def test_the_list_names_every_zstd_section_the_open_decodes(name: str) -> None:
    wanted, listed = _zstd_opened((REF / name).read_bytes())
    assert wanted <= set(listed)
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "synthetic-graph.urna",
                                  "synthetic-blobs.urna", "quickstart-f16_hnsw.urna"])
def test_recompressed_index_sections_are_listed(name: str) -> None:
    data = (REF / name).read_bytes()
    view = UrnaView.from_bytes(data)
    for entry in view.entries:
        # every raw section past 0x06 that may be zstd (not the fp slab, blob data, bands)
        if entry.section_id >= SECTION_HNSW_INDEX and entry.encoding == 0 and \
                entry.section_id not in (SECTION_EMBEDDINGS_FP, SECTION_BLOB_DATA) and \
                encoding_legal(entry.section_id, ENCODING_ZSTD):
            data = bytes(replace_payload(data, entry.section_id,
                                         zstd_compress(view.decoded(entry.section_id)),
                                         ENCODING_ZSTD))
            view = UrnaView.from_bytes(data)
    wanted, listed = _zstd_opened(data)
    assert wanted and wanted <= set(listed)


def test_a_bad_zstd_index_fails_where_the_open_fails() -> None:
    data = (REF / "quickstart-hybrid.urna").read_bytes()
    view = UrnaView.from_bytes(data)
    frame = zstd_compress(view.decoded(SECTION_BM25_INDEX))
    broken = frame[:len(frame) // 2]  # a frame cut in half: its decode fails
    damaged = bytes(replace_payload(data, SECTION_BM25_INDEX, broken, ENCODING_ZSTD))
    assert SECTION_BM25_INDEX in zstd_sections_opened(UrnaView.from_bytes(damaged))
    want = verdict(lambda: open_steps(UrnaView.from_bytes(damaged)))
    assert want[0] == "MalformedSectionPayload"
    assert verdict(lambda: validate_bytes(damaged)) == want
