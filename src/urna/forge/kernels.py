"""Telling the user why a first run is slow: numba compiling the graph kernels (#21 item 3).

Building the HNSW index or the graph section of more rows than
``hnsw_small_build.SMALL_BUILD_ROWS`` compiles ``urna.index._hnsw_kernels`` on first use
(about fifteen seconds here); numba then keeps the machine code in its cache and later runs
load it in well under a second. A smaller graph is built without numba
(``index.hnsw_small_build``), and queries start on the numba-free beam, so neither compiles.
Whether a kernel is cached is read from numba's own cache index for that function; if that
cannot be read, nothing is said (a missing line is better than a false one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: a query's start-up never imports the spec (#20)
    from urna.forge.progress import Progress
    from urna.forge.spec import CorpusSpec

MESSAGE = "[urna] compiling search kernels, first run only (numba caches them for later runs)"
_announced = False


def is_cached(dispatcher: Any) -> bool:
    """True unless numba's cache index for ``dispatcher`` is readably empty or stale."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # not a numba dispatcher, no cache, or another numba version
        return True


def build_kernels(spec: CorpusSpec, n: int) -> list[Any]:
    """The compiled kernels building ``spec``'s file of ``n`` rows calls (none without HNSW or
    graph, nor for a graph small enough to build without them: ``index.hnsw.compiled_build``)."""
    from urna.build_options import PRESETS

    storage = PRESETS.get(spec.build.preset)
    hnsw = storage is not None and storage.with_hnsw
    if not (hnsw or spec.build.with_graph):
        return []
    from urna.index.hnsw import compiled_build

    if not compiled_build(n):
        return []
    from urna.index import _hnsw_dist, _hnsw_kernels

    if not _hnsw_dist.HAVE_NUMBA:
        return []
    return [_hnsw_kernels.build_graph]


def announce(kernels: list[Any], progress: Progress) -> None:
    """Print ``MESSAGE`` once per process when one of ``kernels`` is not compiled yet."""
    global _announced
    if not _announced and not all(is_cached(k) for k in kernels):
        _announced = True
        progress.note(MESSAGE)


def announce_compile(spec: CorpusSpec, progress: Progress, n: int) -> None:
    """``announce`` for the kernels a build of ``spec``'s file of ``n`` rows compiles."""
    announce(build_kernels(spec, n), progress)


def file_kernels(manifest: dict[str, Any]) -> list[Any]:
    """The compiled kernels a query of a file with this manifest compiles on its first call.

    None: a process walks HNSW graphs with the numba-free beam (``urna.index.hnsw_beam``)
    until it has spent ``index.kernel_rent.KERNEL_RENT_SECONDS`` in them, so a CLI query
    never compiles (nor imports) the kernels, and a server that switches later is past its
    first answers.
    """
    return []
