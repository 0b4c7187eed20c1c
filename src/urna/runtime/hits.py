"""Result types: SearchHit, RetrieveHit and the per-search envelope (03-runtime §6).

Fields and values as the reference fills them: ``score`` is always the exact cosine and
``score_type`` is ``"cosine"`` on the reference's paths. A ``rank="fused"`` search (beyond the
reference) keeps ``score`` the cosine, sets ``score_type`` to ``"fused"`` (the fused score
orders the list) and fills the additive ``lexical_score`` / ``fused_score``; ``to_dict`` leaves
them out while they are None, so a cosine-ranked hit's dict is the reference's.
``citation_id`` is ``urna://<content_hash>/<chunk_id>``, spans are the ones after the blob
overlay. Every search returns one :class:`SearchResult`: a sequence of hits that behaves as
the reference binding's plain list (``len``, iteration, indexing, slicing, ``== [hit, ...]``)
and also carries how it was found (index_type, recall, truncated, timing, explain).
``truncated`` is the reference's ``k < n`` (more chunks exist than were asked for), never a
statement about the candidate count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, TypeVar

FULL_PRECISION = "full_precision"
STORED_PRECISION = "stored_precision"
DISCLOSURE = {FULL_PRECISION: "real cosine", STORED_PRECISION: "real cosine at stored precision"}


def rerank_source(dtype: str) -> str:
    """The precision marker of a dtype (§6.4): float32 is full precision, the rest stored."""
    return FULL_PRECISION if dtype == "float32" else STORED_PRECISION


_OPTIONAL_FIELDS = ("lexical_score", "fused_score", "metadata")


def _plain(hit: Any) -> dict[str, Any]:
    """A hit's fields in declared order; the fused ones only when set and ``metadata`` only when
    the file has a metadata section (JSON-ready: datetimes as ISO strings). The other fields
    are scalars, so no deep copy is needed (``asdict`` is ~10x slower)."""
    out = {n: v for n in hit.__slots__ if (v := getattr(hit, n)) is not None
           or n not in _OPTIONAL_FIELDS}
    meta = out.get("metadata")
    if meta is not None:
        out["metadata"] = {k: _json_cell(v) for k, v in meta.items()}
    return out


def _json_cell(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat().replace("+00:00", "Z")
    return list(v) if isinstance(v, list) else v  # a copy, as asdict gave


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked chunk with its real cosine score and citation."""

    chunk_id: str
    score: float
    score_type: str
    source_uri: str
    offset_start: int
    offset_end: int
    embedding_model: str
    index_type: str
    reranked: bool
    file_hash: str
    content_hash: str
    citation_id: str
    lexical_score: float | None = None  # BM25 score, set by rank="fused" only
    fused_score: float | None = None    # the score that ordered a fused list
    # The chunk's row of section 0x18 (null keys left out); None when the file has none.
    metadata: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The hit as a plain dict (field order as declared; fused fields only when set,
        ``metadata`` only when present)."""
        return _plain(self)


@dataclass(frozen=True, slots=True)
class RetrieveHit:
    """A retrieve() hit: a SearchHit's identity plus the stored text and precision marker."""

    chunk_id: str
    citation_id: str
    content_hash: str
    file_hash: str
    offset_start: int
    offset_end: int
    rerank_source: str
    score: float
    score_type: str
    source_uri: str
    text: str
    lexical_score: float | None = None
    fused_score: float | None = None
    metadata: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The hit as a plain dict (field order as declared; fused fields only when set,
        ``metadata`` only when present)."""
        return _plain(self)


@dataclass(frozen=True, slots=True)
class SearchExplain:
    """How a search produced its candidates (computed per call, never stored)."""

    route: str
    exact_candidates: int = 0
    ann_candidates: int = 0
    bm25_candidates: int = 0
    graph_candidates: int = 0
    fusion_mode: str = "none"
    rerank_source: str = FULL_PRECISION
    recall_estimate: float = 1.0
    # With where=: {"path": "exact-filtered"|"hnsw-filtered"|..., "selectivity", "matches"}
    filter: dict[str, Any] | None = None


HitT = TypeVar("HitT", bound="SearchHit | RetrieveHit")


class SearchResult(list[HitT]):
    """Ranked hits that are a list (as the reference binding returns), plus the envelope of
    how they were found.

    ``candidate_budget`` is set by routed queries only: the per-source candidate budget the
    route asked for (``min(candidates, n)``), which ``ask --disclose explain`` prints.
    Equality, slicing and ``json.dumps`` are the list's: the envelope never enters them.
    """

    def __init__(self, hits: Iterable[HitT], index_type: str, recall: float, truncated: bool,
                 k_requested: int, query_time_ms: float, explain: SearchExplain,
                 space: str | None = None,
                 candidate_budget: dict[str, int] | None = None) -> None:
        super().__init__(hits)
        self.index_type, self.recall, self.truncated = index_type, recall, truncated
        self.k_requested, self.query_time_ms, self.explain = k_requested, query_time_ms, explain
        self.space, self.candidate_budget = space, candidate_budget

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (Ray actors) with its envelope
        return (SearchResult, (list(self), self.index_type, self.recall, self.truncated,
                               self.k_requested, self.query_time_ms, self.explain, self.space,
                               self.candidate_budget))

    @property
    def hits(self) -> list[HitT]:
        """The hits as a plain list."""
        return list(self)

    # -- the envelope -------------------------------------------------------------------

    @property
    def k_returned(self) -> int:
        """Number of hits returned."""
        return len(self)

    @property
    def route(self) -> str:
        """The path that produced the candidates (``explain.route``)."""
        return self.explain.route

    @property
    def disclosure(self) -> str:
        """The ask/explain wording of the rerank precision (``real cosine`` ...)."""
        return DISCLOSURE.get(self.explain.rerank_source, self.explain.rerank_source)

    def with_hits(self, hits: list[Any]) -> SearchResult:
        """The same envelope over other hits (retrieve's RetrieveHits, a catalog's merge)."""
        return SearchResult(hits, self.index_type, self.recall, self.truncated,
                            self.k_requested, self.query_time_ms, self.explain, self.space,
                            self.candidate_budget)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recall NaN becomes None)."""
        ex = asdict(self.explain)
        if ex["filter"] is None:  # the envelope without where= stays as it was
            del ex["filter"]
        if math.isnan(ex["recall_estimate"]):
            ex["recall_estimate"] = None
        out: dict[str, Any] = {}
        if self.space is not None:
            out["space"] = self.space
        out.update({
            "index_type": self.index_type,
            "recall": None if math.isnan(self.recall) else self.recall,
            "truncated": self.truncated, "k_requested": self.k_requested,
            "k_returned": self.k_returned, "query_time_ms": self.query_time_ms,
            "explain": ex, "hits": [h.to_dict() for h in self],
        })
        return out
