"""The ``documents`` source kind (ours, beyond the reference): a folder or glob of files.

Supported: ``.md``, ``.markdown``, ``.txt`` (UTF-8, spans are byte offsets into the file
itself), ``.html`` / ``.htm`` (text extracted with beautifulsoup4) and ``.pdf`` (text
extracted with pypdf, pages joined by a blank line). For extracted formats the spans
index the UTF-8 encoding of the extracted text, since the visible text is not a byte
range of the source file.

A file that cannot be used (not UTF-8, empty, no extractable text, a broken PDF) is
reported by name and skipped; with ``on_error = "stop"`` the build stops on it with an
``IngestError`` naming the file. Never a traceback.
"""

from __future__ import annotations

import glob
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urna.errors import IngestError
from urna.forge.sources.chunk import ChunkSpec, chunk
from urna.forge.sources.item import Row, item_input_hash
from urna.forge.spec import CorpusSpec

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
_BOM = b"\xef\xbb\xbf"


class SkipFile(Exception):
    """This file has no usable text; the message says why."""


def discover(path: str) -> tuple[Path, list[Path]]:
    """Return (base dir, sorted supported files) for a folder or a glob pattern."""
    p = Path(path)
    if p.is_dir():
        base = p
        files = [f for f in p.rglob("*") if f.is_file()]
    elif p.is_file():
        base = p.parent
        files = [p]
    else:
        matches = [Path(m) for m in glob.glob(path, recursive=True)]
        if not matches and not glob.has_magic(path):
            raise IngestError(f"source.path: no such file or folder: {path}")
        magic_at = next((i for i, part in enumerate(p.parts) if glob.has_magic(part)),
                        len(p.parts))
        base = Path(*p.parts[:magic_at]) if magic_at else Path(".")
        files = [m for m in matches if m.is_file()]
    files = [f for f in files if f.suffix.lower() in SUFFIXES
             and not any(part.startswith(".") for part in f.relative_to(base).parts)]
    return base, sorted(files, key=lambda f: f.relative_to(base).as_posix())


def _decode_text(data: bytes) -> tuple[str, int]:
    """Decode UTF-8 strictly; return (text, byte offset of the text in the file)."""
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8"), skip
    except UnicodeDecodeError as e:
        raise SkipFile(f"not UTF-8 ({e.reason} at byte {e.start + skip})") from e


def _html_text(data: bytes) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    lines = (line.strip() for line in soup.get_text("\n").splitlines())
    return "\n".join(line for line in lines if line)


def _pdf_text(path: Path) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as e:
        raise SkipFile("PDF support needs pypdf: pip install 'urna[pdf]'") from e
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise SkipFile("encrypted PDF")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except SkipFile:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as e:
        raise SkipFile(f"unreadable PDF ({type(e).__name__}: {e})") from e
    return "\n\n".join(p for p in pages if p)


def extract(path: Path) -> tuple[str, int]:
    """Return (text, byte offset of the text inside the file) or raise SkipFile."""
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        if path.stat().st_size == 0:
            raise SkipFile("empty file")
        text, offset = _pdf_text(path), 0
    else:
        data = path.read_bytes()
        if not data:
            raise SkipFile("empty file")
        if suffix in HTML_SUFFIXES:
            text, offset = _html_text(data), 0
        else:
            text, offset = _decode_text(data)
    if not text.strip():
        raise SkipFile("no text")
    return text, offset


DOCUMENT_METADATA_TYPES = {"path": "string", "folder": "string", "extension": "string",
                           "title": "string", "modified": "timestamp"}
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _title(path: Path, text: str) -> str | None:
    """The document's title: HTML <title> (else its first h1-h6), Markdown's first heading."""
    suffix = path.suffix.lower()
    if suffix in HTML_SUFFIXES:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(path.read_bytes(), "html.parser")
        tag = soup.title or soup.find(["h1", "h2", "h3", "h4", "h5", "h6"])
        title = tag.get_text(" ", strip=True) if tag is not None else ""
        return title or None
    if suffix in (".md", ".markdown"):
        m = _MD_HEADING.search(text)
        return m.group(1).strip() if m else None
    return None


def document_fields(path: Path, rel: str, text: str) -> dict[str, Any]:
    """The metadata every chunk of a document carries: path, folder, extension, title,
    modified (the file's mtime, UTC)."""
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    out: dict[str, Any] = {"path": rel, "folder": folder, "extension": path.suffix.lower(),
                           "modified": datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)}
    title = _title(path, text)
    if title:
        out["title"] = title
    return out


def load_document_rows(spec: CorpusSpec, *, sample: int | None = None,
                       report: Callable[[str], None] | None = None) -> list[Row]:
    """Chunk every supported file of ``source.path`` into Rows, in path order."""
    src = spec.source
    say = report or (lambda msg: print(msg, file=sys.stderr))
    base, files = discover(src.path)
    if not files:
        raise IngestError(f"source.path: no .md/.txt/.html/.pdf files under {src.path}")
    items: list[tuple[str, ChunkSpec, int, dict[str, Any]]] = []
    for f in files:
        rel = f.relative_to(base).as_posix()
        try:
            try:
                rel.encode("utf-8")  # it becomes the source_uri
            except UnicodeEncodeError:
                rel = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                raise SkipFile("file name is not UTF-8") from None
            text, offset = extract(f)
            fields = document_fields(f, rel, text)
        except (SkipFile, OSError) as e:
            why = str(e) if isinstance(e, SkipFile) else f"cannot read ({e.strerror})"
            if src.on_error == "stop":
                raise IngestError(f"{rel}: {why} (source.on_error = \"stop\")") from None
            say(f"[forge] skipping {rel}: {why}")
            continue
        for i, c in enumerate(chunk(text, rel, chunker=src.chunker, max_chars=src.max_chars,
                                    overlap=src.overlap)):
            items.append((f"{rel}#{i}", c, offset, fields))
    if not items:
        raise IngestError(f"source.path: no usable text in any file under {src.path}")
    if sample is not None and 0 < sample < len(items):
        n = len(items)
        items = [items[int(i * n / sample)] for i in range(sample)]
    return [
        # a UTF-8 BOM is not part of the text, so file spans start after it
        Row(ordinal, key, "", c.canonical_text, c.source_uri, c.byte_start + offset,
            c.byte_end + offset, item_input_hash(c.canonical_text, "", spec.chunker_version),
            fields)
        for ordinal, (key, c, offset, fields) in enumerate(items)
    ]
