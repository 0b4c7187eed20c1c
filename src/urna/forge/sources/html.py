"""HTML text extraction with the standard library, keeping each character's source position.

``extract_html`` walks the page with ``html.parser`` (no extra package): text inside
``script``, ``style``, ``noscript``, ``template`` and the ``head`` is dropped; block elements
(p, div, li, h1-h6, pre, tr, br, ...) break lines, inline ones (a, code, em, strong, span, ...)
keep their text on the line; runs of whitespace collapse to one space outside ``pre``.
Every character of the result maps to the characters of the page it came from (an entity such
as ``&amp;`` maps to its whole reference), so a chunk's span runs from its first text byte in
the file to its last, markup included in between.
"""

from __future__ import annotations

import html
import re
from array import array
from html.parser import HTMLParser

from urna.forge.sources.text import SourceMap

SKIPPED = frozenset({"script", "style", "noscript", "template", "head"})
BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details",
    "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
    "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "main", "nav", "ol", "p", "pre",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"})
# the character references html.unescape replaces (the pattern of the html module)
_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


def _decoded_pieces(raw: str, start: int) -> list[tuple[str, int, int]]:
    """(text, source start, source end) pieces of raw page text, entities decoded."""
    pieces: list[tuple[str, int, int]] = []
    pos = 0
    for m in _CHARREF.finditer(raw):
        pieces.extend((ch, start + i, start + i + 1)
                      for i, ch in enumerate(raw[pos:m.start()], pos))
        pieces.extend((ch, start + m.start(), start + m.end()) for ch in html.unescape(m.group()))
        pos = m.end()
    pieces.extend((ch, start + i, start + i + 1) for i, ch in enumerate(raw[pos:], pos))
    return pieces


class _Walker(HTMLParser):
    """Records every construct's start position; the text is assembled afterwards."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", page)]
        self.events: list[tuple[str, str, int]] = []  # (kind, tag or "", page char offset)

    def _at(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.events.append(("start", tag, self._at()))

    def handle_startendtag(self, tag: str, attrs: object) -> None:
        self.events.append(("void", tag, self._at()))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag, self._at()))

    def handle_data(self, data: str) -> None:
        self.events.append(("data", "", self._at()))

    def _other(self) -> None:
        self.events.append(("other", "", self._at()))

    def handle_comment(self, data: str) -> None:
        self._other()

    def handle_decl(self, decl: str) -> None:
        self._other()

    def handle_pi(self, data: str) -> None:
        self._other()

    def unknown_decl(self, data: str) -> None:
        self._other()


class _Text:
    """The extracted text being assembled, one character at a time with its source range."""

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, ch: str, start: int, end: int) -> None:
        self.chars.append(ch)
        self.starts.append(start)
        self.ends.append(end)

    def strip_spaces(self) -> None:
        while self.chars and self.chars[-1] == " ":
            self.chars.pop(), self.starts.pop(), self.ends.pop()

    def line_break(self, at: int) -> None:
        self.strip_spaces()
        if self.chars and self.chars[-1] != "\n":
            self.add("\n", at, at)  # added by the extraction: covers no source bytes


def extract_html(page: str, byte_offsets: array) -> tuple[str, SourceMap]:
    """The visible text of ``page`` and its map to source bytes (``byte_offsets``: per char)."""
    walker = _Walker(page)
    walker.feed(page)
    walker.close()
    events = walker.events
    out = _Text()
    skip: list[str] = []
    pre = 0
    for n, (kind, tag, at) in enumerate(events):
        end = events[n + 1][2] if n + 1 < len(events) else len(page)
        if kind in ("start", "void"):
            if tag == "body" and skip == ["head"]:
                skip.clear()  # a head left open ends where the body starts
            if tag in SKIPPED and kind == "start":
                skip.append(tag)
            elif tag in BLOCKS and not skip:
                out.line_break(at)
                pre += tag == "pre" and kind == "start"
        elif kind == "end":
            if skip and tag == skip[-1]:
                skip.pop()
            elif tag in BLOCKS and not skip:
                out.line_break(at)
                pre -= tag == "pre" and pre > 0
        elif kind == "data" and not skip:
            for ch, a, b in _decoded_pieces(page[at:end], at):
                if pre:
                    out.add(ch, a, b)
                elif ch.isspace():
                    if out.chars and out.chars[-1] not in " \n":
                        out.add(" ", a, b)
                else:
                    out.add(ch, a, b)
    out.strip_spaces()
    while out.chars and out.chars[-1].isspace():
        out.chars.pop(), out.starts.pop(), out.ends.pop()
    first = next((i for i, ch in enumerate(out.chars) if not ch.isspace()), len(out.chars))
    starts = array("q", (byte_offsets[i] for i in out.starts[first:]))
    ends = array("q", (byte_offsets[i] for i in out.ends[first:]))
    return "".join(out.chars[first:]), SourceMap(starts, ends)


class _TitleFinder(HTMLParser):
    """Collects the text of <title> and of the first h1-h6."""

    HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.heading: list[str] = []
        self._in: str | None = None
        self._heading_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" or (tag in self.HEADINGS and not self._heading_done):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            if tag in self.HEADINGS:
                self._heading_done = True
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.title.append(data)
        elif self._in is not None:
            self.heading.append(data)


def html_title(page: str) -> str | None:
    """A page's title: its <title> text, else its first heading's; None when it has neither."""
    finder = _TitleFinder()
    finder.feed(page)
    finder.close()
    for parts in (finder.title, finder.heading):
        text = " ".join("".join(parts).split())
        if text:
            return text
    return None
