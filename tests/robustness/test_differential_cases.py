"""Corruptions the differential run found ending differently from the reference, now equal.

``tools/differential_corruptions.py --record NAME ID...`` regenerates the named cases of its
run, asks urna 0.5.1 for each one's first failing call (open, validate, inspect, the search
verbs, retrieve, chunk_ids, blob access, in that order) and writes
``tests/data/NAME-0.5.1.json`` in the layout of ``mutations-0.5.1.json``. Each file is one
cause; every case must fail in the same call with the reference's builtin class and message
(our class a typed ``UrnaError`` of that builtin), or pass everything as the reference does.
"""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest
from _harness import differential_outcome

from helpers.mutate import DATA_DIR, apply_case
from urna import errors

# One recording per cause fixed (see each file's cases for the corruptions).
RECORDINGS = ("band-parse-section", "metadata-extension-ignored")
CASES = [(name, cid, case) for name in RECORDINGS
         for cid, case in json.loads((DATA_DIR / f"{name}-0.5.1.json").read_text()).items()]


@pytest.mark.parametrize(("name", "cid", "case"), CASES, ids=[f"{n}:{c}" for n, c, _ in CASES])
def test_ends_like_the_reference(name: str, cid: str, case: dict, tmp_path: Path) -> None:
    path = tmp_path / "case.urna"
    path.write_bytes(apply_case(case))
    got = differential_outcome(path)
    if case["op"] is None:
        assert got is None, (got[0], type(got[1]).__name__, str(got[1])) if got else None
        return
    assert got is not None, f"the reference fails {case['op']}: {case['message']}"
    op, exc = got
    assert (op, str(exc)) == (case["op"], case["message"])
    assert isinstance(exc, errors.UrnaError)
    assert isinstance(exc, getattr(builtins, case["builtin"]))


def test_a_broken_metadata_section_still_fails_a_filter(tmp_path: Path) -> None:
    """Only the searches that do not ask for 0x18 pass over a broken one: ``where=`` reads it."""
    import urna

    case = json.loads((DATA_DIR / "metadata-extension-ignored-0.5.1.json").read_text())[
        "quickstart-exact.urna:tbl-add-18-junk"]
    path = tmp_path / "case.urna"
    path.write_bytes(apply_case(case))
    with urna.open(str(path)) as f:
        q = [1.0] + [0.0] * (f.embedding_dim - 1)
        assert len(f.search(q, 3)) == 3
        with pytest.raises(errors.UnsupportedSectionVersion):
            f.search(q, 3, where={"year": 1})
