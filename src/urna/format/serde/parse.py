"""``serde_json::from_slice``: a document as a Value, or into a derived struct; errors as ``Json``.

``parse_json`` first tries the C json scanner with serde's number semantics and keeps its
answer only when it provably agrees with serde; anything else goes to ``parse_exact``, the
byte-by-byte reader, which also words the error with serde's ``at line L column C``.
"""

from __future__ import annotations

import json as _json
import re

from ...errors import Json, SerdeSyntax
from .numbers import I64_MIN, U64_MAX, f64_from_parts
from .reader import MAX_DEPTH, SerdeReader
from .schema import Struct
from .typed import TypedReader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _raise(r: SerdeReader, e: SerdeSyntax) -> NoReturn:
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
    return value if value is not _SLOW else parse_exact(buf)


def parse_exact(buf: bytes) -> Any:
    """The byte-by-byte parse with serde's errors and positions (no fast path)."""
    r = SerdeReader(buf)
    try:
        value = r.any()
        if r.ws() is not None:
            raise r.peek_err("trailing characters")
    except SerdeSyntax as e:
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
        return f64_from_parts(not m[1], int(m[2] + frac), int(m[4] or 0) - len(frac))
    neg = text.startswith("-")
    r = SerdeReader(text.encode("ascii"))
    r.i = int(neg)
    return r.number(not neg)


def _serde_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    if len(text) <= 20:
        v = int(text)
        if I64_MIN <= v <= U64_MAX:
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
    except (ValueError, RecursionError, SerdeSyntax):  # the exact parser decides and explains
        return _SLOW
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate_escape(text):
        return _SLOW
    if not isinstance(value, (list, dict)):
        return value
    if text.count("[") + text.count("{") >= MAX_DEPTH and _too_deep(value):
        return _SLOW
    return value


def _too_deep(value: list | dict) -> bool:
    """Whether a container sits at serde's limit (level 128), visiting containers level by level."""
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth >= MAX_DEPTH:
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
    r = TypedReader(_as_bytes(data))
    try:
        vals = r.typed(spec)
        if r.ws() is not None:
            raise r.peek_err("trailing characters")
    except SerdeSyntax as e:
        _raise(r, e)
    return vals
