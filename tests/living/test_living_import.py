"""A catalog of ``urna build --shards`` reads as before, and becomes living on its first write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import urna
from helpers.specs import write_jsonl_spec
from urna.errors import CatalogError
from urna.forge.shard import build_sharded
from urna.forge.spec import load_spec

from .corpus import ranked


def test_sharded_catalog_becomes_living(tmp_path: Path) -> None:
    rows = [{"id": f"{i:03d}", "text": f"sharded row {i} on topic {i % 5}"} for i in range(40)]
    spec = load_spec(write_jsonl_spec(tmp_path, rows, name="sh", model="floor", mode="single"))
    path = Path(build_sharded(spec, n_shards=3)["catalog"])
    plain = json.loads(path.read_text())
    with urna.open_catalog(path) as cat:
        assert cat.version is None and [v["op"] for v in cat.log()] == ["import"]
        with pytest.raises(CatalogError, match="not a living catalog"):
            urna.open_catalog(path, version=1)
        q = cat.shards[0].vectors([0])[0]
        before = ranked(cat.search(q, 6))
        kept = [h.citation_id for h in cat.retrieve(q, 40)]
        victim = before[0][0]
        cat.remove(chunk_ids=[victim])
        assert cat.version == 2 and cat.n_embeddings == 39
        assert ranked(cat.search(q, 5)) == [h for h in before if h[0] != victim][:5]
    with urna.open_catalog(path, version=1) as v1:  # the imported shards, as they were
        assert ranked(v1.search(q, 6)) == before
        keys = ("file", "file_hash", "content_hash", "n_chunks")
        assert [{k: s[k] for k in keys} for s in v1.record["segments"]] == \
            [{k: s[k] for k in keys} for s in plain["shards"]]
    with urna.open_catalog(path) as cat:
        cat.compact()
        for c in kept:
            ans = cat.cite(c)
            assert ans.status == ("removed" if c.endswith(victim) else "compacted")
