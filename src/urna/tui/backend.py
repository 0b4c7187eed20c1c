"""The one door from the terminal UI to the library: open, check, inspect, ask, doctor.

Every call the TUI makes into urna goes through here, so a renamed library function is a
one-line change in this module. Nothing here imports textual.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urna.errors import UrnaError
from urna.runtime.searcher import Searcher, open_searcher

CATALOG_SUFFIX = ".catalog.json"
MAX_LISTED = 200  # home lists at most this many files (a huge folder must not stall it)


@dataclass(frozen=True)
class CheckVerdict:
    """One validate check: its name, ``ok`` / ``fail`` / ``skip`` and what it found."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class Hit:
    """One answer of ``ask``: score, where it comes from, its text and citation."""

    score: float
    source_uri: str
    offset_start: int
    offset_end: int
    text: str
    citation_id: str


@dataclass(frozen=True)
class Answer:
    """The hits of one question and the route that found them."""

    hits: list[Hit]
    route: str
    rerank_source: str


def error_text(exc: BaseException) -> str:
    """The one line a user sees for an error: its class, then its message."""
    return f"{type(exc).__name__}: {exc}"


def is_corpus_path(path: Path) -> bool:
    """Whether ``path`` names something the TUI can open (.urna or *.catalog.json)."""
    return path.name.endswith(".urna") or path.name.endswith(CATALOG_SUFFIX)


def discover(root: Path) -> list[Path]:
    """The .urna files and catalogs in ``root`` and one level below, sorted, bounded."""
    found: list[Path] = []
    try:
        top = sorted(root.iterdir())
    except OSError:
        return []
    subdirs = []
    for p in top:
        if p.is_file() and is_corpus_path(p):
            found.append(p)
        elif p.is_dir() and not p.name.startswith("."):
            subdirs.append(p)
    for d in subdirs:
        try:
            found += sorted(p for p in d.iterdir() if p.is_file() and is_corpus_path(p))
        except OSError:
            continue
        if len(found) >= MAX_LISTED:
            break
    return found[:MAX_LISTED]


def open_corpus(path: str | os.PathLike) -> Searcher:
    """Open a .urna file or a shard catalog (by its suffix)."""
    return open_searcher(path)


def inspect(corpus: Any) -> dict[str, Any]:
    """What ``urna inspect`` shows: header fields, sections, manifest, hashes."""
    return dict(corpus.inspect())


def encoding_name(encoding: int) -> str:
    """The spec's name of a section encoding (``#n`` when unknown)."""
    from urna.format.layout import ENCODING_NAMES

    return str(ENCODING_NAMES.get(encoding, f"#{encoding}"))


def _file_checks(path: Path, prefix: str = "") -> Iterator[CheckVerdict]:
    """The ``urna validate`` checks of one file, one verdict each; stops at the first failure."""
    from urna.format import verify as v
    from urna.format.layout import (
        SECTION_CHUNK_IDS,
        SECTION_CHUNKS_CANONICAL,
        SECTION_CHUNKS_ORIGINAL_SPANS,
    )
    from urna.format.reader import UrnaView
    from urna.format.sections.canonical import decode_chunk_ids, decode_spans, decode_texts

    state: dict[str, Any] = {}

    def container() -> str:
        data = path.read_bytes()
        state["view"] = UrnaView.from_bytes(data)
        view = state["view"]
        return f"{len(data)} bytes, {len(view.entries)} sections, checksums and footer hash match"

    def values() -> str:
        state["view"].validate_embeddings_values()
        return "no NaN or Inf"

    def contract() -> str:
        return f"{len(state['view'].search_contract())} keys"

    def chunk_ids() -> str:
        view = state["view"]
        decode_chunk_ids(view.decoded(SECTION_CHUNK_IDS), view.header.n_embeddings)
        return f"{view.header.n_embeddings} ids"

    def spans() -> str:
        view = state["view"]
        decode_spans(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), view.header.n_embeddings)
        return f"{view.header.n_embeddings} spans"

    def texts() -> str:
        view = state["view"]
        decode_texts(view.decoded(SECTION_CHUNKS_CANONICAL), view.header.n_chunks)
        return f"{view.header.n_chunks} texts"

    def content() -> str:
        return state["view"].content_hash()

    def blobs() -> str:
        n = v.verify_blobs(state["view"])
        return "no inlined blobs" if n is None else f"{n} blobs match their sha256"

    steps: list[tuple[str, Callable[[], str]]] = [
        ("container", container), ("embedding values", values), ("search contract", contract),
        ("chunk ids", chunk_ids), ("spans", spans), ("canonical texts", texts),
        ("content hash", content), ("inlined blobs", blobs)]
    failed = False
    for name, step in steps:
        if failed:
            yield CheckVerdict(prefix + name, "skip", "not run: an earlier check failed")
            continue
        try:
            yield CheckVerdict(prefix + name, "ok", step())
        except (UrnaError, OSError) as e:
            failed = True
            yield CheckVerdict(prefix + name, "fail", error_text(e))
    view = state.get("view")
    if view is not None:
        view.release()


CHECKS_PER_FILE = 8  # the steps of _file_checks, for a progress bar's total


def validate_checks(path: str | os.PathLike) -> Iterator[CheckVerdict]:
    """Run the validate checks of a file (or of a catalog and each shard), yielding verdicts."""
    p = Path(path)
    if not p.name.endswith(CATALOG_SUFFIX):
        yield from _file_checks(p)
        return
    from urna.runtime.catalog import read_catalog

    try:
        doc = read_catalog(p)
    except (UrnaError, OSError) as e:
        yield CheckVerdict("catalog document", "fail", error_text(e))
        return
    yield CheckVerdict("catalog document", "ok", f"{len(doc['shards'])} shards, hash matches")
    for i, entry in enumerate(doc["shards"]):
        yield from _file_checks(p.parent / entry["file"], prefix=f"shard {i}: ")


def check_count(path: str | os.PathLike) -> int:
    """How many verdicts ``validate_checks`` will yield (for a progress total)."""
    p = Path(path)
    if not p.name.endswith(CATALOG_SUFFIX):
        return CHECKS_PER_FILE
    from urna.runtime.catalog import read_catalog

    try:
        return 1 + CHECKS_PER_FILE * len(read_catalog(p)["shards"])
    except (UrnaError, OSError):
        return 1


def ask(corpus: Any, text: str, k: int = 10, **options: Any) -> Answer:
    """Ask a question exactly as ``urna ask`` does (same embedder, same model_hash gate).

    ``options`` pass straight to the library's query call (candidates, model_path and the
    ranking / filter options as they land: rank=, where=).
    """
    from urna.forge.query import ask as ask_text

    res = ask_text(corpus, text, k, reuse_embedder=True, **options)
    hits = [Hit(float(h.score), str(h.source_uri), int(h.offset_start), int(h.offset_end),
                str(h.text), str(h.citation_id)) for h in res.hits]
    return Answer(hits, res.route, res.disclosure)


def ask_errors() -> tuple[type[BaseException], ...]:
    """The errors a question can raise that the ask tab shows in place."""
    return (UrnaError, OSError)


def doctor() -> tuple[list[dict[str, Any]], int]:
    """The ``urna doctor`` checks: (checks with status/what/detail/code, exit code)."""
    from urna.forge.doctor import run_checks

    return run_checks()


def package_dir() -> str:
    """Where the urna package lives (shown as ``<urna>`` so screens do not leak paths)."""
    return str(Path(__file__).resolve().parents[1])
