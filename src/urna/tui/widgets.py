"""The four tab panes of ``urna tui`` and the file picker; they draw, the app drives them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, DirectoryTree, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from . import backend
from .bars import bar, display_path, human_size, masked

STATUS_STYLE = {"ok": "bold green", "fail": "bold red", "warn": "bold yellow", "skip": "dim",
                "…": "dim"}


def status_cell(status: str) -> Text:
    """A verdict word, coloured (textual drops the colour under NO_COLOR)."""
    return Text(status, style=STATUS_STYLE.get(status, ""))


class HomePane(Vertical):
    """The .urna files and catalogs of a folder and one level below."""

    def compose(self) -> ComposeResult:
        """The title line, the list of corpora found and the key hint."""
        yield Label("", id="home-title")
        yield OptionList(id="home-files")
        yield Static("1..9 or arrows + enter: open   o: pick a file   q: quit", classes="hint")

    def show(self, root: Path, files: list[Path]) -> None:
        """List ``files`` found under ``root``."""
        self.query_one("#home-title", Label).update(
            f"Corpora in {display_path(root)} and one level below: {len(files)}")
        options = self.query_one("#home-files", OptionList)
        options.clear_options()
        for i, p in enumerate(files):
            number = f"{i + 1}" if i < 9 else " "
            size = human_size(p.stat().st_size) if p.exists() else "?"
            options.add_option(Option(f"{number}  {display_path(p, root)}  ({size})", id=str(p)))
        if not files:
            options.add_option(Option("(no .urna file or catalog here; o opens a picker)",
                                      disabled=True))
        else:
            options.highlighted = 0


class CorpusPane(VerticalScroll):
    """Manifest, a verdict per validate check as it ends, section table with size bars, hashes."""

    def compose(self) -> ComposeResult:
        """The manifest, the validate checks (progress, table), the sections and the hashes."""
        yield Static("No corpus open: pick one on the home tab.", id="corpus-manifest")
        yield Label("Validate checks", classes="heading")
        yield ProgressBar(id="corpus-progress", show_eta=False)
        yield DataTable(id="corpus-checks", cursor_type="row", zebra_stripes=False)
        yield Label("Sections", classes="heading")
        yield DataTable(id="corpus-sections", cursor_type="row")
        yield Static("", id="corpus-hashes")

    def on_mount(self) -> None:
        """Give the check and section tables their columns."""
        checks = self.query_one("#corpus-checks", DataTable)
        checks.add_columns("check", "verdict", "detail")
        sections = self.query_one("#corpus-sections", DataTable)
        sections.add_columns("id", "name", "encoding", "size", "")

    def start(self, label: str, total: int) -> None:
        """Clear the pane for a new file whose checks are about to run."""
        self.query_one("#corpus-manifest", Static).update(f"{label}: opening…")
        self.query_one("#corpus-checks", DataTable).clear()
        self.query_one("#corpus-sections", DataTable).clear()
        self.query_one("#corpus-hashes", Static).update("")
        self.query_one("#corpus-progress", ProgressBar).update(total=total, progress=0)

    def add_verdict(self, verdict: backend.CheckVerdict) -> None:
        """Show one check's verdict as soon as it is known."""
        self.query_one("#corpus-checks", DataTable).add_row(
            verdict.name, status_cell(verdict.status), verdict.detail)
        progress = self.query_one("#corpus-progress", ProgressBar)
        if verdict.status == "fail":  # the checks stop here: what follows is skipped
            progress.update(progress=progress.total or 0)
        else:
            progress.advance(1)

    def show_inspect(self, label: str, info: dict[str, Any]) -> None:
        """Manifest, sections and hashes of an opened file or catalog."""
        m = info.get("manifest", {})
        caps = [k.removeprefix("supports_") for k, v in (m.get("capabilities") or {}).items() if v]
        caps += [k.removesuffix("_present") for k, v in (m.get("capabilities_ext") or {}).items()
                 if v is True]
        chunks = m.get("n_chunks", "?")
        lines = [f"[b]{label}[/b]",
                 f"model  {m.get('embedding_model', '?')}",
                 f"dim    {m.get('embedding_dim', '?')}   dtype {m.get('dtype', '?')}   "
                 f"chunks {chunks}",
                 f"caps   {', '.join(caps) or '-'}"]
        self.query_one("#corpus-manifest", Static).update("\n".join(lines))
        sections = self.query_one("#corpus-sections", DataTable)
        entries = info.get("sections") or []
        largest = max((int(e["size"]) for e in entries), default=1) or 1
        for e in entries:
            sections.add_row(f"0x{int(e['section_id']):02x}", str(e.get("name") or "?"),
                             backend.encoding_name(int(e["encoding"])), human_size(int(e["size"])),
                             bar(int(e["size"]) / largest, 16))
        if "shards" in info:
            hashes = [f"catalog_hash {info['catalog'].get('catalog_hash', '?')}"]
            hashes += [f"shard {s['file']}: content {s['content_hash']}" for s in info["shards"]]
        else:
            hashes = [f"model_hash   {m.get('model_hash', '?')}",
                      f"file_hash    {info.get('file_hash', '?')}",
                      f"content_hash {info.get('content_hash', '?')}"]
        self.query_one("#corpus-hashes", Static).update("\n".join(hashes))

    def show_open_error(self, label: str, message: str) -> None:
        """The file did not open: say why (the checks below show which one failed)."""
        self.query_one("#corpus-manifest", Static).update(
            f"[b]{label}[/b]\n[red]cannot open:[/red] {message}")


