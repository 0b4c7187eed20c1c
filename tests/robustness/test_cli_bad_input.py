"""The ``urna`` command on bad input: one line on stderr naming the problem, exit 1 for a bad
file or input, exit 2 for bad usage, never a traceback (00-design "Command line").

Most cases run ``urna.cli.main`` in-process (``helpers.cli_runner``, fast); a few run the installed
console script in a subprocess, as a user would, to cover the real entry point.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.mutate import source_bytes

URNA = Path(sys.executable).with_name("urna")
DIM = 256  # quickstart-exact.urna


def _script(*args: str) -> subprocess.CompletedProcess:
    exe = [str(URNA)] if URNA.exists() else [sys.executable, "-m", "urna.cli"]
    return subprocess.run(exe + list(args), capture_output=True, text=True, timeout=120)


def _urna(*args: str) -> subprocess.CompletedProcess:
    from helpers.cli_runner import invoke

    r = invoke(list(args))
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    good = d / "good.urna"
    good.write_bytes(source_bytes("quickstart-exact.urna"))
    empty = d / "empty.urna"
    empty.write_bytes(b"")
    text = d / "notes.urna"
    text.write_text("this is a plain text file, not a vector database\n" * 10)
    corrupt = bytearray(source_bytes("quickstart-exact.urna"))
    corrupt[len(corrupt) // 2] ^= 0xFF
    bad = d / "corrupt.urna"
    bad.write_bytes(bytes(corrupt))
    return {"good": good, "empty": empty, "text": text, "dir": d, "corrupt": bad,
            "missing": d / "missing.urna"}


def _one_line_error(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout[-500:], proc.stderr[-1500:])
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert len(err.splitlines()) == 1, err
    assert any(n.lower() in err.lower() for n in needles), (needles, err)
    return err


@pytest.mark.parametrize("verb", ["inspect", "validate"])
@pytest.mark.parametrize("which,needles", [
    ("missing", ("missing.urna", "no such file", "not found")),
    ("dir", ("directory", "no such device")),
    ("empty", ("FileTruncated", "file truncated")),
    ("text", ("MagicMismatch", "magic mismatch")),
    ("corrupt", ("SectionChecksumMismatch", "checksum mismatch")),
])
def test_bad_file_is_one_line_exit_1(files, verb: str, which: str, needles: tuple) -> None:
    _one_line_error(_urna(verb, str(files[which])), 1, *needles)


@pytest.mark.parametrize("citation", [
    "not-a-citation",
    "urna://sha256:abc/sha256:def",
    "http://sha256:" + "0" * 64 + "/sha256:" + "1" * 64,
])
def test_malformed_citation_is_one_line_exit_1(files, citation: str) -> None:
    _one_line_error(_urna("cite", str(files["good"]), citation), 1, "citation", "cite")


def test_citation_of_another_file_is_one_line_exit_1(files) -> None:
    other = "urna://sha256:" + "0" * 64 + "/sha256:" + "1" * 64
    _one_line_error(_urna("cite", str(files["good"]), other), 1, "citation", "content_hash",
                    "not found", "does not")


def test_query_of_the_wrong_dimension(files) -> None:
    _one_line_error(_urna("search", str(files["good"]), json.dumps([1.0, 0.0])), 1,
                    "dimension mismatch")


@pytest.mark.parametrize("bad", ["NaN", "Infinity"])
def test_query_with_non_finite_values(files, bad: str) -> None:
    q = "[" + ", ".join([bad] + ["0.1"] * (DIM - 1)) + "]"
    _one_line_error(_urna("search", str(files["good"]), q), 1, "NaN", "Inf", "query", "JSON")


def test_query_that_is_not_json(files) -> None:
    _one_line_error(_urna("search", str(files["good"]), "[1, 2,"), 1, "JSON", "query")


def test_good_query_still_works(files) -> None:
    q = [1.0 / math.sqrt(DIM)] * DIM
    proc = _urna("search", str(files["good"]), json.dumps(q), "--json")
    assert proc.returncode == 0, proc.stderr[-1500:]
    json.loads(proc.stdout)


@pytest.mark.parametrize("args", [["search"], ["no-such-verb"], ["inspect", "--no-such-flag", "x"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = _urna(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("which,code,needles", [
    ("missing", 1, ("missing.urna", "no such file")),
    ("corrupt", 1, ("SectionChecksumMismatch", "checksum mismatch")),
])
def test_console_script_end_to_end(files, which: str, code: int, needles: tuple) -> None:
    _one_line_error(_script("validate", str(files[which])), code, *needles)


def test_console_script_usage_exit_2() -> None:
    proc = _script("search")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
