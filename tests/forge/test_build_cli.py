"""``urna build`` as a user meets it: dry-run source checks, the default engine, the terminal
(progress bars and a summary) versus a pipe (the JSON document), the first-run kernel notice,
and a build that leaves the caller's spec alone (#21 items 3, 5-8; #14)."""

from __future__ import annotations

import copy
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli_runner import invoke
from helpers.specs import write_jsonl_spec
from urna.forge import pipeline
from urna.forge.kernels import MESSAGE
from urna.forge.shard import build_sharded
from urna.forge.spec import load_spec
from urna.index.hnsw_small_build import SMALL_BUILD_ROWS

ROOT = Path(__file__).resolve().parents[2]
URNA = [sys.executable, "-c", "from urna.cli import main; main()"]


def _run(*args: object):
    return invoke([str(a) for a in args])


def _rows(n: int) -> list[dict[str, str]]:
    return [{"id": f"{i:03d}", "text": f"passage {i} about topic {i % 5}"} for i in range(n)]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "URNA_CACHE_DIR": str(tmp_path / "uc"),
            **extra}


# ------------------------------------------------------------------ dry run (item 5)


def test_dry_run_fails_on_a_missing_source_naming_it(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(3), name="t")
    (tmp_path / "rows.jsonl").unlink()
    res = _run("build", "--spec", spec, "--dry-run")
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and str(tmp_path / "rows.jsonl") in res.stderr
    real = _run("build", "--spec", spec)  # the real build fails the same way
    assert real.exit_code == 1 and str(tmp_path / "rows.jsonl") in real.stderr


def test_dry_run_fails_on_an_unreadable_source(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(3), name="t")
    (tmp_path / "rows.jsonl").unlink()
    (tmp_path / "rows.jsonl").mkdir()  # a folder where a file should be
    res = _run("build", "--spec", spec, "--dry-run")
    assert res.exit_code == 1 and "rows.jsonl" in res.stderr and "Traceback" not in res.output


def test_dry_run_fails_on_a_missing_documents_folder(tmp_path: Path) -> None:
    spec = tmp_path / "docs.toml"
    spec.write_text(f'[corpus]\nname = "d"\nchunker_version = "d/1"\n[source]\n'
                    f'kind = "documents"\npath = "{(tmp_path / "nowhere").as_posix()}"\n'
                    f'[[models]]\npreset = "floor"\ntext = "default"\n[output]\n'
                    f'dir = "{(tmp_path / "out").as_posix()}"\n')
    res = _run("build", "--spec", spec, "--dry-run")
    assert res.exit_code == 1 and "nowhere" in res.stderr


def test_dry_run_passes_when_every_source_is_readable(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(3), name="t")
    res = _run("build", "--spec", spec, "--dry-run")
    assert res.exit_code == 0 and "corpus: t" in res.stdout
    assert not (tmp_path / "out").exists()  # still loads and writes nothing


# --------------------------------------------------------------- engine (item 6)


def test_shards_build_locally_unless_ray_is_asked_for(tmp_path: Path) -> None:
    import importlib.util

    assert importlib.util.find_spec("ray") is not None  # the case the issue is about
    spec = write_jsonl_spec(tmp_path, _rows(20), name="s", model="floor")
    res = _run("build", "--spec", spec, "--shards", "2")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["engine"] == "local"


def test_address_with_the_local_engine_is_a_usage_error(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(3), name="s", model="floor")
    res = _run("build", "--spec", spec, "--shards", "2", "--engine", "local",
               "--address", "ray://x:1")
    assert res.exit_code == 2 and "--engine ray" in res.stderr


# ------------------------------------------------------------ spec copy (#14 item 3)


def test_builds_leave_the_callers_spec_unchanged(tmp_path: Path) -> None:
    spec_path = write_jsonl_spec(tmp_path, _rows(6), name="m", model="floor")
    spec = load_spec(spec_path)
    before = copy.deepcopy(spec.to_dict())
    pipeline.build(spec, out_dir=str(tmp_path / "elsewhere"), models=["floor"],
                   cache_dir=str(tmp_path / "c"), progress=pipeline.Progress(False))
    assert spec.to_dict() == before
    build_sharded(spec, n_shards=2, out_dir=str(tmp_path / "sharded"),
                  progress=pipeline.Progress(False))
    assert spec.to_dict() == before
    assert (tmp_path / "elsewhere" / "m.urna").is_file()
    assert (tmp_path / "sharded" / "m.catalog.json").is_file()


# ------------------------------------------------------- terminal vs pipe (item 7)


def _run_in_pty(args: list[str], env: dict[str, str], timeout: float = 240.0) -> tuple[int, str]:
    """Run ``urna args`` with stdout and stderr on a pseudo-terminal; (exit code, output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*URNA, *args], stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_progress_bars_and_a_summary(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(30), name="tty", cache_dir=tmp_path / "c")
    env = _env(tmp_path, TERM="xterm", COLUMNS="120")
    code, out = _run_in_pty(["build", "--spec", str(spec)], env)
    assert code == 0, out
    for stage in ("read", "embed potion", "index tty.urna", "write tty.urna"):
        assert stage in out, out
    assert "built " in out and f'next: urna ask {tmp_path / "out" / "tty.urna"}' in out
    assert '"corpus_input_hash"' not in out  # no JSON document on a terminal
    code, out = _run_in_pty(["build", "--spec", str(spec), "--json"], env)
    assert code == 0 and '"corpus_input_hash"' in out


def test_a_pipe_gets_the_json_document_and_no_bars(tmp_path: Path) -> None:
    spec = write_jsonl_spec(tmp_path, _rows(30), name="pipe", cache_dir=tmp_path / "c")
    res = subprocess.run([*URNA, "build", "--spec", str(spec)],
                         capture_output=True, text=True, env=_env(tmp_path), check=True)
    doc = json.loads(res.stdout)
    assert doc["n_items"] == 30 and "pipe.urna" in doc["outputs"]
    assert "━" not in res.stderr and "write pipe.urna" not in res.stderr


# -------------------------------------------------- first-run kernel notice (item 3)


def test_kernel_compilation_is_announced_once_then_not_on_a_warm_run(tmp_path: Path) -> None:
    # past the rows a graph is built without the compiled builder (index.hnsw_small_build)
    spec = write_jsonl_spec(tmp_path, _rows(SMALL_BUILD_ROWS + 1), name="k", model="floor",
                            with_graph=True, mode="both")
    env = _env(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    cmd = [*URNA, "build", "--spec", str(spec)]
    cold = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert cold.stderr.count(MESSAGE) == 1  # two output files, one notice
    warm = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert MESSAGE not in warm.stderr
    assert json.loads(warm.stdout)["outputs"]["k.urna"]["file_hash"] == \
        json.loads(cold.stdout)["outputs"]["k.urna"]["file_hash"]


@pytest.mark.parametrize("with_graph", [False, True])
def test_no_notice_when_the_build_compiles_nothing(tmp_path: Path, with_graph: bool) -> None:
    # no graph, or a graph small enough to build without numba (index.hnsw_small_build)
    spec = write_jsonl_spec(tmp_path, _rows(8), name="n", model="floor", with_graph=with_graph)
    env = _env(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    res = subprocess.run([*URNA, "build", "--spec", str(spec)],
                         capture_output=True, text=True, env=env, check=True)
    assert MESSAGE not in res.stderr
    assert not list((tmp_path / "numba").rglob("*.nbi"))  # nothing compiled nor cached
