"""The BM25 tokenizer, identical to the reference's (03-runtime §8.1).

A word character is one for which Rust's ``char::is_alphanumeric`` holds: Unicode Alphabetic
or general category Nd, Nl or No. Each maximal run of word characters is lowercased one
character at a time with the full, context-free mapping of Rust's ``char::to_lowercase``
(so capital sigma is always ``σ`` and U+0130 becomes ``i`` + U+0307), and kept when it has
at least two characters after lowercasing. No stemming, stop words or normalization.

The tables come from ``_unicode_tables`` (generated at the reference's Unicode version), never
from ``unicodedata`` or ``str.isalnum``/``str.lower``, whose answers depend on the interpreter.
"""

from __future__ import annotations

import re

from ._unicode_tables import LOWER, WORD_RANGES


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = []
    for lo, hi in ranges:
        parts.append(re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}")
    return "[" + "".join(parts) + "]+"


_WORD_RUN = re.compile(_class(WORD_RANGES))
# str.translate applies the table per character, which is exactly a context-free lowercase.
_LOWER = str.maketrans(LOWER)
# A separator no lowercase mapping can produce and no word run contains.
_SEP = "\x00"


def is_word_char(ch: str) -> bool:
    """Whether ``ch`` is a word character (Rust ``char::is_alphanumeric``)."""
    return _WORD_RUN.fullmatch(ch) is not None


def lowercase(ch: str) -> str:
    """Rust ``char::to_lowercase`` of one character (may be several characters)."""
    return ch.translate(_LOWER)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase word tokens of at least two characters, in order.

    Example: ``tokenize("Ação! don't 3.14")`` == ``["ação", "don", "14"]``.
    """
    runs = _WORD_RUN.findall(text)
    if not runs:
        return []
    # Lowercase all runs in one pass; lengths are counted after lowercasing, as the reference.
    lowered = _SEP.join(runs).translate(_LOWER).split(_SEP)
    return [tok for tok in lowered if len(tok) >= 2]
