"""``urna validate`` on a file damaged in two places fails as the reference's does, never crashes.

Each file joins two reference mutation cases of one source, resealed (``helpers.two_faults``).
The reference wheel's ``urna validate`` (its open, then its check) refuses 4,284 of them; ours
must raise the same message on each: the open's error whenever the open refuses, though the
full check's own parses run before the open's index decodes (``format.verify.Checks``).

The crash cases run in a fresh interpreter that collects its garbage after the error: a job's
error left unclaimed used to keep a cycle over the file's memoryviews, and CPython's collector
crashed on it (a segfault).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _harness import check_outcome

from helpers.two_faults import DATA, damaged_twice
from urna.runtime.validation import validate_bytes

SRC = Path(__file__).resolve().parents[2] / "src"
REFERENCE = json.loads(DATA.read_text())

# (name, a case only validate refuses, a case the open refuses too)
CRASHED = [
    ("dedup-texts-provenance", "dedup-zstd_f32__s0b_payload_zero_fixed",
     "dedup-zstd_f32__s05_payload_zero_fixed"),
    ("graph-texts", "synthetic-graph__s02_count_huge_fixed",
     "synthetic-graph__s0c_count_huge_fixed"),
]

_SCRIPT = """
import gc, mmap, sys
from urna.errors import UrnaError
from urna.runtime.validation import validate_bytes
with open(sys.argv[1], "rb") as fh:
    data = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
try:
    validate_bytes(data)
except UrnaError as exc:
    print(f"{type(exc).__name__}: {exc}")
gc.collect()
"""


@pytest.mark.parametrize(("name", "first", "second"), CRASHED, ids=[p[0] for p in CRASHED])
def test_two_faults_fail_validate_without_a_crash(name: str, first: str, second: str,
                                                  tmp_path: Path) -> None:
    path = tmp_path / f"{name}.urna"
    path.write_bytes(damaged_twice(first, second))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("MalformedSectionPayload: ")


def test_two_faults_fail_as_the_reference_says() -> None:
    cases, messages = REFERENCE["cases"], REFERENCE["messages"]
    assert len(REFERENCE["pairs"]) == 4284
    wrong = []
    for first, second, message in REFERENCE["pairs"]:
        got = check_outcome(validate_bytes, damaged_twice(cases[first], cases[second]))
        if got is None or got[1] != messages[message]:
            wrong.append((cases[first], cases[second], messages[message], got))
    assert wrong == []


def test_the_open_error_wins_over_a_text_record_error() -> None:
    # the reference's answers on these two (a 0x02 record count and a graph / provenance fault)
    texts_and_graph = damaged_twice("synthetic-graph__s02_count_huge_fixed",
                                    "synthetic-graph__s0c_count_huge_fixed")
    assert check_outcome(validate_bytes, texts_and_graph) == (
        "MalformedSectionPayload", "malformed section payload: section=12 reason=graph_adjacency:"
        " offsets length != n_nodes+1")
    texts_and_provenance = damaged_twice("dedup-zstd_f32__s0b_payload_zero_fixed",
                                         "dedup-zstd_f32__s05_payload_zero_fixed")
    assert check_outcome(validate_bytes, texts_and_provenance) == (
        "MalformedSectionPayload", "malformed section payload: section=5 reason=zstd "
        "decompression failed: Unknown frame descriptor")
