"""The route of a routed query and its candidate budget: decided here and nowhere else.

03-runtime §15 and 04-surface §2.6. Without query text (0.5.1) the manifest's declared
``index_type`` decides; with query text (0.5.2+) the sections the file carries decide: BM25 ->
hybrid, else HNSW -> ANN, else exact (the graph is never routed to). The default candidate
budget per path is ``max(4k, 64)``. UrnaFile.retrieve, UrnaFile.search_routed, every catalog
shard and the text verbs (through ``urna.forge.query.ask``) all take their route from here.
"""

from __future__ import annotations

from ..format.record import FrozenRecord

EXACT, HNSW, HYBRID, GRAPH = "exact", "hnsw", "hybrid", "graph"


def default_candidates(k: int) -> int:
    """The reference's default candidate budget per path: ``max(4k, 64)``."""
    return max(max(k, 0) * 4, 64)


class Route(FrozenRecord):
    """Which path a routed query takes, and with how many candidates per path.

    ``declared``: routed by the manifest (0.5.1), so the ANN beam is ``max(ef, candidates)``.
    """

    _fields = ("path", "candidates", "query_text", "declared")
    __slots__ = _fields
    __match_args__ = _fields

    path: str
    candidates: int
    query_text: str
    declared: bool

    def __init__(self, path: str, candidates: int, query_text: str,
                 declared: bool = False) -> None:
        self._set(path, candidates, query_text, declared)

    def budget(self, n: int, has_ann: bool) -> dict[str, int]:
        """Candidates asked of each source, ``min(candidates, n)`` (what ask's explain prints)."""
        c = min(self.candidates, n)
        if self.path == HYBRID:
            vec = {"exact": 0, "ann": c} if has_ann else {"exact": c, "ann": 0}
            return {**vec, "bm25": c, "graph": 0}
        if self.path == HNSW:
            return {"exact": 0, "ann": c, "bm25": 0, "graph": 0}
        if self.path == GRAPH:
            return {"exact": c, "ann": 0, "bm25": 0, "graph": 0}
        return {"exact": n, "ann": 0, "bm25": 0, "graph": 0}

    @property
    def fusion(self) -> str:
        """``rrf`` for the hybrid route, else ``none``."""
        return "rrf" if self.path == HYBRID else "none"


def choose_route(index_type: str, has_bm25: bool, has_ann: bool, k: int,
                 candidates: int | None, query_text: str | None) -> Route:
    """The route and candidate budget of one routed query (the one place that decides)."""
    cand = candidates if candidates is not None else default_candidates(k)
    if query_text is None:  # 0.5.1: the manifest's declaration decides
        path = index_type if index_type in (HNSW, HYBRID, GRAPH) else EXACT
        return Route(path, cand, "", declared=True)
    if has_bm25:  # 0.5.2: what the file carries decides
        return Route(HYBRID, cand, query_text)
    return Route(HNSW if has_ann else EXACT, cand, query_text)
