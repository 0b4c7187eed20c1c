"""Documents a user drops in a folder: HTML spans are file bytes, cuts fall between words,
legacy encodings and suffix-less files are read, and every skipped file is counted."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.specs import documents_spec, write_documents_spec
from urna.errors import IngestError, SpecError
from urna.forge.sources.chunk import chunk_text, tail_limit, word_window_ranges
from urna.forge.sources.documents import load_document_rows, scan

PAGE = """<!DOCTYPE html>
<html><head><title>Manual</title><meta charset="utf-8">
<style>p { color: red }</style><script>var hidden = "<p>not text</p>";</script></head>
<body><!-- navigation -->
<h1>Caf&eacute; &amp; <em>cr&egrave;me</em> br&ucirc;l&eacute;e</h1>
<p>Pass the <code>--prefix</code> option to install under <a href="/x">another
<strong>root</strong> folder</a>; the default is <span class="path">/usr/local</span>.</p>
<ul><li>one&nbsp;two &lt;three&gt;</li><li>four<br>five &#8212; six &#x263a; seven</li></ul>
<div><p>Na&iuml;ve readers quote <q>exact</q> bytes, and every citation resolves to the very
bytes of the page it came from, markup included between the first and the last word.</p></div>
</body></html>
"""


def _visible(raw: bytes) -> str:
    """A byte range of a page as a reader sees it: tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", raw.decode("utf-8")))


@pytest.mark.parametrize("chunker,max_chars", [("chars", 40), ("chars", 90),
                                                ("paragraph", 60), ("paragraph", 4000)])
def test_html_spans_are_byte_ranges_of_the_file(tmp_path: Path, chunker: str,
                                                max_chars: int) -> None:
    (tmp_path / "page.html").write_text(PAGE, encoding="utf-8")
    rows = load_document_rows(documents_spec(str(tmp_path), chunker=chunker, max_chars=max_chars),
                              report=lambda m: None)
    raw = (tmp_path / "page.html").read_bytes()
    assert len(rows) >= (1 if max_chars == 4000 else 3)
    for r in rows:
        visible = _visible(raw[r.byte_start:r.byte_end])
        pos = 0
        for word in r.canonical_text.split():
            found = visible.find(word, pos)
            assert found >= 0, (word, r.canonical_text, visible)
            pos = found + len(word)
    text = "\n".join(r.canonical_text for r in rows)
    for hidden in ("Manual", "not text", "color", "navigation"):
        assert hidden not in text


def test_html_keeps_inline_text_inline_and_breaks_blocks(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(PAGE, encoding="utf-8")
    [row] = load_document_rows(documents_spec(str(tmp_path), max_chars=4000), report=lambda m: None)
    lines = row.canonical_text.split("\n")
    assert lines[:2] == ["Café & crème brûlée",
                         "Pass the --prefix option to install under another root folder; "
                         "the default is /usr/local."]
    assert lines[2:5] == ["one two <three>", "four", "five \u2014 six \u263a seven"]
    assert row.byte_start == PAGE.encode().index(b"Caf&eacute;")
    assert row.byte_end == PAGE.encode().index(b"word.") + len(b"word.")


def test_html_needs_no_extra_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bs4", None)  # `import bs4` now fails
    (tmp_path / "page.html").write_text(PAGE, encoding="utf-8")
    rows = load_document_rows(documents_spec(str(tmp_path)), report=lambda m: None)
    assert rows and rows[0].canonical_text.startswith("Café & crème")


def test_a_missing_pdf_package_skips_the_file_with_the_install_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pdf_maker) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)
    (tmp_path / "a.txt").write_text("plain text stays readable")
    (tmp_path / "report.pdf").write_bytes(pdf_maker("Offline answers."))
    said: list[str] = []
    rows = load_document_rows(documents_spec(str(tmp_path)), report=said.append)
    assert [r.source_uri for r in rows] == ["a.txt"]
    assert said[0] == ("[forge] skipping report.pdf: PDF support needs pypdf: "
                       "pip install 'urna[pdf]'")


def test_pdf_hits_name_their_page_and_index_the_page_text(tmp_path: Path, pdf_maker) -> None:
    (tmp_path / "report.pdf").write_bytes(pdf_maker("Offline answers come from the local file."))
    [row] = load_document_rows(documents_spec(str(tmp_path)), report=lambda m: None)
    assert row.source_uri == "report.pdf#page=1"
    assert row.canonical_text == "Offline answers come from the local file."
    assert (row.byte_start, row.byte_end) == (0, len(row.canonical_text.encode()))


