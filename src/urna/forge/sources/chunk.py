"""Chunkers: the reference's character-window ``chunk_text``, word windows, a paragraph chunker.

``chunk_text`` is the reference's and stays byte-exact; ``word_window_ranges`` (the documents
source's ``chars`` chunker unless ``word_boundaries = false``) and the paragraph chunker cut
between words, never emit a whitespace-only chunk and fold a tiny tail into its neighbour.

Both return ``ChunkSpec`` records whose ``canonical_text`` is an exact substring of the
input and whose ``byte_start`` / ``byte_end`` index the UTF-8 encoding of that input
(04-surface §4), so ``cite`` can always find the bytes a hit came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk before embedding: its text and its span in the source."""

    canonical_text: str
    source_uri: str
    byte_start: int
    byte_end: int

    def chunk_id(self, chunker_version: str) -> str:
        """Return the citation-stable ``sha256:`` chunk id of this chunk."""
        from urna.format.identity import chunk_id

        return chunk_id(self.canonical_text, self.source_uri, self.byte_start,
                        self.byte_end, chunker_version)

    def as_dict(self) -> dict[str, object]:
        """The ``urna.build`` chunk dict, without the embedding."""
        return {
            "canonical_text": self.canonical_text,
            "source_uri": self.source_uri,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
        }


def _check_window(max_chars: int, overlap: int) -> None:
    if max_chars <= 0:
        raise ValueError("max_chars must be > 0")
    if overlap < 0 or overlap >= max_chars:
        raise ValueError("overlap must be >= 0 and < max_chars")


def chunk_text(text: str, source_uri: str, *, max_chars: int = 512,
               overlap: int = 0) -> list[ChunkSpec]:
    """Greedy character windows of ``max_chars`` code points, stepping ``end - overlap``.

    The reference's only chunker: no trimming, no normalisation; an empty text gives no
    chunk. Example: ``chunk_text("abcdef", "u", max_chars=4)`` gives "abcd" (0..4) and
    "ef" (4..6).
    """
    _check_window(max_chars, overlap)
    chunks: list[ChunkSpec] = []
    n = len(text)
    start = 0
    start_byte = 0
    while start < n:
        end = min(start + max_chars, n)
        piece = text[start:end]
        size = len(piece.encode("utf-8"))
        chunks.append(ChunkSpec(piece, source_uri, start_byte, start_byte + size))
        if end == n:
            break
        nxt = end - overlap
        # the bytes between this start and the next start, counted once
        start_byte += len(text[start:nxt].encode("utf-8"))
        start = nxt
    return chunks


_PARA_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_LINE_BREAK = re.compile(r"\n\s*")
# a sentence ends at . ! ? (optionally followed by closing quotes/brackets) then space
_SENT_END = re.compile(r"[.!?][\"')\]]*\s+")


