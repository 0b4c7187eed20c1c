"""What a resident server (``urna serve``, ``urna mcp``) sets up once, at start.

A one-shot command must not pay for numba: loading it and the cached kernels costs ~0.5 s,
and a short rescoring in numpy costs ~1 ms. A server answers thousands of queries, and on a
small file the numpy rescoring is most of each one (quickstart ``retrieve``: 1.4 ms a request
in numpy, 0.85 ms compiled; ``search``: 0.57 against 0.14 ms). So a server loads the kernels on
a background thread while it starts listening; queries before it finishes run in numpy, with
the same bits. ``URNA_PRELOAD_KERNELS=0`` leaves them to load on demand, as before.
"""

from __future__ import annotations

import os
import threading

from ..index.exact import load_kernels
from .heap import keep_freed_memory


def load_kernels_in_background() -> threading.Thread | None:
    """Start loading the compiled kernels on a daemon thread (None when opted out)."""
    if os.environ.get("URNA_PRELOAD_KERNELS", "") == "0":
        return None
    thread = threading.Thread(target=load_kernels, name="urna-kernels", daemon=True)
    thread.start()
    return thread


def prepare_resident_server() -> None:
    """Keep freed heap memory and load the kernels in the background (see the module doc)."""
    keep_freed_memory()
    load_kernels_in_background()
