"""The BM25 tokenizer, identical to the reference's (03-runtime §8.1).

A word character is one for which Rust's ``char::is_alphanumeric`` holds: Unicode Alphabetic
or general category Nd, Nl or No. Each maximal run of word characters is lowercased one
character at a time with the full, context-free mapping of Rust's ``char::to_lowercase``
(so capital sigma is always ``σ`` and U+0130 becomes ``i`` + U+0307), and kept when it has
at least two characters after lowercasing. No stemming, stop words or normalization.

The tables come from ``_unicode_tables`` (generated at the reference's Unicode version, 17.0),
never from ``unicodedata`` or ``str.isalnum``, whose answers depend on the interpreter.
``str.lower`` is used only as a fast path, on text where it provably gives the table's answer
(no capital sigma, no character this interpreter's Unicode data maps differently).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache

from ._unicode_tables import LOWER, WORD_RANGES


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = []
    for lo, hi in ranges:
        one = re.escape(chr(lo))
        parts.append(one if lo == hi else f"{one}-{re.escape(chr(hi))}")
    return "[" + "".join(parts) + "]"


_STARTS = [lo for lo, _ in WORD_RANGES]
_ENDS = [hi for _, hi in WORD_RANGES]
# `re` tests a character class with a BMP bitmap, but checks every astral range one by one for
# each character outside it, so a single class over all ranges is ~10x slower. Runs are found
# with the BMP class only; astral characters (rare) are first replaced by a BMP stand-in of the
# same class, which keeps every offset, and the runs are then cut from the original text.
assert all(lo > 0xFFFF or hi <= 0xFFFF for lo, hi in WORD_RANGES)
# Tokens need two characters after lowercasing. Lowercasing keeps a character's length except
# for the few whose mapping is longer (only U+0130 today), so the kept tokens are exactly the
# runs of two or more, or one such character alone: the regex drops the rest in C.
_GROWS = sorted(chr(cp) for cp, low in LOWER.items() if len(low) >= 2)
assert all(len(LOWER[ord(ch)]) == 2 and ord(ch) <= 0xFFFF for ch in _GROWS)
GROWS_WHEN_LOWERED = frozenset(_GROWS)  # the characters whose lowercase is longer (U+0130)


@cache
def _bmp_patterns() -> tuple[re.Pattern, re.Pattern]:
    """(word run, token) over the BMP word class: compiled on the first non-ASCII text, as
    compiling the class costs ~8 ms that an ASCII query (a CLI question) never needs."""
    bmp_class = _class(tuple(r for r in WORD_RANGES if r[1] <= 0xFFFF))
    return (re.compile(bmp_class + "+"),
            re.compile(bmp_class + "{2,}" + "".join(f"|{re.escape(ch)}" for ch in _GROWS)))


_ASCII_TOKEN = re.compile("[a-z0-9]{2,}")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
# str.translate applies the table per character, which is exactly a context-free lowercase.
_LOWER = str.maketrans(LOWER)
# A separator no lowercase mapping can produce and no word run contains.
_SEP = "\x00"


def is_word_char(ch: str) -> bool:
    """Whether ``ch`` is a word character (Rust ``char::is_alphanumeric``)."""
    cp = ord(ch)
    i = bisect_right(_STARTS, cp) - 1
    return i >= 0 and cp <= _ENDS[i]


def lowercase(ch: str) -> str:
    """Rust ``char::to_lowercase`` of one character (may be several characters)."""
    return ch.translate(_LOWER)


# Text with few non-ASCII characters (a man page's hyphens and quotes) is split without the BMP
# class: candidate runs of ASCII letters and digits (word characters in the reference's table,
# and the only ASCII ones) and of any non-ASCII character, whose non-ASCII characters are then
# looked up one by one. Past this many of them the compiled class is the cheaper way.
# Written as the complement of ASCII's non-alphanumerics: the same set as
# [0-9A-Za-z\x80-\U0010ffff], whose range up to U+10FFFF costs ~3 ms to compile at import.
_CANDIDATE = re.compile("[^\x00-/:-@\\[-`{-\x7f]+")
_LOOKUPS = 512


def _runs_by_lookup(text: str) -> list[str] | None:
    """The maximal word runs of ``text`` found by per-character lookup; None when it holds
    more non-ASCII characters than are worth looking up one by one."""
    runs: list[str] = []
    looked = 0
    for candidate in _CANDIDATE.findall(text):
        if candidate.isascii():
            runs.append(candidate)
            continue
        looked += len(candidate)
        if looked > _LOOKUPS:
            return None
        start = -1
        for i, ch in enumerate(candidate):
            if ch < "\x80" or is_word_char(ch):
                if start < 0:
                    start = i
            elif start >= 0:
                runs.append(candidate[start:i])
                start = -1
        if start >= 0:
            runs.append(candidate[start:])
    return runs


def word_runs(text: str) -> list[str]:
    """The maximal runs of word characters of ``text``, in order, not yet lowercased."""
    runs = _runs_by_lookup(text)
    return runs if runs is not None else class_word_runs(text)


def class_word_runs(text: str) -> list[str]:
    """``word_runs`` by the compiled BMP word class (any text; compiled on first use)."""
    run = _bmp_patterns()[0]
    if _ASTRAL.search(text) is None:
        return run.findall(text)
    return _astral_runs(run, text)


def _astral_runs(pattern: re.Pattern, text: str) -> list[str]:
    words = 0

    def stand_in(m: re.Match) -> str:
        nonlocal words
        if is_word_char(m.group()):
            words += 1
            return "a"
        return " "

    probe = _ASTRAL.sub(stand_in, text)  # same length: one BMP char per astral char
    if not words:  # only non-word astral characters (emoji...): the runs are the probe's
        return pattern.findall(probe)
    return [text[m.start():m.end()] for m in pattern.finditer(probe)]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase word tokens of at least two characters, in order.

    Example: ``tokenize("Ação! don't 3.14")`` == ``["ação", "don", "14"]``.
    """
    if text.isascii():  # O(1) flag check; ASCII lowercase is the same in every table
        return _ASCII_TOKEN.findall(text.lower())
    runs = _token_runs(text)
    if not runs:
        return []
    joined = _SEP.join(runs)
    if "\u03a3" in joined:  # str.lower would apply the final-sigma rule; Rust never does
        joined = joined.replace("\u03a3", "\u03c3")
    # str.lower agrees with the table except on the few characters this interpreter's Unicode
    # tables get wrong, and is much faster than translate; either way one pass lowercases all.
    if not _lower_differs(joined):
        return joined.lower().split(_SEP)
    return joined.translate(_LOWER).split(_SEP)


