"""``urna.aopen``: awaited searches answer as the sync file and ``urna retrieve`` do.

Expected answers come from the reference's own outputs (``expected.json``), the CLI run in a
subprocess, and facts of the quickstart corpus; never from the async wrapper itself.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from pathlib import Path

import pytest

import urna
from helpers.quickstart import OFFLINE_QUESTION, OFFLINE_SOURCE, build_quickstart, cli_retrieve

REF = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1"
EXPECTED = json.loads((REF / "expected.json").read_text())["files"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_quickstart(tmp_path_factory.mktemp("aio"))


def test_text_query_answers_as_urna_retrieve(quickstart: Path) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=3)

    async def main() -> list:
        async with await urna.aopen(quickstart) as f:
            return (await f.query(OFFLINE_QUESTION, k=3)).hits

    hits = asyncio.run(main())
    assert [h.citation_id for h in hits] == [w["citation_id"] for w in want]
    assert all(math.isclose(h.score, w["score"], abs_tol=1e-6)
               for h, w in zip(hits, want, strict=True))
    assert hits[0].source_uri == OFFLINE_SOURCE


def test_searches_run_off_the_event_loop_and_share_one_file(quickstart: Path) -> None:
    loop_thread: list[int] = []
    seen: set[int] = set()

    async def main() -> list:
        loop_thread.append(threading.get_ident())
        async with await urna.aopen(quickstart) as f:
            q = f.file.vectors([0])[0]

            def probe() -> list:
                seen.add(threading.get_ident())
                return f.file.search(q, 3)

            results = await asyncio.gather(*(f.search(q, 3) for _ in range(16)), f.run(probe))
            return results

    results = asyncio.run(main())
    assert loop_thread[0] not in seen
    first = [h.chunk_id for h in results[0]]
    assert all([h.chunk_id for h in r] == first for r in results)
    assert results[0][0].score == pytest.approx(1.0, abs=1e-6)  # a stored row finds itself


def test_inspect_of_a_reference_file() -> None:
    exp = EXPECTED["synthetic-hybrid.urna"]

    async def main() -> dict:
        async with await urna.aopen(REF / "synthetic-hybrid.urna") as f:
            return await f.inspect()

    doc = asyncio.run(main())
    assert doc["n_embeddings"] == exp["inspect"]["n_embeddings"]
    assert doc["manifest"]["model_hash"] == exp["inspect"]["manifest"]["model_hash"]


def test_cite_and_the_other_searches_match_the_sync_file(quickstart: Path) -> None:
    async def main() -> tuple:
        async with await urna.aopen(quickstart) as f:
            q = f.file.vectors([1])[0]
            hit = (await f.search(q, 1))[0]
            cited = await f.cite(hit.citation_id)
            lexical = await f.search_bm25("offline embedder", 2)
            ann = await f.search_ann(q, 2, 50)
            hybrid = await f.search_hybrid(q, "offline", 2, 64)
            graph = await f.search_graph(q, 2)
            routed = await f.retrieve(q, 2)
            return hit, cited, lexical, ann, hybrid, graph, routed

    hit, cited, lexical, ann, hybrid, graph, routed = asyncio.run(main())
    with urna.open(quickstart) as f:
        q = f.vectors([1])[0]
        assert cited.text == f.texts()[1]
        assert cited.chunk_id == hit.chunk_id == f.chunk_ids()[1]
        assert [h.chunk_id for h in lexical] == [h.chunk_id for h in f.search_bm25(
            "offline embedder", 2)]
        assert [h.chunk_id for h in ann] == [h.chunk_id for h in f.search_ann(q, 2, 50)]
        assert [h.chunk_id for h in hybrid] == [h.chunk_id for h in f.search_hybrid(
            q, "offline", 2, 64)]
        assert [h.chunk_id for h in graph] == [h.chunk_id for h in f.search_graph(q, 2)]
        assert [h.chunk_id for h in routed] == [h.chunk_id for h in f.retrieve(q, 2)]


def test_close_waits_for_running_calls_and_refuses_new_ones(quickstart: Path) -> None:
    started, release = threading.Event(), threading.Event()

    async def main() -> tuple:
        f = await urna.aopen(quickstart)

        def slow() -> int:
            started.set()
            release.wait(10)
            return len(f.file.search(f.file.vectors([0])[0], 2))

        running = asyncio.ensure_future(f.run(slow))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        closing = asyncio.ensure_future(f.aclose())
        await asyncio.sleep(0.05)
        was_closed_early = f.file.closed
        release.set()
        n = await running
        await closing
        with pytest.raises(ValueError, match="closed AsyncUrnaFile"):
            await f.search([1.0], 1)
        return was_closed_early, n, f.file.closed

    was_closed_early, n, closed = asyncio.run(main())
    assert (was_closed_early, n, closed) == (False, 2, True)


def test_a_bad_query_raises_the_typed_error(quickstart: Path) -> None:
    async def main() -> None:
        async with await urna.aopen(quickstart) as f:
            with pytest.raises(urna.errors.DimensionMismatch):
                await f.search([1.0, 0.0], 1)
            with pytest.raises(urna.errors.InvalidInput, match="empty query text"):
                await f.query("   ")

    asyncio.run(main())


def test_a_shard_catalog_answers_as_urna_retrieve(tmp_path: Path) -> None:
    from helpers.specs import write_jsonl_spec
    from urna.forge.shard import build_sharded
    from urna.forge.spec import load_spec

    rows = [{"id": f"r{i:02d}", "text": t, "source_uri": f"notes/{i}.txt"} for i, t in
            enumerate(["the cat sat on the mat", "offline embedders need no network",
                       "a catalog spans several shards", "bananas are yellow",
                       "citations name a chunk", "the sky is blue"])]
    spec = load_spec(write_jsonl_spec(tmp_path, rows, name="notes", model="floor",
                                      mode="single"))
    catalog = Path(build_sharded(spec, n_shards=2, engine="local")["catalog"])
    want = cli_retrieve(catalog, "which embedders work offline", k=2)

    async def main() -> list:
        async with await urna.aopen(catalog) as f:
            return (await f.query("which embedders work offline", k=2)).hits

    hits = asyncio.run(main())
    assert [h.citation_id for h in hits] == [w["citation_id"] for w in want]
    assert hits[0].source_uri == "notes/1.txt"
