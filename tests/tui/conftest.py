"""Corpora for the TUI tests: the forge-built quickstart, hostile copies, the reference files.

``explore`` is a folder holding the quickstart, a copy with one byte flipped in its
embeddings payload, the reference's own corruption case ``rand0004_flip_6504`` (whose
0.5.1 error is recorded in mutations-0.5.1.json) one level below, and a file two levels
below that home must not list.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tui_support import Explore

import urna
from helpers.mutate import apply_case, load_cases
from helpers.quickstart import build_quickstart

REF_CASE = "quickstart-hybrid__rand0004_flip_6504"


def flip_embeddings_byte(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` with one byte of the embeddings section (0x04) inverted."""
    with urna.open(src) as f:
        entry = next(s for s in f.inspect()["sections"] if s["section_id"] == 4)
    data = bytearray(src.read_bytes())
    data[int(entry["offset"]) + 17] ^= 0xFF
    dst.write_bytes(bytes(data))


@pytest.fixture(scope="session")
def explore(tmp_path_factory: pytest.TempPathFactory) -> Explore:
    """The folder described in the module docstring."""
    tmp = tmp_path_factory.mktemp("tui")
    built = build_quickstart(tmp / "build")
    root = tmp / "explore"
    (root / "broken" / "deeper").mkdir(parents=True)
    quickstart = root / "quickstart.urna"
    shutil.copy(built, quickstart)
    flipped = root / "broken" / "flipped.urna"
    flip_embeddings_byte(quickstart, flipped)
    ref_case = root / "broken" / "ref-case.urna"
    case = load_cases()[REF_CASE]
    ref_case.write_bytes(apply_case(case))
    too_deep = root / "broken" / "deeper" / "hidden.urna"
    shutil.copy(built, too_deep)
    return Explore(root, quickstart, flipped, ref_case, too_deep)


@pytest.fixture
def anyio_backend() -> str:
    """The pilot tests run on asyncio (textual's loop)."""
    return "asyncio"


@pytest.fixture(scope="session")
def ref_case() -> dict:
    """The reference's record of the corruption case ``explore.ref_case`` carries."""
    return load_cases()[REF_CASE]

