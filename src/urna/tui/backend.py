"""The one door from the terminal UI to the library: open, check, inspect, ask, doctor.

Every call the TUI makes into urna goes through here, so a renamed library function is a
one-line change in this module. Nothing here imports textual.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urna.errors import UrnaError
from urna.format.verify import NOT_RUN
from urna.runtime.searcher import Searcher, open_searcher
from urna.runtime.validation import VALIDATE_STEPS

from .bars import human_size

if TYPE_CHECKING:
    from urna.format.reader import CheckSteps

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


# The validate checks that follow the open's own steps, in order: the one list's names.
LATER_CHECKS = tuple(step.name for step in VALIDATE_STEPS)
# What a passed open step without a count established.
STEP_DETAILS = {
    "magic": "URNA (or NEST, 0.4.0)", "version": "1.0", "header checksum": "matches",
    "file size": "matches the header", "manifest JSON": "parses", "manifest fields": "valid",
    "manifest agrees with header": "embedding_dim and n_chunks", "required sections":
    "0x01..0x06 present", "embeddings layout": "dtype, encoding and size agree",
    "space bands": "each band's size matches its table", "contract agrees with manifest":
    "metric, score, normalize, index, rerank"}
_HEADER_STEPS = 6  # open steps 1-6, before the table's per-section steps


def open_step_verdicts(steps: CheckSteps, prefix: str = "") -> Iterator[CheckVerdict]:
    """One verdict per open check of ``steps`` (``UrnaView.check_steps(...)``), as each ends.

    A section checksum's detail says how many bytes of the table's sections are hashed so far.
    """
    hashed = 0
    for step in steps:
        if not step.ok:
            yield CheckVerdict(prefix + step.name, "fail", error_text(step.error or UrnaError()))
            return
        if step.check == "section checksum":
            hashed += step.nbytes
            detail = (f"{human_size(step.nbytes)}; {human_size(hashed)} of "
                      f"{human_size(steps.checksum_bytes or 0)} hashed")
        elif step.section_id is not None:
            detail = f"{section_label(step.section_id)}: encoding, alignment, bounds"
        elif step.check in ("file length", "footer hash", "manifest bounds"):
            detail = f"{human_size(step.nbytes)} ({step.nbytes} bytes)"
        elif step.check == "section table bounds":
            detail = f"{step.nbytes // 32} entries inside the body"
        else:
            detail = step.note or STEP_DETAILS.get(step.check, "")
        yield CheckVerdict(prefix + step.name, "ok", detail)


def section_label(section_id: int) -> str:
    """The spec's name of a section id (``unknown`` for an id it does not list)."""
    from urna.format.layout import section_name

    return section_name(section_id) or "unknown"


def _file_checks(path: Path, prefix: str = "") -> Iterator[CheckVerdict]:
    """The ``urna validate`` checks of one file, one verdict each, as each ends.

    The open's checks come one by one (magic, version, ..., each section's checksum, footer
    hash, ..., search contract), then a row per step of ``runtime.validation.VALIDATE_STEPS``.
    A failure skips the later rows, bar those of checks the open makes (``format.verify.Checks``:
    their error would be the outcome).
    """
    from urna.format.reader import UrnaView
    from urna.format.verify import Checks

    try:
        data = path.read_bytes()
    except OSError as e:
        yield CheckVerdict(prefix + "read file", "fail", error_text(e))
        yield from _skipped(prefix, LATER_CHECKS)
        return
    steps = UrnaView.check_steps(data)
    yield from open_step_verdicts(steps, prefix)
    view = steps.view
    if view is None:
        yield from _skipped(prefix, LATER_CHECKS)
        return
    rows = iter(Checks(view, VALIDATE_STEPS))
    try:
        for row in rows:
            detail = row.detail if row.error is None else error_text(row.error)
            yield CheckVerdict(prefix + row.name, row.status, detail)
    finally:
        rows.close()  # waits for the work started ahead: no worker reads the view released here
        view.release()


def _skipped(prefix: str, names: Iterable[str]) -> Iterator[CheckVerdict]:
    for name in names:
        yield CheckVerdict(prefix + name, "skip", NOT_RUN)


def file_check_count(path: Path) -> int:
    """How many verdicts ``_file_checks`` yields when every check passes (read from the header).

    A header too short or a table out of the file counts no sections: that file fails early.
    """
    from urna.format.layout import (
        URNA_FOOTER_SIZE,
        URNA_HEADER_SIZE,
        URNA_SECTION_ENTRY_SIZE,
        Header,
    )

    try:
        with path.open("rb") as fh:
            head = fh.read(URNA_HEADER_SIZE)
        size = path.stat().st_size
    except OSError:
        return 1 + len(LATER_CHECKS)
    count = 0
    if len(head) == URNA_HEADER_SIZE and size >= URNA_HEADER_SIZE + URNA_FOOTER_SIZE:
        header = Header.unpack(memoryview(head))
        end = header.section_table_offset + header.section_table_count * URNA_SECTION_ENTRY_SIZE
        if end <= size - URNA_FOOTER_SIZE:
            count = header.section_table_count
    return _HEADER_STEPS + 2 * count + 9 + len(LATER_CHECKS)


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
    """How many verdicts ``validate_checks`` yields when all pass (a progress bar's total)."""
    p = Path(path)
    if not p.name.endswith(CATALOG_SUFFIX):
        return file_check_count(p)
    from urna.runtime.catalog import read_catalog

    try:
        shards = read_catalog(p)["shards"]
    except (UrnaError, OSError):
        return 1
    return 1 + sum(file_check_count(p.parent / entry["file"]) for entry in shards)


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
