"""serde_json's reader, step by step: accepted language, error texts and positions, f64 values.

The exact (slow) half of :mod:`urna.format.json_text`: the typed schema used for derived
struct reads, serde's float text and decimal conversion, and ``_Reader``, which follows
serde_json 1.0.151 byte by byte so that every error carries serde's message and
``line/column``. Private: import the public API from ``json_text``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

_STOP = re.compile(rb'["\\\x00-\x1f]')
_WS = b" \n\t\r"
_DIGITS = b"0123456789"
_WS_RUN = re.compile(rb"[ \n\t\r]*")
_DIGIT_RUN = re.compile(rb"[0-9]*")
_ZERO_RUN = re.compile(rb"0*")
_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_MAX_DEPTH = 128  # serde_json's recursion limit: the 128th nested bracket fails
# serde_json multiplies/divides by these exact powers (no float_roundtrip feature).
_POW10 = [float("1e%d" % k) for k in range(309)]
_ESC_OUT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}
_ESC_IN = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b", ord("f"): b"\f",
           ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t"}
_NEEDS_ESC = re.compile('["\\\\\x00-\x1f]')

EOF_VALUE = "EOF while parsing a value"
EOF_LIST = "EOF while parsing a list"
EOF_OBJECT = "EOF while parsing an object"
EOF_STRING = "EOF while parsing a string"


class _Err(Exception):
    """A serde_json error; ``at`` is the byte index its position is computed from."""

    def __init__(self, msg: str, at: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.at = at


# --- typed schema (what serde derive generates) -------------------------------------------

@dataclass(frozen=True)
class _Kind:
    name: str  # u32 / u64 / str / bool / str_seq


U32 = _Kind("u32")
U64 = _Kind("u64")
STR = _Kind("str")
BOOL = _Kind("bool")
STR_SEQ = _Kind("str_seq")


@dataclass(frozen=True)
class Opt:
    """``Option<T>``: null or absent reads as None."""

    inner: Any


@dataclass(frozen=True)
class Struct:
    """A derived struct: ``fields`` in declaration order; ``flatten`` keeps unknown keys."""

    name: str
    fields: tuple[tuple[str, Any], ...]
    flatten: bool = False


# --- float text ---------------------------------------------------------------------------

def format_float(x: float) -> str:
    """serde_json 1.0.151 (zmij) text of a finite f64: shortest digits, ``e+``/``e-`` form."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, _, exp = repr(abs(x)).partition("e")
    mant = digits.replace(".", "")
    point = digits.index(".") if "." in digits else len(digits)
    e10 = point + (int(exp) if exp else 0)  # value = 0.mant * 10**e10
    stripped = mant.lstrip("0")
    e10 -= len(mant) - len(stripped)
    mant = stripped.rstrip("0") or "0"
    k = e10 - 1  # scientific exponent
    if -5 <= k < 16:
        if k >= 0:
            whole = mant[: k + 1].ljust(k + 1, "0")
            frac = mant[k + 1:] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-k - 1)}{mant}"
    body = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
    return f"{sign}{body}e{'+' if k >= 0 else '-'}{abs(k)}"


def _rust_debug_str(s: str) -> str:
    """Rust ``{:?}`` of a str: quotes plus escapes for quotes, controls and unprintables."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\0":
            out.append("\\0")
        elif ch in "\t\r\n":
            out.append({"\t": "\\t", "\r": "\\r", "\n": "\\n"}[ch])
        elif (c < 0x7F and ch.isprintable()) or (c >= 0x7F and ch.isprintable()
                                                  and not _grapheme_extend(ch)):
            out.append(ch)
        else:
            out.append("\\u{%x}" % c)
    out.append('"')
    return "".join(out)


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


def _f64_from_parts(positive: bool, sig: int, exp: int) -> float:
    """serde_json's ``f64_from_parts`` (no float_roundtrip): one multiply or divide by 10**k."""
    f = float(sig)
    while True:
        if abs(exp) <= 308:
            if exp >= 0:
                f *= _POW10[exp]
                if math.isinf(f):
                    raise _Err("number out of range")
            else:
                f /= _POW10[-exp]
            break
        if f == 0.0:
            break
        if exp >= 0:
            raise _Err("number out of range")
        f /= 1e308
        exp += 308
    return f if positive else -f


# --- the reader -------------------------------------------------------------------------

