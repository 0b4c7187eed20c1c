"""urna.build on every argument, against the reference urna 0.5.1's recorded outcomes.

tests/data/build-arguments-0.5.1.json (tools/record_build_arguments.py) holds a grid of calls:
each parameter of build under the values PyO3 converts differently (wrong types, None, bools,
floats, too-large or negative ints, numpy scalars, subclasses), values inside chunks, media
and spaces, and pairs of faults that pin the order of the checks. Ours must write the same
bytes where the reference wrote a file, and raise the same builtin class with the same
message where it refused, leaving nothing behind.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

import urna
from helpers.build_arguments import RECORD, outcome

# Our one accepted superset: an os.PathLike output path (the wheel takes str only). The case
# must write the bytes the same call writes with the path as a str.
PATHLIKE = {"output_path pathlike": "base"}


@cache
def _cases() -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(RECORD.read_text())["cases"]}


def _check(name: str, tmp_path) -> None:
    case = _cases()[name]
    want = case["outcome"]
    if name in PATHLIKE:
        want = _cases()[PATHLIKE[name]]["outcome"]
    got = outcome(urna.build, case, tmp_path)
    if "error" in want:
        assert "left" not in got, (name, got)  # a refused build leaves nothing behind
        want = {k: v for k, v in want.items() if k != "left"}
    assert got == want, name


def _chunked(size: int) -> list[list[str]]:
    names = sorted(_cases())
    return [names[i:i + size] for i in range(0, len(names), size)]


@pytest.mark.parametrize("names", _chunked(40), ids=lambda names: names[0])
def test_build_arguments_match_the_reference(names, tmp_path) -> None:
    """Every recorded call gives the reference's digest or its error class and message."""
    failures = []
    for i, name in enumerate(names):
        folder = tmp_path / str(i)
        folder.mkdir()
        try:
            _check(name, folder)
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    assert not failures, "\n".join(failures)


def test_the_grid_covers_every_parameter() -> None:
    """Each parameter of the reference's signature is varied by some case."""
    import inspect

    params = [p for p in inspect.signature(urna.build).parameters
              if p not in ("metadata", "metadata_types")]
    varied = {k for c in _cases().values() for k in c.get("args", {})}
    varied |= {e[0][0] for c in _cases().values() for e in c.get("edits", [])}
    assert set(params) <= varied, set(params) - varied
