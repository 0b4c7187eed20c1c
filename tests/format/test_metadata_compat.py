"""A reference file with a metadata section (0x18) added keeps its identity and its answers.

Every file of tests/data/ref-0.5.1 gets a metadata section through ``format.append.with_section``;
our reader must then report the reference's content_hash and chunk ids and return exactly the
reference's hits (expected.json) on every query path, while the metadata reads back. The same
files opened by the reference wheel itself: tools/metadata_reference_check.py (not a test: the
wheel is never a dependency of the suite).
"""

from __future__ import annotations

import pytest

import urna
from helpers.vectors import REF, expected, same_answers
from helpers.vectors import metadata_sample_rows as sample_rows
from urna.format.append import with_section
from urna.format.layout import SECTION_METADATA
from urna.format.reader import UrnaView
from urna.format.sections.metadata import encode_metadata, read_metadata

EXPECTED = expected()
FILES = sorted(EXPECTED)


def rehashed(want: list[dict], file_hash: str) -> list[dict]:
    """The reference hits with the one field that must change: the file's own sha256."""
    return [{**w, "file_hash": file_hash} if "file_hash" in w else w for w in want]


@pytest.fixture(scope="module", params=FILES)
def with_metadata(request, tmp_path_factory):
    name = request.param
    data = (REF / name).read_bytes()
    n = EXPECTED[name]["inspect"]["n_chunks"]
    rows = sample_rows(n)
    path = tmp_path_factory.mktemp("meta") / name
    path.write_bytes(with_section(data, SECTION_METADATA, encode_metadata(rows, n)))
    return name, path, rows


def test_identity_and_answers_unchanged(with_metadata) -> None:
    name, path, _ = with_metadata
    exp = EXPECTED[name]
    with urna.open(path) as f:
        assert f.content_hash == exp["content_hash"]
        assert f.file_hash != exp["file_hash"]  # the bytes did change
        assert f.chunk_ids() == exp["chunk_ids"]
        for qi, q in enumerate(exp["queries"]):
            q = {k: {**v, "hits": rehashed(v["hits"], f.file_hash)}
                 if k.startswith("search_space_") else
                 rehashed(v, f.file_hash) if k.startswith(("search", "retrieve")) else v
                 for k, v in q.items()}
            same_answers(f, q, f"{name}#{qi}")


def test_metadata_reads_back(with_metadata) -> None:
    _, path, rows = with_metadata
    view = UrnaView.from_bytes(path.read_bytes())
    table = read_metadata(view)
    assert table is not None
    assert [table.row(i) for i in range(len(rows))] == [r or {} for r in rows]
    entry = view.entry(SECTION_METADATA)
    assert entry is not None and entry.encoding == 0


def test_the_section_id_is_unnamed_and_unused_by_the_reference_files() -> None:
    from urna.format.layout import section_name

    assert section_name(SECTION_METADATA) is None
    for name in FILES:
        view = UrnaView.from_bytes((REF / name).read_bytes())
        assert view.entry(SECTION_METADATA) is None
        assert read_metadata(view) is None


@pytest.mark.parametrize("name", FILES)
def test_relaying_out_without_a_change_gives_the_reference_bytes(name) -> None:
    """with_section re-lays out through writer.assemble: removing what it added is identity."""
    data = (REF / name).read_bytes()
    n = EXPECTED[name]["inspect"]["n_chunks"]
    added = with_section(data, SECTION_METADATA, encode_metadata(sample_rows(n), n))
    replaced = with_section(added, SECTION_METADATA, encode_metadata(sample_rows(n), n))
    assert replaced == added
    view = UrnaView.from_bytes(added)
    assert len(view.entries) == len(UrnaView.from_bytes(data).entries) + 1
    assert [e.section_id for e in view.entries] == sorted(e.section_id for e in view.entries)


def test_canonical_sections_cannot_be_replaced() -> None:
    data = (REF / "quickstart-exact.urna").read_bytes()
    with pytest.raises(urna.errors.InvalidInput, match="canonical"):
        with_section(data, 0x02, b"")
    with pytest.raises(urna.errors.InvalidInput, match="not legal"):
        with_section(data, 0x20, b"", encoding=1)
