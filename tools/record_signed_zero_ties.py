"""Record how the reference ranks scores that underflow to +0.0 and -0.0.

An int8 row of subnormals quantises with a scale of 0, so its score is (sum) * 0: +0.0 or -0.0
by the sign of the sum. The wheel builds a small int8 file with HNSW where a third of the
rows are such, then answers ``search``, ``search_ann`` and ``retrieve`` for a few queries; the
file and every answer (chunk ids and score bits) go to tests/data/signed-zero-0.5.1/, which
tests/runtime/test_signed_zero_ties.py compares with ours. Not a test: the wheel is never a
suite dependency.

    .venv/bin/python tools/record_signed_zero_ties.py [REF_PYTHON]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from reference_wheel import REF_PYTHON, ReferenceFailed, report_failure, run_reference  # noqa: E402

OUT = ROOT / "tests" / "data" / "signed-zero-0.5.1"

# Runs inside the reference interpreter: argv[1] = {"dir", "rows", "queries", "calls"}.
CHECK = r'''
import json, struct, sys
import urna
spec = json.load(open(sys.argv[1]))
path = spec["dir"] + "/signed-zero.urna"
chunks = [{"chunk_id": urna.chunk_id(f"row {i}", "docs/z.md", 10 * i, 10 * i + 5, "t/1"),
           "canonical_text": f"row {i}", "source_uri": "docs/z.md", "byte_start": 10 * i,
           "byte_end": 10 * i + 5, "embedding": row} for i, row in enumerate(spec["rows"])]
urna.build(path, "m", 64, "t/1", "sha256:" + "0" * 64, chunks, dtype="int8", with_hnsw=True,
           hnsw_m=8, hnsw_ef_construction=32, created="2025-06-01T12:00:00Z")
f = urna.open(path)
answers = []
for verb, qi, args in spec["calls"]:
    hits = getattr(f, verb)(spec["queries"][qi], *args)
    answers.append([[h.chunk_id, struct.pack("<f", h.score).hex()] for h in hits])
print(json.dumps(answers))
'''


def rows_and_queries() -> tuple[list[list[float]], list[list[float]]]:
    """90 rows of dim 64: every third one subnormal (scale 0), the rest ordinary; 3 queries."""
    import random

    rng = random.Random(20261205)
    rows = []
    for i in range(90):
        if i % 3 == 0:
            rows.append([rng.choice([1.4e-45, -1.4e-45, 0.0]) for _ in range(64)])
        else:
            rows.append([rng.gauss(0.0, 1.0) for _ in range(64)])
    queries = [[rng.gauss(0.0, 1.0) for _ in range(64)] for _ in range(3)]
    return rows, queries


CALLS = [[verb, qi, args] for qi in range(3)
         for verb, args in (("search", [40]), ("search", [95]), ("search_ann", [95, 64]),
                            ("retrieve", [95]))]


def main(ref_python: str = REF_PYTHON) -> int:
    """Build and query under the wheel; save the file and ``{rows, queries, calls, answers}``."""
    rows, queries = rows_and_queries()
    OUT.mkdir(parents=True, exist_ok=True)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            answers = run_reference(CHECK, {"dir": tmp, "rows": rows, "queries": queries,
                                            "calls": CALLS}, ref_python=ref_python)
        except ReferenceFailed as exc:
            return report_failure(exc)
        shutil.copy(Path(tmp) / "signed-zero.urna", OUT / "signed-zero.urna")
    (OUT / "answers.json").write_text(json.dumps(
        {"queries": queries, "calls": CALLS, "answers": answers}, separators=(",", ":")) + "\n")
    print(f"recorded {len(CALLS)} calls in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
