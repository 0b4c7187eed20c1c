"""Scores that underflow to +0.0 and -0.0 rank as the reference ranks them: +0.0 first.

tests/data/signed-zero-0.5.1 holds an int8 file with HNSW that urna 0.5.1 built, where a third
of the rows are subnormal (their scale is 0, so they score +0.0 or -0.0 by the sign of their
sum), and the wheel's answers to ``search`` (a cut-off among the zeros and every row),
``search_ann`` and ``retrieve`` (tools/record_signed_zero_ties.py). Ours must give the same
chunk ids in the same order, with the same score bits.
"""

from __future__ import annotations

import json
import struct

import pytest

import urna
from helpers.vectors import REF

DATA = REF.parent / "signed-zero-0.5.1"
RECORDED = json.loads((DATA / "answers.json").read_text())
CASES = list(zip(RECORDED["calls"], RECORDED["answers"], strict=True))


def test_the_recording_ranks_both_zeros() -> None:
    # the case this file pins: hits scored +0.0, then hits scored -0.0, in one answer
    bits = [h[1] for h in RECORDED["answers"][1]]
    plus, minus = bits.index("00000000"), bits.index("00000080")
    assert plus < minus and "00000000" not in bits[minus:]


@pytest.mark.parametrize(("call", "want"), CASES, ids=[f"{c[0]}-q{c[1]}-{c[2][0]}" for c in
                                                       RECORDED["calls"]])
def test_answers_equal_the_wheels(call, want) -> None:
    verb, qi, args = call
    with urna.open(DATA / "signed-zero.urna") as f:
        hits = getattr(f, verb)(RECORDED["queries"][qi], *args)
    assert [[h.chunk_id, struct.pack("<f", h.score).hex()] for h in hits] == want
