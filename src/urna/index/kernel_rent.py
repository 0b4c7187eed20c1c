"""Ski rental for the compiled kernels: a numba-free path runs until it has cost their load.

Importing numba and loading a module's cached kernels costs ~0.6-1.7 s of wall time, more
than a short process (a CLI query) spends searching. So each kernel family keeps a rent: the
seconds its numba-free path has spent in this process. Once that reaches the load cost
(``KERNEL_RENT_SECONDS``), loading the kernels is worth it; the total is at most twice the
best choice made in hindsight, and a process that stays short never imports numba.

A resident server prepares them instead (``preparing``, ``runtime.resident``): one background
thread runs its files' first queries on the compiled paths, which compiles (on a machine's
first run, ~10 s) or loads them, while every other thread keeps the numba-free paths
(``allowed``), so no request waits on a compilation. Then every thread takes the kernels
loaded by then (each family switches on its module being loaded); a family the files did not
use keeps its rent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

KERNEL_RENT_SECONDS = 1.0

_preparing: set[int] = set()  # idents of the threads preparing the kernels now
_state_lock = threading.Lock()


@contextmanager
def preparing() -> Iterator[None]:
    """Run the block as this process's kernel preparation: in this thread every rent counts
    as paid (so the compiled paths run, and compile, here); other threads keep the numba-free
    paths until it ends."""
    me = threading.get_ident()
    with _state_lock:
        _preparing.add(me)
    try:
        yield
    finally:
        with _state_lock:
            _preparing.discard(me)


def allowed() -> bool:
    """Whether this thread may run a compiled kernel now: not while another prepares them."""
    return not _preparing or threading.get_ident() in _preparing


def forced() -> bool:
    """Whether this thread is preparing the kernels (its queries take every compiled path)."""
    return bool(_preparing) and threading.get_ident() in _preparing


class KernelRent:
    """The seconds one kernel family's numba-free path has spent in this process."""

    def __init__(self, budget: float = KERNEL_RENT_SECONDS) -> None:
        self.budget = budget
        self.spent = 0.0

    def paid(self) -> bool:
        """Whether the numba-free path has cost as much as loading the kernels would (always
        in a thread preparing them, never in another meanwhile: ``preparing``)."""
        return forced() or (allowed() and self.spent >= self.budget)

    def charge(self, since: float) -> None:
        """Add the time since ``since`` (a ``time.perf_counter()`` reading)."""
        self.spent += time.perf_counter() - since
