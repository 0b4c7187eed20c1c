"""Ski rental for the compiled kernels: a numba-free path runs until it has cost their load.

Importing numba and loading a module's cached kernels costs ~0.6-1.7 s of wall time, more
than a short process (a CLI query) spends searching. So each kernel family keeps a rent: the
seconds its numba-free path has spent in this process. Once that reaches the load cost
(``KERNEL_RENT_SECONDS``), loading the kernels is worth it; the total is at most twice the
best choice made in hindsight, and a process that stays short never imports numba.
"""

from __future__ import annotations

import time

KERNEL_RENT_SECONDS = 1.0


class KernelRent:
    """The seconds one kernel family's numba-free path has spent in this process."""

    def __init__(self, budget: float = KERNEL_RENT_SECONDS) -> None:
        self.budget = budget
        self.spent = 0.0

    def paid(self) -> bool:
        """Whether the numba-free path has cost as much as loading the kernels would."""
        return self.spent >= self.budget

    def charge(self, since: float) -> None:
        """Add the time since ``since`` (a ``time.perf_counter()`` reading)."""
        self.spent += time.perf_counter() - since
