"""index.fusion: gap-weighted z-score fusion of exact cosine and BM25 over a candidate pool.

The pools are hand-made so the right order is known by construction: a candidate that both
signals rank first beats one that only one signal likes, neither side's evidence is thrown
away, the order is deterministic, and no lexical evidence means the cosine order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import InvalidInput, UrnaError
from urna.index.fusion import fuse, lexical_coverage, relative_gap, zscore

# rows: 0 both, 1 lexical only, 2 semantic only, 3..7 neither (background)
COS = np.array([0.80, 0.20, 0.85, 0.30, 0.25, 0.28, 0.22, 0.26])
LEX = np.array([9.0, 10.0, 0.0, 1.0, 0.5, 0.0, 0.8, 0.0])


def test_both_match_ranks_first_and_single_evidence_beats_background() -> None:
    r = fuse(np.arange(8), COS, LEX)
    assert int(r.ids[0]) == 0  # strong on both sides
    assert set(r.ids[1:3].tolist()) == {1, 2}  # each side's own strong match is kept
    assert set(r.ids[3:].tolist()) == {3, 4, 5, 6, 7}


def test_scores_and_evidence_travel_with_their_ids() -> None:
    ids = np.array([40, 11, 27, 3, 8, 15, 16, 23])
    r = fuse(ids, COS, LEX)
    back = {int(i): (c, lx) for i, c, lx in zip(r.ids, r.cosine, r.lexical, strict=True)}
    for i, c, lx in zip(ids.tolist(), COS.tolist(), LEX.tolist(), strict=True):
        assert back[i] == (c, lx)
    assert np.all(np.diff(r.scores) <= 0)


def test_no_lexical_evidence_is_the_cosine_order() -> None:
    ids = np.array([5, 1, 9, 2])
    cos = np.array([0.1, 0.9, 0.5, 0.7])
    expected = [1, 2, 9, 5]
    assert fuse(ids, cos, None).ids.tolist() == expected
    assert fuse(ids, cos, np.zeros(4)).ids.tolist() == expected
    assert fuse(ids, cos, np.full(4, np.nan)).ids.tolist() == expected
    assert fuse(ids, cos, None).weights[1] == 0.0


def test_nan_and_zero_both_mean_no_lexical_match() -> None:
    lex_nan = np.where(LEX == 0, np.nan, LEX)
    with_nan = fuse(np.arange(8), COS, lex_nan).ids.tolist()
    assert with_nan == fuse(np.arange(8), COS, LEX).ids.tolist()


def test_ties_break_by_cosine_then_row_id() -> None:
    ids = np.array([7, 3, 5, 1])
    cos = np.array([0.5, 0.5, 0.5, 0.5])  # all equal: z is 0, fused ties everywhere
    assert fuse(ids, cos, None).ids.tolist() == [1, 3, 5, 7]
    cos2 = np.array([0.5, 0.6, 0.5, 0.6])
    assert fuse(ids, cos2, None).ids.tolist() == [1, 3, 5, 7]


def test_positive_zero_cosine_ranks_before_negative_zero_as_the_exact_order() -> None:
    # An int8 row of scale 0 scores +0.0 or -0.0; fused ties them, the cosine key must not.
    ids = np.array([1, 9, 4, 6])
    cos = np.array([-0.0, 0.0, -0.0, 0.0])
    assert fuse(ids, cos, None).ids.tolist() == [6, 9, 1, 4]
    assert fuse(ids, cos, np.zeros(4)).ids.tolist() == [6, 9, 1, 4]


def test_k_cuts_the_order() -> None:
    r = fuse(np.arange(8), COS, LEX, k=2)
    assert r.ids.tolist() == fuse(np.arange(8), COS, LEX).ids[:2].tolist()
    assert fuse(np.arange(8), COS, LEX, k=0).ids.size == 0


def test_empty_and_single_pools() -> None:
    assert fuse(np.zeros(0, np.int64), np.zeros(0), np.zeros(0)).ids.size == 0
    assert fuse(np.array([4]), np.array([0.3]), np.array([2.0])).ids.tolist() == [4]


@pytest.mark.parametrize(("ids", "cos", "lex"), [
    (np.arange(3), np.zeros(2), None),
    (np.arange(3), np.zeros(3), np.zeros(2)),
    (np.array([1, 1]), np.zeros(2), None),
    (np.arange(2), np.array([np.nan, 0.1]), None),
    (np.arange(2), np.zeros(2), np.array([-1.0, 0.0])),
    (np.arange(2), np.zeros(2), np.array([np.inf, 0.0])),
    (np.array([0.5, 1.5]), np.zeros(2), None),
    (np.arange(4).reshape(2, 2), np.zeros((2, 2)), None),
])
def test_bad_pools_raise_typed_errors(ids, cos, lex) -> None:
    with pytest.raises(InvalidInput) as info:
        fuse(ids, cos, lex)
    assert isinstance(info.value, UrnaError)


def test_relative_gap_and_zscore_by_hand() -> None:
    assert relative_gap(np.array([1.0, 0.5, 0.25]), 3) == pytest.approx(0.75)
    assert relative_gap(np.array([2.0, 1.0]), 10) == pytest.approx(0.5)  # depth past the end
    assert relative_gap(np.array([0.0, 0.0])) == 0.0
    assert relative_gap(np.array([-0.2, -0.5])) == 0.0
    assert zscore(np.array([1.0, 3.0])).tolist() == [-1.0, 1.0]
    assert zscore(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]


scores = st.one_of(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
                   st.sampled_from([0.0, -0.0]))
lexs = st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=50.0, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(scores, lexs), min_size=0, max_size=40), st.randoms())
def test_order_is_a_permutation_independent_of_input_order(rows, rnd) -> None:
    n = len(rows)
    ids = np.arange(n, dtype=np.int64) * 3 + 1
    cos = np.array([r[0] for r in rows])
    lex = np.array([r[1] for r in rows])
    a = fuse(ids, cos, lex)
    assert sorted(a.ids.tolist()) == ids.tolist()
    perm = list(range(n))
    rnd.shuffle(perm)
    b = fuse(ids[perm], cos[perm], lex[perm])
    assert a.ids.tolist() == b.ids.tolist()
    # fused score descending, cosine descending (+0.0 before -0.0) within exact ties, then id
    for j in range(n - 1):
        key_a = (-a.scores[j], -a.cosine[j], math.copysign(1.0, a.cosine[j]) < 0, a.ids[j])
        key_b = (-a.scores[j + 1], -a.cosine[j + 1], math.copysign(1.0, a.cosine[j + 1]) < 0,
                 a.ids[j + 1])
        assert key_a <= key_b


def test_lexical_coverage_by_hand() -> None:
    df = {"control": 2, "groups": 4, "linux": 8}
    n = 8
    w = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    got = lexical_coverage(["linux", "control", "groups", "control", "unseen"],
                           {"control", "linux"}, df, n)
    assert got == pytest.approx((w["control"] + w["linux"]) / sum(w.values()))
    assert lexical_coverage(["unseen"], {"unseen"}, df, n) == 0.0
    assert lexical_coverage([], set(), df, n) == 0.0
    assert lexical_coverage(["groups"], {"groups"}, df, n) == 1.0


def test_low_coverage_silences_a_peaked_lexical_list() -> None:
    # BM25 strongly prefers row 1, cosine prefers row 2
    cos = np.array([0.30, 0.20, 0.90, 0.25, 0.22])
    lex = np.array([0.0, 12.0, 0.0, 1.0, 0.5])
    assert int(fuse(np.arange(5), cos, lex).ids[0]) == 1
    assert int(fuse(np.arange(5), cos, lex, coverage=1.0).ids[0]) == 1
    quiet = fuse(np.arange(5), cos, lex, coverage=0.0)
    assert quiet.weights[1] == 0.0
    assert quiet.ids.tolist() == [2, 0, 3, 4, 1]  # the cosine order
    with pytest.raises(InvalidInput):
        fuse(np.arange(5), cos, lex, coverage=1.5)


def test_row_coverage_lifts_the_row_holding_the_whole_query() -> None:
    # row 1 has the higher BM25 (its one rare word), row 0 holds all of the query
    cos = np.array([0.30, 0.30, 0.30, 0.25, 0.22, 0.20])
    lex = np.array([8.0, 10.0, 0.0, 1.0, 0.5, 0.0])
    assert int(fuse(np.arange(6), cos, lex).ids[0]) == 1
    held = np.array([1.0, 0.3, 0.0, 0.5, 0.5, 0.0])
    got = fuse(np.arange(6), cos, lex, row_coverage=held)
    assert int(got.ids[0]) == 0
    assert got.lexical.tolist() == lex[got.ids].tolist()  # the reported BM25 is untouched
    # the trust weight is measured on the BM25 list itself, not on the weighted one
    assert got.weights == fuse(np.arange(6), cos, lex).weights


def test_row_coverage_rides_with_its_ids_in_any_input_order() -> None:
    ids = np.array([12, 3, 7, 40, 5, 9])
    cos = np.array([0.30, 0.30, 0.30, 0.25, 0.22, 0.20])
    lex = np.array([8.0, 10.0, 0.0, 1.0, 0.5, 0.0])
    held = np.array([1.0, 0.3, 0.0, 0.5, 0.5, 0.0])
    a = fuse(ids, cos, lex, row_coverage=held)
    perm = [5, 2, 0, 4, 1, 3]
    b = fuse(ids[perm], cos[perm], lex[perm], row_coverage=held[perm])
    assert a.ids.tolist() == b.ids.tolist() and int(a.ids[0]) == 12


@pytest.mark.parametrize("held", [np.zeros(3), np.array([0.5, 0.5, 0.5, 1.5]),
                                  np.array([0.5, np.nan, 0.5, 0.5]),
                                  np.array([-0.1, 0.5, 0.5, 0.5])])
def test_bad_row_coverage_raises_a_typed_error(held) -> None:
    with pytest.raises(InvalidInput):
        fuse(np.arange(4), np.zeros(4), np.ones(4), row_coverage=held)
