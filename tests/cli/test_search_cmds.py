"""CLI engine verbs (04-surface §2.2-2.3), run in-process (``helpers.cli_runner``), against
exact text.

stats prints the reference's aligned labels (incl. the ``supports_bm25:`` quirk, spaces and
mrl lines); the search family prints the shared block with the reference's hit line and a
``--json`` variant that is one JSON document; bad input exits 1 with one error line; media
lists and exports hash-checked blobs; benchmark prints the reference's pass headers.
"""

from __future__ import annotations

import json

import pytest

from helpers.cli_runner import invoke
from helpers.vectors import REF, expected


def run(*args: str):
    return invoke([str(a) for a in args])


def _query(name: str) -> str:
    return json.dumps(expected()[name]["queries"][0]["vector"])


def test_stats_lines() -> None:
    res = run("stats", REF / "quickstart-spaces.urna")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    exp = expected()["quickstart-spaces.urna"]
    assert lines[1] == "size:         20456 bytes (0.02 MB)"
    assert lines[2:5] == ["chunks:       12", "embeddings:   12", "dim:          256"]
    assert "dtype:        float32" in lines and "metric:       ip" in lines
    assert "supports_bm25:false" in lines and "supports_ann: false" in lines
    assert "  0x22 space_embeddings         encoding=float16  384 bytes" in lines
    assert "spaces:       2" in lines
    assert ("  vision                   dim=32    dtype=float32  n=12      model_hash=sha256:"
            + "1" * 64) in lines
    assert lines[-2:] == [f"file_hash:    {exp['file_hash']}",
                          f"content_hash: {exp['content_hash']}"]
    mrl = run("stats", REF / "quickstart-mrl.urna").output.splitlines()
    assert mrl[5:7] == ["mrl_dim:      128 (prefix of 256)", "full_dim:     256"]
    doc = json.loads(run("stats", REF / "quickstart-mrl.urna", "--json").output)
    assert (doc["dim"], doc["mrl_dim"], doc["full_dim"]) == (128, 128, 256)


def test_search_block_and_hit_line() -> None:
    name = "quickstart-exact.urna"
    res = run("search", REF / name, _query(name), "-k", "2")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[:5] == ["index_type:   exact", "recall:       1", "truncated:    true",
                         "k_requested:  2", "k_returned:   2"]
    assert lines[5].startswith("query_time:   ") and lines[5].endswith(" ms")
    assert lines[6] == "hits:"
    want = expected()[name]["queries"][0]["search"][0]
    assert lines[7] == (
        f"  [  1] chunk_id={want['chunk_id']} score={want['score']:.6f} score_type=cosine "
        f"source_uri={want['source_uri']} offset={want['offset_start']}-{want['offset_end']} "
        f"model={want['embedding_model']} index_type=exact reranked=false "
        f"file_hash={want['file_hash']} content_hash={want['content_hash']} "
        f"citation_id={want['citation_id']}")


def test_search_json_is_one_document() -> None:
    name = "synthetic-hybrid.urna"
    res = run("search-ann", REF / name, _query(name), "-k", "5", "--ef", "32", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["index_type"] == "hnsw" and doc["recall"] is None and doc["k_returned"] == 5
    want = expected()[name]["queries"][0]["search_ann_ef32"]
    assert [h["chunk_id"] for h in doc["hits"]] == [w["chunk_id"] for w in want]


def test_graph_and_space_verbs() -> None:
    name = "quickstart-graph.urna"
    res = run("search-graph", REF / name, _query(name), "-k", "3", "--hops", "2")
    assert res.exit_code == 0 and res.output.splitlines()[:2] == [
        "index_type:   graph", "recall:       (not computed; rerank guarantees real cosine)"]
    res = run("search-space", REF / "quickstart-spaces.urna", json.dumps([1.0] + [0.0] * 31),
              "--space", "vision", "-k", "3")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:3] == ["space:        vision", "index_type:   space",
                                           "recall:       1"]


@pytest.mark.parametrize("args, text", [
    (["search", REF / "quickstart-exact.urna", "[1, 2"], "Error: invalid query JSON: "),
    (["search", REF / "quickstart-exact.urna", "[1, 2]"],
     "Error: DimensionMismatch: dimension mismatch: expected 256, got 2"),
    (["search", REF / "quickstart-exact.urna", json.dumps([1.0] * 256), "-k", "0"],
     "Error: InvalidK: invalid k: 0"),
    (["search-space", REF / "quickstart-spaces.urna", "[1, 0]", "--space", "depth"],
     "Error: SpaceNotFound: embedding space not found: depth"),
])
def test_errors_exit_1_with_one_line(args, text) -> None:
    res = run(*args)
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1].startswith(text)


def test_media_list_and_export(tmp_path) -> None:
    res = run("media", REF / "quickstart-blobs.urna", "--export", tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        "media blobs: 2 (1 inlined, 1 sidecar), inlined bytes: 1024",
        "  [0] media/blob0.bin 1024 bytes inlined",
        "  [1] https://example.invalid/b1.jpg 99 bytes sidecar",
        f"exported 1 blobs to {tmp_path / 'out'}"]
    assert (tmp_path / "out" / "blob0.bin").read_bytes() == (REF / "blob0.bin").read_bytes()
    plain = run("media", REF / "quickstart-exact.urna")
    assert plain.output == (f"no media: {REF / 'quickstart-exact.urna'} "
                            "declares no blob_refs (0x14)\n")


def test_benchmark_headers() -> None:
    res = run("benchmark", REF / "quickstart-int8_bm25.urna", "-q", "5", "-k", "3", "--ann", "50")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("Exact (5 queries, dim=256, dtype=int8, simd=")
    assert [ln.split(":")[0] for ln in lines[1:6]] == ["  mean", "  p50", "  p95", "  p99", "  qps"]
    assert float(lines[5].split()[1]) > 0
    assert lines[6] == "(no HNSW section — ANN bench skipped)"
    doc = json.loads(run("benchmark", REF / "synthetic-tiny.urna", "-q", "4", "--ann", "32",
                         "--json").output)
    assert doc["recall_ann_vs_exact"] >= 0.9 and len(doc["passes"]) == 2
    assert all(p["qps"] > 0 for p in doc["passes"])


def test_benchmark_queries_come_from_the_file_by_default() -> None:
    import numpy as np

    import urna
    from urna.runtime.benchmark import own_queries

    with urna.open(REF / "synthetic-exact.urna") as f:
        qs = own_queries(f, 6, seed=3)
        rows = f.vectors()
    # every query is one of the file's stored rows
    assert all(np.any(np.all(rows == q, axis=1)) for q in qs)


def test_benchmark_reports_the_cold_first_query_apart() -> None:
    from urna.runtime.benchmark import latency

    res = run("benchmark", REF / "synthetic-tiny.urna", "-q", "3", "--ann", "32")
    assert res.exit_code == 0, res.output
    last = res.output.splitlines()[-1]
    assert last.startswith("first query (cold, kept out of the [hot] figures): exact ")
    assert ", ann " in last
    doc = json.loads(run("benchmark", REF / "synthetic-tiny.urna", "-q", "3", "--ann", "32",
                         "--json").output)
    assert set(doc["first_query_ms"]) == {"exact", "ann"}
    assert [p["name"].endswith("[hot]") for p in doc["passes"]] == [True, True]
    # nearest-rank percentiles over the hot times only
    lat = latency("x", [4.0, 1.0, 3.0, 2.0])
    assert (lat.mean, lat.p50, lat.p95, lat.p99, lat.qps) == (2.5, 3.0, 4.0, 4.0, 400.0)
