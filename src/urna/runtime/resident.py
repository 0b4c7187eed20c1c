"""What a resident server (``urna serve``, ``urna mcp``) sets up once, at start.

A one-shot command must not pay for numba: loading it and the cached kernels costs ~0.5 s,
and a short rescoring in numpy costs ~1 ms. A server answers thousands of queries, and on a
small file the numpy rescoring is most of each one (quickstart ``retrieve``: 1.4 ms a request
in numpy, 0.85 ms compiled; ``search``: 0.57 against 0.14 ms). So a server prepares the
kernels on a background thread while it starts listening (``index.kernel_rent.preparing``):
that thread loads them and runs each served file's first queries on the compiled paths, which
compiles what the cache lacks (a machine's first run, or the first after an upgrade: ~10 s);
queries on other threads meanwhile run the numba-free paths, with the same bits, and switch
when it is done, so no request waits on a compilation. ``URNA_PRELOAD_KERNELS=0`` leaves the
kernels to load on demand, as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..index.exact import load_kernels
from ..index.kernel_rent import preparing
from .heap import keep_freed_memory


def warm_queries(f: Any) -> None:
    """One query per index ``f`` (a file or catalog) has: exact, HNSW, hybrid, graph and the
    fused ``retrieve``, with a unit probe vector and, for the lexical ones, the first words of
    the chunk nearest to it (words the BM25 index holds, so its scoring runs)."""
    probe = np.zeros(int(f.embedding_dim), dtype=np.float32)
    probe[0] = 1.0
    f.search(probe, 1)
    nearest = f.retrieve(probe, 1)
    text = " ".join(nearest[0].text.split()[:8]) if len(nearest) else "warm"
    if f.has_ann:
        f.search_ann(probe, 1, 16)
    if f.has_bm25:
        f.search_hybrid(probe, text, 1, 16)
        f.retrieve(probe, 1, query_text=text, rank="fused")
    if f.has_graph:
        f.search_graph(probe, 1)


def _prepare(files: list[Any]) -> None:
    """Load the kernels and run ``files``' first queries on the compiled paths (which compile,
    or load from numba's cache, what they use), as the process's preparation."""
    with preparing():
        load_kernels()
        for f in files:
            with contextlib.suppress(Exception):  # a file closed or replaced meanwhile
                warm_queries(f)


def load_kernels_in_background(files: Iterable[Any] = ()) -> threading.Thread | None:
    """Start preparing the compiled kernels on a daemon thread, running ``files``' first
    queries there (None when opted out)."""
    if os.environ.get("URNA_PRELOAD_KERNELS", "") == "0":
        return None
    thread = threading.Thread(target=_prepare, args=(list(files),), name="urna-kernels",
                              daemon=True)
    thread.start()
    return thread


def prepare_resident_server(files: Iterable[Any] = ()) -> threading.Thread | None:
    """Keep freed heap memory and prepare the kernels in the background for ``files`` (see the
    module doc); the preparing thread, or None."""
    keep_freed_memory()
    return load_kernels_in_background(files)