AWKWARD = ("The indication field carries an unambiguous classification of each "
           "counterindication, so that pharmacovigilance reviewers never see a fragment.\n"
           "Short line.\n\nx\n")


def _between_words(text: str, a: int, b: int) -> bool:
    return (a == 0 or text[a - 1].isspace()) and (b == len(text) or text[b].isspace()
                                                 or text[b - 1].isspace())


@pytest.mark.parametrize("chunker", ["chars", "paragraph"])
def test_chunks_start_and_end_between_words(tmp_path: Path, chunker: str) -> None:
    (tmp_path / "a.md").write_text(AWKWARD)
    rows = load_document_rows(documents_spec(str(tmp_path), chunker=chunker, max_chars=30),
                              report=lambda m: None)
    raw = AWKWARD.encode()
    for r in rows:
        assert r.canonical_text.strip(), "no whitespace-only chunk"
        assert raw[r.byte_start:r.byte_end].decode() == r.canonical_text
        assert _between_words(AWKWARD, r.byte_start, r.byte_end), r.canonical_text
    words = [w for r in rows for w in r.canonical_text.split()]
    assert words == AWKWARD.split()  # no word cut, lost or repeated
    assert "ndication" not in words


def test_chars_chunker_merges_tiny_tails_and_the_reference_windows_stay_available(
        tmp_path: Path) -> None:
    text = "alpha beta gamma delta epsilon.\n" * 5 + ".\n"
    (tmp_path / "a.txt").write_text(text)
    rows = load_document_rows(documents_spec(str(tmp_path), max_chars=40), report=lambda m: None)
    assert all(len(r.canonical_text.strip()) >= tail_limit(40) for r in rows)
    assert rows[-1].canonical_text.endswith("epsilon.\n.\n")
    exact = load_document_rows(documents_spec(str(tmp_path), max_chars=40, word_boundaries=False),
                               report=lambda m: None)
    assert [r.canonical_text for r in exact] == [c.canonical_text
                                                 for c in chunk_text(text, "a.txt", max_chars=40)]
    assert exact[-1].canonical_text == ".\n"  # the reference's window, kept on request


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab c\n\u00e9\u6f22.", max_size=300), st.integers(1, 40), st.data())
def test_word_windows_cover_every_word_once(text: str, max_chars: int,
                                            data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, max_chars - 1))
    got = word_window_ranges(text, max_chars, overlap)
    starts = [a for a, _ in got]
    assert starts == sorted(set(starts))
    for a, b in got:
        assert not text[a].isspace() and a < b
        assert b - a < max_chars + tail_limit(max_chars)
    if overlap == 0:
        words = [w for a, b in got for w in text[a:b].split()]
        assert "".join(words) == "".join(text.split())
        if all(len(w) <= max_chars for w in text.split()):
            assert words == text.split()  # no word cut


def test_latin1_file_reads_with_the_fallback_and_spans_index_its_bytes(tmp_path: Path) -> None:
    body = "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9 for the old mainframe export.\n"
    (tmp_path / "legacy.txt").write_bytes(body.encode("latin-1"))
    said: list[str] = []
    with pytest.raises(IngestError, match="no usable text"):
        load_document_rows(documents_spec(str(tmp_path)), report=said.append)
    assert said[0].startswith("[forge] skipping legacy.txt: not UTF-8 (invalid continuation "
                              "byte at byte 3); set source.encoding_fallback")
    said.clear()
    rows = load_document_rows(
        documents_spec(str(tmp_path), encoding_fallback="cp1252", max_chars=20),
        report=said.append)
    assert said == ["[forge] legacy.txt: read as cp1252 (source.encoding_fallback)"]
    raw = (tmp_path / "legacy.txt").read_bytes()
    for r in rows:
        assert raw[r.byte_start:r.byte_end].decode("cp1252") == r.canonical_text
    assert "".join(r.canonical_text for r in rows).split() == body.split()
    assert load_document_rows(documents_spec(str(tmp_path), encoding="latin-1"),
                              report=lambda m: None)[0].canonical_text == body


