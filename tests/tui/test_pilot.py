"""Drive every tab and key of `urna tui` with the pilot, on the quickstart and hostile files."""

from __future__ import annotations

import subprocess
import sys

import pytest
from rich.text import Text
from textual.widgets import DataTable, Input, OptionList, Static
from tui_support import EXPECTED, ROOT, Explore

from urna.tui.app import UrnaTUI
from urna.tui.bars import human_size

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

QUESTION = "can I use this offline"

# The open's checks (01-container §10.1) around the per-section ones, then validate's own.
HEAD = ["file length", "magic", "version", "header checksum", "file size",
        "section table bounds"]
TAIL = ["manifest bounds", "manifest JSON", "manifest fields", "footer hash",
        "manifest agrees with header", "required sections", "embeddings layout", "space bands",
        "contract agrees with manifest"]
LATER = ["embedding values", "search contract", "chunk ids", "spans", "canonical texts",
         "indexes", "content hash", "inlined blobs"]


def sections_ids(info: dict) -> list[int]:
    """The section ids of ``urna inspect``, in table order."""
    return [int(s["section_id"]) for s in info["sections"]]


def open_check_names(info: dict) -> list[str]:
    """The row names of the open's checks for a file whose table ``info`` lists."""
    middle = []
    for sid in sections_ids(info):
        middle += [f"section entry 0x{sid:02x}", f"section checksum 0x{sid:02x}"]
    return HEAD + middle + TAIL


def cli_ask_top(path, question: str) -> tuple[str, str]:
    """The top hit's (citation, source) as the real ``urna ask`` prints it."""
    res = subprocess.run([sys.executable, "-c", "from urna.cli import main; main()", "ask",
                          str(path), question, "-k", "1"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("  -- "))
    citation, source = line.removeprefix("  -- ").split(" (", 1)
    return citation, source.removesuffix(")")


def table_rows(app: UrnaTUI, selector: str) -> list[list[str]]:
    """Every row of a DataTable as plain strings."""
    table = app.query_one(selector, DataTable)
    return [[str(c.plain if isinstance(c, Text) else c) for c in table.get_row_at(i)]
            for i in range(table.row_count)]


def static_text(app: UrnaTUI, selector: str) -> str:
    """What a Static shows, as plain text."""
    content = app.query_one(selector, Static).render()
    return content.plain if isinstance(content, Text) else str(content)


async def settle(pilot) -> None:
    """Wait for the workers (checks, questions, doctor) and the redraw they cause."""
    for _ in range(3):  # a key may start a worker only once its message is handled
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_home_lists_corpora_one_level_deep_and_opens_by_digit(explore: Explore) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.active_tab == "home"
        # the folder's own files first, then one level below; two levels below is not listed
        assert app.files == [explore.quickstart, explore.flipped, explore.ref_case]
        options = app.query_one("#home-files", OptionList)
        assert str(options.get_option_at_index(1).prompt).startswith("2  broken/flipped.urna")
        await pilot.press("2")
        await settle(pilot)
        assert app.corpus_path == explore.flipped
        await pilot.press("escape", "1")
        await settle(pilot)
        assert app.active_tab == "corpus" and app.corpus_path == explore.quickstart


async def test_home_arrows_and_enter_open(explore: Explore) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "up", "enter")
        await settle(pilot)
        assert app.corpus_path == explore.flipped


async def test_corpus_tab_shows_manifest_every_check_sections_and_hashes(explore: Explore) -> None:
    app = UrnaTUI(explore.root, explore.quickstart)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.active_tab == "corpus"
        manifest = static_text(app, "#corpus-manifest")
        assert "minishlab/potion-base-8M/v1" in manifest and "chunks 12" in manifest
        assert "dtype float32" in manifest and "bm25" in manifest
        checks = table_rows(app, "#corpus-checks")
        with __import__("urna").open(explore.quickstart) as f:
            info = f.inspect()
        assert [r[0] for r in checks] == open_check_names(info) + LATER
        assert {r[1] for r in checks} == {"ok"}
        # each section's checksum row says how far the hashing of the table's sections got
        sizes = [int(s["size"]) for s in info["sections"]]
        last = next(r for r in checks if r[0] == f"section checksum 0x{sections_ids(info)[-1]:02x}")
        assert last[2].endswith(f"{human_size(sum(sizes))} of {human_size(sum(sizes))} hashed")
        sections = table_rows(app, "#corpus-sections")
        assert [r[1] for r in sections] == [s["name"] for s in info["sections"]]
        assert any(r[1] == "embeddings" and r[4] == "█" * 16 for r in sections)
        hashes = static_text(app, "#corpus-hashes")
        assert info["file_hash"] in hashes and info["content_hash"] in hashes
        assert dict((r[0], r[2]) for r in checks)["content hash"] == info["content_hash"]


