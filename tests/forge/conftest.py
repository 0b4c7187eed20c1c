"""Shared fixtures for forge tests: a small documents folder and a tiny PDF writer."""

from __future__ import annotations

from pathlib import Path

import pytest


def make_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (enough for pypdf to extract it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


@pytest.fixture()
def pdf_maker():
    """``make_pdf``, for tests that write their own PDFs."""
    return make_pdf


MD_TEXT = ("# Citations\n\nEvery hit carries a citation that names the content.\n\n"
           "The content hash covers the decoded canonical sections, caf\u00e9 included.\n")


@pytest.fixture()
def md_text() -> str:
    """The text of ``docs_dir/a.md`` (the file adds a UTF-8 BOM before it)."""
    return MD_TEXT


@pytest.fixture()
def docs_dir(tmp_path: Path) -> Path:
    """Good .md/.html/.pdf files beside a non-UTF-8 file, an empty file and a broken PDF."""
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / ".hidden").mkdir()
    (d / "a.md").write_bytes(b"\xef\xbb\xbf" + MD_TEXT.encode("utf-8"))
    (d / "b-latin1.txt").write_bytes("caf\u00e9 cr\u00e8me".encode("latin-1"))
    (d / "c-empty.txt").write_bytes(b"")
    (d / "sub" / "d.pdf").write_bytes(make_pdf("Offline answers come from the local file."))
    (d / "e.html").write_text("<html><head><style>p{}</style><script>var x;</script></head>"
                              "<body><h1>Offline</h1><p>No network is needed.</p></body></html>")
    (d / "f-broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    (d / ".hidden" / "secret.md").write_text("hidden")
    (d / "notes.docx").write_bytes(b"PK\x03\x04")
    return d
