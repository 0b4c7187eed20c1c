"""index/kernel_cache: numba's cached kernels are dropped when any kernel source changed.

numba keys a cached function on its own file only, so a kernel inlining another module's code
kept that code's old version after it changed. Claims: unchanged sources keep every cached
kernel; a change to any ``.py`` file of the folder deletes the cached kernels (and nothing
else) and records the new sources, once; a folder without a cache yet gets the record, so what
numba saves next counts as current; a path where no cache folder can be made is left alone
without error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from urna.index import kernel_cache


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "index"
    cache = folder / "__pycache__"
    cache.mkdir(parents=True)
    (folder / "a.py").write_text("def f(): return 1\n")
    (folder / "b.py").write_text("def g(): return 2\n")
    return folder, cache


def _cached(cache: Path) -> list[str]:
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "b.g-1.py311.nbi", "a.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    return sorted(os.listdir(cache))


def test_a_changed_source_drops_the_cached_kernels_once(tmp_path: Path) -> None:
    folder, cache = _tree(tmp_path)
    assert not kernel_cache.refresh(str(folder))  # nothing cached: the sources are recorded
    stamp = (cache / kernel_cache.STAMP).read_text().strip()
    assert stamp == kernel_cache.sources_digest(str(folder))
    before = _cached(cache)
    assert not kernel_cache.refresh(str(folder))  # same sources: every kernel stays
    assert sorted(os.listdir(cache)) == before
    (folder / "b.py").write_text("def g(): return 3\n")  # another module's code changed
    assert kernel_cache.refresh(str(folder))
    assert sorted(os.listdir(cache)) == ["a.cpython-311.pyc", kernel_cache.STAMP]
    _cached(cache)
    assert not kernel_cache.refresh(str(folder))  # recorded: what numba saves next stays


@pytest.mark.parametrize("change", ["rename", "add", "remove"])
def test_renamed_added_or_removed_sources_count_as_changes(tmp_path: Path, change) -> None:
    folder, cache = _tree(tmp_path)
    kernel_cache.refresh(str(folder))
    _cached(cache)
    if change == "rename":
        (folder / "b.py").rename(folder / "c.py")
    elif change == "add":
        (folder / "c.py").write_text("")
    else:
        (folder / "b.py").unlink()
    assert kernel_cache.refresh(str(folder))
    (folder / "notes.txt").write_text("not a source")
    assert not kernel_cache.refresh(str(folder))


def test_an_unusable_cache_folder_is_left_alone(tmp_path: Path) -> None:
    # where no cache folder can be made (here a file stands in its place) nothing is raised
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "a.py").write_text("def f(): return 1\n")
    (folder / "__pycache__").write_bytes(b"not a folder")
    assert not kernel_cache.refresh(str(folder))
    assert (folder / "__pycache__").read_bytes() == b"not a folder"
