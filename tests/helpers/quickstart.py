"""The quickstart corpus built by the forge, and ``urna retrieve`` run as a user runs it.

The agent surfaces (MCP, adapters, async API) must answer as the CLI does: tests compare their
hits with :func:`cli_retrieve` and with a fact known from the corpus itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OFFLINE_QUESTION = "can I use this offline"
OFFLINE_SOURCE = "demo/04-offline-sovereignty.md"
"""The quickstart document that answers the offline question (examples/quickstart/docs.jsonl)."""
_CLI = [sys.executable, "-c", "from urna.cli import main; main()"]


def build_quickstart(out: Path) -> Path:
    """``urna build --spec examples/quickstart/corpus.toml`` into ``out`` (run from the root)."""
    subprocess.run([*_CLI, "build", "--spec", "examples/quickstart/corpus.toml",
                    "--out-dir", str(out / "out"), "--cache-dir", str(out / "cache")],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    return out / "out" / "quickstart.urna"


def cli_retrieve(path: Path, text: str, k: int = 10) -> list[dict]:
    """The hits of ``urna retrieve PATH TEXT -k K --format json`` (a subprocess)."""
    out = subprocess.run([*_CLI, "retrieve", str(path), text, "-k", str(k), "--format", "json"],
                         check=True, capture_output=True, text=True, timeout=300)
    return list(json.loads(out.stdout))
