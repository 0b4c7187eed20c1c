"""The warm command line (``URNA_DAEMON=1``) answers exactly as a cold call, in real processes.

Claims: the first opted-in call starts a resident server and answers cold; later read verbs
are served by it (``urna daemon status`` counts them) with the cold call's stdout, stderr and
exit status, errors and usage errors included; a file replaced between calls is read anew; a
server whose loaded code changed answers nothing; a socket folder anyone else can enter is
never used; ``urna daemon stop`` ends it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urna.cli import warm

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests/data/ref-0.5.1"
ENTRY = [sys.executable, "-m", "urna.cli"]


def _env(tmp_path: Path, warm_on: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("URNA_DAEMON")}
    env.update(PYTHONPATH=str(ROOT / "src"), URNA_CACHE_DIR=str(tmp_path / "cache"),
               TMPDIR=str(tmp_path / "tmp"), URNA_DAEMON_IDLE="120")
    if warm_on:
        env["URNA_DAEMON"] = "1"
    return env


# A query's own timing is the one thing two calls never share.
_TIMING = re.compile(r'(query_time(?:_ms)?"?:\s*)[0-9.e-]+')


def _call(tmp_path: Path, args: list[str], warm_on: bool) -> tuple[int, str, str]:
    run = subprocess.run([*ENTRY, *args], env=_env(tmp_path, warm_on), capture_output=True,
                         text=True, timeout=180, stdin=subprocess.DEVNULL, cwd=tmp_path)
    return run.returncode, _TIMING.sub(r"\1T", run.stdout), run.stderr


def _status(tmp_path: Path) -> dict | None:
    code, out, _ = _call(tmp_path, ["daemon", "status", "--json"], True)
    assert code == 0
    return json.loads(out)


def _wait_for_server(tmp_path: Path) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = _status(tmp_path)
        if state is not None:
            return state
        time.sleep(0.2)
    raise AssertionError("the warm server never came up")


@pytest.fixture
def folder(tmp_path: Path):
    (tmp_path / "tmp").mkdir()
    shutil.copy(REF / "quickstart-hybrid.urna", tmp_path / "docs.urna")
    yield tmp_path
    _call(tmp_path, ["daemon", "stop"], True)


def _vector() -> str:
    chunks = json.loads((REF / "quickstart.chunks.json").read_text())
    return json.dumps(chunks["queries"][0][1])  # [text, vector]


def test_warm_calls_answer_as_cold_ones(folder: Path) -> None:
    first = _call(folder, ["inspect", "docs.urna"], True)
    assert first == _call(folder, ["inspect", "docs.urna"], False)
    _wait_for_server(folder)
    code, out, _ = _call(folder, ["search", "docs.urna", _vector(), "-k", "3"], False)
    assert code == 0 and out.count("urna://") == 3
    citation = out.split("urna://", 1)[1].split()[0]
    calls = [
        ["inspect", "docs.urna"], ["inspect", "docs.urna", "--json"], ["validate", "docs.urna"],
        ["stats", "docs.urna"], ["search", "docs.urna", _vector(), "-k", "3"],
        ["search-ann", "docs.urna", _vector(), "-k", "2"],
        ["ask", "docs.urna", "can I use this offline", "-k", "2"],
        ["retrieve", "docs.urna", "offline sovereignty", "-k", "2"],
        ["cite", "docs.urna", "urna://" + citation],
        ["cite", "docs.urna", "urna://nonsense"],  # a bad citation: exit 1
        ["inspect", "missing.urna"],  # no such file
        ["search", "docs.urna", "[1, 2]", "-k", "3"],  # wrong dimension
        ["search", "docs.urna", _vector(), "-k", "0"],  # usage error: exit 2
        ["ask", "docs.urna"],  # a missing argument
    ]
    before = _wait_for_server(folder)["served"]
    for args in calls:
        assert _call(folder, args, True) == _call(folder, args, False), args
    assert _status(folder)["served"] == before + len(calls)  # every one was answered warm


def test_a_replaced_file_is_read_anew(folder: Path) -> None:
    _call(folder, ["inspect", "docs.urna", "--json"], True)
    _wait_for_server(folder)
    old = _call(folder, ["inspect", "docs.urna", "--json"], True)
    shutil.copy(REF / "synthetic-exact.urna", folder / "docs.urna")
    new = _call(folder, ["inspect", "docs.urna", "--json"], True)
    assert new == _call(folder, ["inspect", "docs.urna", "--json"], False)
    assert json.loads(new[1])["content_hash"] != json.loads(old[1])["content_hash"]


def _gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_stop_ends_the_server(folder: Path) -> None:
    _call(folder, ["validate", "docs.urna"], True)
    state = _wait_for_server(folder)
    assert len(state["workers"]) == 1  # two processes by default
    assert _call(folder, ["daemon", "stop"], True) == (0, "stopped\n", "")
    assert _status(folder) is None
    for pid in [state["pid"], *state["workers"]]:
        assert _gone(pid), f"the stopped server's process {pid} lives on"


def _socket_of(tmp_path: Path) -> str:
    # the caller's identity is its environment's: ask in that environment
    probe = "from urna.cli import warm; print(warm.socket_path())"
    return subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path, True), text=True,
                          capture_output=True, check=True).stdout.strip()


def test_a_second_process_answers_while_one_is_held(folder: Path) -> None:
    # an agent's parallel tool calls: one caller holding a process (connected, sending
    # nothing) leaves the other to answer at once, warm, while the first is still held
    import socket

    _call(folder, ["inspect", "docs.urna"], True)
    before = _wait_for_server(folder)["served"]
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        held.connect(_socket_of(folder))
        time.sleep(0.5)  # the accepting process is now reading from it
        args = ["search", "docs.urna", _vector(), "-k", "3"]
        assert _call(folder, args, True) == _call(folder, args, False)
        held.setblocking(False)
        with pytest.raises(BlockingIOError):  # still open: not answered, not timed out
            held.recv(1)
    finally:
        held.close()
    assert _status(folder)["served"] == before + 1


def test_workers_leave_when_the_server_is_killed(folder: Path) -> None:
    import signal

    _call(folder, ["inspect", "docs.urna"], True)
    state = _wait_for_server(folder)
    os.kill(state["pid"], signal.SIGKILL)  # no cleanup at all: the workers see the parent go
    for pid in state["workers"]:
        assert _gone(pid), f"worker {pid} outlived its server"


# A warm call, as the console makes it, then the modules its process loaded (to a file).
_CALLER_PROBE = """
import sys
from urna.cli import warm
code = warm.try_warm(sys.argv[2:])
modules = sorted(sys.modules)
with open(sys.argv[1], "w") as report:
    print(code, *modules, file=report)
