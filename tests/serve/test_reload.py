"""Zero-downtime reload: a served file replaced by an atomic rename is picked up while a
loopback load generator runs, with no failed request; a corrupt replacement is refused and
the old file keeps answering. Expected hashes are the reference's (``expected.json``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest
from serve_support import EXPECTED, REF, start_app

from urna.serve.app import create_app
from urna.serve.registry import ReloadingCorpora
from urna.serve.security import protect

OLD, NEW = REF / "quickstart-exact.urna", REF / "quickstart-hybrid.urna"
OLD_HASH = EXPECTED["quickstart-exact.urna"]["file_hash"]
NEW_HASH = EXPECTED["quickstart-hybrid.urna"]["file_hash"]
LOAD_SECONDS = 3.0
QUERY = {"vector": [1.0] + [0.0] * 255, "k": 3}


def _replace(src: bytes, target: Path) -> None:
    """Write ``src`` next to ``target`` and rename it over (what a deploy does)."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(src)
    os.replace(tmp, target)


@pytest.fixture
def served(tmp_path: Path):
    path = tmp_path / "docs.urna"
    shutil.copyfile(OLD, path)
    log = io.StringIO()
    corpora = ReloadingCorpora([path], check_ms=20, log_stream=log)
    corpora.warm()
    server, thread, url = start_app(protect(create_app(corpora, threads=2), access_log=False))
    try:
        yield path, url, log
    finally:
        server.should_exit = True
        thread.join(10)
        corpora.close()


class Load:
    """Threads posting searches and reading inspect until stopped, recording every answer."""

    def __init__(self, url: str, n_threads: int = 3) -> None:
        self.url, self.stop = url, threading.Event()
        self.results: list[tuple[int, str]] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run) for _ in range(n_threads)]

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as c:
            while not self.stop.is_set():
                try:
                    res = c.post("/api/corpora/docs/search", json=QUERY)
                    status = res.status_code
                    hits = res.json()["hits"] if status == 200 else []
                    # (A citation of the old file is rightly unknown to the new one, so the
                    # load does not cite across the swap; inspect reads the file too.)
                    status = max(status, c.get("/api/corpora/docs/inspect").status_code)
                    got = (status, hits[0]["file_hash"] if hits else res.text)
                except httpx.HTTPError as e:  # a refused or dropped connection is a failure
                    got = (-1, repr(e))
                with self.lock:
                    self.results.append(got)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def count(self) -> int:
        with self.lock:
            return len(self.results)


def _wait_for(load: Load, more: int) -> None:
    """Let the load run ``more`` further requests (bounded by LOAD_SECONDS)."""
    target, deadline = load.count() + more, time.monotonic() + LOAD_SECONDS
    while load.count() < target and time.monotonic() < deadline:
        time.sleep(0.01)


def _listed_hash(url: str) -> str:
    return httpx.get(f"{url}/api/corpora", timeout=30).json()["corpora"][0]["file_hash"]


def test_a_replaced_file_is_picked_up_with_no_failed_request(served) -> None:
    path, url, log = served
    with Load(url) as load:
        _wait_for(load, 20)
        _replace(NEW.read_bytes(), path)
        deadline = time.monotonic() + LOAD_SECONDS
        while time.monotonic() < deadline and (not load.results or
                                               load.results[-1][1] != NEW_HASH):
            time.sleep(0.01)
        _wait_for(load, 20)
    statuses = {s for s, _ in load.results}
    hashes = [h for _, h in load.results]
    assert statuses == {200}, [r for r in load.results if r[0] != 200][:3]
    assert hashes[0] == OLD_HASH and hashes[-1] == NEW_HASH
    assert set(hashes) == {OLD_HASH, NEW_HASH}
    assert _listed_hash(url) == NEW_HASH
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["event"], e["file_hash"]) for e in events] == [("reload", NEW_HASH)]


def test_a_corrupt_replacement_is_refused_and_the_old_file_keeps_answering(served) -> None:
    path, url, log = served
    bad = bytearray(NEW.read_bytes())
    bad[len(bad) // 2] ^= 0xFF  # inside a section: its checksum no longer matches
    with Load(url) as load:
        _wait_for(load, 10)
        _replace(bytes(bad), path)
        deadline = time.monotonic() + LOAD_SECONDS
        while time.monotonic() < deadline and "reload_refused" not in log.getvalue():
            time.sleep(0.01)
        _wait_for(load, 20)
    assert {s for s, _ in load.results} == {200}
    assert {h for _, h in load.results} == {OLD_HASH}
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["reload_refused"]
    assert events[0]["corpus"] == "docs" and "ChecksumMismatch" in events[0]["error"]
    assert _listed_hash(url) == OLD_HASH
    # A good file renamed over the bad one is then picked up.
    _replace(NEW.read_bytes(), path)
    deadline = time.monotonic() + LOAD_SECONDS
    while time.monotonic() < deadline and _listed_hash(url) != NEW_HASH:
        time.sleep(0.05)
    assert _listed_hash(url) == NEW_HASH
