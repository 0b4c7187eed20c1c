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
from typing import TYPE_CHECKING, Any

from .ahead import Job, worker_count

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["Fanout"]


class Fanout:
    """A context that runs up to ``width`` jobs at once and, on exit, waits for all of them."""

    def __init__(self, width: int) -> None:
        self._width = min(max(width, 1), worker_count())
        self._executor: ThreadPoolExecutor | None = None
        self._jobs: list[Job] = []

    def start(self, fn: Callable[..., Any], *args: Any) -> Job:
        """Run ``fn(*args)`` on a worker thread (inline when only one thread is allowed)."""
        if self._width < 2:
            try:
                job = Job(None, value=fn(*args))
            except Exception as exc:  # claimed in order by result(), like a worker's error
                job = Job(None, error=exc)
        else:
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(self._width, thread_name_prefix="urna-build")
            job = Job(self._executor.submit(fn, *args))
        self._jobs.append(job)
        return job

    def __enter__(self) -> Fanout:
        return self

    def __exit__(self, *exc: object) -> None:
        for job in self._jobs:
            job.wait()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
