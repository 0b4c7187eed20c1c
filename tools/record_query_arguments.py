"""Record what the reference does with good and bad arguments to every query method.

For each file of ``helpers.query_arguments.FILES`` (tests/data/ref-0.5.1) it calls every public
method of the wheel's opened file that takes arguments (``METHODS``, from ``dir()`` of the
wheel's UrnaFile) with the grid of ``helpers.query_arguments.calls``: None, bools, ints around
the 32- and 64-bit limits, floats, NaN, str, bytes, lists of the wrong length or type, nested
lists, numpy arrays of every shape and dtype, tuples, dicts, keyword and positional forms,
missing and extra arguments. It keeps the builtin exception class and message of each call, or
a digest of its answer (hit ordinals, scores rounded to 1e-6), in
tests/data/query-arguments-0.5.1.json; tests/runtime/test_query_arguments.py makes the same
calls on ours. Not a test: the wheel is never a suite dependency.

    /work/main/.venv/bin/python tools/record_query_arguments.py [REF_PYTHON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))
from reference_wheel import REF_PYTHON, ReferenceFailed, report_failure, run_reference  # noqa: E402

from helpers.query_arguments import FILES, METHODS, OUT, REF, grid  # noqa: E402

# Runs inside the reference interpreter: argv[1] = the calls (JSON), argv[2] = tests/.
CHECK = r'''
import json, sys
sys.path.insert(0, sys.argv[2])
import urna
from helpers.query_arguments import REF, run
calls = json.load(open(sys.argv[1]))
files, out = {}, []
for call in calls:
    path = str(REF / (call["file"] + ".urna"))
    if call["file"] not in files:
        f = urna.open(path)
        files[call["file"]] = (f, {c: i for i, c in enumerate(f.chunk_ids())})
    f, ids = files[call["file"]]
    out.append(run(f, path, call, ids))
f = next(iter(files.values()))[0]
surface = {name: getattr(type(f), name).__text_signature__ for name in dir(type(f))
           if not name.startswith("_") and callable(getattr(type(f), name))}
print(json.dumps({"outcomes": out, "surface": surface, "version": urna.__version__
                  if hasattr(urna, "__version__") else "0.5.1"}))
'''


def main(ref_python: str = REF_PYTHON) -> int:
    """Run the grid under the wheel; save ``{surface, calls: [{file, method, args, kwargs,
    outcome}]}``."""
    calls = grid()
    try:
        answer = run_reference(CHECK, calls, ref_python=ref_python, args=(str(TESTS),))
    except ReferenceFailed as exc:
        return report_failure(exc)
    assert isinstance(answer, dict)
    listed = set(METHODS)
    with_args = {n for n, sig in answer["surface"].items() if sig not in (None, "($self)")}
    missing = with_args - listed
    if missing:  # a method of the wheel that takes arguments and is not in the grid
        print(f"not in the grid: {sorted(missing)}", file=sys.stderr)
        return 1
    record = {"reference": "urna 0.5.1", "files": list(FILES), "surface": answer["surface"],
              "calls": [{**call, "outcome": outcome}
                        for call, outcome in zip(calls, answer["outcomes"], strict=True)]}
    calls_text = ",\n".join(json.dumps(c, ensure_ascii=True) for c in record.pop("calls"))
    head = json.dumps(record, ensure_ascii=True)[:-1]
    OUT.write_text(f'{head}, "calls": [\n{calls_text}\n]}}\n')  # one call a line: diffable
    errors = sum("error" in o for o in answer["outcomes"])
    print(f"{len(calls)} calls over {len(FILES)} files of {REF.name}: "
          f"{len(calls) - errors} answered, {errors} raised -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
