"""PDF text, page by page, with pypdf (the ``pdf`` extra).

A PDF's visible text is not a byte range of the file, so a PDF is addressed by page: each page
with text becomes its own source ``<file>#page=<n>`` (1-based) and spans index the UTF-8
bytes of that page's extracted text.
"""

from __future__ import annotations

import re
from pathlib import Path

from urna.forge.sources.text import SkipFile

INSTALL_HINT = "PDF support needs pypdf: pip install 'urna[pdf]'"


def page_uri(rel: str, page: int) -> str:
    """The source_uri of page ``page`` (1-based) of the PDF at ``rel``."""
    return f"{rel}#page={page}"


_PAGE_URI = re.compile(r"^(.*\.pdf)#page=([1-9][0-9]*)$", re.IGNORECASE)


def span_meaning(source_uri: str) -> str | None:
    """What a span of a PDF page source indexes (None for a source whose spans are file bytes)."""
    m = _PAGE_URI.match(source_uri)
    if m is None:
        return None
    return (f"bytes of the UTF-8 text extracted from page {m.group(2)} of {m.group(1)} "
            "(a PDF has no byte spans)")


def pdf_pages(path: Path) -> list[tuple[int, str]]:
    """(1-based page number, extracted text) of every page with text; SkipFile otherwise."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as e:
        raise SkipFile(INSTALL_HINT) from e
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise SkipFile("encrypted PDF")
        pages = [(n, (page.extract_text() or "").strip())
                 for n, page in enumerate(reader.pages, 1)]
    except SkipFile:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as e:
        raise SkipFile(f"unreadable PDF ({type(e).__name__}: {e})") from e
    return [(n, text) for n, text in pages if text]