class AskPane(Vertical):
    """A question box, the hits with score bars, and the cited text of the selected hit."""

    def compose(self) -> ComposeResult:
        """The question input, a status line, the hits table and the cited text."""
        question = Input(placeholder="Ask a question and press enter", id="ask-input")
        question.cursor_blink = False  # a blinking cursor would redraw twice a second when idle
        yield question
        yield Static("", id="ask-status")
        yield DataTable(id="ask-hits", cursor_type="row")
        yield VerticalScroll(Static("", id="ask-text"), id="ask-text-box")

    def on_mount(self) -> None:
        """Give the hits table its columns."""
        self.query_one("#ask-hits", DataTable).add_columns("#", "score", "", "source", "span")

    def show_status(self, message: str) -> None:
        """A one-line status or error under the question box."""
        self.query_one("#ask-status", Static).update(message)

    def show_hits(self, hits: Iterable[backend.Hit]) -> None:
        """Fill the hits table (best first)."""
        table = self.query_one("#ask-hits", DataTable)
        table.clear()
        for i, h in enumerate(hits):
            table.add_row(str(i + 1), f"{h.score:.4f}", bar(h.score, 10), h.source_uri,
                          f"{h.offset_start}..{h.offset_end}")

    def show_hit(self, hit: backend.Hit | None) -> None:
        """The cited text and citation of the selected hit."""
        box = self.query_one("#ask-text", Static)
        if hit is None:
            box.update("")
            return
        body = Text(hit.text)
        body.append(f"\n\n{hit.citation_id}", style="bold")
        body.append(f"  ({hit.source_uri} {hit.offset_start}..{hit.offset_end})", style="dim")
        box.update(body)


class HealthPane(Vertical):
    """The ``urna doctor`` checks; ``r`` re-runs them."""

    def compose(self) -> ComposeResult:
        """The doctor checks table and its summary line."""
        yield Label("urna doctor checks   r: re-run", classes="heading")
        yield DataTable(id="health-checks", cursor_type="row")
        yield Static("", id="health-summary")

    def on_mount(self) -> None:
        """Give the checks table its columns."""
        self.query_one("#health-checks", DataTable).add_columns("check", "verdict", "detail")

    def show(self, checks: list[dict[str, Any]], code: int) -> None:
        """Draw the doctor checks and the exit code they add up to."""
        table = self.query_one("#health-checks", DataTable)
        table.clear()
        home = backend.package_dir()
        for c in checks:
            table.add_row(str(c["what"]), status_cell(str(c["status"])),
                          masked(str(c["detail"]), home))
        summary = "ready: every required check passed" if code == 0 else (
            f"[red]doctor exit code {code}[/red]: fix the failed check above")
        self.query_one("#health-summary", Static).update(summary)


class CorpusTree(DirectoryTree):
    """A directory tree showing only folders, .urna files and catalogs."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        """Hide dot-entries and files the TUI cannot open."""
        return [p for p in paths if not p.name.startswith(".")
                and (p.is_dir() or backend.is_corpus_path(p))]


class FilePicker(ModalScreen[Path | None]):
    """Pick a .urna file or catalog from a tree; esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def compose(self) -> ComposeResult:
        """The folder tree to pick a file from."""
        with Vertical(id="picker"):
            yield Label("Open a .urna file or catalog (enter opens, esc cancels)")
            yield CorpusTree(self.root, id="picker-tree")

    def on_directory_tree_file_selected(self, event: DirectoryTree.FileSelected) -> None:
        """A file was chosen: hand it back to the app."""
        event.stop()
        self.dismiss(event.path)

    def action_cancel(self) -> None:
        """Close without opening anything."""
        self.dismiss(None)
