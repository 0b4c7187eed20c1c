"""Work started ahead of its turn, claimed in order (the open path's concurrent hashing).

The open checks must fail in the reference's order, but SHA-256 and numpy scans release the
GIL on large buffers, so the big passes run on worker threads while the caller goes on. A
``Lane`` starts jobs and claims their results in the order the caller asks; whatever happens,
leaving the lane waits for every job it started, so no thread still reads a buffer when the
caller releases the map (an mmap cannot close while a slice of it is exported).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

# Below this many bytes a job runs inline: a thread hop costs more than it hides, and hashlib
# keeps the GIL on small inputs anyway.
INLINE_BYTES = 1 << 20

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def worker_count() -> int:
    """Worker threads of the open pool: ``URNA_THREADS`` when set, else the core count (>= 2)."""
    raw = os.environ.get("URNA_THREADS", "")
    try:
        wanted = int(raw)
    except ValueError:
        wanted = 0
    return wanted if wanted > 0 else max(2, os.cpu_count() or 1)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    from concurrent.futures import ThreadPoolExecutor  # only files with large sections need it

    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(worker_count(), thread_name_prefix="urna-open")
    return _POOL


class Job:
    """One started job: ``result()`` returns its value or re-raises its error."""

    def __init__(self, future: Future | None, value: Any = None,
                 error: BaseException | None = None) -> None:
        self._future, self._value, self._error = future, value, error

    def result(self) -> Any:
        """The job's value, waiting for it; its exception is raised here, in the caller's turn."""
        if self._future is not None:
            return self._future.result()
        if self._error is not None:
            raise self._error
        return self._value

    def wait(self) -> None:
        """Block until the job is over, ignoring its outcome."""
        if self._future is not None:
            self._future.exception()


class Lane:
    """A context that starts jobs ahead and, on exit, waits for all of them."""

    def __init__(self) -> None:
        self._jobs: list[Job] = []

    def start(self, size: int, fn: Callable[..., Any], *args: Any) -> Job:
        """Run ``fn(*args)`` on a worker when ``size`` bytes make it worth it, else inline now.

        ``args`` must not hold slices of a buffer the caller may release: pass the buffer and
        bounds to ``start_over`` instead.
        """
        if size < INLINE_BYTES or worker_count() < 2:
            try:
                job = Job(None, value=fn(*args))
            except Exception as exc:  # claimed in order by result(), like a worker's error
                job = Job(None, error=exc)
        else:
            job = Job(_pool().submit(fn, *args))
        self._jobs.append(job)
        return job

    def start_over(self, fn: Callable[[memoryview], Any], buf: memoryview, start: int,
                   end: int) -> Job:
        """``start(fn(buf[start:end]))`` with the slice made and released inside the job."""
        return self.start(end - start, _over, fn, buf, start, end)

    def __enter__(self) -> Lane:
        return self

    def __exit__(self, *exc: object) -> None:
        for job in self._jobs:
            job.wait()


def _over(fn: Callable[[memoryview], Any], buf: memoryview, start: int, end: int) -> Any:
    with buf[start:end] as part:  # released before the job reports: the map may close then
        return fn(part)
