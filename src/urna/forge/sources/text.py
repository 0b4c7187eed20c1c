"""Decoding a document's bytes, and mapping positions of its text back to those bytes.

``decode`` reads a file's bytes with the spec's ``encoding`` (a UTF-8 BOM is skipped), else
with ``encoding_fallback`` for legacy 8-bit text. ``SourceMap`` records, for every character
of the text a chunker sees, the byte range of the source file it came from, so a chunk's span
is always a real byte range of the file, whatever the encoding or the extraction (HTML).
"""

from __future__ import annotations

import codecs
from array import array
from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


class SkipFile(Exception):
    """This file has no usable text; the message says why."""


def check_encoding(name: str) -> str | None:
    """None when ``name`` is a codec whose characters have fixed byte widths here, else why not.

    Spans are computed per character, so only ASCII-compatible, stateless codecs are allowed
    (UTF-8, cp1252, latin-1, ...), not UTF-16 or ISO-2022.
    """
    try:
        info = codecs.lookup(name)
    except LookupError:
        return f"unknown encoding '{name}'"
    if "a".encode(info.name) != b"a" or info.name.startswith(("iso2022", "utf-7", "hz")):
        return f"encoding '{name}' is not ASCII-compatible (use utf-8 or an 8-bit codepage)"
    return None


@dataclass(frozen=True)
class Decoded:
    """A file's text, the codec that read it and the bytes skipped before the text (a BOM)."""

    text: str
    encoding: str
    offset: int
    fallback: bool


def decode(data: bytes, encoding: str = "utf-8", fallback: str = "") -> Decoded:
    """Decode ``data`` strictly with ``encoding``, else ``fallback``; SkipFile if neither can."""
    offset = len(_BOM) if data.startswith(_BOM) and codecs.lookup(encoding).name == "utf-8" else 0
    try:
        return Decoded(data[offset:].decode(encoding), encoding, offset, False)
    except UnicodeDecodeError as e:
        first = e
    if fallback:
        try:
            return Decoded(data.decode(fallback), fallback, 0, True)
        except UnicodeDecodeError:
            pass
    name = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
    hint = "" if fallback else "; set source.encoding_fallback (e.g. \"cp1252\") to read it"
    raise SkipFile(f"not {name} ({first.reason} at byte {first.start + offset}){hint}")


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB: not a text file (the rule for files without a suffix)."""
    return b"\x00" in data[:8192]


def char_byte_offsets(text: str, encoding: str, base: int = 0) -> array:
    """``n + 1`` offsets: the source byte where each character of ``text`` starts, then the end."""
    out = array("q", [base])
    if text.isascii() or codecs.lookup(encoding).name != "utf-8" and len(
            text.encode(encoding)) == len(text):
        out.extend(range(base + 1, base + len(text) + 1))
        return out
    pos = base
    for ch in text:
        pos += len(ch.encode(encoding))
        out.append(pos)
    return out


class SourceMap:
    """For each character of an extracted text: the source byte range it came from.

    A character the extraction added (a line break for a block element) covers no bytes
    (start == end) and never starts or ends a span.
    """

    def __init__(self, starts: array, ends: array) -> None:
        self.starts, self.ends = starts, ends

    @classmethod
    def identity(cls, text: str, encoding: str, base: int = 0) -> SourceMap:
        """The map of a text that is the file itself (after ``base`` skipped bytes)."""
        offsets = char_byte_offsets(text, encoding, base)
        return cls(offsets[:-1], offsets[1:])

    def span(self, a: int, b: int) -> tuple[int, int]:
        """Source bytes from the first real character of ``[a, b)`` to the end of its last."""
        i, j = a, b - 1
        while i <= j and self.starts[i] == self.ends[i]:
            i += 1
        while j >= i and self.starts[j] == self.ends[j]:
            j -= 1
        if i > j:
            at = self.starts[a] if a < len(self.starts) else 0
            return at, at
        return self.starts[i], self.ends[j]
