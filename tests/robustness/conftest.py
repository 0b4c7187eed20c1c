"""Fixtures of the corruption suites."""

from __future__ import annotations

from pathlib import Path

import pytest
from _harness import conformance_outcome

from helpers.mutate import load_cases, source_bytes


@pytest.fixture(scope="session")
def warm_kernels(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Run every case source once through the conformance drivers, uncapped.

    A case's time cap is there to catch a hang; a fresh checkout's first search compiles its
    numba kernels (a minute and more on a loaded machine), and that is not the case's time.
    """
    path: Path = tmp_path_factory.mktemp("warm") / "source.urna"
    for name in sorted({case["src"] for case in load_cases().values()}):
        conformance_outcome(source_bytes(name), path)
