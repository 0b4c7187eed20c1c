"""Subprocess driver for the crash-safety tests: build a corpus, dying at a named point.

Usage: ``python _kill_driver.py TARGET POINT N DIM PRESET``. POINT is one of ``none`` (finish),
``fsync`` (SIGKILL when the temp file of TARGET is fsynced), ``before_replace`` /
``after_replace`` (around the rename onto TARGET), ``write`` (after half of the bytes reached
the temp file) or ``timed`` (print ``ready`` and let the parent kill us at a random moment).
Only calls that concern TARGET are intercepted, so numba's cache or any other file is left alone.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np


def chunks(n: int, dim: int) -> list[dict]:
    """A deterministic corpus of ``n`` chunks with unit embeddings of ``dim`` floats."""
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [{"canonical_text": f"chunk {i} alpha beta term{i} shared{i % 7}",
             "source_uri": f"doc{i % 5}.txt", "byte_start": 10 * i, "byte_end": 10 * i + 9,
             "embedding": rows[i].tolist()} for i in range(n)]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def arm(target: Path, point: str) -> None:
    """Install the SIGKILL trap for ``point`` on calls that touch ``target`` or its temp file."""
    tmp_prefix = str(target.parent / ("." + target.name))
    real_fsync, real_replace, real_rename = os.fsync, os.replace, os.rename
    real_fdopen = os.fdopen

    def is_target(dst) -> bool:
        return Path(os.fsdecode(dst)).resolve() == target.resolve()

    def fsync(fd):
        if point == "fsync" and _fd_path(fd).startswith(tmp_prefix):
            _die()
        return real_fsync(fd)

    def around_rename(real):  # os.replace and os.rename: die just before or after onto TARGET
        def move(src, dst, *a, **k):
            if is_target(dst) and point == "before_replace":
                _die()
            out = real(src, dst, *a, **k)
            if is_target(dst) and point == "after_replace":
                _die()
            return out
        return move

    class HalfWriter:
        """Wraps the temp file: the first big write lands half its bytes, then we die."""

        def __init__(self, fh):
            self._fh = fh

        def write(self, data):
            if len(data) > 64:
                self._fh.write(bytes(data[:len(data) // 2]))
                self._fh.flush()
                _die()
            return self._fh.write(data)

        def __getattr__(self, name):
            return getattr(self._fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self._fh.__exit__(*exc)

    def fdopen(fd, *a, **k):
        fh = real_fdopen(fd, *a, **k)
        if point == "write" and _fd_path(fd).startswith(tmp_prefix):
            return HalfWriter(fh)
        return fh

    os.fsync, os.fdopen = fsync, fdopen
    os.replace, os.rename = around_rename(real_replace), around_rename(real_rename)


def main() -> int:
    """Entry point (see the module docstring)."""
    target, point = Path(sys.argv[1]), sys.argv[2]
    n, dim, preset = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    import urna

    data = chunks(n, dim)
    arm(target, point)
    print("ready", flush=True)
    urna.build(str(target), "demo", dim, "demo-chunker/1", "sha256:" + "0" * 64, data,
               reproducible=True, preset=preset, hnsw_ef_construction=64)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
