"""The 1008 reference corruption cases end the same when every open pass runs on a worker.

The open path starts its large passes (section checksums, the footer digest, the NaN walk,
the content hash) on threads and claims them in the reference's order; the cases are small,
so by default they run inline. Here the inline threshold is 0: every pass is a thread job,
and each case must still fail first with the reference's class and message.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _harness import conformance_outcome, time_cap

from helpers.mutate import apply_case, load_cases
from urna.format import ahead

# A first JIT compile runs before any case's time cap starts.
pytestmark = pytest.mark.usefixtures("warm_kernels")

CASES = load_cases()


@pytest.fixture(autouse=True)
def every_pass_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead, "INLINE_BYTES", 0)
    monkeypatch.setattr(ahead, "worker_count", lambda: 2)


@pytest.mark.parametrize("key", sorted(CASES))
def test_threaded_outcome_matches_reference(key: str, tmp_path: Path) -> None:
    case = CASES[key]
    with time_cap(60):
        _, first = conformance_outcome(apply_case(case), tmp_path / "case.urna")
    assert not first.foreign, (key, first.variant, first.message)
    want = None if case["ok"] else case["variant"]
    assert first.variant == want, (key, want, case["message"], first.variant, first.message)
    if want is not None:
        assert first.message == case["message"], (key, first.message, case["message"])
