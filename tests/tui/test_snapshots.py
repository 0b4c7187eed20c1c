"""Each tab at 80x24 and 120x40, compared with the committed SVG snapshots.

The screens show the reference's quickstart-hybrid.urna from tests/data/ref-0.5.1 (frozen
bytes, so frozen hashes) with paths relative to the repository root; no timing is shown.
"""

from __future__ import annotations

import re

import pytest
from tui_support import EXPECTED, ROOT

from urna.tui import backend
from urna.tui.app import UrnaTUI

pytestmark = pytest.mark.timeout(300)

REF = ROOT / "tests" / "data" / "ref-0.5.1"
SIZES = [(80, 24), (120, 40)]


async def _settle(pilot) -> None:
    # a loaded machine may need several rounds before every posted result is drawn
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.2)


def _stable_doctor(real=backend.doctor):  # noqa: ANN001, ANN202 - a wrapper for the snapshots
    """The real doctor checks with package versions blanked: the screen's layout is what a
    snapshot pins; installed versions differ from one machine (and CI) to the next."""
    checks, code = real()
    for c in checks:
        c["detail"] = re.sub(r"\b\d+(\.\d+)+[\w.+-]*", "<version>", c["detail"])
    return checks, code


def _app(tab: str) -> UrnaTUI:
    if tab == "home":
        return UrnaTUI(REF)
    question = EXPECTED["quickstart-hybrid.urna"]["queries"][0]["text"] if tab == "ask" else None
    return UrnaTUI(REF, REF / "quickstart-hybrid.urna", question)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("tab", ["home", "corpus", "ask", "health"])
def test_tab_snapshot(snap_compare, monkeypatch: pytest.MonkeyPatch, tab: str,
                      size: tuple[int, int]) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(backend, "doctor", _stable_doctor)

    async def before(pilot) -> None:
        await _settle(pilot)
        if tab == "health":
            await pilot.press("4")
            await _settle(pilot)

    assert snap_compare(_app(tab), terminal_size=size, run_before=before)
