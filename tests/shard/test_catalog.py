"""``<name>.catalog.json``: its own hash, the checks at open, the merge order, cite.

Every rejection raises ``CatalogError`` (an ``UrnaError``) naming what is wrong; a shard
that fails the file's own open checks raises that file's typed error.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import urna
from urna.errors import CitationError, UrnaError
from urna.forge.shard import build_sharded
from urna.forge.spec import load_spec
from urna.runtime import catalog as catmod
from urna.runtime.catalog import CatalogError, catalog_document, open_catalog, write_catalog

from .conftest import write_synthetic


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cat")
    res = build_sharded(load_spec(write_synthetic(root, n=90)), n_shards=3, engine="local")
    return Path(res["catalog"])


@pytest.fixture
def cat_path(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built catalog and its shards, free to damage."""
    for p in built.parent.glob("*.urna"):
        shutil.copy(p, tmp_path / p.name)
    shutil.copy(built, tmp_path / built.name)
    return tmp_path / built.name


def _load(p: Path) -> dict:
    return json.loads(p.read_text())


def _rehash(doc: dict) -> dict:
    body = {k: v for k, v in doc.items() if k != "catalog_hash"}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    doc["catalog_hash"] = "sha256:" + hashlib.sha256(raw.encode()).hexdigest()
    return doc


def _save(p: Path, doc: dict) -> None:
    p.write_text(json.dumps(doc))


def test_catalog_lists_every_shard_with_its_hashes(built: Path) -> None:
    doc = _load(built)
    assert doc["catalog_hash"] == _rehash(dict(doc))["catalog_hash"]
    assert doc["n_shards"] == 3 and doc["n_chunks"] == 90
    for e in doc["shards"]:
        with urna.open(built.parent / e["file"]) as f:
            assert (e["file_hash"], e["content_hash"], e["n_chunks"], e["model_hash"],
                    e["embedding_dim"]) == (f.file_hash, f.content_hash, f.n_embeddings,
                                            f.model_hash, f.embedding_dim)


def test_an_edit_without_rehash_is_refused(cat_path: Path) -> None:
    doc = _load(cat_path)
    doc["shards"][0]["n_chunks"] += 1
    doc["n_chunks"] += 1
    _save(cat_path, doc)
    with pytest.raises(CatalogError, match="catalog_hash mismatch"):
        open_catalog(cat_path)


def test_a_shard_that_differs_from_its_entry_is_refused(cat_path: Path) -> None:
    doc = _load(cat_path)
    a, b = (cat_path.parent / doc["shards"][i]["file"] for i in (0, 1))
    data_a = a.read_bytes()
    a.write_bytes(b.read_bytes())  # a valid file, but not the one the catalog names
    with pytest.raises(CatalogError, match=r"shard 0 \(synth-00000-of-00003.urna\): file_hash"):
        open_catalog(cat_path)
    a.write_bytes(data_a[:-1] + bytes([data_a[-1] ^ 1]))  # damaged: the file's own check
    with pytest.raises(UrnaError):
        open_catalog(cat_path)
    a.unlink()
    with pytest.raises(UrnaError, match="No such file"):
        open_catalog(cat_path)


@pytest.mark.parametrize("key,value", [("model_hash", "sha256:" + "ab" * 32),
                                       ("embedding_dim", 128)])
def test_mixed_model_or_dim_is_refused(cat_path: Path, key: str, value: object) -> None:
    doc = _load(cat_path)
    doc["shards"][1][key] = value
    _save(cat_path, _rehash(doc))
    with pytest.raises(CatalogError, match=f"shards disagree on {key}"):
        open_catalog(cat_path)