"""


def test_a_warm_caller_loads_the_socket_client_only(folder: Path) -> None:
    _call(folder, ["inspect", "docs.urna"], True)
    _wait_for_server(folder)
    report = folder / "report.json"
    run = subprocess.run([sys.executable, "-c", _CALLER_PROBE, str(report), "ask", "docs.urna",
                          "offline", "-k", "2"], env=_env(folder, True), capture_output=True,
                         text=True, timeout=180, stdin=subprocess.DEVNULL, cwd=folder)
    code, *loaded = report.read_text().split()
    assert code == "0"
    cold = _call(folder, ["ask", "docs.urna", "offline", "-k", "2"], False)
    assert (0, _TIMING.sub(r"\1T", run.stdout), run.stderr) == cold  # the server's answer
    modules = set(loaded)
    assert {m for m in modules if m.startswith("urna")} == {
        "urna", "urna._version", "urna.cli", "urna.cli.warm"}
    # what the caller used to import: the answer needs none of it (#20, a warm call's cost)
    assert not modules & {"numpy", "json", "socket", "tempfile", "hashlib", "re", "enum",
                          "contextlib", "subprocess", "urna.errors", "urna.cli._output"}


def test_messages_round_trip_and_damaged_ones_are_refused() -> None:
    big = ["x" * 200_000, "y"]
    assert warm.decode_fields(warm.encode_fields(big)) == big
    fields = ["run", "", "caf\u00e9 \udcff", "x" * 300, "\0\n"]
    message = warm.encode_fields(fields)
    assert warm.decode_fields(message) == fields
    assert warm.decode_fields(warm.encode_fields([])) == []
    for cut in range(len(message)):  # cut anywhere, between fields too: never a shorter request
        with pytest.raises(ValueError):
            warm.decode_fields(message[:cut])
    with pytest.raises(ValueError):
        warm.decode_fields(message + b"\x00")
    with pytest.raises(ValueError):  # a hostile length: refused before any copy
        warm.decode_fields(b"\x00\x00\x00\x01\xff\xff\xff\xff" + b"abc")
    with pytest.raises(ValueError):  # a hostile count: refused before any loop
        warm.decode_fields(b"\xff\xff\xff\xff" + b"\x00" * 8)
    with pytest.raises(ValueError):  # not UTF-8
        warm.decode_fields(b"\x00\x00\x00\x01\x00\x00\x00\x01\xff")


_ANY_TEXT = st.text(st.characters(blacklist_categories=()))  # lone surrogates included


@given(st.lists(_ANY_TEXT, max_size=8))
def test_any_fields_round_trip(fields: list[str]) -> None:
    assert warm.decode_fields(warm.encode_fields(fields)) == fields


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_raise_value_error(data: bytes) -> None:
    try:
        fields = warm.decode_fields(data)
    except ValueError:
        return
    assert warm.encode_fields(fields) == data  # what decodes is exactly one message


def test_a_caller_of_another_identity_is_answered_cold(tmp_path: Path) -> None:
    server = warm._Server(str(tmp_path / "s.sock"), 60, lambda a: 0, identity="theirs")
    assert server._reply(["run", "mine", str(tmp_path), "0", "inspect", "x"]) == (
        ["foreign"], True)
    assert server._reply(["run", "theirs", str(tmp_path), "0", "inspect", "x"]) == (
        ["ok", "0", "", ""], True)
    with pytest.raises(ValueError):
        server._reply(["run", "theirs"])  # no cwd, no terminal flag
    assert warm.server_key("theirs") != warm.server_key("mine")
    assert len(warm.server_key()) == 16


def test_a_server_whose_code_changed_answers_nothing(tmp_path: Path) -> None:
    served: list[list[str]] = []
    server = warm._Server(str(tmp_path / "s.sock"), 60, lambda a: served.append(a) or 0)
    server.known = warm._loaded_files()
    assert server.known and not server._stale()
    some = next(iter(server.known))
    server.known[some] -= 1.0  # as if the module's file had been rewritten since its import
    assert server._stale()


def test_a_shared_socket_folder_is_refused(monkeypatch) -> None:
    import tempfile

    short = tempfile.mkdtemp(prefix="u", dir="/tmp")  # short enough to hold the socket folder
    try:
        monkeypatch.setenv("TMPDIR", short)
        monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir reads TMPDIR anew
        shared = Path(short) / f"urna-daemon-{os.getuid()}"
        shared.mkdir()
        os.chmod(shared, 0o755)
        with pytest.raises(PermissionError):
            warm.socket_dir()
        monkeypatch.setenv("URNA_DAEMON", "1")
        assert warm.try_warm(["inspect", str(REF / "quickstart-exact.urna")]) is None
        assert os.listdir(shared) == []  # no socket, no lock was made there
    finally:
        shutil.rmtree(short)


def test_a_server_with_native_threads_before_the_fork_runs_one_process(folder: Path,
                                                                      monkeypatch) -> None:
    # two BLAS threads start with numpy's import: such a process must not fork its workers
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    try:
        _call(folder, ["inspect", "docs.urna"], True)
        state = _wait_for_server(folder)
        assert state["workers"] == []
        args = ["search", "docs.urna", _vector(), "-k", "3"]
        assert _call(folder, args, True) == _call(folder, args, False)
        assert _status(folder)["served"] == state["served"] + 1
    finally:  # this environment's server (the fixture stops the other one's)
        _call(folder, ["daemon", "stop"], True)