def tail_limit(max_chars: int) -> int:
    """A word-window tail shorter than this joins the chunk before it."""
    return max(8, max_chars // 8)


def _segments(text: str, pattern: re.Pattern[str], keep_separator: bool) -> list[tuple[int, int]]:
    """Split ``text`` at ``pattern`` into (start, end) ranges, separators kept or dropped."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append((pos, m.end() if keep_separator else m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return out


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _cut_ok(text: str, c: int) -> bool:
    """Whether ``c`` falls between words (or at the end)."""
    return c >= len(text) or text[c - 1].isspace() or text[c].isspace()


def _next_word(text: str, i: int, stop: int) -> int:
    """The first word start in ``[i, stop)``, else ``stop`` moved past whitespace."""
    while i < stop and not (not text[i].isspace() and (i == 0 or text[i - 1].isspace())):
        i += 1
    if i >= stop:
        i = stop
        while i < len(text) and text[i].isspace():
            i += 1
    return i


def word_window_ranges(text: str, max_chars: int, overlap: int = 0, *, merge_tail: bool = True,
                       lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Windows of ``text[lo:hi]`` of <= max_chars ending between words (a longer word is cut).

    A window starts at a word, never on whitespace, so no chunk is whitespace-only; trailing
    whitespace stays in the window (the text is not trimmed). With ``merge_tail`` a last
    window under ``tail_limit`` characters joins the one before it when the two fit in
    ``max_chars + tail_limit`` (so no chunk runs over max_chars by ``tail_limit`` or more).
    ``overlap`` starts the next window at the first word within ``overlap`` characters of
    the cut.
    """
    _check_window(max_chars, overlap)
    end_of = len(text) if hi is None else hi
    out: list[tuple[int, int]] = []
    a = lo
    while a < end_of and text[a].isspace():
        a += 1
    while a < end_of:
        limit = min(a + max_chars, end_of)
        c = limit
        if limit < end_of:
            c = next((x for x in range(limit, a, -1) if _cut_ok(text, x)), limit)
        rest_a, rest_b = _trim(text, c, end_of)
        tail = tail_limit(max_chars)
        if merge_tail and 0 < rest_b - rest_a < tail and end_of - a < max_chars + tail:
            c = end_of
        out.append((a, c))
        if c >= end_of:
            break
        nxt = _next_word(text, max(c - overlap, a + 1), c) if overlap else _next_word(text, c, c)
        a = nxt if nxt > a else c
    return out


def _units(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Paragraphs; one over max_chars becomes lines, then sentences, then word windows."""
    def split(a: int, b: int, levels: tuple[re.Pattern[str], ...]) -> list[tuple[int, int]]:
        a, b = _trim(text, a, b)
        if a >= b:
            return []
        if b - a <= max_chars:
            return [(a, b)]
        if not levels:
            return [_trim(text, wa, wb) for wa, wb in
                    word_window_ranges(text, max_chars, merge_tail=False, lo=a, hi=b)]
        pattern, rest = levels[0], levels[1:]
        out: list[tuple[int, int]] = []
        for sa, sb in _segments(text[a:b], pattern, keep_separator=pattern is _SENT_END):
            out += split(a + sa, a + sb, rest)
        return out

    return split(0, len(text), (_PARA_BREAK, _LINE_BREAK, _SENT_END))


def paragraph_ranges(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Code-point ranges of the paragraph chunker: units packed while they fit max_chars."""
    _check_window(max_chars, 0)
    spans: list[tuple[int, int]] = []
    for a, b in _units(text, max_chars):
        if spans and b - spans[-1][0] <= max_chars:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    return spans


def to_chunk_specs(text: str, source_uri: str,
                   ranges: list[tuple[int, int]]) -> list[ChunkSpec]:
    """ChunkSpecs of code-point ``ranges`` (starts ascending), spans in UTF-8 bytes of ``text``."""
    chunks: list[ChunkSpec] = []
    byte_pos = 0
    char_pos = 0
    for a, b in ranges:
        byte_pos += len(text[char_pos:a].encode("utf-8"))
        piece = text[a:b]
        chunks.append(ChunkSpec(piece, source_uri, byte_pos, byte_pos + len(piece.encode("utf-8"))))
        char_pos = a
    return chunks


def chunk_paragraphs(text: str, source_uri: str, *, max_chars: int = 512) -> list[ChunkSpec]:
    """Pack whole paragraphs (else lines, sentences, word windows) into chunks of <= max_chars.

    Each chunk is the exact source substring from its first unit's start to its last
    unit's end (the blank lines between packed paragraphs stay in the text), trimmed of
    surrounding whitespace; a cut falls between words unless one word is over max_chars;
    spans are UTF-8 byte offsets into ``text``.
    """
    return to_chunk_specs(text, source_uri, paragraph_ranges(text, max_chars))


CHUNKERS = ("chars", "paragraph")


def chunk_ranges(text: str, *, chunker: str = "chars", max_chars: int = 512, overlap: int = 0,
                 word_boundaries: bool = False) -> list[tuple[int, int]]:
    """Code-point ranges of the named chunker (``chars`` without word_boundaries: the reference)."""
    if chunker == "chars":
        if word_boundaries:
            return word_window_ranges(text, max_chars, overlap)
        return _reference_windows(text, max_chars, overlap)
    if chunker == "paragraph":
        return paragraph_ranges(text, max_chars)
    raise ValueError(f"unknown chunker '{chunker}' (valid: {', '.join(CHUNKERS)})")


def _reference_windows(text: str, max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """The code-point ranges of the reference's ``chunk_text`` windows."""
    _check_window(max_chars, overlap)
    out: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + max_chars, n)
        out.append((start, end))
        if end == n:
            break
        start = end - overlap
    return out


def chunk(text: str, source_uri: str, *, chunker: str = "chars", max_chars: int = 512,
          overlap: int = 0, word_boundaries: bool = False) -> list[ChunkSpec]:
    """Dispatch to the named chunker (``chars`` = the reference's ``chunk_text``)."""
    if chunker == "chars" and not word_boundaries:
        return chunk_text(text, source_uri, max_chars=max_chars, overlap=overlap)
    return to_chunk_specs(text, source_uri, chunk_ranges(
        text, chunker=chunker, max_chars=max_chars, overlap=overlap,
        word_boundaries=word_boundaries))
