"""serde_json's Deserializer over a byte slice, step by step: accepted language, errors, values.

``SerdeReader`` follows serde_json 1.0.151 byte by byte so that every error carries serde's
message and the byte index its ``line/column`` is computed from (``SerdeSyntax.at``).
Typed (derived-struct) reads are ``typed.TypedReader``.
"""

from __future__ import annotations

import re

from ...errors import SerdeSyntax
from .numbers import U64_MAX, f64_from_parts, format_float
from .rust_debug import rust_debug_str

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STOP = re.compile(rb'["\\\x00-\x1f]')
_WS = b" \n\t\r"
DIGITS = b"0123456789"
_WS_RUN = re.compile(rb"[ \n\t\r]*")
_DIGIT_RUN = re.compile(rb"[0-9]*")
_ZERO_RUN = re.compile(rb"0*")  # the three runs match at any index (mypy is told so below)
MAX_DEPTH = 128  # serde_json's recursion limit: the 128th nested bracket fails
_ESC_IN = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b", ord("f"): b"\f",
           ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t"}

EOF_VALUE = "EOF while parsing a value"
EOF_LIST = "EOF while parsing a list"
EOF_OBJECT = "EOF while parsing an object"
EOF_STRING = "EOF while parsing a string"


class SerdeReader:
    """serde_json's Deserializer over a byte slice, one method per serde routine."""

    __slots__ = ("buf", "i", "depth")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.i = 0
        self.depth = MAX_DEPTH

    # positions: ``error`` is at the index, ``peek_error`` one byte further (clamped).
    def err(self, msg: str) -> SerdeSyntax:
        """A syntax error at the current index (serde's ``error``)."""
        return SerdeSyntax(msg, self.i)

    def peek_err(self, msg: str) -> SerdeSyntax:
        """A syntax error one byte past the index, clamped to the end (``peek_error``)."""
        return SerdeSyntax(msg, min(self.i + 1, len(self.buf)))

    def fix(self, e: SerdeSyntax) -> SerdeSyntax:
        """An error raised without a position, placed at the current index."""
        if e.at is None:
            e.at = self.i
        return e

    def ws(self) -> int | None:
        """Skip whitespace; the next byte, None at the end (``parse_whitespace``)."""
        buf, i = self.buf, self.i
        if i < len(buf) and buf[i] in _WS:
            i = self.i = _WS_RUN.match(buf, i).end()  # type: ignore[union-attr]
        return buf[i] if i < len(buf) else None

    def skip_digits(self) -> int:
        """Step over a run of ASCII digits; returns how many there were."""
        start = self.i
        self.i = _DIGIT_RUN.match(self.buf, start).end()  # type: ignore[union-attr]
        return self.i - start

    def peek0(self) -> int:
        """The next byte without consuming it, 0 at the end (``peek_or_null``)."""
        return self.buf[self.i] if self.i < len(self.buf) else 0

    def next_or_eof(self, eof: str) -> int:
        """The next byte, consumed; the error ``eof`` at the end (serde's ``next_or_eof``)."""
        if self.i >= len(self.buf):
            raise self.err(eof)
        c = self.buf[self.i]
        self.i += 1
        return c

    def ident(self, rest: bytes) -> None:
        """Consume the rest of a literal (``ull`` of ``null``); serde's ``parse_ident``."""
        if self.buf.startswith(rest, self.i):
            self.i += len(rest)
            return
        for expected in rest:  # byte by byte only to place the error as serde does
            if self.next_or_eof(EOF_VALUE) != expected:
                raise self.err("expected ident")

    def enter(self) -> None:
        """Go one nesting level down; fails at serde's recursion limit."""
        self.depth -= 1
        if self.depth == 0:
            raise self.peek_err("recursion limit exceeded")

    # -- numbers (serde_json parse_integer / parse_number / parse_decimal / parse_exponent)
    def number(self, positive: bool) -> int | float:
        """A number after its sign (``parse_integer`` on): int in u64/i64 range, else float."""
        c = self.next_or_eof(EOF_VALUE)
        if c == 0x30:
            if self.peek0() in DIGITS:
                raise self.peek_err("invalid number")
            return self._after_int(positive, 0)
        if not 0x31 <= c <= 0x39:
            raise self.err("invalid number")
        sig = c - 0x30
        while (d := self.peek0()) in DIGITS:
            digit = d - 0x30
            if sig * 10 + digit > U64_MAX:
                return self._long_integer(positive, sig)
            self.i += 1
            sig = sig * 10 + digit
        return self._after_int(positive, sig)

    def _after_int(self, positive: bool, sig: int) -> int | float:
        c = self.peek0()
        if c == 0x2E:
            return self._decimal(positive, sig, 0)
        if c in b"eE":
            return self._exponent(positive, sig, 0)
        if positive:
            return sig
        if sig == 0 or sig > (1 << 63):
            return -float(sig)  # "-0" and values below i64::MIN become f64
        return -sig

    def _long_integer(self, positive: bool, sig: int) -> float:
        exp = self.skip_digits()  # digits past u64 only scale the value
        c = self.peek0()
        if c == 0x2E:
            return self._decimal(positive, sig, exp)
        if c in b"eE":
            return self._exponent(positive, sig, exp)
        return self._from_parts(positive, sig, exp)

    def _decimal(self, positive: bool, sig: int, exp_before: int) -> float:
        self.i += 1
        after = 0
        while (d := self.peek0()) in DIGITS:
            if sig == 0 and d == 0x30:  # a run of leading zeros only moves the exponent
                run = _ZERO_RUN.match(self.buf, self.i).end() - self.i  # type: ignore[union-attr]
                self.i += run
                after -= run
                continue
            digit = d - 0x30
            if sig * 10 + digit > U64_MAX:
                self.skip_digits()  # the rest of the digits are dropped, as serde does
                if self.peek0() in b"eE":
                    return self._exponent(positive, sig, exp_before + after)
                return self._from_parts(positive, sig, exp_before + after)
            self.i += 1
            sig = sig * 10 + digit
            after -= 1
        if after == 0:
            if self.i < len(self.buf):
                raise self.peek_err("invalid number")
            raise self.peek_err(EOF_VALUE)
        if self.peek0() in b"eE":
            return self._exponent(positive, sig, exp_before + after)
        return self._from_parts(positive, sig, exp_before + after)

    def _exponent(self, positive: bool, sig: int, start: int) -> float:
        self.i += 1
        pos_exp = True
        if self.peek0() == 0x2B:
            self.i += 1
        elif self.peek0() == 0x2D:
            self.i += 1
            pos_exp = False
        c = self.next_or_eof(EOF_VALUE)
        if c not in DIGITS:
            raise self.err("invalid number")
        exp = c - 0x30
        while (d := self.peek0()) in DIGITS:
            if exp == 0 and d == 0x30:
                self.i = _ZERO_RUN.match(self.buf, self.i).end()  # type: ignore[union-attr]
                continue
            self.i += 1
            digit = d - 0x30
            if exp * 10 + digit > 0x7FFFFFFF:
                if sig != 0 and pos_exp:
                    raise self.err("number out of range")
                self.skip_digits()
                return 0.0 if positive else -0.0
            exp = exp * 10 + digit
        final = start + exp if pos_exp else start - exp
        final = max(-(1 << 31), min(final, (1 << 31) - 1))  # i32 saturating arithmetic
        return self._from_parts(positive, sig, final)

    def _from_parts(self, positive: bool, sig: int, exp: int) -> float:
        try:
            return f64_from_parts(positive, sig, exp)
        except SerdeSyntax as e:
            raise self.err(e.msg) from None

    def ignore_number(self) -> None:
        """Step over a number, checking its syntax only (serde's ``ignore_number``)."""
        c = self.peek0()
        self.i += 1 if self.i < len(self.buf) else 0
        if c == 0x30:
            if self.peek0() in DIGITS:
                raise self.peek_err("invalid number")
        elif 0x31 <= c <= 0x39:
            self.skip_digits()
        else:
            raise self.err("invalid number")
        if self.peek0() == 0x2E:
            self.i += 1
            if not self.skip_digits():
                raise self.peek_err("invalid number")
        if self.peek0() in b"eE":
            self.i += 1
            if self.peek0() in b"+-":
                self.i += 1
            c = self.peek0()
            self.i += 1 if self.i < len(self.buf) else 0
            if c not in DIGITS:
                raise self.err("invalid number")
            self.skip_digits()

    # -- strings (SliceRead::parse_str_bytes / ignore_str)
    def string(self) -> str:
        """Parse a string body (opening quote consumed), validating escapes and UTF-8."""
        buf, parts, start = self.buf, [], self.i
        while True:
            j = self._stop()
            c = buf[j]
            if c == 0x22:
                parts.append(buf[start:j])
                self.i = j + 1
                try:
                    return b"".join(parts).decode("utf-8")
                except UnicodeDecodeError:
                    raise self.err("invalid unicode code point") from None
            if c == 0x5C:
                parts.append(buf[start:j])
                self.i = j + 1
                parts.append(self._escape())
                start = self.i
            else:
                self.i = j + 1
                raise self.err("control character (\\u0000-\\u001F) found while parsing a string")

    def _stop(self) -> int:
        """Where the next quote, backslash or control byte is; EOF_STRING when there is none."""
        m = _STOP.search(self.buf, self.i)
        if m is None:
            self.i = len(self.buf)
            raise self.err(EOF_STRING)
        return m.start()

    def _escape(self) -> bytes:
        ch = self.next_or_eof(EOF_STRING)
        if ch in _ESC_IN:
            return _ESC_IN[ch]
        if ch != 0x75:
            raise self.err("invalid escape")
        n = self._hex4()
        if 0xDC00 <= n <= 0xDFFF:
            raise self.err("lone leading surrogate in hex escape")
        if not 0xD800 <= n <= 0xDBFF:
            return chr(n).encode("utf-8")
        for want in (0x5C, 0x75):  # a leading surrogate must be followed by \u
            if self.next_or_eof(EOF_STRING) != want:
                raise self.err("unexpected end of hex escape")
        n2 = self._hex4()
        if not 0xDC00 <= n2 <= 0xDFFF:
            raise self.err("lone leading surrogate in hex escape")
        return chr(0x10000 + ((n - 0xD800) << 10) + (n2 - 0xDC00)).encode("utf-8")

    def _hex4(self) -> int:
        if len(self.buf) - self.i < 4:
            self.i = len(self.buf)
            raise self.err(EOF_STRING)
        quad = self.buf[self.i:self.i + 4]
        self.i += 4
        try:
            if not all(b in b"0123456789abcdefABCDEF" for b in quad):
                raise ValueError
            return int(quad, 16)
        except ValueError:
            raise self.err("invalid escape") from None

    def ignore_string(self) -> None:
        """Step over a string body (opening quote consumed) without decoding it."""
        buf = self.buf
        while True:
            j = self.i = self._stop()
            c = buf[j]
            if c == 0x22:
                self.i = j + 1
                return
            if c != 0x5C:  # ignore_str reports a control character without stepping over it
                raise self.err("control character (\\u0000-\\u001F) found while parsing a string")
            self.i = j + 1
            ch = self.next_or_eof(EOF_STRING)
            if ch == 0x75:
                self._hex4()
            elif ch not in _ESC_IN:
                raise self.err("invalid escape")

    # -- values
    def invalid_type(self, expected: str) -> SerdeSyntax:
        """serde_json ``peek_invalid_type``: consume the offending value to describe it."""
        c = self.peek0()
        if c == 0x6E:
            self.i += 1
            self.ident(b"ull")
            what = "null"
        elif c in (0x74, 0x66):
            self.i += 1
            self.ident(b"rue" if c == 0x74 else b"alse")
            what = f"boolean `{'true' if c == 0x74 else 'false'}`"
        elif c == 0x2D or c in DIGITS:
            if c == 0x2D:
                self.i += 1
            v = self.number(c != 0x2D)
            what = (f"floating point `{format_float(v)}`" if isinstance(v, float)
                    else f"integer `{v}`")
        elif c == 0x22:
            self.i += 1
            what = "string " + rust_debug_str(self.string())
        elif c == 0x5B:
            what = "sequence"
        elif c == 0x7B:
            what = "map"
        else:
            return self.peek_err("expected value")
        return SerdeSyntax(f"invalid type: {what}, expected {expected}", self.i)

    def any(self) -> Any:
        """``deserialize_any`` into a plain value (serde_json::Value semantics)."""
        c = self.ws()
        if c is None:
            raise self.peek_err(EOF_VALUE)
        if c == 0x22:
            self.i += 1
            return self.string()
        if c == 0x2D:
            self.i += 1
            return self.number(False)
        if c in DIGITS:
            return self.number(True)
        if c in (0x6E, 0x74, 0x66):
            self.i += 1
            rest, val = {0x6E: (b"ull", None), 0x74: (b"rue", True), 0x66: (b"alse", False)}[c]
            self.ident(rest)
            return val
        if c == 0x5B:
            self.enter()
            self.i += 1
            out: list[Any] = []
            first = True
            while self.has_next_element(first):
                first = False
                out.append(self.any())
            self.depth += 1
            self.end_seq()
            return out
        if c == 0x7B:
            self.enter()
            self.i += 1
            obj: dict[str, Any] = {}
            first = True
            while self.has_next_key(first):
                first = False
                key = self.key()
                self.colon()
                obj[key] = self.any()  # a repeated key keeps its first place, takes the last value
            self.depth += 1
            self.end_map()
            return obj
        raise self.peek_err("expected value")

    def has_next_element(self, first: bool) -> bool:
        """Whether a sequence has another element (``SeqAccess::has_next_element``)."""
        c = self.ws()
        if c is None:
            raise self.peek_err(EOF_LIST)
        if c == 0x5D:
            return False
        if first:
            return True
        if c != 0x2C:
            raise self.peek_err("expected `,` or `]`")
        self.i += 1
        c = self.ws()
        if c == 0x5D:
            raise self.peek_err("trailing comma")
        if c is None:
            raise self.peek_err(EOF_VALUE)
        return True

    def has_next_key(self, first: bool) -> bool:
        """Whether a map has another key (``MapAccess::has_next_key``); keys are strings."""
        c = self.ws()
        if c is None:
            raise self.peek_err(EOF_OBJECT)
        if c == 0x7D:
            return False
        if first:
            if c != 0x22:
                raise self.peek_err("key must be a string")
            return True
        if c != 0x2C:
            raise self.peek_err("expected `,` or `}`")
        self.i += 1
        c = self.ws()
        if c == 0x22:
            return True
        if c == 0x7D:
            raise self.peek_err("trailing comma")
        if c is None:
            raise self.peek_err(EOF_VALUE)
        raise self.peek_err("key must be a string")

    def key(self) -> str:
        """A map key (the next byte is its opening quote)."""
        self.i += 1
        return self.string()

    def colon(self) -> None:
        """Consume the ``:`` after a map key (``parse_object_colon``)."""
        c = self.ws()
        if c == 0x3A:
            self.i += 1
            return
        raise self.peek_err(EOF_OBJECT if c is None else "expected `:`")

    def end_seq(self) -> None:
        """The ``]`` that closes a sequence (serde's ``end_seq``)."""
        c = self.ws()
        if c == 0x5D:
            self.i += 1
            return
        if c == 0x2C:
            self.i += 1
            raise self.peek_err("trailing comma" if self.ws() == 0x5D else "trailing characters")
        raise self.peek_err(EOF_LIST if c is None else "trailing characters")

    def end_map(self) -> None:
        """The ``}`` that closes a map (serde's ``end_map``)."""
        c = self.ws()
        if c == 0x7D:
            self.i += 1
            return
        if c == 0x2C:
            raise self.peek_err("trailing comma")
        raise self.peek_err(EOF_OBJECT if c is None else "trailing characters")

    def ignore(self) -> None:
        """serde_json ``ignore_value``: syntax only; no UTF-8, escape-pair or depth checks."""
        stack: list[int] = []
        while True:
            c = self.ws()
            if c is None:
                raise self.peek_err(EOF_VALUE)
            frame = None
            if c in (0x6E, 0x74, 0x66):
                self.i += 1
                self.ident({0x6E: b"ull", 0x74: b"rue", 0x66: b"alse"}[c])
            elif c == 0x2D:
                self.i += 1
                self.ignore_number()
            elif c in DIGITS:
                self.ignore_number()
            elif c == 0x22:
                self.i += 1
                self.ignore_string()
            elif c in (0x5B, 0x7B):
                self.i += 1
                frame = c
            else:
                raise self.peek_err("expected value")
            if frame is not None:
                accept_comma = False
            elif stack:
                frame, accept_comma = stack.pop(), True
            else:
                return
            while True:
                c = self.ws()
                if c == 0x2C and accept_comma:
                    self.i += 1
                    break
                if (c == 0x5D and frame == 0x5B) or (c == 0x7D and frame == 0x7B):
                    self.i += 1
                    if not stack:
                        return
                    frame, accept_comma = stack.pop(), True
                    continue
                if c is None:
                    raise self.peek_err(EOF_LIST if frame == 0x5B else EOF_OBJECT)
                if accept_comma:
                    raise self.peek_err("expected `,` or `]`" if frame == 0x5B
                                        else "expected `,` or `}`")
                break
            if frame == 0x7B:
                c = self.ws()
                if c is None:
                    raise self.peek_err(EOF_OBJECT)
                if c != 0x22:
                    raise self.peek_err("key must be a string")
                self.i += 1
                self.ignore_string()
                self.colon()
            stack.append(frame)
