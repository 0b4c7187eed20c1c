"""Chunkers: the reference's character-window ``chunk_text`` and a paragraph chunker.

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
# a sentence ends at . ! ? (optionally followed by closing quotes/brackets) then space
_SENT_END = re.compile(r"[.!?][\"')\]]*\s+")


def _segments(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Split ``text`` at ``pattern`` into (start, end) ranges, separators excluded."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append((pos, m.start() if pattern is _PARA_BREAK else m.end()))
        pos = m.end()
    out.append((pos, len(text)))
    return out


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _units(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Paragraphs; a paragraph longer than max_chars becomes sentences, then windows."""
    units: list[tuple[int, int]] = []
    for pa, pb in _segments(text, _PARA_BREAK):
        pa, pb = _trim(text, pa, pb)
        if pa >= pb:
            continue
        if pb - pa <= max_chars:
            units.append((pa, pb))
            continue
        sub = text[pa:pb]
        for sa, sb in _segments(sub, _SENT_END):
            sa, sb = _trim(sub, sa, sb)
            if sa >= sb:
                continue
            for w in range(sa, sb, max_chars):  # a sentence over budget: hard windows
                wa, wb = _trim(sub, w, min(w + max_chars, sb))
                if wa < wb:
                    units.append((pa + wa, pa + wb))
    return units


def chunk_paragraphs(text: str, source_uri: str, *, max_chars: int = 512) -> list[ChunkSpec]:
    """Pack whole paragraphs (else sentences, else windows) into chunks of <= max_chars.

    Each chunk is the exact source substring from its first unit's start to its last
    unit's end (the blank lines between packed paragraphs stay in the text), trimmed of
    surrounding whitespace; spans are UTF-8 byte offsets into ``text``.
    """
    _check_window(max_chars, 0)
    spans: list[tuple[int, int]] = []
    for a, b in _units(text, max_chars):
        if spans and b - spans[-1][0] <= max_chars:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    # one pass over the text turns code-point offsets into byte offsets
    chunks: list[ChunkSpec] = []
    byte_pos = 0
    char_pos = 0
    for a, b in spans:
        byte_pos += len(text[char_pos:a].encode("utf-8"))
        piece = text[a:b]
        size = len(piece.encode("utf-8"))
        chunks.append(ChunkSpec(piece, source_uri, byte_pos, byte_pos + size))
        byte_pos += size
        char_pos = b
    return chunks


CHUNKERS = ("chars", "paragraph")


def chunk(text: str, source_uri: str, *, chunker: str = "chars", max_chars: int = 512,
          overlap: int = 0) -> list[ChunkSpec]:
    """Dispatch to the named chunker (``chars`` = the reference's ``chunk_text``)."""
    if chunker == "chars":
        return chunk_text(text, source_uri, max_chars=max_chars, overlap=overlap)
    if chunker == "paragraph":
        return chunk_paragraphs(text, source_uri, max_chars=max_chars)
    raise ValueError(f"unknown chunker '{chunker}' (valid: {', '.join(CHUNKERS)})")
