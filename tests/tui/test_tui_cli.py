"""``urna tui`` as a user starts it: the real process, in tmux, without textual, bare ``urna``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tui_support import EXPECTED, ROOT

from urna.tui.colour import colour_environment

pytestmark = pytest.mark.timeout(300)

REF = ROOT / "tests" / "data" / "ref-0.5.1"
SRC = ROOT / "src"
CLI = [sys.executable, "-c", "from urna.cli import main; main()"]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), **extra)
    # COLUMNS / LINES (set under pytest-xdist) would size the app over the terminal's own size
    for name in ("NO_COLOR", "COLUMNS", "LINES"):
        env.pop(name, None)
    return env


def test_tui_in_tmux_shows_the_reference_top_hit_and_citation() -> None:
    found = shutil.which("tmux")
    assert found, "tmux is required (Debian package tmux, installed by `make test`)"
    query = EXPECTED["quickstart-hybrid.urna"]["queries"][0]
    top = query["retrieve"][0]
    session = f"urna-tui-{uuid.uuid4().hex[:8]}"
    # A server of its own (-L): on a shared server another client's size shrank the window.
    tmux = [found, "-L", session]
    command = " ".join(shlex.quote(a) for a in [*CLI, "tui", str(REF / "quickstart-hybrid.urna"),
                                                "--ask", query["text"]])
    env = _env(TERM="xterm-256color")
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "200", "-y", "50",
                    f"env PYTHONPATH={shlex.quote(str(SRC))} {command}"],
                   check=True, env=env, cwd=ROOT, timeout=30)
    screen = ""

    def top_hit_row(screen: str) -> bool:
        hit_rows = [ln for ln in screen.splitlines() if ln.lstrip().startswith("1 ")]
        return any(top["source_uri"] in ln for ln in hit_rows)

    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True, timeout=30).stdout
            # the detail pane and the table are painted in separate refreshes: wait for both
            if top["citation_id"] in screen and top_hit_row(screen):
                break
            time.sleep(0.5)
        assert top["citation_id"] in screen, screen
        assert top_hit_row(screen), screen
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], timeout=30, check=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            alive = subprocess.run([*tmux, "has-session", "-t", session], capture_output=True,
                                   timeout=30).returncode == 0
            if not alive:
                break
            time.sleep(0.3)
        assert not alive, "q did not quit the TUI"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (socket_dir / session).unlink(missing_ok=True)


# Make textual unimportable for the child, as if urna[tui] were not installed.
BLOCK_TEXTUAL = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from urna.cli import main
main()
"""


def test_without_textual_tui_says_how_to_install_in_one_line() -> None:
    res = subprocess.run([sys.executable, "-c", BLOCK_TEXTUAL, "tui", str(REF)], env=_env(),
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert res.returncode == 1
    assert res.stderr == "urna tui needs textual: pip install 'urna[tui]'\n"
    assert res.stdout == ""


def test_other_verbs_do_not_import_textual() -> None:
    probe = ("import sys\nfrom urna.cli import main\ntry:\n    main(['inspect', sys.argv[1]])\n"
             "except SystemExit:\n    pass\nprint('textual' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", probe, str(REF / "quickstart-hybrid.urna")],
                         env=_env(), capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert res.stdout.strip().splitlines()[-1] == "False", res.stderr


def test_bare_urna_off_a_terminal_prints_the_help() -> None:
    res = subprocess.run(CLI, env=_env(), capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, cwd=ROOT)
    assert res.returncode == 2
    assert "Usage: urna" in res.stdout + res.stderr and "tui" in res.stdout + res.stderr


def test_ask_needs_a_file() -> None:
    res = subprocess.run([*CLI, "tui", str(REF), "--ask", "offline"], env=_env(),
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert res.returncode == 2 and "--ask needs a FILE" in res.stderr


@pytest.mark.parametrize(("env", "want"), [
    ({}, {}),
    ({"URNA_COLOR": "truecolor"}, {"TEXTUAL_COLOR_SYSTEM": "truecolor"}),
    ({"URNA_COLOR": "256"}, {"TEXTUAL_COLOR_SYSTEM": "256"}),
    ({"URNA_COLOR": "none"}, {"NO_COLOR": "1"}),
    ({"URNA_COLOR": "NONE", "COLORTERM": "truecolor"}, {"NO_COLOR": "1"}),
    ({"URNA_COLOR": "sepia"}, {}),
])
def test_urna_color_overrides_the_colour_system(env: dict[str, str],
                                                want: dict[str, str]) -> None:
    assert colour_environment(env) == want


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"URNA_COLOR": "none"}])
def test_no_color_and_urna_color_none_turn_colour_off(monkeypatch: pytest.MonkeyPatch,
                                                      env: dict[str, str]) -> None:
    from urna.tui.app import UrnaTUI

    monkeypatch.delenv("NO_COLOR", raising=False)
    for key, value in {**env, **colour_environment(env)}.items():
        monkeypatch.setenv(key, value)
    assert UrnaTUI(REF).no_color is True


@pytest.mark.parametrize("target", ["/nonexistent/corpus.urna", ""])
def test_a_bad_target_is_one_usage_line(target: str) -> None:
    res = subprocess.run([*CLI, "tui", target], env=_env(), capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
