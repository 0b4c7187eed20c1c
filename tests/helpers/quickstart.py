"""Build the README's quickstart corpus with the real ``urna build`` (run from the repo root)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_quickstart(out: Path) -> Path:
    """``urna build --spec examples/quickstart/corpus.toml`` into ``out``; returns the file."""
    subprocess.run([sys.executable, "-c", "from urna.cli import main; main()", "build",
                    "--spec", "examples/quickstart/corpus.toml", "--out-dir", str(out / "out"),
                    "--cache-dir", str(out / "cache")],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    return out / "out" / "quickstart.urna"
