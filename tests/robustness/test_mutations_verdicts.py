"""A kept open verdict never hides a corruption: damaged bytes fail as the reference says.

``runtime.verdicts`` lets a repeat open of an unchanged file skip the passes a full open
already settled, once the body digest proves the bytes are the verified ones. The risk is a
file changed in place with its stat kept (bit rot, a tool that restores mtime): the stat then
still points at the old verdict. For every same-length case of ``mutations-0.5.1.json`` the
source is opened once (its verdict kept), overwritten in place with the case's bytes and its
mtime restored, and the outcome must be the reference's, exactly as without the verdict_cache;
the same again when the kept verdict also holds the proof of the stored texts (a retrieve).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import _harness
import pytest
from _harness import conformance_outcome, time_cap

import urna
from helpers.mutate import REF_DIR, apply_case, load_cases
from urna.runtime import verdicts

# A first JIT compile runs before any case's time cap starts.
pytestmark = pytest.mark.usefixtures("warm_kernels")

CASES = {key: case for key, case in load_cases().items()
         if case["length"] == (REF_DIR / case["src"]).stat().st_size}


def test_cases_cover_in_place_damage() -> None:
    assert len(CASES) > 100


@pytest.mark.parametrize("prove_texts", [False, True], ids=["open", "texts-proven"])
@pytest.mark.parametrize("key", sorted(CASES))
def test_damage_under_a_kept_verdict_fails_like_reference(key: str, prove_texts: bool,
                                                          verdict_cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[key]
    path = verdict_cache / "case.urna"
    shutil.copyfile(REF_DIR / case["src"], path)
    with urna.open(path) as f:  # the full open keeps the verdict of the undamaged bytes
        if prove_texts:  # and a retrieve adds the proof of its stored texts
            f.retrieve(_harness.query_vector(f.embedding_dim), 1)
    if prove_texts:
        kept = verdicts.lookup(str(path), os.stat(path))
        assert kept is not None and verdicts.TEXT_RECORDS in kept.checks
    before = os.stat(path)

    def write_keeping_stat(buf: bytes, target: Path) -> Path:
        with open(target, "r+b") as fh:  # same inode, same size
            fh.write(buf)
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert verdicts.lookup(str(target), os.stat(target)) is not None
        return target

    monkeypatch.setattr(_harness, "write_case", write_keeping_stat)
    with time_cap(60):
        _, first = conformance_outcome(apply_case(case), path)
    assert not first.foreign, f"{key}: {first.op} escaped with {first.variant}: {first.message}"
    want = None if case["ok"] else case["variant"]
    assert first.variant == want, (key, first.op, first.variant, first.message)
    if want is not None:
        assert first.message == case["message"], (key, first.message, case["message"])
