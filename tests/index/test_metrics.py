"""index.metrics against values worked out by hand (binary and graded relevance)."""

from __future__ import annotations

import math

import pytest

from urna.index.metrics import mean, mrr_at_k, ndcg_at_k, recall_at_k

L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)


def test_ndcg_binary() -> None:
    # the one relevant doc at rank 2: DCG 1/log2(3), ideal 1/log2(2)
    assert ndcg_at_k(["a", "b", "c"], {"b": 1}, 10) == pytest.approx(1 / L3)
    assert ndcg_at_k(["b", "a"], {"b": 1}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a", "c"], {"b": 1}, 10) == 0.0


def test_ndcg_graded_with_two_relevant() -> None:
    # ranks: x(0) y(2) z(1); ideal order y(2) z(1)
    got = ndcg_at_k(["x", "y", "z"], {"y": 2, "z": 1, "w": 0}, 10)
    dcg = 2 / L3 + 1 / L4
    idcg = 2 / L2 + 1 / L3
    assert got == pytest.approx(dcg / idcg)


def test_ndcg_cut_at_k() -> None:
    assert ndcg_at_k(["a", "b", "c"], {"c": 1}, 2) == 0.0
    # ideal is also cut at k: three relevant docs, k=2
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1, "c": 1}, 2) == pytest.approx(1.0)


def test_mrr() -> None:
    assert mrr_at_k(["a", "b", "c"], {"c": 1, "b": 1}, 10) == pytest.approx(0.5)
    assert mrr_at_k(["a", "b", "c"], {"c": 1}, 2) == 0.0
    assert mrr_at_k(["c"], {"c": 3}, 1) == 1.0


def test_recall_with_several_relevant() -> None:
    rel = {"a": 1, "b": 1, "c": 1, "d": 1}
    assert recall_at_k(["a", "x", "c", "y", "b"], rel, 3) == pytest.approx(0.5)
    assert recall_at_k(["a", "x", "c", "y", "b"], rel, 100) == pytest.approx(0.75)
    assert recall_at_k([], rel, 10) == 0.0


def test_queries_without_relevant_docs_are_left_out_of_the_mean() -> None:
    for fn in (ndcg_at_k, mrr_at_k, recall_at_k):
        assert math.isnan(fn(["a"], {}, 10))
        assert math.isnan(fn(["a"], {"a": 0}, 10))
    assert mean([1.0, float("nan"), 0.0]) == 0.5
    assert math.isnan(mean([float("nan")]))
    assert math.isnan(mean([]))
