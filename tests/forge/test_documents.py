"""The documents source: files -> chunks with spans into the file; bad files reported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.specs import documents_spec
from urna.errors import IngestError
from urna.forge.sources.documents import discover, load_document_rows


def test_bad_files_are_reported_by_name_and_skipped(docs_dir: Path) -> None:
    said: list[str] = []
    rows = load_document_rows(documents_spec(str(docs_dir), chunker="paragraph"),
                              report=said.append)
    assert {r.source_uri for r in rows} == {"a.md", "e.html", "sub/d.pdf#page=1"}
    joined = "\n".join(said)
    assert "skipping b-latin1.txt: not UTF-8" in joined
    assert "skipping c-empty.txt: empty file" in joined
    assert "skipping f-broken.pdf: unreadable PDF" in joined
    assert len(said) == 4
    assert said[-1] == ("[forge] read 3 files, skipped 4: 1 empty file, 1 not UTF-8, "
                        "1 unreadable PDF, 1 unsupported file type")
    assert "Offline answers come from the local file." in {r.canonical_text for r in rows}
    html = [r.canonical_text for r in rows if r.source_uri == "e.html"]
    assert html == ["Offline\nNo network is needed."]  # no script or style text


def test_stop_on_error_names_the_file(docs_dir: Path) -> None:
    with pytest.raises(IngestError, match=r"^b-latin1\.txt: not UTF-8 .*byte 3"):
        load_document_rows(documents_spec(str(docs_dir), on_error="stop"))


def test_text_spans_point_at_the_file_bytes(docs_dir: Path) -> None:
    rows = load_document_rows(documents_spec(str(docs_dir), max_chars=40, overlap=5),
                              report=lambda m: None)
    raw = (docs_dir / "a.md").read_bytes()
    md = [r for r in rows if r.source_uri == "a.md"]
    assert len(md) > 2
    for r in md:
        assert raw[r.byte_start:r.byte_end].decode("utf-8") == r.canonical_text
    assert md[0].byte_start == 3  # after the BOM
    assert [r.ordinal for r in rows] == list(range(len(rows)))
    assert rows[0].key == "a.md#0"


def test_glob_and_discovery_order(docs_dir: Path) -> None:
    base, files = discover(str(docs_dir / "**" / "*.pdf"))
    assert base == docs_dir
    assert [f.relative_to(base).as_posix() for f in files] == ["f-broken.pdf", "sub/d.pdf"]
    base, files = discover(str(docs_dir))
    assert [f.name for f in files] == ["a.md", "b-latin1.txt", "c-empty.txt", "e.html",
                                       "f-broken.pdf", "d.pdf"]


def test_nothing_usable_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_bytes(b"")
    with pytest.raises(IngestError, match="no usable text"):
        load_document_rows(documents_spec(str(tmp_path)), report=lambda m: None)
    with pytest.raises(IngestError, match="no such file"):
        load_document_rows(documents_spec(str(tmp_path / "absent")))


def test_md_text_fixture_is_what_the_file_holds(docs_dir: Path, md_text: str) -> None:
    rows = load_document_rows(documents_spec(str(docs_dir), max_chars=10_000),
                              report=lambda m: None)
    assert [r.canonical_text for r in rows if r.source_uri == "a.md"] == [md_text]


def test_a_non_utf8_file_name_is_reported_not_crashed(tmp_path: Path) -> None:
    import os

    (tmp_path / "good.txt").write_text("fine text")
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"some text")
    said: list[str] = []
    rows = load_document_rows(documents_spec(str(tmp_path)), report=said.append)
    assert [r.source_uri for r in rows] == ["good.txt"]
    assert said == ["[forge] skipping bad\ufffd.txt: file name is not UTF-8",
                    "[forge] read 1 file, skipped 1: 1 file name is not UTF-8"]