@pytest.mark.parametrize("which", ["flipped", "ref_case"])
async def test_hostile_file_shows_the_failed_check_and_never_crashes(
        explore: Explore, ref_case: dict, which: str) -> None:
    path = getattr(explore, which)
    # Both flip a byte inside the embeddings payload; the reference names the error so.
    want = f"{ref_case['variant']}: {ref_case['message']}"
    assert want == "SectionChecksumMismatch: section 4 checksum mismatch"
    app = UrnaTUI(explore.root, path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        checks = table_rows(app, "#corpus-checks")
        failed = [i for i, r in enumerate(checks) if r[1] == "fail"]
        assert len(failed) == 1 and checks[failed[0]] == ["section checksum 0x04", "fail", want]
        before = [r[0] for r in checks[:failed[0]]]
        assert before[:6] == HEAD and before[-1] == "section entry 0x04"
        assert {r[1] for r in checks[:failed[0]]} == {"ok"}
        assert [r[:2] for r in checks[failed[0] + 1:]] == [[n, "skip"] for n in LATER]
        assert want in static_text(app, "#corpus-manifest")
        for key in ("3", "slash"):
            await pilot.press(key)
        await pilot.press(*"offline", "enter")
        await settle(pilot)
        assert "no corpus open" in static_text(app, "#ask-status")
        for key in ("escape", "2", "4", "r", "tab", "shift+tab"):
            await pilot.press(key)
            await settle(pilot)
        assert app.is_running


async def test_ask_tab_answers_like_urna_ask_and_copies_the_citation(explore: Explore) -> None:
    citation, source = cli_ask_top(explore.quickstart, QUESTION)
    app = UrnaTUI(explore.root, explore.quickstart)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]  # record, no terminal
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        assert isinstance(app.focused, Input)
        await pilot.press(*QUESTION, "enter")
        await settle(pilot)
        hits = table_rows(app, "#ask-hits")
        assert len(hits) == 10 and hits[0][3] == source
        assert hits[0][2].startswith("█") and len(hits[0][2]) == 10
        assert citation in static_text(app, "#ask-text")
        await pilot.press("c")
        assert copied == [citation]
        await pilot.press("down")
        await pilot.pause()
        assert app.hits[1].citation_id in static_text(app, "#ask-text")
        await pilot.press("ctrl+y")
        assert copied[-1] == app.hits[1].citation_id


async def test_ask_errors_show_in_place(explore: Explore) -> None:
    app = UrnaTUI(explore.root, explore.quickstart)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3", "enter")  # an empty question
        await settle(pilot)
        want = "error InvalidInput: invalid input: empty query text"  # as `urna ask` words it
        assert static_text(app, "#ask-status") == want
        assert app.is_running


async def test_ask_option_opens_the_ask_tab_with_the_reference_top_hit() -> None:
    ref = ROOT / "tests" / "data" / "ref-0.5.1" / "quickstart-hybrid.urna"
    query = EXPECTED["quickstart-hybrid.urna"]["queries"][0]
    app = UrnaTUI(ref.parent, ref, query["text"])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.active_tab == "ask"
        top = query["retrieve"][0]
        assert table_rows(app, "#ask-hits")[0][3] == top["source_uri"]
        assert top["citation_id"] in static_text(app, "#ask-text")
        assert app.query_one("#ask-input", Input).value == query["text"]


async def test_health_tab_runs_the_doctor_and_r_reruns(explore: Explore,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from urna.tui import backend

    runs: list[int] = []
    real = backend.doctor

    def counted():
        runs.append(1)
        return real()

    monkeypatch.setattr(backend, "doctor", counted)
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert runs == []  # the doctor does not run until its tab shows
        await pilot.press("shift+tab")  # on home the digits open files, so go round
        await settle(pilot)
        rows = table_rows(app, "#health-checks")
        assert [r[0] for r in rows][:2] == ["version", "python deps"]
        assert rows[-1][:2] == ["offline embed", "ok"]
        assert "ready" in static_text(app, "#health-summary")
        await pilot.press("r")
        await settle(pilot)
        assert len(runs) == 2


async def test_tab_keys_cycle_and_escape_goes_home_then_quits(explore: Explore) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        seen = []
        for key in ("tab", "tab", "tab", "tab", "shift+tab"):
            await pilot.press(key)
            seen.append(app.active_tab)
        assert seen == ["corpus", "ask", "health", "home", "health"]
        await pilot.press("2")
        assert app.active_tab == "corpus"
        await pilot.press("escape")
        assert app.active_tab == "home"
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_code == 0


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_q_and_ctrl_q_quit(explore: Explore, key: str) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
    assert not app.is_running


async def test_q_in_the_question_box_types(explore: Explore) -> None:
    app = UrnaTUI(explore.root, explore.quickstart)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3", "q")
        assert app.is_running and app.query_one("#ask-input", Input).value == "q"


async def test_mouse_click_switches_tabs(explore: Explore) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.click("#tabs Tab#--content-tab-health")
        await settle(pilot)
        assert app.active_tab == "health"


async def picker_loaded(pilot) -> None:
    """Wait (bounded) until the picker's tree lists the folder; its loader never completes."""
    from urna.tui.widgets import CorpusTree

    for _ in range(100):
        await pilot.pause(0.1)
        trees = pilot.app.screen.query(CorpusTree)
        if trees and trees.first().root.children:
            return
    raise AssertionError("the file picker did not list the folder")


async def test_o_opens_a_picker_that_opens_a_file(explore: Explore) -> None:
    app = UrnaTUI(explore.root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await picker_loaded(pilot)
        assert type(app.screen).__name__ == "FilePicker"
        # the tree lists the folder "broken" first, then quickstart.urna
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert app.corpus_path == explore.quickstart and app.active_tab == "corpus"
        await pilot.press("3", "ctrl+o")
        await picker_loaded(pilot)
        assert type(app.screen).__name__ == "FilePicker"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ != "FilePicker"
        assert app.corpus_path == explore.quickstart
