"""Corruption handling agrees with the reference on its 1008 labelled cases.

For every case of ``tests/data/mutations-0.5.1.json`` (bytes built as the vectors README says:
cut or zero-extend the source, then patch), ``urna.open`` through a file, ``validate``, an exact
search and, where the file has them, ANN and hybrid search must end like the reference: all
succeed when it says ``ok``, else the first failure raises the reference's error class
(``type(e).__name__ == variant``) with the reference's message text. ``UrnaView.from_bytes``
on the same bytes, when it fails, fails with that same class. ``report_mutations.py`` prints
every difference at once (a list for the owners).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _harness import conformance_outcome, time_cap

from helpers.mutate import apply_case, load_cases

# A first JIT compile runs before any case's time cap starts.
pytestmark = pytest.mark.usefixtures("warm_kernels")

CASES = load_cases()


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mutations")


@pytest.mark.parametrize("key", sorted(CASES))
def test_outcome_matches_reference(key: str, case_dir: Path) -> None:
    case = CASES[key]
    data = apply_case(case)
    with time_cap(60):
        view, first = conformance_outcome(data, case_dir / "case.urna")
    assert not first.foreign, (
        f"{key}: {first.op} escaped with {first.variant}: {first.message}\n{first.trace}")
    assert not view.foreign, (
        f"{key}: UrnaView escaped with {view.variant}: {view.message}\n{view.trace}")
    want = None if case["ok"] else case["variant"]
    assert first.variant == want, (
        f"{key}: reference {want!r} ({case['message']!r}), "
        f"ours {first.variant!r} at {first.op} ({first.message!r})")
    if not view.ok:
        assert view.variant == first.variant, (key, view.variant, view.message)
    if want is not None:  # all 1008 matched when this was written: keep it that way
        assert first.message == case["message"], (key, first.message, case["message"])
