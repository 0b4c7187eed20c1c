"""Sharded builds with the in-process engine: same chunks and answers as one file, resumable.

Claims: a row's shard depends on its key and the shard count only; the shards together hold
exactly the single file's chunk ids (global ordinals kept as spans); exact search, retrieve
and cite over the catalog answer as the single file does; a rerun skips shards built from the
same inputs and rebuilds only those whose rows changed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from urna.forge.query import retrieve_text
from urna.forge.shard import assign, build_sharded, shard_file_name, shard_of
from urna.forge.spec import SpecError, load_spec
from urna.runtime.catalog import open_catalog

from .conftest import assert_same_topk, queries, quickstart_spec, write_synthetic

# ------------------------------------------------------------------------- assignment


def test_shard_of_is_sha256_prefix_mod_n() -> None:
    # the rule the catalog records: first 8 bytes of sha256(key), big-endian, mod n
    assert shard_of("01-what-is-urna#1", 1) == 0
    digest = bytes.fromhex(hashlib.sha256(b"row-000042").hexdigest())
    assert shard_of("row-000042", 7) == int.from_bytes(digest[:8], "big") % 7
    assert shard_of("row-000042", 1 << 20) == int.from_bytes(digest[:8], "big") % (1 << 20)
    with pytest.raises(ValueError):
        shard_of("x", 0)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.text(max_size=20), unique=True, max_size=40),
       n=st.integers(min_value=1, max_value=9))
def test_assignment_depends_on_key_only(keys: list[str], n: int) -> None:
    from urna.forge.sources import Row

    rows = [Row(i, k, "", k, "u", i, i + 1, "") for i, k in enumerate(keys)]
    shards = assign(rows, n)
    # every row lands in exactly one shard, in global ordinal order
    assert sorted(r.ordinal for s in shards for r in s) == list(range(len(rows)))
    assert all([r.ordinal for r in s] == sorted(r.ordinal for r in s) for s in shards)
    # a row's shard does not depend on which other rows exist or their order
    alone = assign(list(reversed(rows[: len(rows) // 2])), n)
    for i, s in enumerate(alone):
        assert {r.key for r in s} <= {r.key for r in shards[i]}


def test_shard_file_names() -> None:
    assert shard_file_name("quickstart", 3, 16) == "quickstart-00003-of-00016.urna"


# ------------------------------------------------------------------ equivalence


@pytest.fixture(scope="module")
def qs_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("qs-local")
    res = build_sharded(quickstart_spec(), n_shards=3, engine="local", out_dir=str(out))
    return Path(res["catalog"])


def test_quickstart_shards_hold_the_single_files_chunks(qs_catalog: Path,
                                                        quickstart_single: Path) -> None:
    with urna.open(quickstart_single) as f, open_catalog(qs_catalog) as cat:
        assert len(cat.shards) == 3
        assert sorted(cat.chunk_ids()) == sorted(f.chunk_ids())
        assert cat.n_embeddings == f.n_embeddings == 12
        assert (cat.model_hash, cat.embedding_dim) == (f.model_hash, f.embedding_dim)
        # each shard is a standalone, valid file
        assert all(s.validate() for s in cat.shards)
        assert_same_topk(f, cat, queries(f.embedding_dim, 12), 5)
        assert_same_topk(f, cat, queries(f.embedding_dim, 3, seed=1), 12)


def test_quickstart_text_retrieve_and_cite(qs_catalog: Path, quickstart_single: Path) -> None:
    with urna.open(quickstart_single) as f, open_catalog(qs_catalog) as cat:
        for text in ("can I use this offline", "how do citations work", "what is a shard"):
            # cosine: the catalog's merge equals one file (fused uses per-shard BM25 statistics)
            a = retrieve_text(f, text, 4, candidates=64, rank="cosine")
            b = retrieve_text(cat, text, 4, candidates=64, rank="cosine")
            assert [h.chunk_id for h in b.hits] == [h.chunk_id for h in a.hits]
            assert np.allclose([h.score for h in b.hits], [h.score for h in a.hits], atol=1e-6)
            assert [h.text for h in b.hits] == [h.text for h in a.hits]
            for h in b.hits:
                # the citation names the shard the hit came from, and resolves there
                shard = next(s for s in cat.shards if s.content_hash == h.content_hash)
                assert h.file_hash == shard.file_hash
                assert cat.cite(h.citation_id).text == h.text
                assert cat.cite(h.citation_id).byte_start == h.offset_start


def test_catalog_ann_and_hybrid_merge_by_score(qs_catalog: Path,
                                               quickstart_single: Path) -> None:
    # shards of 3-5 chunks: the beam and both shortlists cover every chunk, so the
    # approximate paths return the exact top-k on both sides
    with urna.open(quickstart_single) as f, open_catalog(qs_catalog) as cat:
        for q in queries(f.embedding_dim, 4, seed=5):
            for a, b in ((f.search_ann(q, 6, 64), cat.search_ann(q, 6, 64)),
                         (f.search_hybrid(q, "offline file", 6, 64),
                          cat.search_hybrid(q, "offline file", 6, 64))):
                assert [h.chunk_id for h in b] == [h.chunk_id for h in a]
                assert [h.score for h in b] == sorted((h.score for h in b), reverse=True)


def test_synthetic_20k_local(synth_dir: Path, synth_single: Path, tmp_path: Path) -> None:
    res = build_sharded(load_spec(synth_dir / "corpus.toml"), n_shards=4, engine="local",
                        out_dir=str(tmp_path))
    assert res["n_items"] == 20_000 and res["built"] == [0, 1, 2, 3]
    with urna.open(synth_single) as f, open_catalog(res["catalog"]) as cat:
        assert sorted(cat.chunk_ids()) == sorted(f.chunk_ids())
        sizes = [s.n_embeddings for s in cat.shards]
        assert sum(sizes) == 20_000 and min(sizes) > 4_500  # the hash spreads rows evenly
        assert_same_topk(f, cat, queries(f.embedding_dim, 8), 10)


# ------------------------------------------------------------------------- resume


def _stamps(out: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.urna")}


def test_rerun_skips_built_shards_and_rebuilds_changed_ones(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=400)
    first = build_sharded(load_spec(spec_path), n_shards=4, engine="local")
    out = tmp_path / "out"
    before = _stamps(out)
    again = build_sharded(load_spec(spec_path), n_shards=4, engine="local")
    assert (again["built"], again["skipped"]) == ([], [0, 1, 2, 3])
    assert _stamps(out) == before
    assert again["catalog_hash"] == first["catalog_hash"]
    # change one row: only the shard its key hashes to is rebuilt
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    row = json.loads(rows[123])
    row["text"] += " changed"
    rows[123] = json.dumps(row)
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    third = build_sharded(load_spec(spec_path), n_shards=4, engine="local")
    moved = shard_of(row["id"], 4)
    assert third["built"] == [moved]
    after = _stamps(out)
    assert {n for n in after if after[n] != before[n]} == {shard_file_name("synth", moved, 4)}
    with open_catalog(third["catalog"]) as cat:
        assert cat.n_embeddings == 400


def test_a_damaged_shard_is_rebuilt(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=200)
    build_sharded(load_spec(spec_path), n_shards=2, engine="local")
    victim = tmp_path / "out" / shard_file_name("synth", 1, 2)
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    res = build_sharded(load_spec(spec_path), n_shards=2, engine="local")
    assert (res["built"], res["skipped"]) == ([1], [0])
    with open_catalog(res["catalog"]) as cat:
        assert cat.n_embeddings == 200


def test_sharded_build_refuses_bad_requests(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=10)
    with pytest.raises(SpecError, match="--engine"):
        build_sharded(load_spec(spec_path), n_shards=2, engine="dask")
    with pytest.raises(SpecError, match="--shards"):
        build_sharded(load_spec(spec_path), n_shards=0)
    spec = load_spec(spec_path)
    spec.output.mode = "per-model"
    with pytest.raises(SpecError, match="output.mode"):
        build_sharded(spec, n_shards=2)


def test_more_shards_than_rows_leaves_no_empty_files(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=3)
    res = build_sharded(load_spec(spec_path), n_shards=16, engine="local")
    doc = json.loads(Path(res["catalog"]).read_text())
    assert doc["n_shards"] == 16 and doc["n_chunks"] == 3
    assert 1 <= len(doc["shards"]) <= 3
    assert sorted(p.name for p in (tmp_path / "out").glob("*.urna")) == \
        sorted(s["file"] for s in doc["shards"])


def test_urna_and_the_local_engine_never_import_ray(qs_catalog: Path) -> None:
    import subprocess
    import sys

    code = ("import sys, urna, urna.forge.shard, urna.runtime.catalog\n"
            f"c = urna.open_catalog({str(qs_catalog)!r})\n"
            "assert c.n_embeddings == 12\n"
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_rerun_clears_its_own_partial_shards_only(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=50)
    build_sharded(load_spec(spec_path), n_shards=2, engine="local")
    out = tmp_path / "out"  # write_atomic keeps a write in progress as .<file>.<random>.tmp
    ours = out / ".synth-00001-of-00002.urna.killed.tmp"  # left by a killed worker
    theirs = out / ".other-00001-of-00002.urna.killed.tmp"  # another corpus building here
    ours.write_bytes(b"half a file")
    theirs.write_bytes(b"half a file")
    res = build_sharded(load_spec(spec_path), n_shards=2, engine="local")
    assert res["built"] == []  # nothing rebuilt, yet the leftover is gone
    assert not ours.exists() and theirs.exists()
