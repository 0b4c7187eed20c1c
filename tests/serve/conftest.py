"""A real ``urna serve`` on loopback for the whole serve test session.

The server is uvicorn in a daemon thread on a free port, serving: the quickstart built by the
forge from ``examples/quickstart/corpus.toml`` (as the README's loop does), four reference
files from ``tests/data/ref-0.5.1``, and two small files built here whose model cannot answer
text queries (a wrong model_hash, an unknown model).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

import urna

import uvicorn

from urna.serve.app import create_app
from urna.serve.corpora import Corpora

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests" / "data" / "ref-0.5.1"
EXPECTED = json.loads((REF / "expected.json").read_text())["files"]
REF_SERVED = ("quickstart-hybrid", "quickstart-exact", "synthetic-graph", "synthetic-hybrid")


@dataclass
class Served:
    """The running server: its base URL, the Corpora it shares and the served paths."""

    url: str
    corpora: Corpora
    paths: dict[str, Path]

    def client(self) -> httpx.Client:
        """A fresh HTTP client on the server."""
        return httpx.Client(base_url=self.url, timeout=30.0)


def free_port() -> int:
    """An unused TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_quickstart(out: Path) -> Path:
    """``urna build --spec examples/quickstart/corpus.toml`` into ``out`` (run from the root)."""
    subprocess.run([sys.executable, "-c", "from urna.cli import main; main()", "build",
                    "--spec", "examples/quickstart/corpus.toml", "--out-dir", str(out / "out"),
                    "--cache-dir", str(out / "cache")],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    return out / "out" / "quickstart.urna"


def _small(path: Path, model: str, model_hash: str) -> Path:
    src = json.loads((REF / "quickstart.chunks.json").read_text())
    chunks = [{k: c[k] for k in ("canonical_text", "source_uri", "byte_start", "byte_end",
                                 "embedding")} for c in src["chunks"][:4]]
    urna.build(str(path), model, 256, "serve-test/1", model_hash, chunks, reproducible=True)
    return path


def start_server(corpora: Corpora, **kw) -> tuple[uvicorn.Server, threading.Thread, str]:
    """uvicorn serving ``corpora`` in a daemon thread; returns when it accepts connections."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(corpora, **kw), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory):
    """The session server (see the module docstring)."""
    tmp = tmp_path_factory.mktemp("serve")
    paths = {"quickstart": build_quickstart(tmp)}
    for name in REF_SERVED:
        paths[name] = REF / f"{name}.urna"
    paths["wrong-hash"] = _small(tmp / "wrong-hash.urna", "minishlab/potion-base-8M/v1",
                                 "sha256:" + "ab" * 32)
    paths["unknown-model"] = _small(tmp / "unknown-model.urna", "acme/unknown-model",
                                    "sha256:" + "cd" * 32)
    corpora = Corpora(list(paths.values()))
    corpora.warm()  # as urna serve does before binding
    server, thread, url = start_server(corpora)
    try:
        yield Served(url, corpora, paths)
    finally:
        server.should_exit = True
        thread.join(10)
        corpora.close()


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of the system chromium (Debian packages chromium + chromium-driver)."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists() or not Path("/usr/bin/chromedriver").exists():
        pytest.fail("chromium and chromium-driver are required: apt-get install -y chromium "
                    "chromium-driver")
    return path
