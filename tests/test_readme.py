"""The README's Python examples run as written (docs that cannot go stale)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.ports import free_port, wait_for_port
from helpers.quickstart import (
    OFFLINE_QUESTION,
    OFFLINE_SOURCE,
    ROOT,
    build_quickstart,
    cli_retrieve,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_example_runs(tmp_path):
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("1.0 urna://sha256:")
    assert lines[1] == "hi"


# -- the agent sections: each section's Python example runs as written in a folder holding
# -- quickstart.urna (the quickstart built by the forge).

def _section_block(heading: str) -> str:
    """The first ```python block of the README section ``## heading``."""
    text = README.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    found = re.search(r"```python\n(.*?)```", text[start:end if end > 0 else None], re.S)
    assert found, f"no python example under ## {heading}"
    return found.group(1)


@pytest.fixture(scope="module")
def quickstart_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build_quickstart(tmp_path_factory.mktemp("readme-build"))
    folder = tmp_path_factory.mktemp("readme")
    shutil.copyfile(built, folder / "quickstart.urna")
    return folder


def _run(heading: str, folder: Path) -> list[str]:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(_section_block(heading), "README.md", "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(cwd)
    return out.getvalue().splitlines()


def _top_citation(folder: Path) -> str:
    return cli_retrieve(folder / "quickstart.urna", OFFLINE_QUESTION, k=1)[0]["citation_id"]


def test_async_example_runs(quickstart_dir: Path) -> None:
    lines = _run("Async API", quickstart_dir)
    assert lines == [f"{OFFLINE_SOURCE} {_top_citation(quickstart_dir)}"]


def test_langchain_example_runs(quickstart_dir: Path) -> None:
    lines = _run("LangChain", quickstart_dir)
    assert lines == [f"{OFFLINE_SOURCE} {_top_citation(quickstart_dir)}", "bananas are yellow"]


def test_llama_index_example_runs(quickstart_dir: Path) -> None:
    lines = _run("LlamaIndex", quickstart_dir)
    want = cli_retrieve(quickstart_dir / "quickstart.urna", OFFLINE_QUESTION, k=2)
    assert lines == [f"{round(w['score'], 3)} {w['citation_id']}" for w in want]


def test_mcp_example_runs(quickstart_dir: Path, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    # `urna` on PATH runs this tree (the SDK's stdio client passes PATH to the server).
    shim = tmp_path / "bin" / "urna"
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT / 'src'} exec {sys.executable} -c "
                    "'from urna.cli import main; main()' \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    lines = _run("MCP server", quickstart_dir)
    assert lines == [f"{OFFLINE_SOURCE} {_top_citation(quickstart_dir)}"]


def test_exposing_example_runs(quickstart_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    token = "readme-token"
    env = {**os.environ, "URNA_TOKEN": token,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", "from urna.cli import main; main()", "serve",
                             str(quickstart_dir / "quickstart.urna"), "--port", str(port)],
                            env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, 120, "urna serve")
        monkeypatch.setenv("URNA_TOKEN", token)
        monkeypatch.setenv("URNA_URL", f"http://127.0.0.1:{port}")
        assert _run("Exposing the server", quickstart_dir) == [f"200 {OFFLINE_SOURCE}"]
    finally:
        proc.terminate()
        proc.wait(20)
