"""Open time side by side: ``urna.open`` (this tree) vs the reference wheel 0.5.1.

Each side runs in its own subprocess (the reference with ``/work/refvenv/bin/python``) that
opens the same file ``--opens`` times (warm page cache, every check) and prints the wall and
CPU times; the sides alternate for ``--rounds`` rounds, so a busy machine slows them alike.
Prints the median open of each side and the ratio ours / reference. Two sides of ours:
``urna repeat`` (a verdict of an earlier full open is kept, ``runtime.verdicts``: one hash
pass proves the bytes unchanged) and ``urna first`` (``URNA_OPEN_CACHE=0``: every pass, as
the first open of a file). ``--baseline-src DIR`` adds another checkout's ``src`` (e.g.
``/work/main/src``), both sides, to show a change's own effect. ``floor`` is the hardware's
part of a first open, measured in the same rounds: the three SHA-256 passes its checks need,
run at once on every core with nothing else (see ``_FLOOR``).

    .venv/bin/python benchmarks/bench_open.py                   # 100,000 x 384 float32
    .venv/bin/python benchmarks/bench_open.py --n 20000 --rounds 3

The file is built once with ``urna.build`` (clustered rows, as bench_exact.py) and cached in
``--dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from scratch import scratch_dir  # this folder

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REF_PYTHON = "/work/refvenv/bin/python"

_TIMER = """
import json, sys, time
import urna
path, opens = sys.argv[1], int(sys.argv[2])
urna.open(path)  # warm: imports, page cache
out = []
for _ in range(opens):
    t0, c0 = time.perf_counter(), time.process_time()
    f = urna.open(path)
    out.append([(time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3])
    del f
print(json.dumps(out))
"""

# The floor of a first open: the three SHA-256 passes its checks need (01-container §4 the
# section checksums, §5 the footer's body digest, §9.2 the content hash over the canonical
# sections), each a serial stream started from its own prefix, run at once, each on a thread
# of its own (hashlib releases the GIL; with fewer cores than passes the kernel shares them,
# so the three finish together at 3 passes / cores instead of one after two); nothing
# decoded, no check compared. The
# section bounds come from the table before the clock starts.
_FLOOR = """
import hashlib, json, mmap, struct, sys, time
from concurrent.futures import ThreadPoolExecutor
from urna.format.layout import CANONICAL_SECTIONS, SECTION_ENTRY, Header
path, opens = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as fh:
    buf = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
header = Header.unpack(buf)
entries = [SECTION_ENTRY.unpack_from(buf, header.section_table_offset + 32 * i)[:4]
           for i in range(header.section_table_count)]
first = {}
for sid, _, off, size in entries:
    first.setdefault(sid, (off, size))

def body():
    return hashlib.sha256(buf[:len(buf) - 40]).digest()

def checksums():
    return [hashlib.sha256(buf[off:off + size]).digest()[:8] for _, _, off, size in entries]

def content():
    h = hashlib.sha256()
    for sid, name in CANONICAL_SECTIONS:
        off, size = first.get(sid, (0, 0))
        h.update(struct.pack("<I", len(name)) + name.encode() + struct.pack("<Q", size))
        h.update(buf[off:off + size])
    return h.digest()

pool = ThreadPoolExecutor(3)
for job in (body, checksums, content):  # warm: threads, page cache
    pool.submit(job).result()
out = []
for _ in range(opens):
    t0, c0 = time.perf_counter(), time.process_time()
    for job in [pool.submit(j) for j in (body, checksums, content)]:
        job.result()
    out.append([(time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3])
print(json.dumps(out))
"""


def timed_opens(python: str, src: str | None, path: str, opens: int,
                extra_env: dict[str, str], script: str = _TIMER) -> list[list[float]]:
    """``[wall ms, CPU ms]`` per ``urna.open(path)`` (or per run of ``script``'s timed
    work) in a fresh ``python`` process."""
    env = dict(os.environ, **extra_env)
    env.pop("PYTHONPATH", None)
    if src is not None:
        env["PYTHONPATH"] = src
    out = subprocess.run([python, "-c", script, path, str(opens)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Build (or reuse) the file, alternate the sides, print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--opens", type=int, default=5, help="opens per round and side")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench"))
    ap.add_argument("--baseline-src", default=None)
    args = ap.parse_args()
    sys.path.insert(0, SRC)
    sys.path.insert(0, HERE)
    from bench_exact import build_file, clustered

    os.makedirs(args.dir, exist_ok=True)
    rows, _ = clustered(args.n, args.dim, 1, min(2000, args.n))
    path = build_file(args.dir, rows, args.dtype)
    del rows
    cache = scratch_dir("urna-bench-cache-")  # this run's own verdicts
    ours = {"URNA_CACHE_DIR": cache}
    sides = {"urna repeat": (sys.executable, SRC, ours),
             "urna first": (sys.executable, SRC, {**ours, "URNA_OPEN_CACHE": "0"}),
             "reference": (REF_PYTHON, None, {}),
             "floor": (sys.executable, SRC, {})}
    if args.baseline_src:
        theirs = {"URNA_CACHE_DIR": scratch_dir("urna-bench-cache-")}  # its own
        sides["baseline repeat"] = (sys.executable, args.baseline_src, theirs)
        sides["baseline first"] = (sys.executable, args.baseline_src,
                                   {**theirs, "URNA_OPEN_CACHE": "0"})
    times: dict[str, list[list[float]]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name, (python, src, env) in sides.items():
            script = _FLOOR if name == "floor" else _TIMER
            times[name] += timed_opens(python, src, path, args.opens, env, script)
        print(f"round {r + 1}: " + "  ".join(
            f"{name} {statistics.median(t[0] for t in ts[-args.opens:]):.0f} ms"
            for name, ts in times.items()))
    size_mb = os.path.getsize(path) / 1e6
    print(f"\nopen of {path} ({size_mb:.0f} MB), median of {args.rounds * args.opens} opens:")
    ref = [statistics.median(t[i] for t in times["reference"]) for i in (0, 1)]
    for name, ts in times.items():
        wall, cpu = (statistics.median(t[i] for t in ts) for i in (0, 1))
        print(f"  {name:15s} wall {wall:7.1f} ms ({wall / ref[0]:.2f}x reference)   "
              f"CPU {cpu:7.1f} ms ({cpu / ref[1]:.2f}x)")
    floor = statistics.median(t[0] for t in times["floor"])
    print(f"  floor: the three SHA-256 passes of every check at once (a thread each, "
          f"{os.cpu_count()} cores), nothing else; first open / floor "
          f"{statistics.median(t[0] for t in times['urna first']) / floor:.2f}x")


if __name__ == "__main__":
    main()
