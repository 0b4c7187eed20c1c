"""Independent build work run side by side on threads, claimed in the order it was started.

The writer's heavy steps (level-19 zstd, the HNSW build in numba, numpy passes) release the
GIL, so running them at once uses every core. Results are claimed in start order, so the
first error raised is the one a sequential run would raise first, and the bytes never depend
on which thread finished first. ``URNA_THREADS=1`` runs every job inline, one after another.
Unlike the open path's shared pool (``ahead``), each ``Fanout`` owns its threads, so a job may
start a nested ``Fanout`` without waiting on a slot its own caller holds.
"""

from __future__ import annotations

from collections.abc import Callable

from .ahead import Job, Pool, worker_count

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Fanout"]


class Fanout:
    """A context that runs up to ``width`` jobs at once and, on exit, waits for all of them."""

    def __init__(self, width: int) -> None:
        self._width = min(max(width, 1), worker_count())
        self._pool: Pool | None = None
        self._jobs: list[Job] = []

    def start(self, fn: Callable[..., Any], *args: Any) -> Job:
        """Run ``fn(*args)`` on a worker thread (inline when only one thread is allowed)."""
        if self._width < 2:
            job = Job.now(fn, *args)
        else:
            if self._pool is None:
                self._pool = Pool(self._width, name="urna-build")
            job = Job(fn, args)
            self._pool.submit(job)
        self._jobs.append(job)
        return job

    def __enter__(self) -> Fanout:
        return self

    def __exit__(self, *exc: object) -> None:
        for job in self._jobs:
            job.wait()
        if self._pool is not None:
            self._pool.close()
