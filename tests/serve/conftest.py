"""A real ``urna serve`` on loopback for the whole serve test session.

The server is uvicorn in a daemon thread on a free port, serving: the quickstart built by the
forge from ``examples/quickstart/corpus.toml`` (as the README's loop does), four reference
files from ``tests/data/ref-0.5.1``, and two small files built here whose model cannot answer
text queries (a wrong model_hash, an unknown model).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from serve_support import REF, REF_SERVED, Served, build_quickstart, small_file, start_server

from urna.serve.corpora import Corpora


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory):
    """The session server (see the module docstring)."""
    tmp = tmp_path_factory.mktemp("serve")
    paths = {"quickstart": build_quickstart(tmp)}
    for name in REF_SERVED:
        paths[name] = REF / f"{name}.urna"
    paths["wrong-hash"] = small_file(tmp / "wrong-hash.urna", "minishlab/potion-base-8M/v1",
                                 "sha256:" + "ab" * 32)
    paths["unknown-model"] = small_file(tmp / "unknown-model.urna", "acme/unknown-model",
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
