"""index.stemming: the Porter stemmer of the fused rank's lexical evidence.

Expected stems are the worked examples of Porter's paper ("An algorithm for suffix stripping",
1980) and of the two rules taken from his later English stemmer; none is produced by the code.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from urna.index.stemming import MAX_STEMMED, porter_stem

PORTER_1980 = {
    "caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
    "feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled",
    "motoring": "motor", "sing": "sing", "conflated": "conflat", "troubled": "troubl",
    "sized": "size", "hopping": "hop", "tanned": "tan", "falling": "fall", "hissing": "hiss",
    "fizzed": "fizz", "failing": "fail", "filing": "file", "happy": "happi", "sky": "sky",
    "relational": "relat", "conditional": "condit", "rational": "ration",
    "digitizer": "digit", "conformabli": "conform", "radicalli": "radic",
    "differentli": "differ", "vileli": "vile", "analogousli": "analog",
    "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
    "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope",
    "callousness": "callous", "formaliti": "formal", "sensitiviti": "sensit",
    "sensibiliti": "sensibl", "triplicate": "triplic", "formative": "form",
    "formalize": "formal", "electriciti": "electr", "electrical": "electr", "hopeful": "hope",
    "goodness": "good", "revival": "reviv", "allowance": "allow", "inference": "infer",
    "airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust",
    "defensible": "defens", "irritant": "irrit", "replacement": "replac",
    "adjustment": "adjust", "dependent": "depend", "adoption": "adopt", "homologou": "homolog",
    "communism": "commun", "activate": "activ", "angulariti": "angular",
    "homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler",
    "probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
}


@pytest.mark.parametrize("word,stem", sorted(PORTER_1980.items()))
def test_porter_paper_examples(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_inflections_of_one_word_meet() -> None:
    assert {porter_stem(w) for w in ("copy", "copies", "copied", "copying")} == {"copi"}
    assert {porter_stem(w) for w in ("file", "files", "filing")} == {"file"}


def test_the_two_later_rules_and_their_limits() -> None:
    assert porter_stem("abundantly") == porter_stem("abundant") == "abund"
    assert porter_stem("chronology") == porter_stem("chronologically") == "chronolog"
    # "-li" goes only when what is left has m > 1: short words keep it
    assert porter_stem("early") == "earli" and porter_stem("only") == "onli"


@pytest.mark.parametrize("term", ["ab", "x1", "2024", "zürich", "日本", "naïve", "y" * 70])
def test_non_english_short_or_long_terms_are_their_own_stem(term: str) -> None:
    assert porter_stem(term) == term


def test_a_hostile_term_is_bounded() -> None:
    assert porter_stem("y" * 100_000) == "y" * 100_000
    assert porter_stem("y" * MAX_STEMMED) == porter_stem("y" * MAX_STEMMED)  # no recursion


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=0, max_size=MAX_STEMMED + 4))
def test_stems_are_deterministic_nonempty_and_never_longer(term: str) -> None:
    stem = porter_stem(term)
    assert stem == porter_stem(term)
    assert (stem == term) if len(term) <= 2 else 1 <= len(stem) <= len(term)


SUFFIX_HEAVY = st.lists(st.sampled_from(
    ["a", "e", "i", "o", "u", "y", "b", "c", "l", "s", "t", "z", "at", "bl", "iz", "ed", "ing",
     "ies", "sses", "ational", "tional", "enci", "anci", "izer", "abli", "alli", "entli", "eli",
     "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti",
     "iviti", "biliti", "logi", "li", "icate", "ative", "alize", "iciti", "ical", "ful", "ness",
     "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
     "ou", "ism", "ate", "iti", "ous", "ive", "ize", "ll"]), min_size=1, max_size=6).map("".join)


@settings(max_examples=examples(3000, 500))
@given(st.one_of(SUFFIX_HEAVY, st.text(alphabet="abcdefilmnorstuvyz", min_size=1, max_size=20)))
def test_a_word_begins_with_its_stem_but_the_last_letter(term: str) -> None:
    # stemmed_bm25.stem_group looks a stem's words up by this prefix
    assert term.startswith(porter_stem(term)[:-1])


@settings(max_examples=examples(3000, 500))
@given(st.one_of(SUFFIX_HEAVY, st.text(alphabet="abcdefilmnorstuvyz", min_size=1, max_size=20)))
def test_a_word_begins_with_its_whole_stem_unless_that_ends_in_i_or_a_late_e_or_l(
        term: str) -> None:
    # stemmed_bm25.stem_group narrows its prefix to the whole stem by this
    stem = porter_stem(term)
    assert term.startswith(stem) or stem[-1] == "i" or (len(stem) > 2 and stem[-1] in "el")


def test_the_rewrites_that_change_a_stems_last_letter() -> None:
    # one per letter a rewrite can put in place of the word's own
    assert porter_stem("hoping") == "hope"        # -ing, then + e
    assert porter_stem("happy") == "happi"        # y -> i
    assert porter_stem("sensibility") == "sensibl"  # -biliti -> -ble, then - e
    assert porter_stem("ays") == "ai"  # y -> i even on a two-letter stem


def test_every_short_word_begins_with_its_short_stem_but_for_y_to_i() -> None:
    # all words of up to four letters: a stem of one or two letters other than "?i" is the
    # word's own beginning
    letters = "abcdefghijklmnopqrstuvwxyz"
    for a in letters:
        for b in letters:
            for c in letters:
                for d in ("", *letters):
                    word = a + b + c + d
                    stem = porter_stem(word)
                    if len(stem) <= 2 and not word.startswith(stem):
                        assert stem[-1] == "i", (word, stem)
