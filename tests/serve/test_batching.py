"""Concurrent exact queries on a large file share one scan, and every answer is the one the
same request gets alone: real HTTP requests from many threads against a real uvicorn server on
loopback, compared with a second server that answers each request alone (``batch_max=1``, the
handlers as they ran before batching)."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from serve_support import start_app, start_server

import urna
from urna.forge.embed import potion_embedder
from urna.serve.app import create_app
from urna.serve.corpora import BATCH_MIN_VALUES, Corpora
from urna.serve.registry import ReloadingCorpora
from urna.serve.security import protect

DIM = 256
N = BATCH_MIN_VALUES // DIM  # the smallest file whose exact queries are batched
QUESTIONS = ["can I use this offline", "how do citations work", "what does forge do",
             "is the file format frozen"]
WHERES = [None, {"lang": "en"}, {"year": {"$gte": 2010}}]


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N potion-model rows on a coarse grid (exact ties, repeated rows) with metadata."""
    return _build_big(tmp_path_factory.mktemp("batching") / "big.urna", 20)


def _build_big(path: Path, seed: int) -> Path:
    emb = potion_embedder()
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, size=(N, DIM)).astype(np.float32)
    X[:, 0] = 1.0  # no zero row
    X[N // 2:N // 2 + 50] = X[:50]
    X[:20] = emb.embed(QUESTIONS * 5)  # text questions have real neighbours
    chunks = [{"canonical_text": f"row {i}", "source_uri": f"doc{i % 11}.txt", "byte_start": 0,
               "byte_end": 3, "embedding": X[i].tolist()} for i in range(N)]
    meta = [{"lang": ("en", "de")[i % 2], "year": 2000 + i % 20} for i in range(N)]
    urna.build(str(path), emb.embedding_model, DIM, "serve-test/1", emb.model_hash(), chunks,
               metadata=meta, preset="exact", reproducible=True)
    return path


@pytest.fixture(scope="module")
def servers(big_file: Path):
    """(batched url, its batcher, alone url): both serve the same file."""
    corpora = Corpora([big_file])
    corpora.warm()
    batched = start_server(corpora, threads=2, batch_window_ms=50.0, batch_max=8)
    alone = start_server(corpora, threads=2, batch_max=1)
    try:
        yield batched[2], batched[0].config.app.state.batcher, alone[2]
    finally:
        for server, thread, _ in (batched, alone):
            server.should_exit = True
            thread.join(10)
        corpora.close()


def _requests(seed: int, n: int) -> list[tuple[str, dict[str, Any]]]:
    """Random search and retrieve bodies: k, filters, ranks, vectors with ties, texts."""
    rng = np.random.default_rng(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        where = WHERES[int(rng.integers(len(WHERES)))]
        k = int(rng.choice([1, 3, 10]))
        if i % 3 == 2:
            body: dict[str, Any] = {"text": QUESTIONS[int(rng.integers(4))], "k": k}
            if rng.integers(2):
                body["rank"] = "cosine"
            path = "retrieve"
        else:
            vec = rng.integers(-1, 2, size=DIM).astype(float)
            vec[0] = 1.0
            body = {"vector": vec.tolist(), "k": k, "mode": "exact"}
            path = "search"
        if where is not None:
            body["where"] = where
        out.append((path, body))
    return out


def _concurrently(url: str, reqs: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, Any]]:
    """Every request at once, one thread and connection each; (status, body) in order."""
    out: list[Any] = [None] * len(reqs)
    start = threading.Barrier(len(reqs))

    def one(i: int) -> None:
        path, body = reqs[i]
        with httpx.Client(base_url=url, timeout=60) as c:
            start.wait()
            r = c.post(f"/api/corpora/big/{path}", json=body)
            out[i] = (r.status_code, r.json())

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _untimed(answer: tuple[int, Any]) -> tuple[int, Any]:
    status, doc = answer
    doc = dict(doc)
    doc.pop("query_time_ms", None)
    return status, doc


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_concurrent_answers_equal_the_answers_alone(servers, seed: int) -> None:
    batched, batcher, alone = servers
    reqs = _requests(seed, 24)
    calls, items = batcher.calls, batcher.items
    got = _concurrently(batched, reqs)
    with httpx.Client(base_url=alone, timeout=60) as c:
        want = [(r.status_code, r.json()) for r in
                (c.post(f"/api/corpora/big/{p}", json=b) for p, b in reqs)]
    assert all(status == 200 for status, _ in want)
    assert [_untimed(a) for a in got] == [_untimed(a) for a in want]
    assert batcher.items - items == len(reqs)  # every request went through the batcher ...
    assert batcher.calls - calls < len(reqs)  # ... and some of them shared a scan


def test_identical_queries_share_one_scan(servers) -> None:
    batched, batcher, alone = servers
    body = {"vector": [1.0] + [0.5] * (DIM - 1), "k": 5}
    calls, items = batcher.calls, batcher.items
    got = _concurrently(batched, [("search", body)] * 8)
    with httpx.Client(base_url=alone, timeout=60) as c:
        want = c.post("/api/corpora/big/search", json=body).json()
    assert {_untimed(a)[1]["hits"][0]["chunk_id"] for a in got} == {want["hits"][0]["chunk_id"]}
    assert [_untimed(a) for a in got] == [_untimed((200, want))] * 8
    assert batcher.items - items == 8 and batcher.calls - calls < 8


def test_a_bad_query_in_a_batch_gets_its_own_error(servers) -> None:
    batched, _, alone = servers
    good = {"vector": [1.0] * DIM, "k": 3}
    zero = {"vector": [0.0] * DIM, "k": 3}
    bad_filter = {"vector": [1.0] * DIM, "k": 3, "where": {"no_such_field": 1}}
    reqs = [("search", good), ("search", zero), ("search", good), ("search", bad_filter),
            ("search", bad_filter)]
    got = _concurrently(batched, reqs)
    with httpx.Client(base_url=alone, timeout=60) as c:
        want = [(r.status_code, r.json()) for r in
                (c.post(f"/api/corpora/big/{p}", json=b) for p, b in reqs)]
    assert [s for s, _ in want] == [200, 422, 200, 422, 422]
    assert [_untimed(a) for a in got] == [_untimed(a) for a in want]


def test_a_lone_request_is_answered_alone(servers) -> None:
    batched, batcher, _ = servers
    calls, items = batcher.calls, batcher.items
    with httpx.Client(base_url=batched, timeout=60) as c:
        for _ in range(3):
            assert c.post("/api/corpora/big/search", json={"vector": [1.0] * DIM}).status_code \
                == 200
    assert (batcher.calls - calls, batcher.items - items) == (3, 3)


def test_small_files_are_never_batched(served) -> None:
    corpus = served.corpora.get("quickstart")
    assert not corpus.batchable()
    assert isinstance(corpus.plan_search({"vector": [1.0] * DIM}), dict)


def test_a_file_replaced_under_batched_load_is_served_old_or_new(tmp_path: Path) -> None:
    old, new = _build_big(tmp_path / "old.urna", 1), _build_big(tmp_path / "new.urna", 2)
    body = {"vector": [1.0] + [0.5] * (DIM - 1), "k": 5}
    want = {}
    for f in (old, new):
        with urna.open(f) as u:
            want[u.file_hash] = [h.to_dict() for h in u.search(body["vector"], 5)]
    served = tmp_path / "big.urna"
    served.write_bytes(old.read_bytes())
    corpora = ReloadingCorpora([served], check_ms=10, log_stream=io.StringIO())
    corpora.warm()
    app = create_app(corpora, threads=2, batch_window_ms=20.0, batch_max=8)
    server, thread, url = start_app(protect(app, time_limit=60.0, access_log=False))
    answers: list[tuple[int, Any]] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            while not stop.is_set():
                r = c.post("/api/corpora/big/search", json=body)
                answers.append((r.status_code, r.json()))

    threads = [threading.Thread(target=load) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        while len(answers) < 20:
            threading.Event().wait(0.05)
        tmp = served.with_name("big.urna.tmp")
        tmp.write_bytes(new.read_bytes())
        os.replace(tmp, served)  # what a deploy does
        seen = len(answers)
        while len(answers) < seen + 40:
            threading.Event().wait(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        server.should_exit = True
        thread.join(10)
        corpora.close()
    assert {status for status, _ in answers} == {200}
    hashes = [doc["hits"][0]["file_hash"] for _, doc in answers]
    assert set(hashes) == set(want)  # both files answered ...
    assert all(doc["hits"] == want[h] for (_, doc), h in zip(answers, hashes, strict=True))
    assert app.state.batcher.calls < app.state.batcher.items  # ... through shared scans
