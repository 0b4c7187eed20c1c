"""The command line pauses the cyclic garbage collector for a one-request verb (issue #20).

``urna validate`` of a file with indexes imports numpy: its fresh objects set off ~45 cyclic
collections, all of live objects. The console (which ends the process right after such a
verb) disables the collector once the verb is known. Claims: the console's validate runs with
the collector off and answers as before; ``main()`` called as a library leaves it on.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from urna.cli import main

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests/data/ref-0.5.1/quickstart-hybrid.urna"

# The console, with os._exit (its last call) reporting the collector's state first.
PROBE = """
import gc, os, sys
import urna.cli
real = os._exit
def report(code):
    sys.stdout.write(f"collector enabled: {gc.isenabled()}\\n")
    sys.stdout.flush()
    real(code)
os._exit = report
sys.argv = ["urna", *sys.argv[1:]]
urna.cli.console()
"""


def test_the_console_validates_with_the_collector_off(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "URNA_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", PROBE, "validate", str(FILE)], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = proc.stdout.splitlines()
    assert lines[0] == f"OK: {FILE} is a valid .urna v1 file"
    assert lines[-1] == "collector enabled: False"


def test_main_as_a_library_call_leaves_the_collector_on(tmp_path: Path, monkeypatch,
                                                        capsys) -> None:
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path))
    assert gc.isenabled()
    try:
        main(["validate", str(FILE)])
    except SystemExit as done:
        assert done.code == 0
    assert gc.isenabled()
    assert capsys.readouterr().out.startswith(f"OK: {FILE} is a valid .urna v1 file\n")
