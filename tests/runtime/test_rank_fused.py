"""``rank="fused"`` on hand-made corpora whose right order is known by construction.

Query vector e0, query text "zebra quantum harbor". Row 0 matches both (cosine 0.9 and every
query word), row 1 only by meaning (cosine 0.95, no query word), row 2 only by words
(cosine 0, every query word), rows 3.. are fillers (small cosines, no query word).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import urna
from urna.runtime.catalog import catalog_document, open_catalog, write_catalog
from urna.runtime.fused import FUSION_MODE, NO_BM25

DIM = 8
TEXT = "zebra quantum harbor"
BOTH, SEMANTIC, LEXICAL = 0, 1, 2
N_FILLERS = 11


def _unit(*parts: tuple[int, float]) -> list[float]:
    v = np.zeros(DIM)
    for axis, value in parts:
        v[axis] = value
    return (v / np.linalg.norm(v)).tolist()


def _rows() -> list[tuple[str, list[float]]]:
    rows = [
        (TEXT, _unit((0, 0.9), (1, math.sqrt(1 - 0.81)))),
        ("apple orchard blossom", _unit((0, 0.95), (2, math.sqrt(1 - 0.95 ** 2)))),
        (TEXT, _unit((3, 1.0))),
    ]
    for i in range(N_FILLERS):
        a = -0.3 + 0.6 * i / (N_FILLERS - 1)
        rows.append((f"filler number{i} words", _unit((0, a), (7, 0.1),
                                                      (4, math.sqrt(1 - a * a - 0.01)))))
    return rows


def _build(path: Path, rows: list[tuple[str, list[float]]], **kw) -> Path:
    chunks = [{"canonical_text": t, "source_uri": f"doc{i}.txt", "byte_start": 0,
               "byte_end": len(t), "embedding": e} for i, (t, e) in enumerate(rows)]
    urna.build(path, "hand-made", DIM, "hand/1", "sha256:" + "1" * 64, chunks, **kw)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fused")
    rows = _rows()
    return {"bm25": _build(root / "bm25.urna", rows, with_bm25=True),
            "plain": _build(root / "plain.urna", rows, with_bm25=False),
            "graph": _build(root / "graph.urna", rows, with_bm25=True, with_graph=True,
                            graph_top_m=4)}


Q = np.asarray(_unit((0, 1.0)), dtype=np.float32)


def _rows_of(f, hits) -> list[int]:
    index = {c: i for i, c in enumerate(f.chunk_ids())}
    return [index[h.chunk_id] for h in hits]


def test_both_signals_rank_first_and_words_alone_beat_the_fillers(files) -> None:
    with urna.open(files["bm25"]) as f:
        cosine = f.search_hybrid(Q, TEXT, 5, 64)
        fused = f.search_hybrid(Q, TEXT, 5, 64, rank="fused")
        assert _rows_of(f, cosine)[0] == SEMANTIC  # the reference's order: cosine only
        got = _rows_of(f, fused)
        assert got[0] == BOTH
        assert set(got[:3]) == {BOTH, SEMANTIC, LEXICAL}
        assert LEXICAL not in _rows_of(f, cosine)  # cosine 0: below the fillers


def test_fused_hits_keep_the_exact_cosine_and_carry_the_evidence(files) -> None:
    with urna.open(files["bm25"]) as f:
        exact = {h.chunk_id: h.score for h in f.search(Q, f.n_embeddings)}
        fused = f.search_hybrid(Q, TEXT, 6, 64, rank="fused")
        assert fused.explain.fusion_mode == FUSION_MODE
        for h in fused:
            assert h.score == exact[h.chunk_id]
            assert h.score_type == "fused"
            assert h.fused_score is not None and h.lexical_score is not None
            assert set(h.to_dict()) >= {"lexical_score", "fused_score"}
        by_row = dict(zip(_rows_of(f, fused), fused, strict=True))
        assert by_row[BOTH].lexical_score == by_row[LEXICAL].lexical_score > 0
        assert by_row[SEMANTIC].lexical_score == 0.0
        assert [h.fused_score for h in fused] == sorted((h.fused_score for h in fused),
                                                        reverse=True)


def test_cosine_rank_is_the_reference_order_and_dict(files) -> None:
    with urna.open(files["bm25"]) as f:
        default = f.search_hybrid(Q, TEXT, 5, 64)
        assert f.search_hybrid(Q, TEXT, 5, 64, rank="cosine") == default
        assert all(h.score_type == "cosine" and h.fused_score is None for h in default)
        assert all(set(h.to_dict()).isdisjoint({"lexical_score", "fused_score"})
                   for h in default)
        assert default.explain.fusion_mode == "rrf"


def test_words_alone_decide_when_the_vectors_are_flat(files) -> None:
    flat = np.asarray(_unit((7, 1.0)), dtype=np.float32)  # fillers 0.1, the rest 0
    with urna.open(files["bm25"]) as f:
        assert set(_rows_of(f, f.search_hybrid(flat, TEXT, 2, 64))).isdisjoint({0, 2})
        assert _rows_of(f, f.search_hybrid(flat, TEXT, 2, 64, rank="fused")) == [BOTH, LEXICAL]


def test_meaning_alone_keeps_the_cosine_order(files) -> None:
    with urna.open(files["bm25"]) as f:
        cosine = f.search_hybrid(Q, "xylophone", 6, 64)
        fused = f.search_hybrid(Q, "xylophone", 6, 64, rank="fused")
        assert _rows_of(f, fused) == _rows_of(f, cosine)
        assert all(h.lexical_score == 0.0 for h in fused)


def test_retrieve_and_routed_take_the_rank(files) -> None:
    with urna.open(files["bm25"]) as f:
        hits = f.retrieve(Q, 3, query_text=TEXT, rank="fused")
        assert _rows_of(f, hits)[0] == BOTH and hits[0].text == TEXT
        assert hits[0].score_type == "fused" and hits[0].fused_score is not None
        routed = f.search_routed(Q, 3, query_text=TEXT, rank="fused")
        assert _rows_of(f, routed) == _rows_of(f, hits)


def test_other_forms_of_the_query_words_count_as_lexical_evidence(files) -> None:
    plural = "zebras quantum harbors"  # the rows hold "zebra" and "harbor"
    flat = np.asarray(_unit((7, 1.0)), dtype=np.float32)  # the vectors cannot tell
    with urna.open(files["bm25"]) as f:
        fused = f.search_hybrid(flat, plural, 4, 64, rank="fused")
        assert _rows_of(f, fused)[:2] == [BOTH, LEXICAL]
        # lexical_score stays the reference's BM25 of the row (only "quantum" matches as is)
        bm25 = {h.chunk_id: h.score for h in f.search_bm25(plural, 5)}
        assert fused[1].lexical_score == bm25[fused[1].chunk_id] > 0.0
        assert f.search_bm25("zebras harbors", 5) == []  # search_bm25 itself never stems


def test_a_file_without_bm25_falls_back_to_cosine_and_says_so(files) -> None:
    with urna.open(files["plain"]) as f:
        fused = f.retrieve(Q, 4, query_text=TEXT, rank="fused")
        cosine = f.retrieve(Q, 4, query_text=TEXT)
        assert fused == cosine
        assert fused.explain.fusion_mode == NO_BM25
        assert all(h.score_type == "cosine" and h.fused_score is None for h in fused)
        graph = f.search_graph(Q, 4, rank="fused", query_text=TEXT)
        assert graph == f.search(Q, 4)  # no graph either: exact


def test_graph_fuses_over_its_union(files) -> None:
    with urna.open(files["graph"]) as f:
        cosine = f.search_graph(Q, 3, hops=1, ef=3)
        fused = f.search_graph(Q, 3, hops=1, ef=3, rank="fused", query_text=TEXT)
        assert fused.index_type == "graph" and fused.explain.fusion_mode == FUSION_MODE
        assert _rows_of(f, cosine)[0] == SEMANTIC
        assert _rows_of(f, fused)[0] == BOTH
        assert f.search_graph(Q, 3, hops=1, ef=3, rank="cosine") == cosine


def test_an_unknown_rank_is_refused(files) -> None:
    with urna.open(files["bm25"]) as f, pytest.raises(urna.errors.InvalidInput, match="rank"):
        f.search_hybrid(Q, TEXT, 3, 64, rank="bm25")


def _catalog(root: Path, parts: list[tuple[str, list[tuple[str, list[float]]], bool]]) -> Path:
    entries = []
    for name, rows, bm25 in parts:
        p = _build(root / f"{name}.urna", rows, with_bm25=bm25)
        with urna.open(p) as f:
            entries.append({"file": p.name, "file_hash": f.file_hash,
                            "content_hash": f.content_hash, "n_chunks": f.n_embeddings,
                            "model_hash": f.model_hash, "embedding_dim": f.embedding_dim})
    path = root / "hand.catalog.json"
    write_catalog(path, catalog_document("hand", len(entries), entries))
    return path


def test_a_catalog_fuses_per_shard_and_merges_by_fused_score(tmp_path: Path) -> None:
    rows = _rows()
    # shard a: the semantic row and half the fillers; shard b: both, lexical, the rest
    a = [rows[SEMANTIC]] + rows[3:9]
    b = [rows[BOTH], rows[LEXICAL]] + rows[9:]
    with open_catalog(_catalog(tmp_path, [("a", a, True), ("b", b, True)])) as cat:
        cosine = cat.retrieve(Q, 3, query_text=TEXT)
        fused = cat.retrieve(Q, 3, query_text=TEXT, rank="fused")
    assert cosine[0].text == "apple orchard blossom"
    assert fused[0].text == TEXT and fused[0].source_uri == "doc0.txt"  # shard b's row 0
    assert all(h.score_type == "fused" for h in fused)
    assert [h.fused_score for h in fused] == sorted((h.fused_score for h in fused),
                                                    reverse=True)


def test_a_catalog_with_a_shard_without_bm25_merges_by_cosine(tmp_path: Path) -> None:
    rows = _rows()
    a = [rows[SEMANTIC]] + rows[3:9]
    b = [rows[BOTH], rows[LEXICAL]] + rows[9:]
    with open_catalog(_catalog(tmp_path, [("a", a, False), ("b", b, True)])) as cat:
        fused = cat.retrieve(Q, 4, query_text=TEXT, rank="fused")
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    assert fused[0].text == "apple orchard blossom"


@pytest.mark.parametrize("path", ["hybrid", "graph", "routed", "retrieve"])
def test_where_narrows_the_candidates_before_the_fused_order(files, path: str) -> None:
    # the filter drops BOTH: the fused order runs over the matching rows only, LEXICAL first
    where = {"source_uri": {"$ne": f"doc{BOTH}.txt"}}
    name = "graph" if path == "graph" else "bm25"
    with urna.open(files[name]) as f:
        if path == "hybrid":
            res = f.search_hybrid(Q, TEXT, 5, 64, where=where, rank="fused")
        elif path == "graph":
            res = f.search_graph(Q, 5, 2, 100, where=where, rank="fused", query_text=TEXT)
        elif path == "routed":
            res = f.search_routed(Q, 5, query_text=TEXT, where=where, rank="fused")
        else:
            res = f.retrieve(Q, 5, query_text=TEXT, where=where, rank="fused")
        got = _rows_of(f, res)
        assert BOTH not in got and len(got) == 5
        assert res.explain.fusion_mode == FUSION_MODE
        assert res.explain.filter is not None and res.explain.filter["matches"] == 2 + N_FILLERS
        assert all(h.score_type == "fused" and h.fused_score is not None for h in res)
        assert set(got[:2]) == {SEMANTIC, LEXICAL}
        cosine = f.search_hybrid(Q, TEXT, 5, 64, where=where) if path != "graph" else \
            f.search_graph(Q, 5, 2, 100, where=where)
        assert BOTH not in _rows_of(f, cosine) and LEXICAL not in _rows_of(f, cosine)


def test_query_words_side_by_side_rank_before_the_same_words_apart(tmp_path: Path) -> None:
    # rows 0 and 1: the same words (so the same BM25 and coverage) and the same vector; only
    # row 1 holds the query's two words next to each other. Row 0 wins every tie (row id).
    apart = "zebra aa bb cc dd ee ff harbor"
    together = "aa bb cc zebra harbor dd ee ff"
    same = _unit((0, 0.8), (1, 0.6))
    rows = [(apart, same), (together, same)]
    for i in range(N_FILLERS):
        a = -0.3 + 0.6 * i / (N_FILLERS - 1)
        rows.append((f"filler number{i} words", _unit((0, a), (4, math.sqrt(1 - a * a)))))
    with urna.open(_build(tmp_path / "prox.urna", rows, with_bm25=True)) as f:
        cosine = _rows_of(f, f.retrieve(Q, 3, query_text="zebra harbor"))
        fused = f.retrieve(Q, 3, query_text="zebra harbor", rank="fused")
        assert cosine[:2] == [0, 1]
        assert _rows_of(f, fused)[:2] == [1, 0]
        assert fused[0].lexical_score == fused[1].lexical_score  # BM25 alone cannot tell
        assert fused[0].score == fused[1].score
