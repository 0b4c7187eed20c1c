"""`urna inspect`, `urna stats`, `urna cite` and `urna validate` answer without importing numpy
(issue #20).

numpy's import costs more than these verbs' whole work on a typical file, and nothing they
read is an array a numpy routine must decode: the container, the tables, the text, the hashes
and the NaN/Inf walk all run on the standard library. Each call is the real command line in a
fresh interpreter; a hook at exit reports whether numpy was ever imported. The exception is
`validate` of a file with HNSW, BM25, a graph or spaces: it decodes them as the open does
(`runtime.validation`), so it refuses whatever the open refuses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import urna
from helpers.vectors import REF, expected

SRC = str(Path(urna.__file__).resolve().parent.parent)
WRAPPER = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write("
    "'numpy imported: %s\\n' % ('numpy' in sys.modules)))\n"
    "from urna.cli import main\n"
    "sys.argv = ['urna', *sys.argv[1:]]\n"
    "main()\n"
)
# One file per stored dtype, raw and compressed tables, with and without HNSW / BM25.
FILES = ["quickstart-exact.urna", "quickstart-hybrid.urna", "quickstart-f16_hnsw.urna",
         "quickstart-int8_bm25.urna", "quickstart-int4.urna", "synthetic-compressed.urna"]
WITH_INDEXES = {"quickstart-hybrid.urna", "quickstart-f16_hnsw.urna", "quickstart-int8_bm25.urna"}


def run_cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]),
               URNA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True,
                          text=True, env=env, timeout=120)


def citation_of(name: str) -> str:
    return expected()[name]["queries"][0]["retrieve"][0]["citation_id"]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("verb", ["inspect", "validate", "cite", "stats"])
def test_light_verb_never_imports_numpy(verb: str, name: str, tmp_path: Path) -> None:
    args = [verb, str(REF / name)] + ([citation_of(name)] if verb == "cite" else [])
    for _ in range(2):  # a first call and a repeat one (with the verdict the first kept)
        proc = run_cli(*args, cache=tmp_path)
        assert proc.returncode == 0, proc.stderr
        loads_numpy = verb == "validate" and name in WITH_INDEXES
        assert proc.stderr.splitlines()[-1] == f"numpy imported: {loads_numpy}", proc.stderr


def test_inspect_json_still_names_the_kernels(tmp_path: Path) -> None:
    proc = run_cli("inspect", str(REF / FILES[0]), "--json", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"simd_backend": ' in proc.stdout
    assert proc.stderr.splitlines()[-1] == "numpy imported: False", proc.stderr


def _label_by_platform() -> str:
    """The reference's kernel label for this machine, read through ``platform``."""
    import platform

    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "neon"
    if machine in ("x86_64", "amd64"):
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
        return "avx2" if " avx2" in flags and " fma" in flags else "scalar"
    return "scalar"


@pytest.mark.parametrize("verb", ["stats", "inspect"])
def test_the_kernel_label_is_read_without_platform(verb: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # `platform` (and the regular expressions it compiles) cost these verbs 3-13 ms
    monkeypatch.delenv("URNA_FORCE_SCALAR", raising=False)
    wrapper = WRAPPER.replace("'numpy imported: %s\\n' % ('numpy' in sys.modules)",
                              "'platform imported: %s\\n' % ('platform' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]),
               URNA_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", wrapper, verb, str(REF / "quickstart-exact.urna"),
                           "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == "platform imported: False"
    assert json.loads(proc.stdout)["simd_backend"] == _label_by_platform()
