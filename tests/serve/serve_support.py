"""Helpers of the serve tests: reference data, a free port, the quickstart build, a server.

The session fixture in ``conftest.py`` uses them to run a real ``urna serve`` on loopback.
(A module of its own: several test folders have a ``conftest``, so importing from it is
ambiguous.)
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

import urna
from helpers.ports import free_port
from helpers.quickstart import build_quickstart  # noqa: F401 - the serve fixtures use it
from urna.serve.app import create_app
from urna.serve.corpora import Corpora

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests" / "data" / "ref-0.5.1"
EXPECTED = json.loads((REF / "expected.json").read_text())["files"]
TOP_OFFLINE = "sha256:eed9a60b68133464e91c831f8af5960491f6c444cf1645fc5e4864435ab4bd44"
"""The spec build's top hit for "can I use this offline" (04-surface §8.4)."""
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


def small_file(path: Path, model: str, model_hash: str) -> Path:
    """Four quickstart chunks built with the given model name and model_hash."""
    src = json.loads((REF / "quickstart.chunks.json").read_text())
    chunks = [{k: c[k] for k in ("canonical_text", "source_uri", "byte_start", "byte_end",
                                 "embedding")} for c in src["chunks"][:4]]
    urna.build(str(path), model, 256, "serve-test/1", model_hash, chunks, reproducible=True)
    return path


def start_server(corpora: Corpora, **kw) -> tuple[uvicorn.Server, threading.Thread, str]:
    """uvicorn serving ``corpora`` in a daemon thread; returns when it accepts connections."""
    return start_app(create_app(corpora, **kw))


def start_app(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    """uvicorn serving an ASGI ``app`` on a free loopback port, in a daemon thread."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"
