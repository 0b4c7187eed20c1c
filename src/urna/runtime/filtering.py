"""``where=`` on an opened file: the compiled filter's row mask, computed once and cached.

``row_mask(st, where)`` compiles ``where`` against the file's metadata schema (section 0x18,
opened lazily) plus the built-in fields, evaluates it to one bool per row and keeps the result
in a small per-file LRU keyed by the canonical JSON of ``where``, so a repeated filter costs a
dictionary lookup. ``None`` (or ``{}``) means no filter: every search path then runs exactly as
without the option. The search paths (:mod:`.search`) use the mask in candidate generation.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..format.record import FrozenRecord
from .opening import OpenedFile

if TYPE_CHECKING:
    from ..index.filter import RowFields

CACHE_SIZE = 16  # distinct filters kept per open file
# When the filtered beam loses to scoring the matching rows exactly (measured with
# benchmarks/bench_filter.py, 20,000 x 384, beam 100: the beam costs ~0.4 ms at 50% but
# 1.3 ms at 10% and 9 ms at 1%, while the exact scan of the matching rows costs ~0.15 us
# a row): below 5% of the rows, or below 32 matching rows per unit of beam width.
EXACT_BELOW_SELECTIVITY = 0.05
EXACT_BELOW_MATCHES_PER_EF = 32
HNSW_FILTERED, EXACT_FILTERED = "hnsw-filtered", "exact-filtered"

_lock = threading.Lock()


class RowMask(FrozenRecord):
    """One filter evaluated on one file: the mask, the matching rows and their share (a
    slotted record, not a dataclass: every search imports this module)."""

    _fields = ("mask", "rows", "selectivity")
    __slots__ = _fields

    mask: np.ndarray  # bool, one per row
    rows: np.ndarray  # int64, the matching rows ascending
    selectivity: float

    def __init__(self, mask: np.ndarray, rows: np.ndarray, selectivity: float) -> None:
        self._set(mask, rows, selectivity)

    @property
    def matches(self) -> int:
        """Number of matching rows."""
        return int(self.rows.size)

    def explain(self, path: str) -> dict[str, Any]:
        """The ``explain.filter`` record of a search that ran ``path``."""
        return {"path": path, "selectivity": self.selectivity, "matches": self.matches}


def canonical_where(where: Mapping[str, Any]) -> str | None:
    """The cache key of a filter: its JSON with sorted keys (None when it has no JSON form)."""
    try:
        return json.dumps(where, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        return None


def row_fields(st: OpenedFile) -> RowFields:
    """The filterable columns of ``st`` (built-in fields + metadata), made once per file."""
    fields = st.__dict__.get("_row_fields")
    if fields is None:
        from ..index.filter import RowFields

        fields = RowFields([s[0] for s in st.spans], st.chunk_ids,
                           np.fromiter((s[1] for s in st.spans), np.int64, len(st.spans)),
                           np.fromiter((s[2] for s in st.spans), np.int64, len(st.spans)),
                           st.metadata)
        st.__dict__["_row_fields"] = fields
    return fields


def schema(st: OpenedFile) -> dict[str, str]:
    """``{field: type}`` of the metadata columns of ``st`` (empty without section 0x18)."""
    table = st.metadata
    return dict(table.schema) if table is not None else {}


def row_mask(st: OpenedFile, where: Mapping[str, Any] | None) -> RowMask | None:
    """The rows of ``st`` that ``where`` keeps, or None for no filter (typed FilterErrors)."""
    if where is None or (isinstance(where, Mapping) and not where):
        return None
    key = canonical_where(where) if isinstance(where, Mapping) else None
    with _lock:
        cache: OrderedDict[str, RowMask] = st.__dict__.setdefault("_filter_cache", OrderedDict())
        if key is not None and key in cache:
            cache.move_to_end(key)
            return cache[key]
    from ..index.filter import compile_filter, selectivity  # only a filtered search needs it

    compiled = compile_filter(where, schema(st))
    if compiled is None:
        return None
    mask = compiled.mask(row_fields(st))
    rows = np.flatnonzero(mask).astype(np.int64)
    result = RowMask(mask, rows, selectivity(mask))
    if key is not None:
        with _lock:
            cache[key] = result
            while len(cache) > CACHE_SIZE:
                cache.popitem(last=False)
    return result


def use_exact(fm: RowMask, width: int) -> bool:
    """Whether a filtered ANN query should scan the matching rows exactly instead."""
    return (fm.selectivity < EXACT_BELOW_SELECTIVITY
            or fm.matches < EXACT_BELOW_MATCHES_PER_EF * width)
