"""The Porter stemmer (M.F. Porter, "An algorithm for suffix stripping", 1980), for BM25 terms.

Used only as query-side evidence of ``rank="fused"``: a query term is widened to every term
of the file's own BM25 vocabulary that shares its stem (:mod:`urna.index.stemmed_bm25`), so
"copies" finds "copy" and "disagreeable" finds "disagreeably". The reference's BM25 never
stems. Two rules of Porter's later English stemmer are added to step 2 (``-logi`` -> ``-log``;
``-li`` dropped after c d e g h k m n r t when the rest has m > 1, so "abundantly" meets
"abundant"). Deterministic, pure Python, no dependency. A term that is not all ASCII letters
(digits, other scripts), has at most two characters or more than :data:`MAX_STEMMED` is its
own stem: Porter's rules are English, and the cost stays bounded on a hostile vocabulary.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")
MAX_STEMMED = 64  # no English word is longer; longer terms are their own stem

_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
          ("izer", "ize"), ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
          ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
          ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
          ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
          ("ful", ""), ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
          "ou", "ism", "ate", "iti", "ous", "ive", "ize")
# Each step's suffixes as one tuple: one ``str.endswith`` call tells whether any rule of the
# step applies (most words match none) before its rules are tried in order.
_STEP2_ENDS = tuple(suffix for suffix, _ in _STEP2)
_STEP3_ENDS = tuple(suffix for suffix, _ in _STEP3)


def _consonants(w: str) -> list[bool]:
    """Porter's consonant test of each letter: y is a consonant at the start or after a vowel."""
    out: list[bool] = []
    for i, ch in enumerate(w):
        out.append(ch not in _VOWELS and (ch != "y" or i == 0 or not out[i - 1]))
    return out


def _is_consonant(w: str, i: int) -> bool:
    return _consonants(w[: i + 1])[i]


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m, prev_vowel = 0, False
    for cons in _consonants(stem):
        if prev_vowel and cons:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _double_consonant(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _is_consonant(w, len(w) - 1)


def _cvc(w: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    return (len(w) >= 3 and _is_consonant(w, len(w) - 1) and not _is_consonant(w, len(w) - 2)
            and _is_consonant(w, len(w) - 3) and w[-1] not in "wxy")


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + repl if _measure(stem) > min_m else w
    return w


def _step2(w: str) -> str:
    if w.endswith(_STEP2_ENDS):
        # a failed condition ends the step, as in Porter
        return _replace(w, _STEP2, 0)
    if w.endswith("logi") and _measure(w[:-4]) > 0:
        return w[:-1]
    if w.endswith("li") and len(w) > 3 and w[-3] in "cdeghkmnrt" and _measure(w[:-2]) > 1:
        return w[:-2]
    return w


def _step1(w: str) -> str:
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    extra = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, extra = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, extra = w[:-3], True
    if extra:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_consonant(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    return w


def _step4(w: str) -> str:
    for suffix in _STEP4 if w.endswith(_STEP4) else ():
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if _measure(stem) > 1:
                return stem
            return w
    if w.endswith("ion"):
        stem = w[:-3]
        if _measure(stem) > 1 and stem.endswith(("s", "t")):
            return stem
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if _measure(w) > 1 and _double_consonant(w) and w.endswith("l"):
        w = w[:-1]
    return w


@lru_cache(maxsize=1 << 16)
def porter_stem(term: str) -> str:
    """The Porter stem of a lowercase term (the term itself when not ASCII letters or <= 2)."""
    if not 2 < len(term) <= MAX_STEMMED or not (term.isascii() and term.isalpha()):
        return term
    w = _step1(term)
    w = _step2(w)
    if w.endswith(_STEP3_ENDS):
        w = _replace(w, _STEP3, 0)
    w = _step4(w)
    return _step5(w)