@pytest.mark.parametrize("key,value,message", [
    ("encoding", "klingon", "source.encoding: unknown encoding 'klingon'"),
    ("encoding_fallback", "utf-16", "source.encoding_fallback: encoding 'utf-16' is not "
                                    "ASCII-compatible"),
    ("include", [""], "source.include: must be a list of non-empty glob strings"),
])
def test_bad_source_options_name_the_key(key: str, value: object, message: str) -> None:
    with pytest.raises(SpecError, match=f"^{re.escape(message)}"):
        documents_spec("docs", **{key: value})


def test_suffixless_text_is_read_and_every_skip_is_counted(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("Read me first: the install takes two commands.\n")
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "copyright").write_text("Copyright 2026 the urna authors.\n")
    (tmp_path / "blob").write_bytes(b"\x7fELF\x00\x00binary")
    (tmp_path / "notes.docx").write_bytes(b"PK\x03\x04")
    (tmp_path / "draft.md").write_text("A draft that is excluded.")
    said: list[str] = []
    rows = load_document_rows(documents_spec(str(tmp_path), exclude=["draft*"]), report=said.append)
    assert [r.source_uri for r in rows] == ["README", "debian/copyright"]
    assert said == ["[forge] skipping blob: no suffix and not text (a NUL byte)",
                    "[forge] read 2 files, skipped 3: 1 excluded by source.exclude, "
                    "1 no suffix and not text, 1 unsupported file type"]
    report = rows.report()
    assert report["files_read"] == 2 and report["skipped"] == 3
    assert {"path": "notes.docx", "reason": "unsupported file type (.docx)"} in \
        report["skipped_files"]
    only = scan(str(tmp_path), include=["debian/*"])
    assert [f.name for f in only.files] == ["copyright"]
    assert ("README", "not matched by source.include") in only.ignored


def test_built_file_cites_html_bytes_and_pdf_pages(tmp_path: Path, pdf_maker) -> None:
    import json

    from helpers.cli_runner import invoke

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text(PAGE, encoding="utf-8")
    (docs / "report.pdf").write_bytes(pdf_maker("Offline answers come from the local file."))
    (docs / "blob").write_bytes(b"\x00\x01")
    spec = write_documents_spec(tmp_path / "corpus.toml", docs, tmp_path, model="floor",
                                source="max_chars = 120")
    built = invoke(["build", "--spec", str(spec), "--json"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["documents"]["skipped_files"] == [
        {"path": "blob", "reason": "no suffix and not text (a NUL byte)"}]
    out = tmp_path / "out" / "docs.urna"
    hits = [json.loads(line) for line in invoke(
        ["retrieve", str(out), "offline answers", "-k", "20"]).stdout.splitlines()]
    raw = PAGE.encode()
    seen = set()
    for h in hits:
        cited = json.loads(invoke(["cite", str(out), h["citation_id"], "--json"]).stdout)
        seen.add(cited["source_uri"])
        if cited["source_uri"] == "page.html":
            visible = _visible(raw[cited["byte_start"]:cited["byte_end"]])
            assert visible.lstrip().startswith(cited["text"].split()[0])
            assert "span_of" not in cited
        else:
            assert cited["source_uri"] == "report.pdf#page=1"
            assert cited["span_of"] == ("bytes of the UTF-8 text extracted from page 1 of "
                                        "report.pdf (a PDF has no byte spans)")
    assert seen == {"page.html", "report.pdf#page=1"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("<>/&;#=\"' \nabpdivlscript\u00e9") + [
    "<p>", "</p>", "<b>", "</b>", "&amp;", "&#233;", "&#xD800;", "<br>", "<script>",
    "</script>", "<head>", "<body>", "<!--", "-->", "<pre>", "</pre>"]), max_size=60).map("".join))
def test_html_extraction_never_fails_and_maps_inside_the_file(page: str) -> None:
    from urna.forge.sources.html import extract_html
    from urna.forge.sources.text import char_byte_offsets

    raw = page.encode("utf-8")
    text, source_map = extract_html(page, char_byte_offsets(page, "utf-8"))
    assert len(source_map.starts) == len(text) == len(source_map.ends)
    for i in range(len(text)):
        assert 0 <= source_map.starts[i] <= source_map.ends[i] <= len(raw)
    if text:
        start, end = source_map.span(0, len(text))
        assert 0 <= start <= end <= len(raw)
        assert text == text.strip()
