"""The kernels' rent and their preparation (``index.kernel_rent``): a numba-free path runs
until it has cost the kernels' load; while one thread prepares them, only that thread takes
the compiled paths (``tests/runtime/test_resident.py``: afterwards every thread takes what it
loaded)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time

from urna.index.kernel_rent import KernelRent

# In a fresh interpreter: the preparation's state is the process's.
_PREPARING = r'''
import threading
from urna.index import kernel_rent
from urna.index.kernel_rent import KernelRent
rent = KernelRent(budget=3600.0)
seen = {}
inside, release = threading.Event(), threading.Event()
def prepare():
    with kernel_rent.preparing():
        seen["preparer"] = (rent.paid(), kernel_rent.allowed(), kernel_rent.forced())
        inside.set()
        release.wait()
worker = threading.Thread(target=prepare)
seen["before"] = (rent.paid(), kernel_rent.allowed(), kernel_rent.forced())
worker.start()
inside.wait()
seen["other, during"] = (rent.paid(), kernel_rent.allowed(), kernel_rent.forced())
release.set()
worker.join()
seen["after"] = (rent.paid(), kernel_rent.allowed(), kernel_rent.forced())
print(seen)
'''


def test_the_rent_is_paid_once_the_numba_free_path_has_cost_the_budget() -> None:
    rent = KernelRent(budget=0.02)
    assert not rent.paid()
    start = time.perf_counter()
    while time.perf_counter() - start < 0.025:
        pass
    rent.charge(start)
    assert rent.paid()


def test_only_the_preparing_thread_takes_the_compiled_paths_until_it_ends() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", _PREPARING], capture_output=True, text=True,
                         check=True, timeout=120, env=env).stdout
    seen = ast.literal_eval(out)
    # (paid, allowed, forced)
    assert seen["before"] == (False, True, False)
    assert seen["preparer"] == (True, True, True)
    assert seen["other, during"] == (False, False, False)
    assert seen["after"] == (False, True, False)  # each family then switches on its modules
