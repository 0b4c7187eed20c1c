"""Sharded builds on a real local Ray cluster (``ray.init(num_cpus=2)``, no mocks).

Claims: the Ray engine writes the same shard bytes as the local engine (reproducible specs),
so the quickstart and a 20,000-chunk synthetic corpus give the single file's chunk ids and
exact top-k; a worker SIGKILLed mid-build fails the run, finished shards stay, and a rerun
builds only the shard that died. Needs the ``ray`` extra (``pip install "urna[ray]"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import ray  # the test extra installs urna[ray]; these tests never skip

import urna
from urna.errors import ForgeError
from urna.forge.shard import build_sharded, shard_file_name
from urna.forge.spec import load_spec
from urna.runtime.catalog import open_catalog

from .conftest import assert_same_topk, queries, quickstart_spec, write_synthetic

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    """One local 2-CPU cluster for the module (worker start-up is paid once)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


def test_quickstart_on_ray(tmp_path: Path, quickstart_single: Path) -> None:
    ray_res = build_sharded(quickstart_spec(), n_shards=3, engine="ray",
                            out_dir=str(tmp_path / "ray"))
    local = build_sharded(quickstart_spec(), n_shards=3, engine="local",
                          out_dir=str(tmp_path / "local"))
    assert ray_res["built"] == local["built"] == [0, 1, 2]
    # the quickstart is reproducible: both engines write the same bytes and catalog
    assert {k: v["file_hash"] for k, v in ray_res["outputs"].items()} == \
        {k: v["file_hash"] for k, v in local["outputs"].items()}
    assert ray_res["catalog_hash"] == local["catalog_hash"]
    with urna.open(quickstart_single) as f, open_catalog(ray_res["catalog"]) as cat:
        assert sorted(cat.chunk_ids()) == sorted(f.chunk_ids())
        assert_same_topk(f, cat, queries(f.embedding_dim, 8), 5)


def test_synthetic_20k_on_ray(synth_dir: Path, synth_single: Path, tmp_path: Path) -> None:
    res = build_sharded(load_spec(synth_dir / "corpus.toml"), n_shards=4, engine="ray",
                        out_dir=str(tmp_path))
    assert res["n_items"] == 20_000 and res["built"] == [0, 1, 2, 3]
    with urna.open(synth_single) as f, open_catalog(res["catalog"]) as cat:
        assert cat.n_embeddings == 20_000
        assert sorted(cat.chunk_ids()) == sorted(f.chunk_ids())
        assert_same_topk(f, cat, queries(f.embedding_dim, 8), 10)


def test_killed_worker_then_rerun_builds_only_the_lost_shard(tmp_path: Path) -> None:
    spec_path = write_synthetic(tmp_path, n=600)
    out = tmp_path / "out"
    with pytest.raises(ForgeError, match="Ray build failed"):
        # the worker building shard 2 is SIGKILLed once the other shards are written
        build_sharded(load_spec(spec_path), n_shards=4, engine="ray", max_retries=0,
                      _kill_shard=2)
    lost = shard_file_name("synth", 2, 4)
    survivors = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.urna")}
    assert sorted(survivors) == sorted(shard_file_name("synth", i, 4) for i in (0, 1, 3))
    assert not list(out.glob("*.catalog.json"))  # no catalog for an unfinished build
    res = build_sharded(load_spec(spec_path), n_shards=4, engine="ray")
    assert (res["built"], res["skipped"]) == ([2], [0, 1, 3])
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.urna")}
    assert {n: after[n] for n in survivors} == survivors
    assert lost in after
    with open_catalog(res["catalog"]) as cat:
        assert cat.n_embeddings == 600


def test_catalog_on_ray_actors_answers_as_threads(tmp_path: Path) -> None:
    from urna.runtime.catalog import CatalogError

    res = build_sharded(load_spec(write_synthetic(tmp_path, n=300)), n_shards=3,
                        engine="local")
    with open_catalog(res["catalog"]) as local, \
            urna.open_catalog(res["catalog"], engine="ray") as remote:
        assert remote.shards == [] and remote.n_embeddings == 300
        assert remote.chunk_ids() == local.chunk_ids()
        for q in queries(local.embedding_dim, 4):
            assert remote.search(q, 7) == local.search(q, 7)
            hits = remote.retrieve(q, 5)
            assert hits == local.retrieve(q, 5)
            assert remote.cite(hits[0].citation_id) == local.cite(hits[0].citation_id)
        assert remote.inspect() == local.inspect()
    # an actor whose shard does not match its entry fails the open with the catalog's error
    first = Path(res["catalog"]).parent / res["outputs"][shard_file_name("synth", 0, 3)]["file"]
    second = Path(res["outputs"][shard_file_name("synth", 1, 3)]["file"])
    first.write_bytes(second.read_bytes())
    with pytest.raises(CatalogError, match="shard 0 .*file_hash"):
        open_catalog(res["catalog"], engine="ray")


def test_cli_build_shards_on_ray(tmp_path: Path) -> None:
    import json

    from helpers.cli_runner import invoke

    spec_path = write_synthetic(tmp_path, n=200)
    res = invoke(["build", "--spec", str(spec_path), "--shards", "2", "--engine", "ray"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["engine"], doc["built"]) == ("ray", [0, 1])
    with open_catalog(doc["catalog"]) as cat:
        assert cat.n_embeddings == 200


def test_rays_error_messages_stay_off_the_cli_result(tmp_path: Path, monkeypatch) -> None:
    # Ray prints a raylet's error messages (a worker died, its task retried) on the driver's
    # stdout, which had put them before `urna build --shards`'s JSON
    import json

    from ray._private.worker import print_to_stdstream

    import urna.forge.shard as shard
    from helpers.cli_runner import invoke

    build = shard.build_sharded

    def noisy(*args, **kwargs):
        print_to_stdstream({"lines": ["A worker died or was killed while executing a task"],
                            "pid": "raylet", "is_err": False}, ignore_prefix=False)
        return build(*args, **kwargs)

    monkeypatch.setattr(shard, "build_sharded", noisy)
    spec_path = write_synthetic(tmp_path, n=40)
    res = invoke(["build", "--spec", str(spec_path), "--shards", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["built"] == [0, 1]
    assert "A worker died" in res.stderr
