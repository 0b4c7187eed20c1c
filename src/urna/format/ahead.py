"""Work started ahead of its turn, claimed in order (the open path's concurrent hashing).

The open checks must fail in the reference's order, but SHA-256 and numpy scans release the
GIL on large buffers, so the big passes run on worker threads while the caller goes on. A
``Lane`` starts jobs and claims their results in the order the caller asks; whatever happens,
leaving the lane waits for every job it started, so no thread still reads a buffer when the
caller releases the map (an mmap cannot close while a slice of it is exported).

The workers are plain ``threading`` threads fed by one ``SimpleQueue``: ``concurrent.futures``
imports ``logging`` (~6 ms), more than a light CLI verb's whole hashing on a small file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Below this many bytes a job runs inline: a thread hop costs more than it hides, and hashlib
# keeps the GIL on small inputs anyway.
INLINE_BYTES = 1 << 20


def worker_count() -> int:
    """Worker threads of the open pool: ``URNA_THREADS`` when set, else the core count (>= 2)."""
    raw = os.environ.get("URNA_THREADS", "")
    try:
        wanted = int(raw)
    except ValueError:
        wanted = 0
    return wanted if wanted > 0 else _CORES


# The core count, read once: os.cpu_count() costs ~7 us, and an exact query asks per call.
_CORES = max(2, os.cpu_count() or 1)


class Job:
    """One started job: ``result()`` returns its value or re-raises its error."""

    __slots__ = ("_fn", "_args", "_done", "_value", "_error", "_failed")

    def __init__(self, fn: Callable[..., Any] | None = None, args: tuple[Any, ...] = (), *,
                 value: Any = None, error: BaseException | None = None) -> None:
        """A job to ``run()`` on a worker (``fn``), or one already over (``value``/``error``)."""
        self._fn, self._args = fn, args
        self._done = threading.Event() if fn is not None else None
        self._value, self._error = value, error
        self._failed = False

    @classmethod
    def now(cls, fn: Callable[..., Any], *args: Any) -> Job:
        """Run ``fn(*args)`` here and now; its value, or its error, is claimed by ``result()``."""
        try:
            return cls(value=fn(*args))
        except Exception as exc:  # claimed in order by result(), like a worker's error
            return cls(error=exc)

    def run(self) -> None:
        """Run the job here (a worker's turn); its outcome is kept for ``result()``."""
        assert self._fn is not None and self._done is not None
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # claimed in order by result(), like an inline error
            self._error = exc
        finally:
            self._fn = self._args = None  # type: ignore[assignment]  # drop the buffer refs
            self._done.set()

    def result(self) -> Any:
        """The job's value, waiting for it; its exception is raised here, in the caller's turn.

        The error is handed over once: the job lets go of it, so the raised error's traceback
        (which holds the caller's frame, which holds this job) is no reference cycle. A cycle
        holding a memoryview that still exports a buffer may crash CPython's collector.
        """
        self.wait()
        if self._error is not None:
            error, self._error = self._error, None
            self._failed = True
            try:
                raise error
            finally:
                del error
        if self._failed:
            raise RuntimeError("the job's error was claimed already")
        return self._value

    @property
    def failed(self) -> bool:
        """Whether the job is over with an error (False while it still runs)."""
        return self._failed or self._error is not None

    def wait(self) -> None:
        """Block until the job is over, ignoring its outcome."""
        if self._done is not None:
            self._done.wait()

    def forget(self) -> None:
        """Drop an error nobody claimed: its traceback's frames lead back (``f_back``) to the
        frame holding this job, a cycle over memoryviews the collector may crash on."""
        self._error = None


class Pool:
    """Daemon worker threads taking jobs from one queue; a thread starts when none is idle."""

    def __init__(self, size: int, name: str = "urna-open") -> None:
        self._size, self._name = size, name
        self._queue: SimpleQueue[Job | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, job: Job) -> None:
        """Queue ``job``; start a worker when every running one is busy and there is room."""
        with self._lock:
            if self._idle:
                self._idle -= 1  # a waiting worker takes it
            elif len(self._threads) < self._size:
                # A daemon: an idle worker never holds the interpreter's exit (every job a lane
                # started is waited for before the lane is left).
                worker = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads) + 1}")
                self._threads.append(worker)
                worker.start()
        self._queue.put(job)

    def close(self) -> None:
        """End every worker once the jobs queued before are done, and wait for them."""
        with self._lock:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for worker in threads:
            worker.join()

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            job.run()
            with self._lock:
                self._idle += 1


