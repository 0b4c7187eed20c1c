"""The real entry points, in a fresh process: ``python -m urna.cli`` and the console script.

Claims: a usage error is one stderr line and exit 2; ``--version`` and ``--help`` answer on
stdout with exit 0; a verb's help starts with its usage line; and a light verb's process
loads the argparse command line only: no click, no help or suggestion machinery, no other
verb's module (#20: click's import alone cost more than ``inspect``'s work).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from urna.cli import VERB_MODULES

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests/data/ref-0.5.1/quickstart-hybrid.urna"
# validate decodes a file's indexes as the open does (numpy): the light case is a file without
EXACT = ROOT / "tests/data/ref-0.5.1/quickstart-exact.urna"
SCRIPT = Path(sys.executable).with_name("urna")
ENTRIES = [pytest.param([sys.executable, "-m", "urna.cli"], id="python-m")] + (
    [pytest.param([str(SCRIPT)], id="console-script")] if SCRIPT.exists() else [])


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "URNA_CACHE_DIR": str(tmp_path)}


def _run(entry: list[str], *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*entry, *args], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("entry", ENTRIES)
def test_usage_error_is_one_line_and_exit_2(entry: list[str], tmp_path: Path) -> None:
    proc = _run(entry, "search", str(FILE), tmp_path=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "Error: Missing argument 'QUERY'. (see 'urna search --help')\n"
    proc = _run(entry, "inspect", str(FILE), "--jsn", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("Error: No such option '--jsn'. Did you mean '--json'? "
                           "(see 'urna inspect --help')\n")


@pytest.mark.parametrize("entry", ENTRIES)
def test_version_and_help(entry: list[str], tmp_path: Path) -> None:
    proc = _run(entry, "--version", tmp_path=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"urna, version {version('urna')}\n", "")
    proc = _run(entry, "--help", tmp_path=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: urna [OPTIONS] COMMAND [ARGS]...\n")
    listed = [line.split()[0] for line in proc.stdout.split("Commands:\n")[1].splitlines()]
    assert listed == sorted(v for verbs in VERB_MODULES.values() for v in verbs)
    for flag in ("-h", "--help"):
        proc = _run(entry, "cite", flag, tmp_path=tmp_path)
        assert proc.returncode == 0
        assert proc.stdout.startswith("Usage: urna cite [OPTIONS] FILE CITATION\n")
        assert "--json" in proc.stdout


_PROBE = """
import json, sys
from urna.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("argv", [["inspect", str(FILE)], ["inspect", str(FILE), "--json"],
                                  ["validate", str(EXACT)]])
def test_light_verb_loads_the_argparse_cli_only(argv: list[str], tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["code"] == 0, proc.stderr
    modules = set(probe["modules"])
    assert "click" not in modules
    assert "argparse" in modules
    # the help, the did-you-mean and --version machinery load only when asked for
    assert not modules & {"difflib", "textwrap", "importlib.metadata", "urna.cli._help"}
    cli_modules = {m for m in modules if m.startswith("urna.cli.")}
    assert cli_modules == {"urna.cli._output", "urna.cli.command", "urna.cli.options",
                           "urna.cli.file_cmds"}


_BLAS_PROBE = ("import atexit, os, sys\n"
               "atexit.register(lambda: print('blas threads:', "
               "os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr))\n"
               "from urna.cli import main\n"
               "main(sys.argv[1:])\n")


@pytest.mark.parametrize(("preset", "want"), [(None, "1"), ("2", "2")])
def test_a_one_request_verb_asks_for_one_blas_thread_unless_the_user_set_it(
        preset: str | None, want: str, tmp_path: Path) -> None:
    env = {k: v for k, v in _env(tmp_path).items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    vector = json.dumps([0.1] * 256)
    proc = subprocess.run([sys.executable, "-c", _BLAS_PROBE, "search", str(FILE), vector,
                           "-k", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert proc.stderr.splitlines()[-1] == f"blas threads: {want}"


def test_a_server_keeps_the_blas_default(tmp_path: Path) -> None:
    env = {k: v for k, v in _env(tmp_path).items() if k != "OPENBLAS_NUM_THREADS"}
    proc = subprocess.run([sys.executable, "-c", _BLAS_PROBE, "serve", "--help"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == "blas threads: None"


@pytest.mark.parametrize("args", [["inspect", str(FILE)], ["--help"]])
def test_a_reader_that_left_ends_the_call_quietly(args: list[str], tmp_path: Path) -> None:
    # `urna inspect FILE | head -1`: the pipe's reader is gone before the output is written
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "urna.cli", *args], env=_env(tmp_path),
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")


def _timeless(doc):
    """The JSON answer without its timings (they differ from call to call)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if not k.endswith("time_ms")}
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_one_request_verb_ends_with_its_whole_output_and_code(entry: list[str],
                                                                tmp_path: Path) -> None:
    # the command line ends a one-request verb without the interpreter's teardown: neither
    # the output nor the exit code may be lost (compared with main() run as a library call)
    import urna
    from helpers.cli_runner import invoke

    with urna.open(FILE) as f:
        query = json.dumps([0.25] * f.embedding_dim)
    args = ["search", str(FILE), query, "-k", "12", "--json"]
    proc = _run(entry, *args, tmp_path=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    got, want = json.loads(proc.stdout), json.loads(invoke(args).stdout)
    assert _timeless(got) == _timeless(want) and len(got["hits"]) == 12
    bad = tmp_path / "bad.urna"
    bad.write_bytes(FILE.read_bytes()[:-1] + b"\x00")
    proc = _run(entry, "validate", str(bad), tmp_path=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Error: FooterHashMismatch")
