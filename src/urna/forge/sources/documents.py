"""The ``documents`` source kind (ours, beyond the reference): a folder or glob of files.

What a span means, per file type:

- ``.md``, ``.markdown``, ``.txt`` and files without a suffix that decode as text: the exact
  bytes of the file (after a UTF-8 BOM), in whatever ``source.encoding`` (or
  ``encoding_fallback``) read it;
- ``.html`` / ``.htm`` (extracted with the standard library's ``html.parser``): the bytes of
  the file from the chunk's first text byte to its last, markup included in between;
- ``.pdf`` (pypdf, the ``pdf`` extra): each page is its own source ``<file>#page=<n>`` and
  spans are bytes of that page's extracted UTF-8 text.

Files are chosen by ``source.include`` / ``source.exclude`` globs (matched against the path
relative to the folder); hidden files and folders are never read. A file that cannot be used
(another type, not decodable, empty, no text, a broken PDF, pypdf missing) is reported by name
and skipped, and the skips are counted in ``LoadedRows.skipped``; with ``on_error = "stop"``
the build stops on it with an ``IngestError`` naming the file. Never a traceback.
"""

from __future__ import annotations

import fnmatch
import glob
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urna.errors import IngestError
from urna.forge.sources.chunk import chunk_ranges
from urna.forge.sources.item import Row, item_input_hash
from urna.forge.sources.text import SkipFile, SourceMap, decode, looks_binary
from urna.forge.spec import CorpusSpec, SourceSpec

__all__ = ["SkipFile", "LoadedRows", "Scan", "discover", "scan", "extract",
           "load_document_rows", "skip_summary"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES


@dataclass
class Scan:
    """A documents path walked: its base folder, the files to read, the files passed over."""

    base: Path
    files: list[Path]
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)


def _matches(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(Path(rel).name, p)
               for p in patterns)


def scan(path: str, include: list[str] | None = None,
         exclude: list[str] | None = None) -> Scan:
    """Walk a folder, a file or a glob; keep supported (or suffix-less) files that pass the globs.

    A pattern matches the path relative to the base folder or the file's name; with
    ``include`` only matching files are read; ``exclude`` wins over ``include``.
    """
    p = Path(path)
    if p.is_dir():
        base = p
        found = [f for f in p.rglob("*") if f.is_file()]
    elif p.is_file():
        base = p.parent
        found = [p]
    else:
        matches = [Path(m) for m in glob.glob(path, recursive=True)]
        if not matches and not glob.has_magic(path):
            raise IngestError(f"source.path: no such file or folder: {path}")
        magic_at = next((i for i, part in enumerate(p.parts) if glob.has_magic(part)),
                        len(p.parts))
        base = Path(*p.parts[:magic_at]) if magic_at else Path(".")
        found = [m for m in matches if m.is_file()]
    out = Scan(base, [])
    for f in sorted(found, key=lambda f: f.relative_to(base).as_posix()):
        rel = f.relative_to(base).as_posix()
        if any(part.startswith(".") for part in f.relative_to(base).parts):
            continue  # hidden: never read, never counted
        if exclude and _matches(rel, exclude):
            out.ignored.append((rel, "excluded by source.exclude"))
        elif include and not _matches(rel, include):
            out.ignored.append((rel, "not matched by source.include"))
        elif f.suffix.lower() in SUFFIXES or not f.suffix:
            out.files.append(f)
        else:
            out.ignored.append((rel, f"unsupported file type ({f.suffix.lower()})"))
    return out


def discover(path: str) -> tuple[Path, list[Path]]:
    """Return (base dir, sorted readable files) for a folder or a glob pattern."""
    found = scan(path)
    return found.base, found.files


@dataclass(frozen=True)
class Extracted:
    """One source of a file: its URI, its text and where each character came from."""

    source_uri: str
    text: str
    source_map: SourceMap
    note: str = ""  # e.g. "read as cp1252 (source.encoding_fallback)"


def extract(path: Path, rel: str, src: SourceSpec) -> list[Extracted]:
    """The sources of one file (a PDF gives one per page); SkipFile says why there are none."""
    suffix = path.suffix.lower()
    if path.stat().st_size == 0:
        raise SkipFile("empty file")
    if suffix in PDF_SUFFIXES:
        from urna.forge.sources.pdf import page_uri, pdf_pages

        out = []
        for n, page in pdf_pages(path):
            out.append(Extracted(page_uri(rel, n), page, SourceMap.identity(page, "utf-8")))
    else:
        data = path.read_bytes()
        if not suffix and looks_binary(data):
            raise SkipFile("no suffix and not text (a NUL byte)")
        decoded = decode(data, src.encoding, src.encoding_fallback)
        note = (f"read as {decoded.encoding} (source.encoding_fallback)" if decoded.fallback
                else "")
        base = SourceMap.identity(decoded.text, decoded.encoding, decoded.offset)
        if suffix in HTML_SUFFIXES:
            from urna.forge.sources.html import extract_html

            offsets = base.starts
            offsets.append(base.ends[-1] if len(base.ends) else decoded.offset)
            text, source_map = extract_html(decoded.text, offsets)
            out = [Extracted(rel, text, source_map, note)]
        else:
            out = [Extracted(rel, decoded.text, base, note)]
    out = [e for e in out if e.text.strip()]
    if not out:
        raise SkipFile("no text")
    return out


