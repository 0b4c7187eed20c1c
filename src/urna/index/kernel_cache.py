"""numba's on-disk cache of this package's kernels, kept in step with their sources.

numba keys a cached function on its own source file's stamp only, while a kernel also holds
the code it inlines from other modules: the HNSW beam (``_hnsw_kernels``) calls
``_hnsw_dist``'s decoders, the exact scan's finishers ``_row_scores_jit``'s kernels. After one
of those changed, the callers' cached machine code kept the old code, so a checkout that
pulled a change to one kernel file ran, tested and measured the previous one (an installed
upgrade rewrites every file, so it never did). Before any kernel runs (:func:`check`),
the sources of ``urna/index`` are hashed; a hash other than the one recorded beside the
in-tree cache (``__pycache__/kernel-sources.sha256``) deletes that folder's cached kernels, so
numba compiles them afresh. An unwritable folder (numba then caches per user, where a changed
file's stamp invalidates its own entries) is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import threading

from ..format.hashing import sha256_state

STAMP = "kernel-sources.sha256"
_FOLDER = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_checked: list[bool] = []


def sources_digest(folder: str = _FOLDER) -> str:
    """SHA-256 hex of every ``.py`` file of ``folder`` (names and bytes, in name order)."""
    h = sha256_state(b"")
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".py")):
        with open(os.path.join(folder, name), "rb") as fh:
            data = fh.read()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def refresh(folder: str = _FOLDER) -> bool:
    """Delete ``folder``'s cached numba kernels when its sources changed since they were
    recorded (then record them); whether anything was deleted."""
    cache = os.path.join(folder, "__pycache__")
    stamp = os.path.join(cache, STAMP)
    digest = sources_digest(folder)
    try:
        with open(stamp, encoding="ascii") as fh:
            if fh.read().strip() == digest:
                return False
    except OSError:
        pass
    gone = False
    if os.path.isdir(cache):
        for name in os.listdir(cache):
            if name.endswith((".nbi", ".nbc")):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(cache, name))
                    gone = True
    with contextlib.suppress(OSError):  # read-only install: numba caches per user instead
        os.makedirs(cache, exist_ok=True)  # what numba saves next is of these sources
        tmp = f"{stamp}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="ascii") as fh:
            fh.write(digest + "\n")
        os.replace(tmp, stamp)
    return gone


def check() -> None:
    """:func:`refresh` this package's kernel cache once per process (before any kernel runs)."""
    if _checked:
        return
    with _lock:
        if not _checked:
            with contextlib.suppress(OSError):
                refresh()
            _checked.append(True)
