"""The ``urna serve`` verb: loopback by default, --expose + warning for another interface,
open errors before binding, a real process answering, and the CLI without the serve extra."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serve_support import EXPECTED, REF, free_port

import urna.serve.app
from helpers.cli_runner import invoke as run_cli
from urna.cli.serve_cmds import COMMANDS

FILE = REF / "quickstart-exact.urna"
URNA = [sys.executable, "-c", "from urna.cli import main; main()"]
TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Replace the blocking server loop; records what it was asked to serve."""
    seen: list[dict] = []

    def fake_run(corpora, **kw):
        warmed = all(corpora.get(n)._embedder is not None for n in corpora.names())
        seen.append({"names": corpora.names(), "warmed": warmed, **kw})
        corpora.close()

    monkeypatch.setattr(urna.serve.app, "run", fake_run)
    return seen


def invoke(*args: str):
    return run_cli(["serve", *map(str, args)])


def test_serve_is_registered_with_help_and_example() -> None:
    assert [c.name for c in COMMANDS] == ["serve"]
    res = run_cli(["serve", "--help"])
    assert res.exit_code == 0 and "Example: urna serve" in res.output
    assert "serve" in run_cli(["--help"]).output


def test_loopback_by_default_without_warning(calls: list[dict]) -> None:
    res = invoke(FILE)
    assert res.exit_code == 0, res.output
    assert calls == [{"names": ["quickstart-exact"], "warmed": True, "host": "127.0.0.1",
                      "port": 8077, "max_body": 1 << 20, "threads": None,  # one per core
                      "batch_window_ms": 2.0, "batch_max": 32, "token": None,
                      "cors_origins": (), "time_limit": 30.0}]
    assert "warning" not in res.stderr
    assert res.stderr == "urna serve: http://127.0.0.1:8077/ (1 file(s))\n"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_another_interface_needs_expose_and_a_token(calls: list[dict], host: str) -> None:
    res = invoke(FILE, "--host", host)
    assert res.exit_code == 2 and calls == []
    assert f"--host {host} is not loopback; pass --expose" in res.stderr
    res = invoke(FILE, "--host", host, "--expose", "--port", "9000")
    assert res.exit_code == 2 and calls == []  # exposed without authentication: refused
    assert "--token or URNA_TOKEN" in res.stderr
    res = invoke(FILE, "--host", host, "--expose", "--port", "9000", "--token", "s3cret")
    assert res.exit_code == 0 and calls[0]["host"] == host and calls[0]["port"] == 9000
    assert calls[0]["token"] == "s3cret" and "s3cret" not in res.stderr


def test_several_files_each_named_by_stem(calls: list[dict]) -> None:
    res = invoke(FILE, REF / "synthetic-graph.urna", REF / "quickstart-hybrid.urna")
    assert res.exit_code == 0
    assert calls[0]["names"] == ["quickstart-exact", "synthetic-graph", "quickstart-hybrid"]


def test_open_errors_and_name_clashes_stop_before_binding(calls: list[dict],
                                                          tmp_path: Path) -> None:
    bad = tmp_path / "bad.urna"
    data = bytearray(FILE.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the embeddings payload
    bad.write_bytes(bytes(data))
    res = invoke(bad)
    assert res.exit_code == 1 and calls == []
    assert res.stderr == "Error: SectionChecksumMismatch: section 4 checksum mismatch\n"
    (tmp_path / "a").mkdir()
    shutil.copy(FILE, tmp_path / "a" / "quickstart-exact.urna")
    res = invoke(FILE, tmp_path / "a" / "quickstart-exact.urna")
    assert res.exit_code == 1 and "two files share the corpus name 'quickstart-exact'" in res.stderr
    assert invoke(tmp_path / "missing.urna").exit_code == 2


def test_a_real_serve_process_answers_and_stops_on_sigterm() -> None:
    port = free_port()
    proc = subprocess.Popen([*URNA, "serve", str(FILE), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline, body = time.monotonic() + 30, None
        while body is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/api/corpora", timeout=2).json()
            except httpx.TransportError:
                time.sleep(0.1)
        assert body is not None, proc.stderr.read().decode() if proc.poll() is not None else ""
        assert [c["content_hash"] for c in body["corpora"]] == [
            EXPECTED["quickstart-exact.urna"]["content_hash"]]
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught
        assert proc.wait(15) in (0, -signal.SIGTERM)
        assert b"Traceback" not in proc.stderr.read()


def test_cli_and_library_work_without_the_serve_extra() -> None:
    script = f"""
import sys
sys.modules["starlette"] = None  # import starlette -> ImportError, as when not installed
sys.modules["uvicorn"] = None
import json
sys.path.insert(0, {str(TESTS)!r})
from helpers.cli_runner import invoke
import urna
print(urna.open({str(FILE)!r}).n_embeddings)
served = invoke(["serve", {str(FILE)!r}])
print(served.exit_code, served.stderr.strip())
print("serve" in invoke(["--help"]).output)
print(json.loads(invoke(["inspect", {str(FILE)!r}, "--json"]).stdout)["content_hash"])
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=False, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "12" and lines[2:] == ["True",
                                              EXPECTED["quickstart-exact.urna"]["content_hash"]]
    assert lines[1].startswith(
        "1 Error: urna serve needs the serve extra: pip install 'urna[serve]' (")
