"""Write ``tests/data/two-faults-0.5.1.json``: the reference wheel's ``urna validate`` outcome
on files damaged in two places (a maintenance script, not a test).

Usage::

    .venv/bin/python tests/robustness/make_two_faults.py REFERENCE_PYTHON

Every pair of same-length resealed cases (``*_fixed``) of one source in ``mutations-0.5.1.json``,
bar two of the same section, is built by ``two_faults.damaged_twice`` and run through the
reference's ``urna validate`` (its ``urna.open`` then ``validate()``, under REFERENCE_PYTHON, a
Python with the ``urna==0.5.1`` wheel). The pairs it refuses are kept with its message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from helpers.two_faults import DATA, damaged_twice, pair_keys  # noqa: E402

_REFERENCE = """
import json, sys, urna
out = {}
for path in sys.argv[1:]:
    try:
        urna.open(path).validate()
        out[path] = None
    except Exception as exc:  # the wheel raises ValueError with the typed error's message
        out[path] = str(exc)
print(json.dumps(out))
"""


def main() -> None:
    reference_python = sys.argv[1]
    pairs = pair_keys()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (first, second) in enumerate(pairs):
            path = Path(tmp) / f"{i}.urna"
            path.write_bytes(damaged_twice(first, second))
            paths.append(str(path))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the wheel's urna
        proc = subprocess.run([reference_python, "-c", _REFERENCE, *paths], check=True,
                              capture_output=True, text=True, env=env)
        got = json.loads(proc.stdout)
    cases = sorted({key for pair in pairs for key in pair})
    messages: list[str] = []
    kept = []
    for (first, second), path in zip(pairs, paths, strict=True):
        message = got[path]
        if message is None:
            continue
        if message not in messages:
            messages.append(message)
        kept.append([cases.index(first), cases.index(second), messages.index(message)])
    DATA.write_text(json.dumps({"cases": cases, "messages": messages, "pairs": kept},
                               separators=(",", ":")) + "\n")
    print(f"{len(kept)} of {len(pairs)} pairs refused by the reference -> {DATA}")


if __name__ == "__main__":
    main()
