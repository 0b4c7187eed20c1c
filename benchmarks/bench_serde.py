"""The serde_json port's cost: the typed manifest read and the exact JSON reader.

``python benchmarks/bench_serde.py`` prints the CPU time of one ``Manifest.from_json_bytes``
(over the manifests of every file in tests/data, golden and ref-0.5.1) and of one
``parse_exact`` of a 1.1 kB document, best of ``--rounds`` rounds. For numbers that do not
depend on the machine's load, count instructions: run it under
``valgrind --tool=callgrind`` with ``--fixed`` (20 passes over the manifests and 100 documents)
and with ``--fixed --setup-only``; the work is the difference.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from urna.format.json_text import parse_exact
from urna.format.layout import Header
from urna.format.manifest import Manifest

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
DOC = (b'{"a":[1,2.5,-3e4,"x\\u00e9\\n",true,false,null],"s":"' + b"word " * 200
       + b'","n":{"m":[{"k":"v"}]}}')


def manifests() -> list[bytes]:
    """The manifest bytes of every .urna file in tests/data (golden and ref-0.5.1)."""
    out = []
    for p in sorted([*DATA.glob("golden*.urna"), *(DATA / "ref-0.5.1").glob("*.urna")]):
        buf = p.read_bytes()
        h = Header.unpack(buf)
        out.append(buf[h.manifest_offset:h.manifest_offset + h.manifest_size])
    return out


def work(raws: list[bytes], passes: int) -> tuple[float, float]:
    """CPU microseconds per manifest read and per document parse over ``passes`` passes."""
    t0 = time.process_time()
    for _ in range(passes):
        for raw in raws:
            Manifest.from_json_bytes(raw)
    t1 = time.process_time()
    for _ in range(passes * 5):
        parse_exact(DOC)
    t2 = time.process_time()
    return (t1 - t0) / (passes * len(raws)) * 1e6, (t2 - t1) / (passes * 5) * 1e6


def main() -> None:
    """Time (or, with --fixed, just run) the manifest reads and document parses."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passes", type=int, default=200)
    ap.add_argument("--fixed", action="store_true", help="one run of 20 passes (for callgrind)")
    ap.add_argument("--setup-only", action="store_true", help="with --fixed: skip the work")
    args = ap.parse_args()
    raws = manifests()
    if args.fixed:
        if not args.setup_only:
            work(raws, 20)
        return
    work(raws, 10)  # warm
    best = [min(x) for x in zip(*(work(raws, args.passes) for _ in range(args.rounds)),
                                strict=True)]
    print(f"manifest read {best[0]:.2f} us  parse_exact {best[1]:.2f} us  "
          f"({len(raws)} manifests, {len(DOC)}-byte document, CPU time, best of {args.rounds})")


if __name__ == "__main__":
    main()
