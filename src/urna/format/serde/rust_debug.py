"""Rust's ``{:?}`` of a str (serde_json's "invalid type: string ..." errors) and of a char."""

from __future__ import annotations

import unicodedata


def rust_debug_str(s: str) -> str:
    """Rust ``{:?}`` of a str: quotes plus escapes for quotes, controls and unprintables."""
    return '"' + "".join(_escaped(ch, '"') for ch in s) + '"'


def rust_debug_char(ch: str) -> str:
    """Rust ``{:?}`` of a char: as a str's, in single quotes, escaping ``'`` instead of ``"``."""
    return "'" + _escaped(ch, "'") + "'"


def _escaped(ch: str, quote: str) -> str:
    c = ord(ch)
    if ch == quote or ch == "\\":
        return "\\" + ch
    if ch == "\0":
        return "\\0"
    if ch in "\t\r\n":
        return {"\t": "\\t", "\r": "\\r", "\n": "\\n"}[ch]
    if (c < 0x7F and ch.isprintable()) or (c >= 0x7F and ch.isprintable()
                                           and not _grapheme_extend(ch)):
        return ch
    return f"\\u{{{c:x}}}"


# Other_Grapheme_Extend code points (Unicode 15): Rust escapes them in Debug like Mn/Me.
_OTHER_GRAPHEME_EXTEND = frozenset([0x09BE, 0x09D7, 0x0B3E, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5,
                                    0x0CD6, 0x0D3E, 0x0D57, 0x0DCF, 0x0DDF, 0x1B35, 0x200C, 0x302E,
                                    0x302F, 0xFF9E, 0xFF9F, 0x1133E, 0x11357, 0x114B0, 0x114BD,
                                    0x115AF, 0x11930, 0x1D165, 0x1D16E, 0x1D16F, 0x1D170, 0x1D171,
                                    0x1D172])


def _grapheme_extend(ch: str) -> bool:
    c = ord(ch)
    return (unicodedata.category(ch) in ("Mn", "Me") or c in _OTHER_GRAPHEME_EXTEND
            or 0xE0020 <= c <= 0xE007F)
