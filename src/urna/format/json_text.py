"""JSON text as serde_json 1.0.151 reads and writes it (01-container §7.2-7.4, §8.5-8.6).

The reference parses the manifest, the search contract and provenance with serde_json
(``from_slice``, features ``preserve_order``, no ``float_roundtrip``) and writes them with its
compact formatter. This module reproduces both sides: the same accepted language, the same
error texts with serde's ``at line L column C`` positions (``Json`` errors), the same f64 values
for float literals (serde's fast, not always correctly rounded, decimal conversion) and the same
float text on output (shortest round-trip digits in zmij's layout).

Typed reads (``deserialize``) follow what ``#[derive(Deserialize)]`` generates: required and
optional fields, duplicate and missing field errors, unknown keys ignored without UTF-8
validation, structs accepted as arrays, and a ``flatten`` catch-all for unknown keys.
"""

from __future__ import annotations

import json as _json
import math
import re
from typing import Any

from ..errors import Json
from ._serde_reader import (
    _ESC_OUT,
    _I64_MIN,
    _MAX_DEPTH,
    _NEEDS_ESC,
    _U64_MAX,
    BOOL,
    STR,
    STR_SEQ,
    U32,
    U64,
    Opt,
    Struct,
    _Err,
    _f64_from_parts,
    _Reader,
    format_float,
)

__all__ = ["parse_json", "dumps_compact", "deserialize", "Struct", "Opt", "U32", "U64", "STR",
           "BOOL", "STR_SEQ", "format_float"]

def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _raise(r: _Reader, e: _Err) -> None:
    at = r.i if e.at is None else e.at
    line_start = r.buf.rfind(b"\n", 0, at) + 1
    line = 1 + r.buf.count(b"\n", 0, line_start)
    raise Json(f"{e.msg} at line {line} column {at - line_start}") from None


def parse_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON document as ``serde_json::from_slice::<Value>``; raises ``Json``.

    Objects are dicts in input order, integers in [-2**63, 2**64) stay ``int``, every other
    number is a ``float`` with the value serde_json computes.
    """
    buf = _as_bytes(data)
    value = _parse_fast(buf)
    return value if value is not _SLOW else _parse_slow(buf)


def _parse_slow(buf: bytes) -> Any:
    r = _Reader(buf)
    try:
        value = r.any()
        if r.ws() is not None:
            raise r.peek_err("trailing characters")
    except _Err as e:
        _raise(r, e)
    return value


_SLOW = object()
_INT_EDGE = re.compile(r"[0-9]{19}|-0(?![.0-9eE])")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_NUMBER_PARTS = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]{1,9}))?\Z")


def _serde_number(text: str) -> int | float:
    """The value serde_json gives a number the C scanner matched (ASCII JSON grammar)."""
    m = _NUMBER_PARTS.match(text)
    if m and len(m[2]) + len(m[3] or "") <= 19:  # < 10**19: every digit fits serde's u64
        frac = m[3] or ""
        return _f64_from_parts(not m[1], int(m[2] + frac), int(m[4] or 0) - len(frac))
    neg = text.startswith("-")
    r = _Reader(text.encode("ascii"))
    r.i = int(neg)
    return r.number(not neg)


def _serde_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    if len(text) <= 20:
        v = int(text)
        if _I64_MIN <= v <= _U64_MAX:
            return v
    return _serde_number(text)  # beyond i64/u64 serde_json reads an f64


def _reject_constant(text: str) -> Any:
    raise ValueError(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key could hide a dropped value the depth check must see: use the exact path.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("repeated key")
    return obj


def _parse_fast(buf: bytes) -> Any:
    """The C json scanner with serde's number semantics, when it provably agrees with serde.

    Anything it might accept differently (NaN/Infinity, lone surrogate escapes, nesting at
    serde's depth limit, a BOM, invalid UTF-8) or any error sends the text to the exact parser,
    which also produces serde's error message and position.
    """
    try:
        text = buf.decode("utf-8")
        # Python's int() is exact; serde differs only for -0 and beyond i64/u64 (19+ digits).
        ints = _serde_int if _INT_EDGE.search(text) else None
        value = _json.loads(text, parse_float=_serde_number, parse_int=ints,
                            parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError, _Err):  # the exact parser decides and explains
        return _SLOW
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate_escape(text):
        return _SLOW
    if not isinstance(value, (list, dict)):
        return value
    if text.count("[") + text.count("{") >= _MAX_DEPTH and _too_deep(value):
        return _SLOW
    return value


def _too_deep(value: list | dict) -> bool:
    """Whether a container sits at serde's limit (level 128), visiting containers level by level."""
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth >= _MAX_DEPTH:
            return True
        below: list[Any] = []
        for node in level:
            items = node.values() if type(node) is dict else node
            below += [x for x in items if type(x) is list or type(x) is dict]
        level = below
        depth += 1
    return False


def _lone_surrogate_escape(text: str) -> bool:
    """Whether valid JSON text has a ``\\uD800``-``\\uDFFF`` escape that is not a proper pair.

    Backslashes occur only inside strings of valid JSON, so scanning escape tokens left to
    right sees exactly the string escapes (``\\\\ud800`` is an escaped backslash, then text).
    """
    pending = -1  # end of a high-surrogate escape that still needs its low half
    for m in _ESCAPE.finditer(text):
        cp = int(m.group(1), 16) if m.group(1) else -1
        if pending >= 0:
            if m.start() != pending or not 0xDC00 <= cp <= 0xDFFF:
                return True
            pending = -1
        elif 0xD800 <= cp <= 0xDBFF:
            pending = m.end()
        elif 0xDC00 <= cp <= 0xDFFF:
            return True
    return pending >= 0


def deserialize(data: bytes | bytearray | memoryview | str, spec: Struct) -> dict[str, Any]:
    """Read one document into ``spec`` as ``serde_json::from_slice::<T>`` would; raises ``Json``.

    Returns the fields by name (None for absent options); a flattened struct also gets the
    unknown keys, in input order, as a list of pairs under ``"\\0extra"``.
    """
    r = _Reader(_as_bytes(data))
    try:
        vals = r.typed(spec)
        if r.ws() is not None:
            raise r.peek_err("trailing characters")
    except _Err as e:
        _raise(r, e)
    return vals


# --- the writer -------------------------------------------------------------------------

def _escape_str(s: str) -> str:
    def rep(m: re.Match[str]) -> str:
        ch = m.group()
        return _ESC_OUT.get(ch) or "\\u%04x" % ord(ch)
    return '"' + _NEEDS_ESC.sub(rep, s) + '"'


def _key_text(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is True or k is False or k is None:
        return {True: "true", False: "false", None: "null"}[k]
    if isinstance(k, (int, float)):
        return dumps_compact(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def dumps_compact(value: Any) -> str:
    """serde_json's compact text of ``value`` (dicts in insertion order, raw UTF-8).

    Integers outside the i64/u64 range are written as the float serde_json would read them
    as; NaN and infinities cannot be written (``ValueError``).
    """
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, int):
        if _I64_MIN <= v <= _U64_MAX:
            out.append(str(int(v)))
        else:
            out.append(format_float(parse_json(str(int(v)))))
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write {v!r} as JSON")
        out.append(format_float(v))
    elif isinstance(v, str):
        out.append(_escape_str(v))
    elif isinstance(v, dict):
        out.append("{")
        for n, (k, item) in enumerate(v.items()):
            if n:
                out.append(",")
            out.append(_escape_str(_key_text(k)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for n, item in enumerate(v):
            if n:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(v).__name__} as JSON")
