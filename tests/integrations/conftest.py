"""The quickstart corpus, built once by the forge for the adapter tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.quickstart import build_quickstart


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``examples/quickstart`` built with ``urna build --spec``."""
    return build_quickstart(tmp_path_factory.mktemp("integrations"))
