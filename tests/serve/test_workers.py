"""``urna serve --workers N``: N real processes, each listening on the one port with its own
socket (so the kernel spreads connections over them), answering as one server does, ended
together by SIGTERM, by the exit of any one of them, or by the loss of their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_support import EXPECTED, REF, free_port

import urna
from helpers.ports import listening_on

FILE = REF / "quickstart-exact.urna"
URNA = [sys.executable, "-c", "from urna.cli import main; main()"]


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return out


def _workers(pid: int) -> list[int]:
    out = []
    for c in _children(pid):
        try:
            if b"serve_worker" in Path(f"/proc/{c}/cmdline").read_bytes():
                out.append(c)
        except FileNotFoundError:  # a process that ended meanwhile
            continue
    return out


def _gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() and
                   Path(f"/proc/{p}/stat").read_text().split()[2] != "Z" for p in pids):
            return True
        time.sleep(0.1)
    return False


POOLS = ("URNA_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _start(port: int, workers: int = 2, **env: str) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if k not in POOLS}
    proc = subprocess.Popen([*URNA, "serve", str(FILE), "--port", str(port), "--workers",
                             str(workers)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**base, **env})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/corpora", timeout=2)
            if len(_workers(proc.pid)) == workers and listening_on(port) == workers:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "no server")


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen, int]]:
    port = free_port()
    proc = _start(port)
    try:
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in _workers(proc.pid) if proc.poll() is None else []:
            os.kill(w, signal.SIGKILL)
        proc.wait(15)


def test_each_process_listens_on_the_port_and_they_answer_as_one(server) -> None:
    proc, port = server
    workers = _workers(proc.pid)
    assert len(workers) == 2
    assert listening_on(port) == 2  # a socket each: the kernel spreads new connections
    with urna.open(FILE) as f:
        dim = int(f.embedding_dim)
    answers = []
    for _ in range(12):  # a new connection each time
        r = httpx.post(f"http://127.0.0.1:{port}/api/corpora/quickstart-exact/search",
                       json={"vector": [0.1] * dim, "k": 3}, timeout=30)
        assert r.status_code == 200
        answers.append([(h["chunk_id"], h["score"]) for h in r.json()["hits"]])
    assert all(a == answers[0] for a in answers) and len(answers[0]) == 3
    listing = httpx.get(f"http://127.0.0.1:{port}/api/corpora", timeout=5).json()
    assert [c["content_hash"] for c in listing["corpora"]] == [
        EXPECTED["quickstart-exact.urna"]["content_hash"]]


def test_sigterm_ends_every_process(server) -> None:
    proc, _ = server
    workers = _workers(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    assert _gone(workers, 10)
    assert b"Traceback" not in proc.stderr.read()


def test_a_process_that_dies_ends_the_others(server) -> None:
    proc, _ = server
    first, second = _workers(proc.pid)
    os.kill(first, signal.SIGKILL)
    assert proc.wait(20) != 0
    assert _gone([second], 10)


def test_workers_leave_when_their_parent_is_killed(server) -> None:
    proc, _ = server
    workers = _workers(proc.pid)
    proc.kill()
    proc.wait(10)
    assert _gone(workers, 10)


def test_a_taken_port_fails_before_any_process_starts(server) -> None:
    _, port = server
    second = subprocess.run([*URNA, "serve", str(FILE), "--port", str(port), "--workers", "2"],
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert listening_on(port) == 2  # the running server's, not joined by a third


def test_each_process_gets_its_share_of_the_cores_unless_told() -> None:
    # two BLAS pools of all the cores, whose idle threads spin, would fight over them
    port = free_port()
    proc = _start(port, OPENBLAS_NUM_THREADS="3")
    try:
        share = str(max(1, (os.cpu_count() or 1) // 2))
        for w in _workers(proc.pid):
            env = dict(line.split("=", 1) for line in
                       Path(f"/proc/{w}/environ").read_text().split("\0") if "=" in line)
            assert env["URNA_THREADS"] == env["OMP_NUM_THREADS"] == share
            assert env["MKL_NUM_THREADS"] == share
            assert env["OPENBLAS_NUM_THREADS"] == "3"  # the caller's own setting stays
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_workers_are_refused_where_the_kernel_would_not_spread_connections(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.cli_runner import invoke

    monkeypatch.setattr(sys, "platform", "darwin")  # SO_REUSEPORT there: no load balancing
    res = invoke(["serve", str(FILE), "--workers", "2"])
    assert res.exit_code == 1 and "--workers needs Linux" in res.stderr
