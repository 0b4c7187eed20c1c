"""``urna tui``: the terminal corpus explorer (textual loads only when this verb runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from urna.cli.options import input_file
from urna.errors import UsageError

from ._output import echo
from .command import argument, command, option

INSTALL_HINT = "urna tui needs textual: pip install 'urna[tui]'"


def launch(target: Path | None, question: str | None) -> None:
    """Start the TUI, or print the one-line install hint and exit 1 without textual."""
    from urna.tui.colour import colour_environment

    os.environ.update(colour_environment(os.environ))
    try:
        from urna.tui.app import run_tui
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "textual":
            raise
        echo(INSTALL_HINT, err=True)
        sys.exit(1)
    sys.exit(run_tui(target, question))


@command("tui")
@argument("target", required=False, type=input_file(exists=True))
@option("--ask", "question", metavar="QUESTION", help="Open the ask tab with this asked.")
def tui_cmd(target: Path | None, question: str | None) -> None:
    """Explore corpora in the terminal: home, corpus checks, ask, health.

    Example: urna tui examples/quickstart/out/quickstart.urna --ask "can I use this offline"
    """
    if question is not None and (target is None or target.is_dir()):
        raise UsageError("--ask needs a FILE to ask")
    launch(target, question)


COMMANDS = [tui_cmd]
