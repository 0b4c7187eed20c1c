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
from datetime import datetime
from typing import Any, TypeVar

from ..format.record import FrozenRecord

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


class _Hit(FrozenRecord):
    """A hit record: equality and hash over every field but ``metadata`` (as the dataclass
    field's ``compare=False`` had it: a metadata row never splits two equal hits)."""

    __slots__ = ()

    def _compared(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields[:-1])

    def to_dict(self) -> dict[str, Any]:
        """The hit as a plain dict (field order as declared; fused fields only when set,
        ``metadata`` only when present)."""
        return _plain(self)


# Slotted records, not dataclasses: every text question imports this module, and the three
# generated classes cost ~4 ms of a one-shot ``urna ask`` (format/record.py says why).
class SearchHit(_Hit):
    """One ranked chunk with its real cosine score and citation.

    ``lexical_score`` is the BM25 score and ``fused_score`` the score that ordered a fused
    list (``rank="fused"`` only); ``metadata`` is the chunk's row of section 0x18 (null keys
    left out), None when the file has none.
    """

    _fields = ("chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
               "embedding_model", "index_type", "reranked", "file_hash", "content_hash",
               "citation_id", "lexical_score", "fused_score", "metadata")
    __slots__ = _fields
    __match_args__ = _fields

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
    lexical_score: float | None
    fused_score: float | None
    metadata: dict[str, Any] | None

    def __init__(self, chunk_id: str, score: float, score_type: str, source_uri: str,
                 offset_start: int, offset_end: int, embedding_model: str, index_type: str,
                 reranked: bool, file_hash: str, content_hash: str, citation_id: str,
                 lexical_score: float | None = None, fused_score: float | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        self._set(chunk_id, score, score_type, source_uri, offset_start, offset_end,
                  embedding_model, index_type, reranked, file_hash, content_hash, citation_id,
                  lexical_score, fused_score, metadata)


class RetrieveHit(_Hit):
    """A retrieve() hit: a SearchHit's identity plus the stored text and precision marker."""

    _fields = ("chunk_id", "citation_id", "content_hash", "file_hash", "offset_start",
               "offset_end", "rerank_source", "score", "score_type", "source_uri", "text",
               "lexical_score", "fused_score", "metadata")
    __slots__ = _fields
    __match_args__ = _fields

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
    lexical_score: float | None
    fused_score: float | None
    metadata: dict[str, Any] | None

    def __init__(self, chunk_id: str, citation_id: str, content_hash: str, file_hash: str,
                 offset_start: int, offset_end: int, rerank_source: str, score: float,
                 score_type: str, source_uri: str, text: str,
                 lexical_score: float | None = None, fused_score: float | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        self._set(chunk_id, citation_id, content_hash, file_hash, offset_start, offset_end,
                  rerank_source, score, score_type, source_uri, text, lexical_score,
                  fused_score, metadata)


class SearchExplain(FrozenRecord):
    """How a search produced its candidates (computed per call, never stored).

    ``filter`` is set with ``where=`` only: ``{"path": "exact-filtered" | "hnsw-filtered" |
    ..., "selectivity", "matches"}``.
    """

    _fields = ("route", "exact_candidates", "ann_candidates", "bm25_candidates",
               "graph_candidates", "fusion_mode", "rerank_source", "recall_estimate", "filter")
    __slots__ = _fields
    __match_args__ = _fields

    route: str
    exact_candidates: int
    ann_candidates: int
    bm25_candidates: int
    graph_candidates: int
    fusion_mode: str
    rerank_source: str
    recall_estimate: float
    filter: dict[str, Any] | None

    def __init__(self, route: str, exact_candidates: int = 0, ann_candidates: int = 0,
                 bm25_candidates: int = 0, graph_candidates: int = 0,
                 fusion_mode: str = "none", rerank_source: str = FULL_PRECISION,
                 recall_estimate: float = 1.0, filter: dict[str, Any] | None = None) -> None:
        self._set(route, exact_candidates, ann_candidates, bm25_candidates, graph_candidates,
                  fusion_mode, rerank_source, recall_estimate, filter)

    def replace(self, **changes: Any) -> SearchExplain:
        """A copy with ``changes`` applied (what ``dataclasses.replace`` gave)."""
        return SearchExplain(**{**self.as_dict(), **changes})


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
        ex = self.explain.as_dict()
        if ex["filter"] is not None:
            ex["filter"] = dict(ex["filter"])  # a copy, as asdict gave
        else:  # the envelope without where= stays as it was
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
