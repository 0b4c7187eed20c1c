"""The micro-batcher of ``urna serve``: concurrent queries with the same key, one call.

An exact scan of a large file is bound by memory bandwidth: two scans at once each take as long
as one alone, while one matrix product over several queries reads the rows once. So queries
that one call can answer together (the same corpus and every option that changes the answer:
the caller's ``key``) are collected and answered by one ``answer(items)`` call in a worker.

Per key at most one call runs. A query that finds its key idle leads the next call: it waits at
most ``window_s`` for the other requests in progress (and as many as the last call answered)
to join, never when it is the only one, so a lone request gets no added latency; then it runs
the call for up to ``max_batch`` queries. Queries arriving while a call runs wait for it; the
first of them then leads the next call, waiting at most ``window_s`` for the clients of the
call that just ended (without that wait, two cohorts of clients would alternate for ever in
half-full calls). The wait and the call are shielded from cancellation, as a worker-thread
call already is: a request's time limit answers once its call returns, never leaves a call
half-served.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

Item = TypeVar("Item")
Answer = TypeVar("Answer")
Runner = Callable[..., Awaitable[Any]]
"""Runs ``fn(*args)`` in a worker thread and returns its result (``app.in_worker``)."""

WINDOW_S = 0.002
"""Default longest wait for companions, in seconds (a request's parse and plan take ~0.2 ms)."""
MAX_BATCH = 32
"""Default most queries per call (32 x 100,000 float32 scores: a 12.8 MB score matrix)."""


@dataclass(eq=False)
class _Slot(Generic[Item]):
    item: Item
    done: anyio.Event = field(default_factory=anyio.Event)
    lead: bool = False
    outcome: Any = None
    failed: BaseException | None = None


@dataclass(eq=False)
class _Group:
    pending: list[_Slot] = field(default_factory=list)
    busy: bool = False  # a leader is collecting or a call is running
    grew: anyio.Event = field(default_factory=anyio.Event)


class MicroBatcher:
    """Answers concurrent items of one key with one ``answer(items)`` call (module docstring)."""

    def __init__(self, run: Runner, *, window_s: float = WINDOW_S,
                 max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1 or window_s < 0:
            raise ValueError("max_batch must be >= 1 and window_s >= 0")
        self.run, self.window_s, self.max_batch = run, window_s, max_batch
        self._groups: dict[Hashable, _Group] = {}
        self._active = 0
        self._last = 1  # queries of the last call
        self.calls = 0  # answer calls made, and the items they answered (for tests and logs)
        self.items = 0

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Count a request in progress that may submit (a leader waits only for those)."""
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1

    async def submit(self, key: Hashable, item: Item,
                     answer: Callable[[list[Item]], list[Answer]]) -> Answer:
        """``item``'s answer, computed by one ``answer(items)`` call with the same-key items
        collected around it; an exception of that call is raised to each of its items."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        slot: _Slot[Item] = _Slot(item)
        group.pending.append(slot)
        group.grew.set()
        with anyio.CancelScope(shield=True):
            if not group.busy:
                group.busy = slot.lead = True
                await self._collect(group, 0)
                await self._call(key, group, answer)
            while not slot.done.is_set():
                if slot.lead:  # handed the lead: the last call's clients are on their way back
                    await self._collect(group, len(group.pending) + self._last)
                    await self._call(key, group, answer)
                else:
                    await slot.done.wait()  # woken with its answer, or to lead the next call
                    if slot.lead:
                        slot.done = anyio.Event()
        if slot.failed is not None:
            raise slot.failed
        return slot.outcome  # type: ignore[no-any-return]

    async def _collect(self, group: _Group, expected: int) -> None:
        """A leader's wait: until as many queries joined as there are requests in progress,
        as the last call answered, or as ``expected`` (under steady load the others are on
        their way back), the batch is full, or the window passed. A lone request after lone
        requests never waits."""
        deadline = time.monotonic() + self.window_s
        while len(group.pending) < min(self.max_batch, max(self._active, self._last, expected)):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            group.grew = anyio.Event()
            with anyio.move_on_after(left):
                await group.grew.wait()

    async def _call(self, key: Hashable, group: _Group,
                    answer: Callable[[list[Item]], list[Answer]]) -> None:
        batch = group.pending[:self.max_batch]
        del group.pending[:len(batch)]
        self.calls += 1
        self.items += len(batch)
        self._last = len(batch)
        try:
            outcomes = await self.run(answer, [s.item for s in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"{len(outcomes)} answers for {len(batch)} queries")
            for s, out in zip(batch, outcomes, strict=True):
                s.outcome = out
        except Exception as e:  # a bug in answer(): every item of the call reports it
            for s in batch:
                s.failed = e
        for s in batch:
            s.lead = False
            s.done.set()
        if group.pending:  # the next call starts now: its queries have waited one call already
            nxt = group.pending[0]
            nxt.lead = True
            nxt.done.set()
        else:
            group.busy = False
            del self._groups[key]
