"""The BM25 tokenizer against the reference (03-runtime §8.1).

Expected tokens come from the reference: the vectors' 0x08 term lists, and a table of tricky
strings whose per-string token counts were read back from a file the reference wheel 0.5.1
built with one chunk per string (order is text order). The tables behind the tokenizer were
also checked equal to the reference over every code point (0x08 payload byte-identical for
``"q<c>q <c>"`` over all 1,112,064 scalar values).
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from helpers.vectors import DATA
from urna.format import layout as L
from urna.format.sections.bm25 import decode_bm25
from urna.index._unicode_tables import LOWER, WORD_RANGES
from urna.index.tokenize import (
    _LOOKUPS,
    _token_runs,
    class_token_runs,
    class_word_runs,
    is_word_char,
    lowercase,
    tokenize,
    word_runs,
)

TOKENS_DIR = DATA / "ref-0.5.1-tokens"

TRICKY = [
    ('Hello, World! hello world HELLO', ['hello', 'world', 'hello', 'world', 'hello']),
    ('Straße STRASSE strasse Maße', ['straße', 'strasse', 'strasse', 'maße']),
    ('naïve café Ünïcödé résumé', ['naïve', 'café', 'ünïcödé', 'résumé']),
    ('İstanbul ıi Iİ', ['i̇stanbul', 'ıi', 'ii̇']),
    ('ǅemal ǆ Ǆ', ['ǆemal']),
    ('ﬁnance ﬂow ﬀ', ['ﬁnance', 'ﬂow']),
    ('東京都 渋谷区 テスト カタカナ ひらがな',
     ['東京都', '渋谷区', 'テスト', 'カタカナ', 'ひらがな']),
    ('한국어 텍스트', ['한국어', '텍스트']),
    ('emoji 😀 🚀🚀 ❤️ 👍🏽 tokens', ['emoji', 'tokens']),
    ("don't can't it's rock'n'roll", ['don', 'can', 'it', 'rock', 'roll']),
    ('state-of-the-art e-mail x-ray', ['state', 'of', 'the', 'art', 'mail', 'ray']),
    ('snake_case CamelCase kebab-case dot.separated',
     ['snake', 'case', 'camelcase', 'kebab', 'case', 'dot', 'separated']),
    ('v1.2.3 3.14159 1,000,000 -42 +7 0x1F', ['v1', '14159', '000', '000', '42', '0x1f']),
    ('user@example.com https://example.com/a?b=c#d',
     ['user', 'example', 'com', 'https', 'example', 'com']),
    ('tab\tnew\nline\r\ncarriage', ['tab', 'new', 'line', 'carriage']),
    ('  leading and trailing  ', ['leading', 'and', 'trailing']),
    ('', []),
    ('a', []),
    ('ΑΒΓ αβγ ΣΊΣΥΦΟΣ σίσυφος ς', ['αβγ', 'αβγ', 'σίσυφοσ', 'σίσυφος']),
    ('Привет МИР мир', ['привет', 'мир', 'мир']),
    ('مرحبا بالعالم', ['مرحبا', 'بالعالم']),
    ('שלום עולם', ['שלום', 'עולם']),
    ('नमस्ते दुनिया', ['नमस', 'ते', 'दुनिया']),
    ('ÀÉÎÕÜ àéîõü Çç Ññ', ['àéîõü', 'àéîõü', 'çç', 'ññ']),
    ('ＦＵＬＬＷＩＤＴＨ ｆｕｌｌｗｉｄｔｈ', ['ｆｕｌｌｗｉｄｔｈ', 'ｆｕｌｌｗｉｄｔｈ']),
    ('zero\u200bwidth\u200djoiner', ['zero', 'width', 'joiner']),
    ('combining é vs é', ['combining', 'vs']),
    ('math ∑∫√∞ ≤≥ ½ ² ³', ['math']),
    ('repeat repeat repeat repeat', ['repeat', 'repeat', 'repeat', 'repeat']),
    ('under_score __dunder__', ['under', 'score', 'dunder']),
    ('ǅ', []),
    ('İ', ['i̇']),
    ('ⒶⒷⒸ ⓐ', ['ⓐⓑⓒ']),
    ('Ⅻ century ⅻ', ['century']),
    ('²³ x² H₂O', ['²³', 'x²', 'h₂o']),
    ('كَتَبَ الكِتَابَ', ['كَتَبَ', 'الكِتَابَ']),
    ('ΣΑΣ ΣΑ Σ', ['σασ', 'σα']),
    ('\U00010d50\U00010d51 \U00010d70', ['\U00010d70\U00010d71']),
    ('\ua7ce\ua7cf \ua7cc', ['\ua7cf\ua7cf']),
    ('\U000323b0\U000323b1 \U00031350\U00031351', ['\U000323b0\U000323b1', '\U00031350\U00031351']),
    ('ab\U0003d000cd', ['ab', 'cd']),
    ('ภาษาไทย', ['ภาษาไทย']),
    ('தமிழ் மொழி', ['தமிழ', 'மொழி']),
    ('ab\x00cd\x7fef', ['ab', 'cd', 'ef']),
    ('KELVIN KK Ångstrom', ['kelvin', 'kk', 'ångstrom']),
    ('ﬃ ﬃx ẞẞ', ['ﬃx', 'ßß']),
    ('ᏣᎳᎩ ꮳꮃꭹ', ['ꮳꮃꭹ', 'ꮳꮃꭹ']),
    ('ᲐᲑᲒ აბგ', ['აბგ', 'აბგ']),
    ('𝐀𝐁𝐂 𝐚𝐛', ['𝐀𝐁𝐂', '𝐚𝐛']),
    ('𞤀𞤁 𞤢𞤣', ['𞤢𞤣', '𞤢𞤣']),
    ('٣٤٥ ①② 𝟘𝟙', ['٣٤٥', '①②', '𝟘𝟙']),
    ('l·l a_b', []),
    ('ᄀᄀ ᅡᅡ', ['ᄀᄀ', 'ᅡᅡ']),
    ('ab👍🏽cd', ['ab', 'cd']),
    ('co\xadop', ['co', 'op']),
    ('donʼt', ['donʼt']),
    ('ᾳ ᾳ ᾼ', ['ᾳ']),
    ('Ǆǅǆ', ['ǆǆǆ']),
    ('İ i̇', []),
    ('ΌΣΟΣ όσος', ['όσοσ', 'όσος']),
    ('ǰ ǰǰ', ['ǰǰ']),
    ('ﬀ ﬅﬆ', ['ﬅﬆ']),
    ('Ⓜ︎Ⓜ', []),
    ('ªº ª', ['ªº']),
    ('ⅠⅡ ⅰ', ['ⅰⅱ']),
    ('〇〇 々々', ['〇〇', '々々']),
    ('ﾊﾝｶｸ ｶﾀｶﾅ', ['ﾊﾝｶｸ', 'ｶﾀｶﾅ']),
    ('🄰🄱 🅰🅱', ['🄰🄱', '🅰🅱']),
    ('ⅰⅱ Ⅰ', ['ⅰⅱ']),
    ('x́y z̈z', []),
    ('ŉ ŉŉ', ['ŉŉ']),
    ('İİ ıı', ['i̇i̇', 'ıı']),
]


@pytest.mark.parametrize("text,expected", TRICKY, ids=[f"s{i}" for i in range(len(TRICKY))])
def test_tricky_strings_match_the_reference(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected



def _section_08(name: str) -> bytes:
    """The decompressed 0x08 payload of a vector file, located through the layout structs."""
    buf = (TOKENS_DIR / name).read_bytes()
    h = L.Header.unpack(buf)
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        if e.section_id == L.SECTION_BM25_INDEX:
            raw = buf[e.offset:e.offset + e.size]
            if e.encoding == L.ENCODING_ZSTD:  # the hybrid preset compresses 0x08
                return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            return raw
    raise AssertionError(f"{name} has no 0x08 section")


@pytest.mark.parametrize("name", ["tokens-bm25.urna", "tokens-hybrid.urna"])
def test_stored_terms_and_counts_equal_our_tokens(name: str) -> None:
    texts = [c["canonical_text"] for c in
             json.loads((TOKENS_DIR / "tokens.chunks.json").read_text())["chunks"]]
    p = decode_bm25(_section_08(name))
    ours = [tokenize(t) for t in texts]
    assert p.terms == sorted({tok for toks in ours for tok in toks})
    assert p.doc_lens.tolist() == [len(toks) for toks in ours]
    stored = [Counter() for _ in texts]
    for t, term in enumerate(p.terms):
        lo, hi = p.post_offsets[t], p.post_offsets[t + 1]
        for d, tf in zip(p.post_docs[lo:hi].tolist(), p.post_tfs[lo:hi].tolist(), strict=True):
            stored[d][term] += tf
    assert stored == [Counter(toks) for toks in ours]


@pytest.mark.parametrize("ch,word", [
    ("a", True), ("Z", True), ("7", True), ("_", False), ("-", False), ("'", False),
    ("\u0915", True),    # Devanagari KA (Lo)
    ("\u093e", True),    # Devanagari vowel sign AA: Other_Alphabetic, not str.isalpha
    ("\u094d", False),   # Devanagari virama (Mn, not Alphabetic)
    ("\u0301", False),   # combining acute
    ("\u00b2", True),    # superscript two (No)
    ("\u2167", True),    # Roman numeral eight (Nl)
    ("\u24b6", True),    # circled A (So, Other_Alphabetic)
    ("\u02bc", True),    # modifier letter apostrophe (Lm)
    ("\U000323b0", True),  # CJK Extension J, Unicode 17: the reference knows it
    ("\U00010d50", True),  # Garay capital, Unicode 16
    ("\U0003d000", False),  # assigned only in Unicode 18: not yet a word char for 0.5.1
    ("\U0001f600", False), ("\u200b", False), ("\x00", False), ("\ud800", False),
])
def test_word_characters(ch: str, word: bool) -> None:
    assert is_word_char(ch) is word


@pytest.mark.parametrize("ch,low", [
    ("A", "a"), ("\u0130", "i\u0307"), ("\u03a3", "\u03c3"), ("\u1e9e", "\u00df"),
    ("\u212a", "k"), ("\ua7ce", "\ua7cf"), ("\U00010d50", "\U00010d70"), ("\u01c5", "\u01c6"),
    ("\u00df", "\u00df"), ("\ufb01", "\ufb01"), ("\u24b6", "\u24d0"), ("1", "1"),
])
def test_lowercase_is_per_character_and_context_free(ch: str, low: str) -> None:
    assert lowercase(ch) == low


def test_python_builtins_would_be_wrong() -> None:
    # the reasons the tokenizer carries its own tables
    assert not "\u093e".isalnum() and is_word_char("\u093e")
    assert "ΣΑΣ".lower() == "σας" and tokenize("ΣΑΣ") == ["σασ"]


def test_tables_are_well_formed() -> None:
    prev = -2
    for lo, hi in WORD_RANGES:
        assert prev + 1 < lo <= hi <= 0x10FFFF  # sorted, disjoint, not adjacent
        prev = hi
    assert all(not 0xD800 <= cp <= 0xDFFF and low != chr(cp) for cp, low in LOWER.items())


_ASCII_RUN = re.compile(r"[a-z0-9]+")
_LOWER = str.maketrans(LOWER)


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_matches_a_plain_oracle(text: str) -> None:
    expected = [t for t in _ASCII_RUN.findall(text.lower()) if len(t) >= 2]
    assert tokenize(text) == expected


@given(st.text(), st.text())
def test_whitespace_separates_independently(a: str, b: str) -> None:
    assert tokenize(a + " " + b) == tokenize(a) + tokenize(b)


@given(st.text())
def test_tokens_are_lowercase_runs_of_at_least_two(text: str) -> None:
    for tok in tokenize(text):
        assert len(tok) >= 2 and tok.translate(_LOWER) == tok  # lowercase is idempotent


def spec_tokenize(text: str) -> list[str]:
    """§8.1 written out one character at a time (the fast path must agree with it)."""
    out: list[str] = []
    cur = ""
    for ch in text:
        if is_word_char(ch):
            cur += lowercase(ch)
        else:
            if len(cur) >= 2:
                out.append(cur)
            cur = ""
    if len(cur) >= 2:
        out.append(cur)
    return out


_MIXED = st.text(alphabet=st.one_of(
    st.characters(),
    st.sampled_from("aZ9_ İıΣσǅ\u0301\u093e\U00010d50\U0001f600\U0003d000\U000323b0")))


@given(_MIXED)
def test_fast_path_equals_the_per_character_definition(text: str) -> None:
    assert tokenize(text) == spec_tokenize(text)


def test_the_only_ascii_word_characters_are_letters_and_digits() -> None:
    # the per-character path takes ASCII letters and digits as word characters unlooked
    ascii_words = "".join(ch for ch in map(chr, range(128)) if is_word_char(ch))
    assert ascii_words == "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def test_each_ascii_and_latin_character_splits_as_the_compiled_class_does() -> None:
    # the lookup path's candidate runs: ASCII letters and digits, and every non-ASCII character
    text = "".join(f"ab{chr(cp)}cd " for cp in range(0x180))
    assert word_runs(text) == class_word_runs(text)
    assert tokenize(text) == spec_tokenize(text)


@given(_MIXED)
def test_runs_found_by_lookup_equal_the_compiled_class(text: str) -> None:
    assert word_runs(text) == class_word_runs(text)
    assert _token_runs(text) == class_token_runs(text)


@given(_MIXED)
def test_a_text_past_the_lookup_budget_takes_the_compiled_class(text: str) -> None:
    long = text + " " + "é" * (_LOOKUPS + 1) + text
    assert tokenize(long) == spec_tokenize(long)
    assert word_runs(long) == class_word_runs(long)
