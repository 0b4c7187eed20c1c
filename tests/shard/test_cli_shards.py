"""The CLI over shards: ``urna build --shards``, and ask / retrieve / search-text on a catalog.

A catalog path goes where a file path goes; the answers equal the single file's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_runner import invoke

from .conftest import QUICKSTART


def run(*args: object):
    return invoke([str(a) for a in args])


@pytest.fixture(scope="module")
def qs_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart spec with absolute paths (the CLI runs from any folder)."""
    root = tmp_path_factory.mktemp("cli-qs")
    text = (QUICKSTART / "corpus.toml").read_text()
    text = text.replace('"examples/quickstart/docs.jsonl"', f'"{QUICKSTART / "docs.jsonl"}"')
    text = text.replace('"examples/quickstart/out"', f'"{root / "out"}"')
    spec = root / "corpus.toml"
    spec.write_text(text)
    return spec


@pytest.fixture(scope="module")
def catalog(qs_spec: Path) -> Path:
    res = run("build", "--spec", qs_spec, "--shards", 3, "--engine", "local")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["built"] == [0, 1, 2] and doc["engine"] == "local"
    return Path(doc["catalog"])


def test_build_shards_then_rerun_skips(qs_spec: Path, catalog: Path) -> None:
    res = run("build", "--spec", qs_spec, "--shards", 3, "--engine", "local")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["built"], doc["skipped"]) == ([], [0, 1, 2])
    assert doc["catalog"] == str(catalog)


@pytest.mark.parametrize("args,message", [
    (("--shards", 0), "--shards"),
    (("--engine", "local"), "--engine and --address need --shards"),
    (("--shards", 2, "--rebuild-only"), "--shards cannot be combined"),
    (("--shards", 2, "--engine", "dask"), "dask"),
])
def test_build_shards_usage_errors(qs_spec: Path, args: tuple, message: str) -> None:
    res = run("build", "--spec", qs_spec, *args)
    assert res.exit_code == 2
    assert message in res.output


@pytest.mark.parametrize("verb", ["ask", "retrieve", "search-text"])
def test_text_verbs_accept_a_catalog(verb: str, catalog: Path, quickstart_single: Path) -> None:
    question = "can I use this offline"
    # cosine: a catalog's merge equals one file holding every chunk (fused scores use each
    # shard's own BM25 statistics, so they are not pinned to the single file's)
    extra = {"ask": ["--json", "--rank", "cosine"], "retrieve": ["--format", "json", "--rank",
             "cosine"], "search-text": ["--json"]}[verb]
    one = run(verb, quickstart_single, question, "-k", 3, *extra)
    many = run(verb, catalog, question, "-k", 3, *extra)
    assert one.exit_code == 0 and many.exit_code == 0, many.output
    a, b = json.loads(one.stdout), json.loads(many.stdout)
    hits_a = a if isinstance(a, list) else a["hits"]
    hits_b = b if isinstance(b, list) else b["hits"]
    assert [h["chunk_id"] for h in hits_b] == [h["chunk_id"] for h in hits_a]
    assert all(abs(x["score"] - y["score"]) <= 1e-6 for x, y in zip(hits_a, hits_b, strict=True))
    shard_hashes = {e["content_hash"] for e in json.loads(catalog.read_text())["shards"]}
    assert {h["content_hash"] for h in hits_b} <= shard_hashes


def test_a_damaged_catalog_is_one_error_line(catalog: Path, tmp_path: Path) -> None:
    bad = tmp_path / "quickstart.catalog.json"
    doc = json.loads(catalog.read_text())
    doc["n_chunks"] += 1
    bad.write_text(json.dumps(doc))
    res = run("retrieve", bad, "offline")
    assert res.exit_code == 1
    assert res.output.startswith("Error: CatalogError: catalog_hash mismatch")
    assert len(res.output.strip().splitlines()) == 1


def test_engine_verbs_take_a_catalog_where_they_take_a_file(catalog: Path) -> None:
    """search / search-ann / search-graph on the catalog equal the single file's hits, and
    cite resolves a catalog hit on its shard."""
    import urna

    with urna.open_catalog(catalog) as cat:
        q = [1.0] + [0.0] * (cat.embedding_dim - 1)
        want = [h.chunk_id for h in cat.search(q, 4)]
    for verb in ("search", "search-ann", "search-graph"):
        res = invoke([verb, str(catalog), json.dumps(q), "-k", "4", "--json"])
        assert res.exit_code == 0, res.output
        got = [h["chunk_id"] for h in json.loads(res.stdout)["hits"]]
        assert got == want
    citation = json.loads(invoke(["search", str(catalog), json.dumps(q), "-k", "1",
                                "--json"]).stdout)["hits"][0]["citation_id"]
    res = invoke(["cite", str(catalog), citation])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == f"citation_id:  {citation}"
