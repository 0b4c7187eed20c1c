"""Hostile counts cannot allocate, C allocations included: the 2**60 / u64-max cases of the
fuzzer run in a subprocess whose address space is capped (RLIMIT_AS) a little above what a
warmed-up reader uses. tracemalloc (``test_mutation_fuzz``) sees Python and numpy buffers;
this limit also catches libzstd, cffi and numba allocations, which fail with MemoryError."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = ["quickstart-hybrid.urna", "quickstart-blobs.urna", "quickstart-spaces.urna",
           "quickstart-graph.urna", "quickstart-int8_bm25.urna"]
HEADROOM = 512 << 20

_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent)]
    from _cases import generate, is_hostile
    from _harness import exercise, time_cap
    from helpers.mutate import source_bytes
    path = Path(sys.argv[2])
    bases = {name: source_bytes(name) for name in sys.argv[4:]}
    for base in bases.values():
        exercise(base, path)               # warm imports, JIT and caches before the cap
    vm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmSize:")))
    limit = vm * 1024 + int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:                                   # the cap must bite, or this test proves nothing
        bytearray(2 * int(sys.argv[3]))
        cap_works = False
    except MemoryError:
        cap_works = True
    runs, bad = 0, []
    for name, base in bases.items():
        for cid, make in generate(base, 0):
            if not is_hostile(cid):
                continue
            with time_cap(60):
                ex = exercise(make(), path)
            runs += 1
            bad += [f"{name} {cid}: {o.op} {o.variant}: {o.message}" for o in ex.foreign]
    print(json.dumps({"runs": runs, "bad": bad, "limit_mib": limit >> 20, "cap_works": cap_works}))
""")


def test_hostile_counts_under_an_address_space_cap(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(HERE), str(tmp_path / "c.urna"),
                           str(HEADROOM), *SOURCES], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cap_works"] and out["runs"] > 300
    assert out["bad"] == [], out["bad"][:10]