class LoadedRows(list[Row]):
    """The rows of a documents source, plus which files were skipped and why."""

    skipped: list[tuple[str, str]]
    notes: list[tuple[str, str]]
    n_files: int

    def report(self) -> dict[str, Any]:
        """The build report's ``documents`` entry: files read, skipped (by reason), notes."""
        return {"files_read": self.n_files,
                "skipped": len(self.skipped),
                "skipped_by_reason": dict(Counter(_reason_kind(w) for _, w in self.skipped)),
                "skipped_files": [{"path": p, "reason": w} for p, w in self.skipped],
                "decoded_with_fallback": [{"path": p, "note": n} for p, n in self.notes]}


def _reason_kind(why: str) -> str:
    return why.split(" (")[0].split(";")[0]


def skip_summary(rows: LoadedRows) -> str:
    """The one stderr line counting the files read and skipped, by reason."""
    counts = Counter(_reason_kind(w) for _, w in rows.skipped)
    why = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    n = rows.n_files
    return (f"[forge] read {n} file{'' if n == 1 else 's'}, skipped {len(rows.skipped)}"
            + (f": {why}" if why else ""))


DOCUMENT_METADATA_TYPES = {"path": "string", "folder": "string", "extension": "string",
                           "title": "string", "modified": "timestamp"}
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _title(path: Path, text: str) -> str | None:
    """The document's title: HTML <title> (else its first h1-h6), Markdown's first heading."""
    suffix = path.suffix.lower()
    if suffix in HTML_SUFFIXES:
        from urna.forge.sources.html import html_title

        return html_title(path.read_bytes().decode("utf-8", "replace"))
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
                       report: Callable[[str], None] | None = None) -> LoadedRows:
    """Chunk every readable file of ``source.path`` into Rows, in path order."""
    src = spec.source
    say = report or (lambda msg: print(msg, file=sys.stderr))
    found = scan(src.path, src.include, src.exclude)
    if not found.files:
        raise IngestError(f"source.path: no .md/.txt/.html/.pdf files under {src.path}")
    skipped: list[tuple[str, str]] = list(found.ignored)  # passed over, never an error
    notes: list[tuple[str, str]] = []
    # key, text, byte start, byte end, the document's metadata fields
    items: list[tuple[str, str, int, int, dict[str, Any]]] = []
    uris: list[str] = []  # the source_uri of each item
    n_read = 0
    for f in found.files:
        rel = f.relative_to(found.base).as_posix()
        try:
            try:
                rel.encode("utf-8")  # it becomes the source_uri
            except UnicodeEncodeError:
                rel = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                raise SkipFile("file name is not UTF-8") from None
            sources = extract(f, rel, src)
            fields = document_fields(f, rel, sources[0].text if sources else "")
        except (SkipFile, OSError) as e:
            why = str(e) if isinstance(e, SkipFile) else f"cannot read ({e.strerror})"
            if src.on_error == "stop":
                raise IngestError(f"{rel}: {why} (source.on_error = \"stop\")") from None
            say(f"[forge] skipping {rel}: {why}")
            skipped.append((rel, why))
            continue
        n_read += 1
        for s in sources:
            if s.note:
                say(f"[forge] {rel}: {s.note}")
                notes.append((rel, s.note))
            ranges = chunk_ranges(s.text, chunker=src.chunker, max_chars=src.max_chars,
                                  overlap=src.overlap, word_boundaries=src.word_boundaries)
            for i, (a, b) in enumerate(ranges):
                start, end = s.source_map.span(a, b)
                items.append((f"{s.source_uri}#{i}", s.text[a:b], start, end, fields))
                uris.append(s.source_uri)
    rows = LoadedRows()
    rows.skipped, rows.notes, rows.n_files = skipped, notes, n_read
    if skipped:
        say(skip_summary(rows))
    if not items:
        raise IngestError(f"source.path: no usable text in any file under {src.path}")
    order = list(range(len(items)))
    if sample is not None and 0 < sample < len(items):
        n = len(items)
        order = [int(i * n / sample) for i in range(sample)]
    for ordinal, idx in enumerate(order):
        key, text, start, end, fields = items[idx]
        rows.append(Row(ordinal, key, "", text, uris[idx], start, end,
                        item_input_hash(text, "", spec.chunker_version), fields))
    return rows
