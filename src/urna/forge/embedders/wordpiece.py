"""BERT WordPiece of ASCII text in Python: a short query embedded without loading `tokenizers`.

Loading the `tokenizers` package and building potion's tokenizer from its ``tokenizer.json``
costs ~25 ms of a one-shot ``urna ask`` (#20); a question is a few words. This module reads
the same ``tokenizer.json`` and, when it describes exactly the pipeline implemented here
(``BertNormalizer`` lowercasing, ``BertPreTokenizer``, ``WordPiece`` with the ``##`` prefix,
no truncation or padding, added tokens matched on the raw text only), gives the ids that
``Tokenizer.encode(text, add_special_tokens=False)`` gives, for ASCII text containing no
added token. On ASCII the steps are short: the normalizer drops NUL and the control
characters (every C0 control and DEL except tab, line feed and carriage return, which become
spaces) and lowercases; the pre-tokenizer splits on spaces and isolates each ASCII
punctuation character; WordPiece takes the longest vocabulary prefix, then ``##``-prefixed
continuations, and a word it cannot cover (or longer than ``max_input_chars_per_word``)
becomes the unknown token. Anything else (non-ASCII text, an added token in it, another
pipeline) is declined (``None``) and the caller tokenizes with `tokenizers`;
tests/forge/test_wordpiece.py compares both on random text. Parsing ``tokenizer.json`` costs
~7 ms, so :func:`cached_ascii_wordpiece` keeps the vocabulary under the user cache as one
token a line in id order, keyed like the fingerprints by the file's path, size and
``mtime_ns``, with the lines' SHA-256; a read checks the digest and looks each token up in
the lines themselves (:class:`LineVocab`), building the ~30,000-entry dict only in a process
that looks up many tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from urna._atomic import write_atomic
from urna._cache_dir import user_cache_folder
from urna.forge.canonical import canonical_hash
from urna.forge.embedders.fingerprints import file_states
from urna.format.record import FrozenRecord

_DROP = {c: None for c in range(0x20) if chr(c) not in "\t\n\r"} | {0x7F: None}
_SPACE = {ord("\t"): " ", ord("\n"): " ", ord("\r"): " "}
_CLEAN = str.maketrans({**_DROP, **_SPACE})
# ASCII P* and S*: string.punctuation, spelled out (``import string`` costs ~0.7 ms of an ask)
_ASCII_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PUNCT = str.maketrans({c: f" {c} " for c in _ASCII_PUNCTUATION})
_NORMALIZER_FLAGS = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                     "lowercase": True}


class LineVocab(Mapping[str, int]):
    """A vocabulary kept as one token a line in id order, each token looked up in the text
    itself: a question reads a few dozen of potion's ~30,000 tokens, and building their dict
    cost more than the rest of its embedding (~5 ms of a one-shot ``urna ask``, #20). A
    resident process (a server, the warm CLI) asks for many: after ``searches_before_map``
    lookups the dict is built once, since each search reads ~half the 230 KB of lines."""

    searches_before_map = 256
    """Lookups searched in the text before the dict is built (it costs about this many)."""

    def __init__(self, lines: str, n: int) -> None:
        self._text, self._n = "\n" + lines + "\n", n
        self._ids: dict[str, int] | None = None
        self._searches = 0

    def get(self, token: str, default: Any = None) -> Any:  # type: ignore[override]
        """The id of ``token`` (its line number), else ``default``."""
        ids = self._ids
        if ids is not None:
            return ids.get(token, default)
        self._searches += 1  # a race only miscounts: the map gives the same ids
        if self._searches > self.searches_before_map:
            # a repeated line keeps its first number, as the search finds it
            lines = self._text[1:-1].split("\n")
            self._ids = ids = {t: i for i, t in reversed(list(enumerate(lines)))}
            return ids.get(token, default)
        at = self._text.find("\n" + token + "\n") if "\n" not in token else -1
        return default if at < 0 else self._text.count("\n", 0, at)

    def __getitem__(self, token: str) -> int:
        got = self.get(token)
        if got is None:
            raise KeyError(token)
        return int(got)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return iter(self._text[1:-1].split("\n"))


class AsciiWordPiece(FrozenRecord):
    """The WordPiece vocabulary of one ``tokenizer.json`` and the rules around it (a slotted
    record: a one-shot ``urna ask`` builds it, format/record.py says why not a dataclass)."""

    _fields = ("vocab", "unk_id", "prefix", "max_chars", "added")
    __slots__ = _fields

    vocab: Mapping[str, int]
    unk_id: int
    prefix: str
    max_chars: int
    added: tuple[str, ...]  # added-token contents: a text holding one is declined

    def __init__(self, vocab: Mapping[str, int], unk_id: int, prefix: str, max_chars: int,
                 added: tuple[str, ...]) -> None:
        self._set(vocab, unk_id, prefix, max_chars, added)

    def ids(self, text: str) -> list[int] | None:
        """``encode(text, add_special_tokens=False).ids``, or None when this text is not
        one this tokenizer handles (non-ASCII, or holding an added token)."""
        if not text.isascii() or any(a in text for a in self.added):
            return None
        words = text.translate(_CLEAN).lower().translate(_PUNCT).split(" ")
        out: list[int] = []
        for word in words:
            if word:
                out.extend(self._word(word))
        # ids are checked as they are used, not the whole vocabulary at load
        return out if all(type(i) is int for i in out) else None

    def _word(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.unk_id]
        vocab, pieces, start = self.vocab, [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                got = vocab.get(piece)
                if got is not None:
                    pieces.append(got)
                    break
                end -= 1
            else:
                return [self.unk_id]  # no piece covers this position: the whole word is unknown
            start = end
        return pieces


def _plain_added(token: Any) -> str | None:
    """An added token matched only as its raw content (no normalization, strip or word rule)."""
    if not isinstance(token, dict) or not isinstance(token.get("content"), str):
        return None
    if token.get("normalized") or token.get("lstrip") or token.get("rstrip") \
            or token.get("single_word") or not token["content"]:
        return None
    return str(token["content"])


def ascii_wordpiece(tokenizer_json: str | os.PathLike[str]) -> AsciiWordPiece | None:
    """The Python tokenizer of ``tokenizer_json``, or None when it describes another pipeline
    (or cannot be read: `tokenizers` then reports the problem)."""
    try:
        with open(tokenizer_json, "rb") as fh:
            doc = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("truncation") is not None \
            or doc.get("padding") is not None:
        return None
    norm, pre, model = doc.get("normalizer"), doc.get("pre_tokenizer"), doc.get("model")
    if not isinstance(norm, dict) or not isinstance(model, dict):
        return None
    if {k: v for k, v in norm.items() if k != "strip_accents"} != _NORMALIZER_FLAGS:
        return None  # strip_accents changes nothing on ASCII
    if pre != {"type": "BertPreTokenizer"} or model.get("type") != "WordPiece":
        return None
    vocab, unk, prefix = model.get("vocab"), model.get("unk_token"), model.get(
        "continuing_subword_prefix")
    max_chars = model.get("max_input_chars_per_word")
    # "[UNK]": potion's empty text is the row token_to_id("[UNK]") names
    if not isinstance(vocab, dict) or unk != "[UNK]" or type(vocab.get(unk)) is not int \
            or not isinstance(prefix, str) or type(max_chars) is not int:
        return None
    tokens = doc.get("added_tokens") or []
    added = [_plain_added(t) for t in tokens]
    if any(a is None for a in added) or any(
            t["content"] == unk and t.get("id") != vocab[unk] for t in tokens):
        return None
    return AsciiWordPiece(vocab, int(vocab[unk]), prefix, max_chars,
                          tuple(a for a in added if a is not None))


CACHE_SCHEMA = 2  # 2: the lines' SHA-256 in the head, the lines read in place (LineVocab)


def _cache_path(states: list[list[Any]]) -> str:
    key = canonical_hash({"kind": "wordpiece", "schema": CACHE_SCHEMA, "files": states})
    return os.path.join(user_cache_folder(), "wordpiece", f"{key.removeprefix('sha256:')}.txt")


def _lines_sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _read_cached(path: str, states: list[list[Any]]) -> AsciiWordPiece | None:
    try:
        # read as bytes: a text-mode read (newline translation) took ~2 ms of a one-shot ask
        with open(path, "rb") as fh:
            head, _, raw = fh.read().partition(b"\n")
        meta = json.loads(head)
        if not (isinstance(meta, dict) and meta.get("files") == states
                and type(meta.get("n")) is int and type(meta.get("unk_id")) is int
                and isinstance(meta.get("prefix"), str) and type(meta.get("max_chars")) is int
                and isinstance(meta.get("added"), list)
                and all(isinstance(a, str) and a for a in meta["added"])):
            return None
        # the lines are the ones written (distinct tokens of a dict, id order): any damage
        # fails the digest, so no token is looked up in a damaged list
        if meta.get("lines_sha256") != _lines_sha256(raw):
            return None
        body = raw.decode("utf-8")
    except (OSError, ValueError):
        return None
    if body.count("\n") + 1 != meta["n"]:
        return None
    vocab = LineVocab(body, meta["n"])
    if vocab.get("[UNK]") != meta["unk_id"]:
        return None
    return AsciiWordPiece(vocab, meta["unk_id"], meta["prefix"], meta["max_chars"],
                          tuple(meta["added"]))


def _write_cached(path: str, states: list[list[Any]], wp: AsciiWordPiece) -> None:
    by_id = sorted(wp.vocab, key=wp.vocab.__getitem__)
    if [wp.vocab[t] for t in by_id] != list(range(len(by_id))) or any("\n" in t for t in by_id):
        return  # not one token a line in id order: read from tokenizer.json each time
    try:
        raw = "\n".join(by_id).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate (a JSON escape) has no UTF-8 line: read tokenizer.json
    meta = {"files": states, "n": len(by_id), "unk_id": wp.unk_id, "prefix": wp.prefix,
            "max_chars": wp.max_chars, "added": list(wp.added),
            "lines_sha256": _lines_sha256(raw)}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, json.dumps(meta).encode("utf-8") + b"\n" + raw)
    except OSError:
        pass  # a cache that cannot be written is skipped


def cached_ascii_wordpiece(tokenizer_json: str | os.PathLike[str]) -> AsciiWordPiece | None:
    """:func:`ascii_wordpiece`, its vocabulary kept under the user cache while the file is
    unchanged."""
    states = file_states([tokenizer_json])
    path = _cache_path(states)
    got = _read_cached(path, states)
    if got is None:
        got = ascii_wordpiece(tokenizer_json)
        if got is not None and file_states([tokenizer_json]) == states:
            _write_cached(path, states, got)
    return got
