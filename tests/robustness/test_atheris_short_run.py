"""A short coverage-guided run of the atheris target (issue 9): libFuzzer must finish its time
budget with no crash. Longer runs: `make fuzz-atheris`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_reader.py"


def test_atheris_runs_clean_for_a_few_seconds(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    proc = subprocess.run(
        [sys.executable, str(TARGET), str(corpus), "-max_total_time=8", "-rss_limit_mb=2048",
         f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done" in proc.stderr and "ERROR" not in proc.stderr
    assert not list(tmp_path.glob("crash-*"))
