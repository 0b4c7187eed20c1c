"""How the MCP tests start ``urna mcp`` (a module of its own: importing from a conftest is
ambiguous when several test folders have one)."""

from __future__ import annotations

import os
import sys

from helpers.quickstart import ROOT

URNA_MCP = [sys.executable, "-c", "from urna.cli import main; main()", "mcp"]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a ``urna mcp`` subprocess: this tree's sources first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env
