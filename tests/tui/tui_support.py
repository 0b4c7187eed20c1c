"""Shared names of the TUI tests (a unique module name: every test folder has a conftest)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from helpers.mutate import REF_DIR
from helpers.quickstart import ROOT

EXPECTED = json.loads((REF_DIR / "expected.json").read_text())["files"]


@dataclass(frozen=True)
class Explore:
    """The paths of the ``explore`` folder."""

    root: Path
    quickstart: Path
    flipped: Path
    ref_case: Path
    too_deep: Path


__all__ = ["EXPECTED", "ROOT", "Explore"]