class _Reader:
    """serde_json's Deserializer over a byte slice, one method per serde routine."""

    __slots__ = ("buf", "i", "depth")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.i = 0
        self.depth = _MAX_DEPTH

    # positions: ``error`` is at the index, ``peek_error`` one byte further (clamped).
    def err(self, msg: str) -> _Err:
        return _Err(msg, self.i)

    def peek_err(self, msg: str) -> _Err:
        return _Err(msg, min(self.i + 1, len(self.buf)))

    def fix(self, e: _Err) -> _Err:
        if e.at is None:
            e.at = self.i
        return e

    def ws(self) -> int | None:
        buf, i = self.buf, self.i
        if i < len(buf) and buf[i] in _WS:
            i = self.i = _WS_RUN.match(buf, i).end()  # long runs stay linear and fast
        return buf[i] if i < len(buf) else None

    def skip_digits(self) -> int:
        """Step over a run of ASCII digits; returns how many there were."""
        start = self.i
        self.i = _DIGIT_RUN.match(self.buf, start).end()
        return self.i - start

    def peek0(self) -> int:
        return self.buf[self.i] if self.i < len(self.buf) else 0

    def ident(self, rest: bytes) -> None:
        for expected in rest:
            if self.i >= len(self.buf):
                raise self.err(EOF_VALUE)
            got = self.buf[self.i]
            self.i += 1
            if got != expected:
                raise self.err("expected ident")

    def enter(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            raise self.peek_err("recursion limit exceeded")

    # -- numbers (serde_json parse_integer / parse_number / parse_decimal / parse_exponent)
    def number(self, positive: bool) -> int | float:
        if self.i >= len(self.buf):
            raise self.err(EOF_VALUE)
        c = self.buf[self.i]
        self.i += 1
        if c == 0x30:
            if self.peek0() in _DIGITS:
                raise self.peek_err("invalid number")
            return self._after_int(positive, 0)
        if not 0x31 <= c <= 0x39:
            raise self.err("invalid number")
        sig = c - 0x30
        while (d := self.peek0()) in _DIGITS:
            digit = d - 0x30
            if sig * 10 + digit > _U64_MAX:
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
        while (d := self.peek0()) in _DIGITS:
            if sig == 0 and d == 0x30:  # a run of leading zeros only moves the exponent
                run = _ZERO_RUN.match(self.buf, self.i).end() - self.i
                self.i += run
                after -= run
                continue
            digit = d - 0x30
            if sig * 10 + digit > _U64_MAX:
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
        if self.i >= len(self.buf):
            raise self.err(EOF_VALUE)
        c = self.buf[self.i]
        self.i += 1
        if c not in _DIGITS:
            raise self.err("invalid number")
        exp = c - 0x30
        while (d := self.peek0()) in _DIGITS:
            if exp == 0 and d == 0x30:
                self.i = _ZERO_RUN.match(self.buf, self.i).end()
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
            return _f64_from_parts(positive, sig, exp)
        except _Err as e:
            raise self.err(e.msg) from None

    def ignore_number(self) -> None:
        c = self.peek0()
        self.i += 1 if self.i < len(self.buf) else 0
        if c == 0x30:
            if self.peek0() in _DIGITS:
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
            if c not in _DIGITS:
                raise self.err("invalid number")
            self.skip_digits()

    # -- strings (SliceRead::parse_str_bytes / ignore_str)
    def string(self) -> str:
        """Parse a string body (opening quote consumed), validating escapes and UTF-8."""
        buf, parts, start = self.buf, [], self.i
        while True:
            m = _STOP.search(buf, self.i)
            if m is None:
                self.i = len(buf)
                raise self.err(EOF_STRING)
            j = m.start()
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

    def _escape(self) -> bytes:
        if self.i >= len(self.buf):
            raise self.err(EOF_STRING)
        ch = self.buf[self.i]
        self.i += 1
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
            if self.i >= len(self.buf):
                raise self.err(EOF_STRING)
            got = self.buf[self.i]
            self.i += 1
            if got != want:
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
        buf = self.buf
        while True:
            m = _STOP.search(buf, self.i)
            if m is None:
                self.i = len(buf)
                raise self.err(EOF_STRING)
            j = m.start()
            self.i = j
            c = buf[j]
            if c == 0x22:
                self.i = j + 1
                return
            if c != 0x5C:  # ignore_str reports a control character without stepping over it
                raise self.err("control character (\\u0000-\\u001F) found while parsing a string")
            self.i = j + 1
            if self.i >= len(buf):
                raise self.err(EOF_STRING)
            ch = buf[self.i]
            self.i += 1
            if ch == 0x75:
                self._hex4()
            elif ch not in _ESC_IN:
                raise self.err("invalid escape")

    # -- values
    def invalid_type(self, expected: str) -> _Err:
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
        elif c == 0x2D or c in _DIGITS:
            if c == 0x2D:
                self.i += 1
            v = self.number(c != 0x2D)
            what = f"floating point `{format_float(v)}`" if isinstance(v, float) else f"integer `{v}`"
        elif c == 0x22:
            self.i += 1
            what = "string " + _rust_debug_str(self.string())
        elif c == 0x5B:
            what = "sequence"
        elif c == 0x7B:
            what = "map"
        else:
            return self.peek_err("expected value")
        return _Err(f"invalid type: {what}, expected {expected}", self.i)

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
        if c in _DIGITS:
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
        self.i += 1
        return self.string()

    def colon(self) -> None:
        c = self.ws()
        if c == 0x3A:
            self.i += 1
            return
        raise self.peek_err(EOF_OBJECT if c is None else "expected `:`")

    def end_seq(self) -> None:
        c = self.ws()
        if c == 0x5D:
            self.i += 1
            return
        if c == 0x2C:
            self.i += 1
            raise self.peek_err("trailing comma" if self.ws() == 0x5D else "trailing characters")
        raise self.peek_err(EOF_LIST if c is None else "trailing characters")

    def end_map(self) -> None:
        c = self.ws()
        if c == 0x7D:
            self.i += 1
            return
        if c == 0x2C:
            raise self.peek_err("trailing comma")
        raise self.peek_err(EOF_OBJECT if c is None else "trailing characters")

    def ignore(self) -> None:
        """serde_json ``ignore_value``: syntax only, no UTF-8 or escape-pair checks, no depth limit."""
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
            elif c in _DIGITS:
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
                    raise self.peek_err("expected `,` or `]`" if frame == 0x5B else "expected `,` or `}`")
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

    # -- typed values (what serde derive asks serde_json for)
    def typed(self, kind: Any) -> Any:
        try:
            return self._typed(kind)
        except _Err as e:
            raise self.fix(e) from None

    def _typed(self, kind: Any) -> Any:
        if isinstance(kind, Opt):
            if self.ws() == 0x6E:
                self.i += 1
                self.ident(b"ull")
                return None
            return self.typed(kind.inner)
        if isinstance(kind, Struct):
            return self.struct(kind)
        c = self.ws()
        if c is None:
            raise self.peek_err(EOF_VALUE)
        name = kind.name
        if name in ("u32", "u64"):
            if c != 0x2D and c not in _DIGITS:
                raise self.invalid_type(name)
            if c == 0x2D:
                self.i += 1
            v = self.number(c != 0x2D)
            if isinstance(v, float):
                raise _Err(f"invalid type: floating point `{format_float(v)}`, expected {name}")
            if v < 0 or v >= (1 << (32 if name == "u32" else 64)):
                raise _Err(f"invalid value: integer `{v}`, expected {name}")
            return v
        if name == "str":
            if c != 0x22:
                raise self.invalid_type("a string")
            self.i += 1
            return self.string()
        if name == "bool":
            if c in (0x74, 0x66):
                self.i += 1
                self.ident(b"rue" if c == 0x74 else b"alse")
                return c == 0x74
            raise self.invalid_type("a boolean")
        if name == "str_seq":
            if c != 0x5B:
                raise self.invalid_type("a sequence")
            self.enter()
            self.i += 1
            out: list[str] = []
            err = None
            try:
                first = True
                while self.has_next_element(first):
                    first = False
                    out.append(self.typed(STR))
            except _Err as e:
                err = e
            self.depth += 1
            self._finish(err, self.end_seq)
            return out
        raise AssertionError(f"unknown kind {kind!r}")

    def _finish(self, err: _Err | None, end: Any) -> None:
        """serde_json runs end_seq/end_map even after the visitor failed; the visitor's error wins."""
        try:
            end()
        except _Err:
            if err is None:
                raise
        if err is not None:
            raise err

    def struct(self, spec: Struct) -> dict[str, Any]:
        """A derived struct; unknown keys go to ``"\\0extra"`` (a list of pairs) when flattened."""
        c = self.ws()
        if c is None:
            raise self.peek_err(EOF_VALUE)
        if c == 0x5B and not spec.flatten:
            self.enter()
            self.i += 1
            vals: dict[str, Any] = {}
            err = None
            try:
                for idx, (key, kind) in enumerate(spec.fields):
                    if not self.has_next_element(idx == 0):
                        n = len(spec.fields)
                        raise _Err(f"invalid length {idx}, expected struct {spec.name} with "
                                   f"{n} element{'s' if n != 1 else ''}")
                    vals[key] = self.typed(kind)
            except _Err as e:
                err = e
            self.depth += 1
            self._finish(err, self.end_seq)
            return vals
        if c != 0x7B:
            raise self.invalid_type(f"struct {spec.name}")
        self.enter()
        self.i += 1
        kinds = dict(spec.fields)
        vals = {}
        extra: list[tuple[str, Any]] = []
        err = None
        try:
            first = True
            while self.has_next_key(first):
                first = False
                key = self.key()
                if key in kinds:
                    if key in vals:
                        raise _Err(f"duplicate field `{key}`")
                    self.colon()
                    vals[key] = self.typed(kinds[key])
                elif spec.flatten:
                    self.colon()
                    extra.append((key, self.any()))
                else:
                    self.colon()
                    self.ignore()
            for key, kind in spec.fields:
                if key not in vals:
                    if not isinstance(kind, Opt):
                        raise _Err(f"missing field `{key}`")
                    vals[key] = None
        except _Err as e:
            err = e
        self.depth += 1
        self._finish(err, self.end_map)
        if spec.flatten:
            vals["\0extra"] = extra
        return vals