_POOL: Pool | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads: it starts its own


os.register_at_fork(after_in_child=_forget_pool)


def _pool() -> Pool:
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                # One thread more than the cores: the open's three long passes (body digest,
                # 0x04 checksum, content hash) then run at once and end after 1.5 passes on
                # two cores, not 2.
                _POOL = Pool(worker_count() + 1)
    return _POOL


def submit(job: Job) -> None:
    """Run ``job`` on a worker of the open pool, outside any lane: its taker waits for it."""
    _pool().submit(job)


def submit_over(fn: Callable[[memoryview], Any], buf: memoryview, start: int, end: int) -> Job:
    """``submit`` of ``fn(buf[start:end])``, the slice made and released inside the job."""
    job = Job(_over, (fn, buf, start, end))
    submit(job)
    return job


def start_quietly(fn: Callable[[], Any]) -> Job:
    """Run ``fn()`` on a worker, its outcome ignored: work done ahead for a later call of the
    same work, which raises its errors in order. ``wait()`` for it before what it reads may
    close; ``fn`` must not wait for other jobs of the pool (a worker waiting on the queue
    behind it could wait forever)."""
    job = Job(_quietly, (fn,))
    submit(job)
    return job


def _quietly(fn: Callable[[], Any]) -> None:
    with contextlib.suppress(Exception):
        fn()


# Jobs started over a buffer before the code that reads it runs (the CLI's head start), keyed
# by the id of the buffer's owner; each holds its owner, so the id cannot be reused meanwhile.
_OFFERED: dict[int, tuple[object, object, Job]] = {}


def offer(owner: object, key: object, job: Job) -> None:
    """Leave the submitted ``job`` over ``owner``'s bytes for whoever claims it by ``key``."""
    _OFFERED[id(owner)] = (owner, key, job)


def claim_offered(owner: object, key: object) -> Job | None:
    """The job offered over ``owner`` under ``key``, handed over once (the claimer waits for
    it before ``owner`` may close); None when there is none."""
    offered = _OFFERED.get(id(owner))
    if offered is None or offered[0] is not owner or offered[1] != key:
        return None
    del _OFFERED[id(owner)]
    return offered[2]


def withdraw_offers() -> None:
    """Wait for every offered job nobody claimed, and forget them."""
    for _, _, job in list(_OFFERED.values()):
        job.wait()
        job.forget()
    _OFFERED.clear()


class Lane:
    """A context that starts jobs ahead and, on exit, waits for all of them."""

    def __init__(self) -> None:
        self._jobs: list[Job] = []

    def adopt(self, job: Job) -> Job:
        """Wait for ``job`` (started elsewhere, e.g. a head start) on exit, as for its own."""
        self._jobs.append(job)
        return job

    def start(self, size: int, fn: Callable[..., Any], *args: Any) -> Job:
        """Run ``fn(*args)`` on a worker when ``size`` bytes make it worth it, else inline now.

        ``args`` must not hold slices of a buffer the caller may release: pass the buffer and
        bounds to ``start_over`` instead.
        """
        if size < INLINE_BYTES or worker_count() < 2:
            job = Job.now(fn, *args)
        else:
            job = Job(fn, args)
            _pool().submit(job)
        self._jobs.append(job)
        return job

    def borrowed(self) -> _Borrowed:
        """This lane as a context that does not wait on exit: its owner's exit waits."""
        return _Borrowed(self)

    def start_over(self, fn: Callable[[memoryview], Any], buf: memoryview, start: int,
                   end: int) -> Job:
        """``start(fn(buf[start:end]))`` with the slice made and released inside the job."""
        return self.start(end - start, _over, fn, buf, start, end)

    def __enter__(self) -> Lane:
        return self

    def __exit__(self, *exc: object) -> None:
        for job in self._jobs:
            job.wait()
            job.forget()  # an outcome not claimed inside the lane is never claimed


class _Borrowed:
    """A lane lent to a callee: jobs it starts outlive the callee and are waited for by the
    lane's owner (a job started ahead for a later step of the owner's)."""

    __slots__ = ("_lane",)

    def __init__(self, lane: Lane) -> None:
        self._lane = lane

    def __enter__(self) -> Lane:
        return self._lane

    def __exit__(self, *exc: object) -> None:
        pass


def _over(fn: Callable[[memoryview], Any], buf: memoryview, start: int, end: int) -> Any:
    with buf[start:end] as part:  # released before the job reports: the map may close then
        return fn(part)
