"""`urna eval` on a tiny real corpus: the table, --json for programs, usage and input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_runner import invoke
from helpers.tiny_corpus import DOCS, build_tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("evalcli") / "tiny.urna")


@pytest.fixture()
def queries(tmp_path: Path) -> Path:
    p = tmp_path / "q.jsonl"
    p.write_text("".join(json.dumps({"id": uri, "text": parts[0], "relevant": [uri]}) + "\n"
                         for uri, parts in DOCS.items()), encoding="utf-8")
    return p


def run(*args: object):
    return invoke([str(a) for a in args])


def test_table(tiny: Path, queries: Path) -> None:
    res = run("eval", tiny, "--queries", queries, "-k", 3)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "5 judged queries of 5, judged per document"
    assert lines[1].split() == ["mode", "nDCG@3", "MRR@3", "R@1", "R@3", "R@100", "ms/query"]
    assert [ln.split()[0] for ln in lines[2:]] == ["cosine", "bm25", "hybrid", "fused"]
    for ln in lines[2:]:
        assert ln.split()[1:6] == ["1.000"] * 5


def test_json_and_mode_selection(tiny: Path, queries: Path) -> None:
    res = run("eval", tiny, "--queries", queries, "--mode", "fused", "--rank", "cosine", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["k"], doc["level"], doc["n_queries"], doc["n_judged"]) == (10, "document", 5, 5)
    assert [m["mode"] for m in doc["modes"]] == ["fused", "cosine"]
    assert set(doc["modes"][0]) == {"mode", "ndcg", "mrr", "recall_1", "recall_k", "recall_100",
                                    "ms_per_query"}
    assert doc["modes"][0]["mrr"] == 1.0


def test_beir_form(tiny: Path, tmp_path: Path) -> None:
    q = tmp_path / "queries.jsonl"
    q.write_text(json.dumps({"_id": "q1", "text": DOCS["doc://rust"][0]}) + "\n", encoding="utf-8")
    qrels = tmp_path / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tdoc://rust\t1\n", encoding="utf-8")
    res = run("eval", tiny, "--queries", q, "--qrels", qrels, "--mode", "bm25", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["modes"][0]["recall_1"] == 1.0


def test_bad_input_is_one_error_line(tiny: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    res = run("eval", tiny, "--queries", bad)
    assert res.exit_code == 1
    assert res.output.strip().startswith("Error: InvalidInput: ")
    assert run("eval", tiny, "--queries", bad, "--mode", "best").exit_code == 2
    assert run("eval", tiny).exit_code == 2
