"""List where our corruption handling differs from the reference's (a report, not a test).

Usage::

    .venv/bin/python tests/robustness/report_mutations.py [--json OUT] [--filter TEXT]

Runs every case of ``tests/data/mutations-0.5.1.json`` through the same driver as
``test_mutations_conformance.py`` and prints the class mismatches, then the cases where the
class agrees but the message text differs, grouped by (variant, our message shape).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import conformance_outcome, time_cap  # noqa: E402

from helpers.mutate import apply_case, load_cases  # noqa: E402


def main() -> int:
    """Run the cases and print the differences."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--filter", default="", help="only cases whose key contains this text")
    args = ap.parse_args()
    cases = {k: c for k, c in load_cases().items() if args.filter in k}
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for key in sorted(cases):
            case = cases[key]
            with time_cap(120):
                view, first = conformance_outcome(apply_case(case), Path(d) / "c.urna")
            rows.append({"key": key, "want": None if case["ok"] else case["variant"],
                         "want_message": case["message"], "got": first.variant,
                         "got_message": first.message, "op": first.op,
                         "foreign": first.foreign or view.foreign, "view": view.variant})
    took = time.perf_counter() - t0
    cls = [r for r in rows if r["want"] != r["got"] or r["foreign"]]
    msg = [r for r in rows if r["want"] == r["got"] and r["want"] is not None
           and r["want_message"] != r["got_message"]]
    print(f"{len(rows)} cases in {took:.1f} s: {len(rows) - len(cls)} same class, "
          f"{len(cls)} class mismatches, {len(msg)} message mismatches")
    print("\n== class mismatches (reference -> ours @ stage)")
    for r in cls:
        print(f"{r['key']}: {r['want']} -> {r['got']} @ {r['op']}"
              f"{' FOREIGN' if r['foreign'] else ''}\n    ref: {r['want_message']}"
              f"\n    our: {r['got_message']}")
    print("\n== message mismatches")
    groups = collections.defaultdict(list)
    for r in msg:
        groups[r["want"]].append(r)
    for variant, rs in sorted(groups.items()):
        print(f"-- {variant}: {len(rs)}")
        for r in rs:
            print(f"{r['key']}\n    ref: {r['want_message']}\n    our: {r['got_message']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