def test_a_consistent_catalog_of_another_model_is_refused(cat_path: Path) -> None:
    doc = _load(cat_path)
    for e in doc["shards"]:
        e["model_hash"] = "sha256:" + "cd" * 32
    doc["model_hash"] = "sha256:" + "cd" * 32
    _save(cat_path, _rehash(doc))
    with pytest.raises(CatalogError, match="shard 0 .*model_hash"):
        open_catalog(cat_path)


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["shards"][0].update(file="../elsewhere.urna"), "plain file name"),
    (lambda d: d["shards"][0].update(file="/etc/passwd"), "plain file name"),
    (lambda d: d["shards"][0].update(file=""), "plain file name"),
    (lambda d: d["shards"][0].update(n_chunks=True), "non-negative integer"),
    (lambda d: d["shards"][0].update(n_chunks=-1), "non-negative integer"),
    (lambda d: d["shards"][0].update(file_hash=7), "must be a string"),
    (lambda d: d["shards"][0].pop("content_hash"), "missing content_hash"),
    (lambda d: d["shards"].append(dict(d["shards"][0])), "shard file twice"),
    (lambda d: d.update(shards=[]), "no shards"),
    (lambda d: d.update(shards=[1]), "not an object"),
    (lambda d: d.update(catalog_schema_version=2), "catalog_schema_version"),
    (lambda d: d.update(n_chunks=d["n_chunks"] + 1), "not the sum"),
    (lambda d: d.update(model_hash="sha256:00"), "catalog model_hash"),
])
def test_malformed_catalogs_are_refused(cat_path: Path, mutate, message: str) -> None:
    doc = _load(cat_path)
    mutate(doc)
    _save(cat_path, _rehash(doc))
    with pytest.raises(CatalogError, match=message):
        open_catalog(cat_path)


