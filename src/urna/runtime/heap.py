"""A resident process keeps the memory its requests free (glibc's ``mallopt``).

A server answers the same requests again and again, and each allocates the same large buffers
(decoded sections, numpy columns) and frees them. By default glibc hands a freed block of
128 KB or more straight back to the kernel and trims the heap's top past 128 KB, so every
request faults its buffers in afresh: ~5,900 page faults a ``validate`` of the 26 MB bench
file, ~2,100 with the blocks kept, and 25-35% less CPU a request. The warm command line, ``urna
serve`` and ``urna mcp`` call ``keep_freed_memory`` once at start; a one-shot command leaves
the allocator alone (all its memory is first touch anyway). ``URNA_KEEP_FREED=0`` opts out.
"""

from __future__ import annotations

import os

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
# Blocks below 32 MiB (glibc's largest mmap threshold on 64-bit) come from the heap; up to
# 256 MiB of free heap top is kept before it is trimmed, so a server idles at its peak
# request's heap and no more.
SETTINGS = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 256 << 20),
            (_M_TOP_PAD, 16 << 20))


def keep_freed_memory() -> bool:
    """Tune glibc's allocator for a resident server; False where it was not (no glibc
    ``mallopt``, a refused setting, or ``URNA_KEEP_FREED=0``)."""
    if os.environ.get("URNA_KEEP_FREED", "") == "0":
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows): nothing to tune
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return all([mallopt(param, value) == 1 for param, value in SETTINGS])
