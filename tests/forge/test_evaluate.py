"""forge.evaluate on a tiny real corpus (potion embeddings, BM25 + HNSW): query loading in
both forms, the chunk / document matching rule and each mode's metrics where the right
answer is known by construction (a query equal to a stored text finds it first)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import urna
from helpers.tiny_corpus import DOCS, build_tiny
from urna.errors import InvalidInput
from urna.forge.evaluate import (
    MODES,
    EvalQuery,
    evaluate,
    evaluate_path,
    judging_level,
    load_queries,
    ranked_keys,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("eval") / "tiny.urna")


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_urna_jsonl_lists_and_grades(tmp_path: Path) -> None:
    q = _write(tmp_path / "q.jsonl", [
        {"id": "a", "text": "tides", "relevant": ["doc://tides"]},
        {"id": 7, "text": "bread", "relevant": {"doc://bread": 2, "doc://cats": 0}},
    ])
    got = load_queries(q)
    assert got == [EvalQuery("a", "tides", {"doc://tides": 1.0}),
                   EvalQuery("7", "bread", {"doc://bread": 2.0, "doc://cats": 0.0})]


def test_beir_queries_and_qrels_directory(tmp_path: Path) -> None:
    q = _write(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "tides"},
                                            {"_id": "q2", "text": "not judged"}])
    qrels = tmp_path / "qrels"
    qrels.mkdir()
    (qrels / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc://tides\t1\n"
                                    "q1\tdoc://rust\t0\n", encoding="utf-8")
    assert load_queries(q, qrels) == [EvalQuery("q1", "tides",
                                                {"doc://tides": 1.0, "doc://rust": 0.0})]
    assert load_queries(q, qrels / "test.tsv") == load_queries(q, qrels)


@pytest.mark.parametrize("line", [
    "not json", "[1, 2]", '{"id": "a", "relevant": []}', '{"id": "a", "text": "x"}',
    '{"id": "a", "text": "x", "relevant": "doc"}', '{"id": "a", "text": "x", "relevant": [3]}',
    '{"id": "a", "text": "x", "relevant": {"d": true}}',
    '{"id": true, "text": "x", "relevant": []}',
])
def test_bad_query_lines_are_typed_errors(tmp_path: Path, line: str) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="q.jsonl:1"):
        load_queries(p)


def test_bad_qrels_are_typed_errors(tmp_path: Path) -> None:
    q = _write(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "t"}])
    for body in ("q1\tdoc\n", "q1\tdoc\tmany\n", "q1\tdoc\tnan\n"):
        (tmp_path / "r.tsv").write_text(body, encoding="utf-8")
        with pytest.raises(InvalidInput, match="r.tsv:1"):
            load_queries(q, tmp_path / "r.tsv")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInput, match="no qrels"):
        load_queries(q, empty)


def test_matching_level_and_document_aggregation(tiny: Path) -> None:
    with urna.open(tiny) as f:
        ids = f.chunk_ids()
        assert judging_level(ids, [EvalQuery("q", "t", {ids[0]: 1.0})]) == "chunk"
        assert judging_level(ids, [EvalQuery("q", "t", {"doc://cats": 1.0})]) == "document"
        hits = f.search_bm25("kitten cats purr", 10)
        assert [h.source_uri for h in hits[:2]] == ["doc://cats", "doc://cats"]
        assert ranked_keys(hits, "document")[0] == "doc://cats"
        assert ranked_keys(hits, "document").count("doc://cats") == 1
        assert ranked_keys(hits, "chunk") == [h.chunk_id for h in hits]


def test_exact_texts_are_found_first_in_every_mode(tiny: Path) -> None:
    queries = [EvalQuery(uri, parts[0], {uri: 1.0}) for uri, parts in DOCS.items()]
    with urna.open(tiny) as f:
        report = evaluate(f, queries, k=3)
    assert [m.mode for m in report.modes] == list(MODES)
    assert (report.level, report.n_queries, report.n_judged) == ("document", 5, 5)
    for m in report.modes:
        assert (m.ndcg, m.mrr, m.recall_1, m.recall_k, m.recall_100) == (1.0, 1.0, 1.0, 1.0, 1.0)
        assert m.ms_per_query >= 0.0


def test_chunk_level_and_unjudged_queries(tiny: Path) -> None:
    with urna.open(tiny) as f:
        ids = f.chunk_ids()
        second_cat = ids[1]  # the kitten chunk
        queries = [EvalQuery("k", DOCS["doc://cats"][1], {second_cat: 1.0}),
                   EvalQuery("none", "anything", {})]
        report = evaluate(f, queries, k=10, modes=["cosine", "fused"])
    assert report.level == "chunk" and report.n_judged == 1
    assert [m.mode for m in report.modes] == ["cosine", "fused"]
    assert all(m.mrr == 1.0 for m in report.modes)
    assert not math.isnan(report.modes[0].ndcg)
    assert report.to_dict()["modes"][0]["ndcg"] == 1.0


def test_bad_arguments(tiny: Path, tmp_path: Path) -> None:
    q = _write(tmp_path / "q.jsonl", [{"id": "a", "text": "tides", "relevant": ["doc://tides"]}])
    with pytest.raises(InvalidInput, match="unknown mode"):
        evaluate_path(tiny, q, modes=["best"])
    with pytest.raises(InvalidInput, match="k must be"):
        evaluate_path(tiny, q, k=0)
    assert evaluate_path(tiny, q, modes=["bm25"]).modes[0].mrr == 1.0


def test_fused_mode_is_the_runtime_fused_rank(tiny: Path) -> None:
    # "siblings" is a word of the kitten chunk only: BM25 covers the whole query there
    with urna.open(tiny) as f:
        kitten = f.chunk_ids()[1]
        report = evaluate(f, [EvalQuery("s", "siblings", {kitten: 1.0})], k=3,
                          modes=["bm25", "fused"])
    assert [(m.mode, m.mrr) for m in report.modes] == [("bm25", 1.0), ("fused", 1.0)]
