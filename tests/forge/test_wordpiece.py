"""potion's Python WordPiece gives the ids `tokenizers` gives (forge.embedders.wordpiece).

Claims: on random ASCII text (every control character, all punctuation, vocabulary words
glued and split, words past ``max_input_chars_per_word``) the Python tokenizer returns
exactly ``Tokenizer.encode(text, add_special_tokens=False).ids``; it declines non-ASCII
text, text holding an added token, and a ``tokenizer.json`` describing another pipeline; a
few query texts embedded without `tokenizers` equal the reference's vectors; a one-shot
``urna ask`` with an ASCII question never imports `tokenizers`; the cached vocabulary is
read instead of ``tokenizer.json`` while that file is unchanged, and a damaged entry or a
changed file means parsing it again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from helpers.budget import examples
from urna.forge.embedders import potion, wordpiece
from urna.forge.embedders.potion import POTION_DIR, PotionEmbedder
from urna.forge.embedders.wordpiece import ascii_wordpiece

TOKENIZER = POTION_DIR / "tokenizer.json"
HF = Tokenizer.from_file(str(TOKENIZER))
PY = ascii_wordpiece(TOKENIZER)
DATA = Path(__file__).resolve().parents[1] / "data"
REF = json.loads((DATA / "ref-0.5.1" / "quickstart.chunks.json").read_text())
SRC = Path(__file__).resolve().parents[2] / "src"

_ASCII = st.characters(min_codepoint=0, max_codepoint=127)
_WORDS = st.sampled_from(["copy", "file", "unaffable", "xyzzyq", "Citations", "don't",
                          "e-mail", "C++", "über", "a" * 101, "b" * 100, "##ing", "[UN",
                          "K]", "12:30", "\t", "\x0b", "\x1c", "\x7f", "\x00", "\r\n"])
_TEXT = st.lists(st.one_of(_ASCII, _WORDS, st.just(" ")), max_size=40).map("".join)


def test_the_vendored_tokenizer_is_one_it_reads() -> None:
    assert PY is not None and PY.unk_id == HF.token_to_id("[UNK]")


@settings(max_examples=examples(1500, 300), deadline=None)
@given(_TEXT)
def test_ids_equal_the_tokenizers_ids(text: str) -> None:
    assert PY is not None
    got = PY.ids(text)
    if not text.isascii():
        assert got is None
        return
    if any(t in text for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")):
        assert got is None
        return
    assert got == HF.encode(text, add_special_tokens=False).ids


def test_added_tokens_and_non_ascii_are_declined() -> None:
    assert PY is not None
    assert PY.ids("what is [MASK] here") is None  # `tokenizers` keeps the added token whole
    assert PY.ids("café") is None
    assert PY.ids("") == [] and PY.ids(" \t\x00 ") == []


@pytest.mark.parametrize("change", [
    lambda d: d.update(truncation={"max_length": 8}),
    lambda d: d["normalizer"].update(lowercase=False),
    lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
    lambda d: d["model"].update(unk_token="[UNKNOWN]"),
    lambda d: d["added_tokens"][0].update(normalized=True),
    lambda d: d["model"].update(type="BPE"),
])
def test_another_pipeline_is_declined(tmp_path: Path, change) -> None:
    doc = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert ascii_wordpiece(path) is None
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    assert ascii_wordpiece(tmp_path / "broken.json") is None


def test_query_vectors_without_tokenizers_equal_the_reference() -> None:
    potion._load_tokenizer.cache_clear()  # as in a fresh process
    texts = [q[0] for q in REF["queries"]]
    want = np.array([q[1] for q in REF["queries"]], dtype=np.float32)
    emb = PotionEmbedder()
    got = np.concatenate([emb.embed(texts[i:i + 3]) for i in range(0, len(texts), 3)])
    assert potion._load_tokenizer.cache_info().currsize == 0  # all taken in Python
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    assert np.array_equal(got, emb.embed(texts * 3)[:len(texts)])  # the `tokenizers` batch


def test_a_one_shot_ask_does_not_import_tokenizers(tmp_path: Path) -> None:
    corpus = DATA / "ref-0.5.1" / "quickstart-hybrid.urna"
    code = ("import sys; from urna.cli import main\n"
            "try:\n    main(['ask', sys.argv[1], 'how do citations work', '-k', '2'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print('tokenizers' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(SRC), URNA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code, str(corpus)], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == "False"
    assert "urna://" in out


def test_the_vocabulary_cache_is_kept_while_the_file_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    tok = tmp_path / "tokenizer.json"
    shutil.copyfile(TOKENIZER, tok)
    first = wordpiece.cached_ascii_wordpiece(tok)
    assert first == PY
    [entry] = (tmp_path / "cache" / "wordpiece").iterdir()
    with monkeypatch.context() as m:  # the next read never parses tokenizer.json
        m.setattr(wordpiece, "ascii_wordpiece", lambda path: pytest.fail("parsed again"))
        assert wordpiece.cached_ascii_wordpiece(tok) == PY
    entry.write_text(entry.read_text(encoding="utf-8")[:-40], encoding="utf-8")  # cut short
    assert wordpiece.cached_ascii_wordpiece(tok) == PY
    doc = json.loads(tok.read_text(encoding="utf-8"))
    doc["model"]["vocab"]["zzqqy"] = len(doc["model"]["vocab"])
    tok.write_text(json.dumps(doc), encoding="utf-8")
    os.utime(tok, ns=(1, 1))  # another state of the file: another entry
    changed = wordpiece.cached_ascii_wordpiece(tok)
    assert changed is not None and changed.vocab["zzqqy"] == len(doc["model"]["vocab"]) - 1
    assert changed.ids("zzqqy") == [changed.vocab["zzqqy"]]


def test_the_cached_lines_answer_every_token_as_the_parsed_vocabulary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    wordpiece.cached_ascii_wordpiece(TOKENIZER)  # writes the entry
    cached = wordpiece.cached_ascii_wordpiece(TOKENIZER)  # reads it
    assert cached is not None and isinstance(cached.vocab, wordpiece.LineVocab)
    assert PY is not None and len(cached.vocab) == len(PY.vocab)
    assert list(cached.vocab) == sorted(PY.vocab, key=PY.vocab.__getitem__)
    for token in ("[UNK]", "the", "##s", "[CLS]", "zzqqyx", "", "a\nb", "##"):
        assert cached.vocab.get(token) == PY.vocab.get(token)
    [entry] = (tmp_path / "cache" / "wordpiece").iterdir()
    text = entry.read_text(encoding="utf-8")
    head, _, body = text.partition("\n")
    swapped = body.replace("\nthe\n", "\ntha\n", 1)  # same count of lines, one token changed
    assert swapped != body
    entry.write_text(head + "\n" + swapped, encoding="utf-8")
    with monkeypatch.context() as m:  # a damaged list is never read: tokenizer.json is
        parsed = []
        m.setattr(wordpiece, "ascii_wordpiece", lambda path: parsed.append(path) or PY)
        assert wordpiece.cached_ascii_wordpiece(TOKENIZER) is PY
        assert parsed == [TOKENIZER]


@pytest.mark.parametrize("token", ["a\rb", "\r", "caf\u00e9", "\ud800"])
def test_a_vocabulary_with_any_token_reads_back_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    # a carriage return survives the cache's lines (a text-mode read turned it into a line
    # break); a lone surrogate, which no UTF-8 line holds, leaves tokenizer.json the source
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    doc = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    doc["model"]["vocab"][token] = len(doc["model"]["vocab"])
    tok = tmp_path / "tokenizer.json"
    tok.write_text(json.dumps(doc), encoding="utf-8")
    parsed = wordpiece.ascii_wordpiece(tok)
    assert parsed is not None and parsed.vocab[token] == len(doc["model"]["vocab"]) - 1
    assert wordpiece.cached_ascii_wordpiece(tok) == parsed  # writes the entry, if it can
    kept = list((tmp_path / "cache").glob("wordpiece/*.txt"))
    assert len(kept) == (0 if token == "\ud800" else 1)
    real = wordpiece.ascii_wordpiece
    with monkeypatch.context() as m:
        parses: list[Path] = []
        m.setattr(wordpiece, "ascii_wordpiece", lambda path: parses.append(path) or real(path))
        again = wordpiece.cached_ascii_wordpiece(tok)
    assert again is not None and again.vocab.get(token) == parsed.vocab[token]
    assert len(parses) == (1 if token == "\ud800" else 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126),
                        max_size=12), max_size=6),
       st.integers(0, 8))
def test_line_lookups_equal_the_dict(asked: list[str], searches: int) -> None:
    tokens = ["[UNK]", "ab", "a", "##b", "b", "abc", " ", "x y", "ab", ""]
    vocab = wordpiece.LineVocab("\n".join(tokens), len(tokens))
    vocab.searches_before_map = searches  # the same ids searched in the lines and from the map
    want: dict[str, int] = {}
    for i, t in enumerate(tokens):
        want.setdefault(t, i)  # a repeated line: the first one's id
    for token in [*asked, "ab", "", *tokens]:
        assert vocab.get(token) == want.get(token)
        assert vocab.get(token + "\n" + token) is None