def _token_runs(text: str) -> list[str]:
    """The runs ``tokenize`` keeps, not yet lowercased: two characters or more, or one that
    lowercases to two (U+0130)."""
    runs = _runs_by_lookup(text)
    if runs is None:
        return class_token_runs(text)
    return [r for r in runs if len(r) >= 2 or r in GROWS_WHEN_LOWERED]


def class_token_runs(text: str) -> list[str]:
    """``_token_runs`` by the compiled BMP token pattern (any text; compiled on first use)."""
    token = _bmp_patterns()[1]
    return _astral_runs(token, text) if _ASTRAL.search(text) is not None else token.findall(text)


# character -> whether ``str.lower`` here differs from the reference's lowercase, filled as
# characters are met: checking all ~140,000 word characters up front cost a CLI question
# ~0.15 s on its first non-ASCII text.
_DIFFERS: dict[str, bool] = {}


def _lower_differs(joined: str) -> bool:
    """Whether some character of ``joined`` (word runs and separators) lowercases differently
    with ``str.lower`` than with the reference's table (capital sigma is replaced before)."""
    for ch in set(joined):
        odd = _DIFFERS.get(ch)
        if odd is None:
            odd = _DIFFERS[ch] = ch.lower() != LOWER.get(ord(ch), ch)
        if odd:
            return True
    return False
