"""Test-suite wide setup: ``tests/`` on sys.path (for ``helpers``) and shared fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture()
def verdict_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private open-verdict cache (``runtime.verdicts``) under ``tmp_path / "cache"``."""
    from urna.runtime import verdicts

    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("URNA_OPEN_CACHE", raising=False)
    monkeypatch.setattr(verdicts, "MIN_BYTES", 0)  # the vectors are small
    return tmp_path