def test_unreadable_catalogs_are_refused(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "x.catalog.json"
    with pytest.raises(CatalogError, match="cannot read"):
        open_catalog(p)
    p.write_bytes(b"\xff\xfe")
    with pytest.raises(CatalogError, match="not JSON"):
        open_catalog(p)
    p.write_text("[1, 2]")
    with pytest.raises(CatalogError, match="not a JSON object"):
        open_catalog(p)
    p.write_text('{"a": "' + "x" * 200 + '"}')
    monkeypatch.setattr(catmod.document, "MAX_CATALOG_BYTES", 100)
    with pytest.raises(CatalogError, match="larger than 100 bytes"):
        open_catalog(p)


def test_cite_resolves_on_the_right_shard(cat_path: Path) -> None:
    with open_catalog(cat_path) as cat:
        q = np.ones(cat.embedding_dim, dtype=np.float32)
        for h in cat.retrieve(q, 9):
            got = cat.cite(h.citation_id)
            assert (got.chunk_id, got.content_hash, got.text) == \
                (h.chunk_id, h.content_hash, h.text)
        with pytest.raises(CitationError, match="is not a shard of this catalog"):
            cat.cite("urna://sha256:" + "0" * 64 + "/sha256:" + "1" * 64)
        with pytest.raises(CitationError, match="must start with"):
            cat.cite("http://x/y")
        shard0 = cat.shards[0]
        with pytest.raises(CitationError, match="not found"):
            cat.cite(f"urna://{shard0.content_hash}/sha256:{'2' * 64}")
    with pytest.raises(ValueError, match="closed"):
        cat.search(q, 3)


def _tie_shard(path: Path, tag: str) -> dict:
    vec = [1.0] + [0.0] * 7
    chunks = [{"canonical_text": f"{tag} {i}", "source_uri": f"{tag}.txt", "byte_start": i,
               "byte_end": i + 1, "embedding": vec} for i in range(2)]
    urna.build(str(path), "tie-model", 8, "tie/1", "sha256:" + "ee" * 32, chunks,
               reproducible=True)
    with urna.open(path) as f:
        return {"file": path.name, "file_hash": f.file_hash, "content_hash": f.content_hash,
                "n_chunks": f.n_embeddings, "model_hash": f.model_hash,
                "embedding_dim": f.embedding_dim}


def test_equal_scores_merge_by_shard_order_then_ordinal(tmp_path: Path) -> None:
    a, b = _tie_shard(tmp_path / "a.urna", "a"), _tie_shard(tmp_path / "b.urna", "b")
    q = np.ones(8, dtype=np.float32)
    for order in ([a, b], [b, a]):
        p = write_catalog(tmp_path / "t.catalog.json", catalog_document("t", 2, order))
        with open_catalog(p) as cat:
            hits = cat.search(q, 4)
            assert len({h.score for h in hits}) == 1
            assert [h.source_uri for h in hits] == [order[0]["file"][0] + ".txt"] * 2 + \
                [order[1]["file"][0] + ".txt"] * 2
            assert [h.offset_start for h in hits] == [0, 1, 0, 1]
            assert [h.source_uri for h in cat.search(q, 3)] == \
                [h.source_uri for h in hits[:3]]


def test_both_zeros_merge_in_one_files_order(tmp_path: Path) -> None:
    # int8 rows of subnormals quantise with a scale of 0 and score +0.0 or -0.0 by the sign
    # of their sum; one file ranks +0.0 first (IEEE total order), so the merge does too,
    # whichever shard holds it
    def shard(name: str, sign: float) -> dict:
        path = tmp_path / f"{name}.urna"
        chunks = [{"canonical_text": name, "source_uri": f"{name}.txt", "byte_start": 0,
                   "byte_end": 1, "embedding": [sign * 1.4e-45] * 8}]
        urna.build(str(path), "tie-model", 8, "tie/1", "sha256:" + "ee" * 32, chunks,
                   dtype="int8", reproducible=True)
        with urna.open(path) as f:
            return {"file": path.name, "file_hash": f.file_hash,
                    "content_hash": f.content_hash, "n_chunks": f.n_embeddings,
                    "model_hash": f.model_hash, "embedding_dim": f.embedding_dim}
    minus, plus = shard("minus", -1.0), shard("plus", 1.0)
    q = np.ones(8, dtype=np.float32)
    for order in ([minus, plus], [plus, minus]):
        p = write_catalog(tmp_path / "z.catalog.json", catalog_document("z", 2, order))
        with open_catalog(p) as cat:
            hits = cat.search(q, 2)
        assert [h.source_uri for h in hits] == ["plus.txt", "minus.txt"]
        assert [np.signbit(h.score) for h in hits] == [False, True] and hits[0].score == 0


def test_catalog_document_requires_every_key() -> None:
    with pytest.raises(CatalogError, match="missing file_hash"):
        catalog_document("x", 1, [{"file": "a.urna"}])


REF = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1"


def _twin_catalog(tmp_path: Path, source: Path) -> Path:
    """A catalog of two copies of one reference file (every hit appears once per shard)."""
    entries = []
    for tag in ("a", "b"):
        p = tmp_path / f"{tag}.urna"
        shutil.copy(source, p)
        with urna.open(p) as f:
            entries.append({"file": p.name, "file_hash": f.file_hash,
                            "content_hash": f.content_hash, "n_chunks": f.n_embeddings,
                            "model_hash": f.model_hash, "embedding_dim": f.embedding_dim})
    return Path(write_catalog(tmp_path / "twin.catalog.json",
                              catalog_document("twin", 2, entries)))


def test_every_search_of_a_file_spans_a_catalog(tmp_path: Path) -> None:
    from urna.runtime.searcher import Searcher

    source = REF / "quickstart-spaces.urna"
    with urna.open(source) as f, open_catalog(_twin_catalog(tmp_path, source)) as cat:
        assert isinstance(cat, Searcher) and cat.space_names == ["vision", "audio"]
        rng = np.random.default_rng(4)
        vision = rng.standard_normal(32).astype(np.float32)
        single = f.search_space("vision", vision, 3)
        merged = cat.search_space("vision", vision, 6)
        assert [h.chunk_id for h in merged] == [h.chunk_id for h in single for _ in (0, 1)]
        assert merged.space == "vision" and merged.index_type == "space"
        assert merged.truncated is (2 * single.explain.exact_candidates > 6)
        q = rng.standard_normal(f.embedding_dim).astype(np.float32)
        Q = np.stack([q, -q])
        for row, got in zip(Q, cat.search_batch(Q, 4), strict=True):
            assert got == cat.search(row, 4)
        whole = cat.search(q, 30)
        assert (whole.index_type, whole.recall, whole.truncated, whole.k_returned) == \
            ("exact", 1.0, False, 24)
        assert whole.explain.exact_candidates == 24
        assert cat.validate() and cat.validate(full=True)
        assert cat.texts() == f.texts() * 2 and cat.index_type == f.index_type


def test_search_bm25_on_a_catalog_is_refused_with_the_reason(tmp_path: Path) -> None:
    source = REF / "quickstart-hybrid.urna"
    with open_catalog(_twin_catalog(tmp_path, source)) as cat:
        with pytest.raises(CatalogError, match="BM25 scores use each shard's own statistics"):
            cat.search_bm25("offline", 3)
        q = np.ones(cat.embedding_dim, dtype=np.float32)
        routed = cat.retrieve(q, 4, query_text="offline")
        assert routed.route == "hybrid"
        # each shard asked its own sources for min(64, 12) candidates
        assert routed.candidate_budget == {"exact": 0, "ann": 24, "bm25": 24, "graph": 0}
        assert [h.chunk_id for h in routed] == \
            [h.chunk_id for h in cat.search_routed(q, 4, query_text="offline")]


def test_catalog_error_is_an_urna_error_in_one_home() -> None:
    from urna import errors

    assert CatalogError is errors.CatalogError and issubclass(CatalogError, UrnaError)
