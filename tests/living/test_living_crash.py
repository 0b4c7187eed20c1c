"""A writer killed anywhere leaves the last complete version; two writers: one wins, one is told."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import urna
from urna.errors import CatalogLocked
from urna.runtime.catalog.living import CHECKPOINTS, CRASH_ENV, PAUSE_ENV, lock_path

from .corpus import document, new_catalog

WRITER = Path(__file__).with_name("writer_proc.py")
SRC = Path(urna.__file__).resolve().parents[1]


def _run(path: Path, op: str, uri: str, **env: str) -> subprocess.Popen:
    full = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            **env}
    return subprocess.Popen([sys.executable, str(WRITER), str(path), op, uri], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _seeded(tmp_path: Path) -> Path:
    path = new_catalog(tmp_path, document("a.txt") + document("b.txt"))
    with urna.open_catalog(path) as cat:
        cat.remove(sources=["a.txt"])  # version 2, with tombstones (compact has work to do)
    return path


# every named point each write passes (a removal writes no segment)
KILLS = [(op, point) for op in ("add", "remove", "replace", "compact") for point in CHECKPOINTS
         if (op, point) != ("remove", "segment-written")]


@pytest.mark.parametrize(("op", "point"), KILLS)
def test_killed_writer_leaves_the_last_complete_version(tmp_path: Path, op: str,
                                                         point: str) -> None:
    path = _seeded(tmp_path)
    before = urna.open_catalog(path)
    ids_before, hash_before = sorted(before.chunk_ids()), before.version_hash
    before.close()
    proc = _run(path, op, "b.txt" if op in ("remove", "replace") else "c.txt",
                **{CRASH_ENV: point})
    assert proc.wait(timeout=120) == -signal.SIGKILL
    with urna.open_catalog(path) as cat:  # opens: either the old version or the new one
        assert cat.validate()
        committed = point == "after-commit"
        assert cat.version == (3 if committed else 2)
        if not committed:
            assert cat.version_hash == hash_before
            assert sorted(cat.chunk_ids()) == ids_before
    # the dead writer's lock is reported with how to clear it, then clearing it works
    lock = lock_path(path)
    assert lock.exists()
    with pytest.raises(CatalogLocked, match="stale lock .* no longer running: .*rm"):
        urna.open_catalog(path).add(document("d.txt"))
    lock.unlink()
    with urna.open_catalog(path) as cat:
        cat.add(document("d.txt"))
        assert cat.version == (4 if point == "after-commit" else 3)
        assert {"d.txt"} <= {c.split(" ")[0] for c in cat.texts()}
    # the next write deleted what the killed one left: the folder holds what versions name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({path.name, *_named(path)})


def _named(path: Path) -> set[str]:
    """Every segment and sources file some version of the catalog names."""
    log = json.loads(path.read_text(encoding="utf-8"))["living"]["versions"]
    return ({s["file"] for rec in log for s in rec["segments"]}
            | {rec["sources_file"] for rec in log if "sources_file" in rec})


def test_a_write_deletes_only_this_catalogs_unnamed_files(tmp_path: Path) -> None:
    path = _seeded(tmp_path)
    named = _named(path)
    left = [tmp_path / "live-v000003-0123456789ab.urna",  # a killed writer's segment
            tmp_path / "live-v000009-abcdef012345.sources.jsonl",  # and its sources file
            tmp_path / "live-v000002-fedcba987654.urna"]  # a revived copy never unlinked
    kept = [tmp_path / "other-v000003-0123456789ab.urna",  # another catalog's
            tmp_path / "live-v3-0123456789ab.urna",  # not the writer's own form
            tmp_path / "live-v000003-0123456789ab.urna.bak",
            tmp_path / "live-00000-of-00002.urna",  # a sharded build's
            tmp_path / "notes.txt"]
    for f in left + kept:
        f.write_bytes(b"x")
    (tmp_path / "live-v000004-00000000000a.urna").mkdir()  # a folder is never touched
    with urna.open_catalog(path) as cat:
        cat.add(document("c.txt"))
    assert not any(f.exists() for f in left)
    assert all(f.exists() for f in kept)
    assert (tmp_path / "live-v000004-00000000000a.urna").is_dir()
    assert named <= {p.name for p in tmp_path.iterdir()}  # every older version still opens
    for version in (1, 2, 3):
        with urna.open_catalog(path, version=version) as old:
            assert old.validate()


def test_two_writers_one_wins_the_other_is_refused(tmp_path: Path) -> None:
    path = _seeded(tmp_path)
    gate = tmp_path / "go"
    first = _run(path, "add", "c.txt", **{PAUSE_ENV: f"locked:{gate}"})
    deadline = time.monotonic() + 120
    while not Path(f"{gate}.reached").exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    with urna.open_catalog(path) as cat:  # readers are never blocked
        assert cat.version == 2
        with pytest.raises(CatalogLocked, match=f"being written by pid {first.pid}"):
            cat.add(document("x.txt"))
    gate.touch()
    assert first.wait(timeout=120) == 0
    assert not lock_path(path).exists()
    with urna.open_catalog(path) as cat:
        assert cat.version == 3
        texts = cat.texts()
        assert any(t.startswith("c.txt") for t in texts)
        assert not any(t.startswith("x.txt") for t in texts)
        cat.add(document("x.txt"))  # the refused write, retried, lands on top: nothing lost
        assert cat.version == 4
        assert any(t.startswith("c.txt") for t in cat.texts())
