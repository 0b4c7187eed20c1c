"""Run a script inside the reference wheel's interpreter and read back its JSON answer.

The tools under ``tools/`` record what urna 0.5.1 does (tests read the recordings under
``tests/data``); this is the one place they start it. Never imported by the project or its
tests: the wheel is not a dependency.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REF_PYTHON = "/work/refvenv/bin/python"

# Source of a helper the worker scripts define in both interpreters: the builtin class an
# exception is (the wheel's classes are its own; what the two sides share are the builtins).
BUILTIN_NAME_SOURCE = """
def builtin_name(exc):
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(exc).__name__
"""


class ReferenceFailed(RuntimeError):
    """The reference interpreter exited non-zero (its stderr is the message)."""


def run_reference(script: str, cases: object, cwd: str | Path | None = None,
                  ref_python: str = REF_PYTHON, args: tuple[str, ...] = ()) -> object:
    """Run ``script`` in ``ref_python`` (argv[1]: a JSON file of ``cases``, then ``args``); its
    stdout as JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "cases.json"
        spec.write_text(json.dumps(cases))
        # -I: ignore PYTHONPATH, or the child would import this project instead of the wheel.
        run = subprocess.run([ref_python, "-I", "-c", script, str(spec), *args],
                             capture_output=True, text=True, check=False, cwd=cwd or tmp)
    if run.returncode:
        raise ReferenceFailed(run.stderr)
    return json.loads(run.stdout)


def report_failure(exc: ReferenceFailed) -> int:
    """Print the reference's stderr and give the tool's exit status."""
    print(exc, file=sys.stderr)
    return 1
