"""The ``urna tui`` application: four tabs over one open corpus, driven by keys or mouse.

Work that touches the file or the embedder runs in thread workers and posts its results back,
so the screen never blocks; nothing polls or redraws on a timer while idle.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header, Input, OptionList, TabbedContent, TabPane

from . import backend
from .bars import display_path
from .widgets import AskPane, CorpusPane, FilePicker, HealthPane, HomePane

TABS = ("home", "corpus", "ask", "health")
ASK_K = 10


class UrnaTUI(App[int]):
    """The corpus explorer."""

    TITLE = "urna"
    CSS = """
    .heading { text-style: bold; margin-top: 1; }
    .hint { color: $text-muted; }
    #home-files { height: 1fr; }
    #corpus-checks, #corpus-sections { height: auto; }
    #ask-hits { height: auto; max-height: 45%; }
    #ask-text-box { height: 1fr; border-top: solid $primary; }
    #health-checks { height: auto; }
    #picker { width: 90%; height: 80%; border: round $primary; background: $surface; }
    FilePicker { align: center middle; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "next_tab", "next tab", priority=True, show=False),
        Binding("shift+tab", "previous_tab", "previous tab", priority=True, show=False),
        Binding("q", "quit", "quit"),
        Binding("escape", "escape", "home/quit", show=False),
        Binding("o", "pick", "open…"),
        Binding("ctrl+o", "pick", "open…", show=False, priority=True),
        Binding("r", "rerun_doctor", "re-run"),
        Binding("c", "copy_citation", "copy citation"),
        Binding("ctrl+y", "copy_citation", "copy citation", show=False, priority=True),
        Binding("slash", "focus_question", "ask", show=False),
        *[Binding(str(d), f"digit({d})", show=False) for d in range(1, 10)],
    ]

    def __init__(self, root: Path, file: Path | None = None, question: str | None = None,
                 ask_options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.root = root
        self.files: list[Path] = []
        self.start_file = file
        self.start_question = question
        self.ask_options = dict(ask_options or {})
        self.corpus: Any = None
        self.corpus_path: Path | None = None
        self.hits: list[backend.Hit] = []
        self.doctor_ran = False

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The header, the four tabs (opening on home, corpus or ask) and the footer."""
        yield Header()
        first = "home" if self.start_file is None else "ask" if self.start_question else "corpus"
        with TabbedContent(initial=first, id="tabs"):
            with TabPane("1 home", id="home"):
                yield HomePane()
            with TabPane("2 corpus", id="corpus"):
                yield CorpusPane()
            with TabPane("3 ask", id="ask"):
                yield AskPane()
            with TabPane("4 health", id="health"):
                yield HealthPane()
        yield Footer()

    def on_mount(self) -> None:
        """Find the corpora, then open the file and ask the question given at start."""
        self.files = backend.discover(self.root)
        self.query_one(HomePane).show(self.root, self.files)
        if self.start_file is not None:
            self.open_path(self.start_file, show_tab="ask" if self.start_question else "corpus")
            if self.start_question:
                self.query_one("#ask-input", Input).value = self.start_question
                self.ask(self.start_question)
        self.focus_main(self.active_tab)

    @property
    def active_tab(self) -> str:
        """The id of the tab on screen."""
        return str(self.query_one("#tabs", TabbedContent).active)

    def show_tab(self, tab: str) -> None:
        """Switch to ``tab`` and focus its main widget."""
        self.query_one("#tabs", TabbedContent).active = tab

    def focus_main(self, tab: str) -> None:
        """Focus the main widget of ``tab`` (the hits once a question has answers)."""
        focus = {"home": "#home-files", "corpus": "#corpus-checks",
                 "ask": "#ask-hits" if self.hits else "#ask-input",
                 "health": "#health-checks"}[tab]
        for widget in self.query(focus):  # absent while the tabs are still being built
            widget.focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Focus the active tab's main widget; the doctor runs the first time health shows."""
        tab = str(event.pane.id)
        self.focus_main(tab)
        if tab == "health" and not self.doctor_ran:
            self.run_doctor()

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys act only where they mean something (and not under the file picker)."""
        if len(self.screen_stack) > 1 and action not in ("quit",):
            return False
        tab = self.active_tab
        if action == "rerun_doctor":
            return tab == "health"
        if action == "copy_citation":
            return tab == "ask"
        if action == "focus_question":
            return tab == "ask"
        return True

    def action_next_tab(self) -> None:
        """tab: the next tab, wrapping."""
        self.show_tab(TABS[(TABS.index(self.active_tab) + 1) % len(TABS)])

    def action_previous_tab(self) -> None:
        """shift+tab: the previous tab, wrapping."""
        self.show_tab(TABS[(TABS.index(self.active_tab) - 1) % len(TABS)])

    def action_digit(self, digit: int) -> None:
        """On home a digit opens the n-th file; elsewhere 1..4 switch tabs."""
        if self.active_tab == "home":
            if digit <= len(self.files):
                self.open_path(self.files[digit - 1])
        elif digit <= len(TABS):
            self.show_tab(TABS[digit - 1])

    def action_escape(self) -> None:
        """esc: home from another tab; quit on home."""
        if self.active_tab == "home":
            self.exit(0)
        else:
            self.show_tab("home")

    def action_pick(self) -> None:
        """o / ctrl+o: a file picker rooted at the home folder."""
        self.push_screen(FilePicker(self.root), self._picked)

    def _picked(self, path: Path | None) -> None:
        if path is not None:
            self.open_path(Path(path))

    def action_rerun_doctor(self) -> None:
        """r on health: run the doctor checks again."""
        self.run_doctor()

    def action_copy_citation(self) -> None:
        """c / ctrl+y on ask: copy the selected hit's citation (OSC 52)."""
        hit = self.selected_hit()
        if hit is None:
            self.notify("no hit selected", severity="warning")
            return
        self.copy_to_clipboard(hit.citation_id)
        self.notify(f"copied {hit.citation_id}")

    def action_focus_question(self) -> None:
        """/ on ask: back to the question box."""
        self.query_one("#ask-input", Input).focus()

    # -- home -------------------------------------------------------------------------------

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """enter on a home row opens that file."""
        if event.option.id:
            self.open_path(Path(event.option.id))

    # -- corpus -----------------------------------------------------------------------------

    def open_path(self, path: Path, show_tab: str = "corpus") -> None:
        """Open ``path`` (closing the previous corpus) and run its validate checks."""
        self.close_corpus()
        self.corpus_path = path
        label = display_path(path)
        self.sub_title = label
        pane = self.query_one(CorpusPane)
        pane.start(label, backend.check_count(path))
        try:
            self.corpus = backend.open_corpus(path)
        except Exception as e:  # noqa: BLE001 - a hostile file is shown, never a crash
            pane.show_open_error(label, backend.error_text(e))
        else:
            try:
                pane.show_inspect(label, backend.inspect(self.corpus))
            except Exception as e:  # noqa: BLE001
                pane.show_open_error(label, backend.error_text(e))
        self.hits = []
        ask = self.query_one(AskPane)
        ask.show_hits([])
        ask.show_hit(None)
        ask.show_status(f"asking {label}" if self.corpus is not None
                        else f"{label} did not open; see the corpus tab")
        self.run_checks(path)
        self.show_tab(show_tab)

    @work(thread=True, exclusive=True, group="checks")
    def run_checks(self, path: Path) -> None:
        """Post each validate verdict to the corpus tab as it is found."""
        pane = self.query_one(CorpusPane)
        for verdict in backend.validate_checks(path):
            self.call_from_thread(pane.add_verdict, verdict)

    def close_corpus(self) -> None:
        """Release the open corpus, if any."""
        if self.corpus is not None:
            with contextlib.suppress(Exception):  # closing a broken file must not stop us
                self.corpus.close()
        self.corpus = None

    # -- ask --------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """enter in the question box asks it."""
        if event.input.id == "ask-input":
            self.ask(event.value)

    def ask(self, question: str) -> None:
        """Ask ``question`` of the open corpus in a worker; errors show in place."""
        pane = self.query_one(AskPane)
        if self.corpus is None:
            pane.show_status("[red]no corpus open[/red]: open one on the home tab (or o)")
            return
        pane.show_status("asking…")
        self.answer(self.corpus, question)

    @work(thread=True, exclusive=True, group="ask")
    def answer(self, corpus: Any, question: str) -> None:
        """Run the question as ``urna ask`` does and post the hits (or the error)."""
        try:
            result = backend.ask(corpus, question, ASK_K, **self.ask_options)
        except backend.ask_errors() as e:
            self.call_from_thread(self._show_error, backend.error_text(e))
            return
        except Exception as e:  # noqa: BLE001 - any failure is shown, never a crash
            self.call_from_thread(self._show_error, backend.error_text(e))
            return
        self.call_from_thread(self._show_answer, result)

    def _show_error(self, message: str) -> None:
        pane = self.query_one(AskPane)
        self.hits = []
        pane.show_hits([])
        pane.show_hit(None)
        pane.show_status(f"[red]error[/red] {message}")

    def _show_answer(self, result: backend.Answer) -> None:
        pane = self.query_one(AskPane)
        self.hits = result.hits
        pane.show_hits(result.hits)
        pane.show_status(f"{len(result.hits)} hits, route {result.route}, "
                         f"{result.rerank_source}   c: copy citation  /: new question")
        pane.show_hit(result.hits[0] if result.hits else None)
        if self.active_tab == "ask":
            self.focus_main("ask")

    def selected_hit(self) -> backend.Hit | None:
        """The hit under the cursor of the hits table."""
        table = self.query_one("#ask-hits", DataTable)
        row = table.cursor_row
        return self.hits[row] if 0 <= row < len(self.hits) else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Moving through the hits shows each one's cited text."""
        if event.data_table.id == "ask-hits":
            self.query_one(AskPane).show_hit(self.selected_hit())

    # -- health -----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="doctor")
    def run_doctor(self) -> None:
        """Run the doctor checks and post them to the health tab."""
        self.doctor_ran = True
        try:
            checks, code = backend.doctor()
        except Exception as e:  # noqa: BLE001 - the doctor itself failing is a verdict
            checks, code = [{"status": "fail", "what": "doctor", "detail":
                             backend.error_text(e), "code": 1}], 1
        self.call_from_thread(self.query_one(HealthPane).show, checks, code)

    def on_unmount(self) -> None:
        """Close the open corpus."""
        self.close_corpus()


def run_tui(target: Path | None, question: str | None = None,
            ask_options: dict[str, Any] | None = None) -> int:
    """Run the TUI on a folder or file (``None``: the working directory); returns the exit code."""
    if target is None:
        root, file = Path.cwd(), None
    elif target.is_dir():
        root, file = target, None
    else:
        root, file = target.parent, target
    app = UrnaTUI(root, file, question, ask_options)
    code = app.run()
    return int(code or 0)
