"""Shared setup of the robustness tests: make ``tests/helpers`` importable as ``helpers``."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
