"""The one result type and the one route: what every search returns and how a query is routed.

SearchResult is the reference binding's hit list (isinstance list, ``==`` a plain list,
slicing, JSON) that also says how it was found; routing (03-runtime §15, 04-surface §2.6)
is decided in ``runtime.routing`` and reported in the envelope; UrnaFile and Catalog satisfy
the Searcher protocol; ``validate(full=True)`` is the check ``urna validate`` runs.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

import urna
from helpers.cli_runner import invoke
from helpers.mutate import apply_case, load_cases
from urna.errors import SectionCountMismatch
from urna.runtime import SearchResult
from urna.runtime.routing import choose_route, default_candidates
from urna.runtime.searcher import Searcher, search_by_mode

REF = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1"
HYBRID = REF / "quickstart-hybrid.urna"  # 12 chunks, HNSW + BM25


def _q(dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_a_result_is_the_reference_list_of_hits() -> None:
    with urna.open(HYBRID) as f:
        q = _q(f.embedding_dim)
        res = f.search(q, 5)
        hits = list(res)
        assert isinstance(res, list) and isinstance(res, SearchResult)
        assert res == hits and hits == res and len(res) == 5
        assert res[0] is hits[0] and res[1:3] == hits[1:3] and res[-1] == hits[-1]
        assert [h.chunk_id for h in res] == [h.chunk_id for h in hits]
        assert json.loads(json.dumps([h.to_dict() for h in res])) == [h.to_dict() for h in hits]
        assert f.search(q, 5) == res  # equality is the hits', never the timing
        again = pickle.loads(pickle.dumps(res))
        assert again == res and again.index_type == "exact" and again.explain == res.explain


def test_every_search_carries_its_envelope() -> None:
    with urna.open(HYBRID) as f:
        q = _q(f.embedding_dim, 1)
        exact = f.search(q, 3)
        assert (exact.index_type, exact.recall, exact.truncated, exact.k_requested,
                exact.k_returned) == ("exact", 1.0, True, 3, 3)
        assert exact.explain.exact_candidates == 12 and exact.candidate_budget is None
        ann = f.search_ann(q, 3, 16)
        assert ann.index_type == "hnsw" and math.isnan(ann.recall) and ann.explain.ann_candidates
        assert f.search(q, 12).truncated is False and f.search(q, 13).truncated is False
        for r in f.search_batch(np.stack([q, -q]), 4):
            assert isinstance(r, SearchResult) and r.index_type == "exact" and len(r) == 4
        bm25 = f.search_bm25("offline", 2)
        assert bm25.index_type == "bm25" and {h.score_type for h in bm25} == {"bm25"}


def test_retrieve_returns_the_envelope_over_retrieve_hits() -> None:
    with urna.open(HYBRID) as f:
        q = _q(f.embedding_dim, 2)
        res = f.retrieve(q, 2, query_text="offline")
        assert res.route == "hybrid" and res.explain.fusion_mode == "rrf"
        assert res.candidate_budget == {"exact": 0, "ann": 12, "bm25": 12, "graph": 0}
        assert [h.text for h in res] == [f.cite(h.citation_id).text for h in res]
        assert res == [h for h in res] and res.disclosure == "real cosine"
        # the same route, returning SearchHits
        routed = f.search_routed(q, 2, query_text="offline")
        assert [h.chunk_id for h in routed] == [h.chunk_id for h in res]
        assert routed.candidate_budget == res.candidate_budget


@pytest.mark.parametrize("args, path, candidates, declared", [
    (("exact", False, False, 5, None, None), "exact", 64, True),
    (("hnsw", False, True, 5, None, None), "hnsw", 64, True),
    (("hybrid", True, True, 20, None, None), "hybrid", 80, True),
    (("graph", False, False, 5, 7, None), "graph", 7, True),
    (("hnsw", True, True, 5, None, "text"), "hybrid", 64, False),   # sections decide (0.5.2)
    (("hybrid", False, True, 5, None, "text"), "hnsw", 64, False),
    (("graph", False, False, 5, None, "text"), "exact", 64, False),  # the graph never routes
])
def test_the_route_is_decided_in_one_place(args, path: str, candidates: int,
                                           declared: bool) -> None:
    route = choose_route(*args)
    assert (route.path, route.candidates, route.declared) == (path, candidates, declared)
    assert [default_candidates(k) for k in (1, 16, 17, 100)] == [64, 64, 68, 400]


def test_route_budget_is_capped_by_the_corpus() -> None:
    route = choose_route("hnsw", True, False, 2, 100, "q")
    assert route.budget(12, has_ann=False) == {"exact": 12, "ann": 0, "bm25": 12, "graph": 0}
    assert choose_route("exact", False, False, 2, None, "q").budget(12, False) == \
        {"exact": 12, "ann": 0, "bm25": 0, "graph": 0}


def test_search_by_mode_runs_the_named_path() -> None:
    with urna.open(HYBRID) as f:
        q = _q(f.embedding_dim, 3)
        assert search_by_mode(f, "exact", q, 3) == f.search(q, 3)
        assert search_by_mode(f, "ann", q, 3, ef=50) == f.search_ann(q, 3, 50)
        assert search_by_mode(f, "hybrid", q, 3, text="offline") == \
            f.search_hybrid(q, "offline", 3, 64)
        assert search_by_mode(f, "graph", q, 3).index_type == "exact"  # no graph: exact
        with pytest.raises(ValueError, match="mode must be one of"):
            search_by_mode(f, "fused", q, 3)


def test_a_file_is_a_searcher() -> None:
    with urna.open(HYBRID) as f:
        assert isinstance(f, Searcher)


def test_full_validate_is_the_cli_check(tmp_path: Path) -> None:

    case = load_cases()["quickstart-blobs__s02_count_huge_fixed"]
    data = apply_case(case)
    f = urna.UrnaFile.from_bytes(data)
    assert f.validate() is True  # the reference binding's check passes this file
    with pytest.raises(SectionCountMismatch) as err:
        f.validate(full=True)
    bad = tmp_path / "bad.urna"
    bad.write_bytes(data)
    res = invoke(["validate", str(bad)])
    assert res.exit_code == 1
    assert res.output.strip() == f"Error: SectionCountMismatch: {err.value}"


def test_hit_and_explain_records_keep_the_dataclass_behaviour() -> None:
    from urna.runtime.hits import RetrieveHit, SearchExplain, SearchHit

    args = ("c1", 0.5, "cosine", "doc.txt", 0, 4, "m", "exact", False, "fh", "ch", "urna://ch/c1")
    hit = SearchHit(*args, metadata={"lang": "en"})
    same = SearchHit(*args, metadata={"lang": "pt"})  # metadata never splits equal hits
    assert hit == same and hash(hit) == hash(same) and hit != SearchHit(*args, lexical_score=1.0)
    assert hit != RetrieveHit("c1", "urna://ch/c1", "ch", "fh", 0, 4, "full_precision", 0.5,
                              "cosine", "doc.txt", "text")
    assert repr(SearchHit(*args)) == (
        "SearchHit(chunk_id='c1', score=0.5, score_type='cosine', source_uri='doc.txt', "
        "offset_start=0, offset_end=4, embedding_model='m', index_type='exact', "
        "reranked=False, file_hash='fh', content_hash='ch', citation_id='urna://ch/c1', "
        "lexical_score=None, fused_score=None, metadata=None)")
    with pytest.raises(AttributeError):
        hit.score = 1.0  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(hit))
    assert again == hit and again.metadata == {"lang": "en"}
    assert list(hit.to_dict()) == ["chunk_id", "score", "score_type", "source_uri",
                                   "offset_start", "offset_end", "embedding_model",
                                   "index_type", "reranked", "file_hash", "content_hash",
                                   "citation_id", "metadata"]
    explain = SearchExplain("hybrid", ann_candidates=3, filter={"path": "exact-filtered"})
    fused = explain.replace(fusion_mode="gated-z")
    assert (fused.route, fused.ann_candidates, fused.fusion_mode) == ("hybrid", 3, "gated-z")
    assert explain.fusion_mode == "none" and fused != explain
    assert fused == SearchExplain("hybrid", 0, 3, 0, 0, "gated-z", "full_precision", 1.0,
                                  {"path": "exact-filtered"})
    doc = SearchResult([], "hybrid", 1.0, False, 1, 0.0, explain).to_dict()
    doc["explain"]["filter"]["path"] = "changed"  # the JSON form is a copy of the envelope
    assert explain.filter == {"path": "exact-filtered"}
