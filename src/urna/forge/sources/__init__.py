"""Where a corpus's items come from: table rows (``rows``: jsonl, csv, sqlite), a folder of
documents (``documents``, cut by the ``chunk`` chunkers), each item a ``item.Row``.

``load_rows`` picks the loader by ``source.kind``; the documents loader (and with it pypdf)
is imported only for a ``documents`` source, whose rows (a ``documents.LoadedRows``) also
carry the skipped files (``source_report`` gives them to the build report).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from urna.errors import IngestError
from urna.forge.sources.item import Row, corpus_input_hash, item_input_hash
from urna.forge.spec import CorpusSpec

__all__ = ["Row", "corpus_input_hash", "check_sources", "item_input_hash", "load_rows",
           "source_report"]


def load_rows(spec: CorpusSpec, *, sample: int | None = None,
              report: Callable[[str], None] | None = None) -> list[Row]:
    """All items of a spec's source, whatever its kind."""
    if spec.source.kind == "documents":
        from urna.forge.sources.documents import load_document_rows

        return load_document_rows(spec, sample=sample, report=report)
    from urna.forge.sources.rows import load_records, rows_to_items

    return rows_to_items(spec, load_records(spec), sample=sample)


def source_report(rows: list[Row]) -> dict[str, object] | None:
    """The build report's ``documents`` entry (files read, skipped and why), None for tables."""
    report = getattr(rows, "report", None)
    return report() if callable(report) else None


def _check_readable(key: str, path: str) -> None:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as e:
        raise IngestError(f"{key}: cannot read {path}: {e.strerror}") from e


def check_sources(spec: CorpusSpec) -> None:
    """IngestError naming the path when a source file (or folder) is missing or unreadable."""
    src = spec.source
    if src.kind in ("jsonl", "csv"):
        _check_readable("source.path", src.path)
    elif src.kind == "sqlite":
        if not Path(src.db).is_file():
            raise IngestError(f"source.db: no such file {src.db}")
        _check_readable("source.db", src.db)
    elif src.kind == "documents":
        from urna.forge.sources.documents import scan

        if not scan(src.path, src.include, src.exclude).files:
            raise IngestError(f"source.path: no .md/.txt/.html/.pdf files under {src.path}")
