"""``urna validate`` on a file damaged in two places: a typed error, never a crash.

Each file joins the patches of two reference mutation cases of one source (their payload bytes),
resealed: one damage only validate sees (0x02's records), one the open refuses too. The run
goes in a fresh interpreter that collects its garbage after the error: a job's error left
unclaimed used to keep a cycle over the file's memoryviews, and CPython's collector crashed
on it (a segfault, exit -11).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.mutate import load_cases, reseal, source_bytes

CASES = load_cases()
SRC = Path(__file__).resolve().parents[2] / "src"

# (name, the case only validate refuses, the case the open refuses too)
PAIRS = [
    ("dedup-texts-provenance", "dedup-zstd_f32__s0b_payload_zero_fixed",
     "dedup-zstd_f32__s05_payload_zero_fixed"),
    ("graph-texts", "synthetic-graph__s02_count_huge_fixed",
     "synthetic-graph__s0c_count_huge_fixed"),
    ("graph-texts-shrunk", "synthetic-graph__s02_shrunk_fixed",
     "synthetic-graph__s0c_shrunk_fixed"),
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


def damaged_twice(first: str, second: str) -> bytes:
    """The source of both cases with the payload patches of both, resealed."""
    buf = bytearray(source_bytes(CASES[first]["src"]))
    for key in (first, second):
        for offset, hexdata in CASES[key]["patch"]:
            data = bytes.fromhex(hexdata)
            buf[offset:offset + len(data)] = data
    return bytes(reseal(buf))


@pytest.mark.parametrize(("name", "first", "second"), PAIRS, ids=[p[0] for p in PAIRS])
def test_two_faults_fail_validate_without_a_crash(name: str, first: str, second: str,
                                                  tmp_path: Path) -> None:
    path = tmp_path / f"{name}.urna"
    path.write_bytes(damaged_twice(first, second))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip().split(":")[0] in {"SectionCountMismatch",
                                                 "MalformedSectionPayload"}
