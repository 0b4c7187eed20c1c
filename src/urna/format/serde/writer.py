"""serde_json's compact formatter: dicts in insertion order, raw UTF-8, serde's float text."""

from __future__ import annotations

import math
import re

from .numbers import I64_MIN, U64_MAX, format_float
from .parse import parse_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ESC_OUT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}
_NEEDS_ESC = re.compile('["\\\\\x00-\x1f]')


def _escape_str(s: str) -> str:
    def rep(m: re.Match[str]) -> str:
        ch = m.group()
        return _ESC_OUT.get(ch) or f"\\u{ord(ch):04x}"
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
        if I64_MIN <= v <= U64_MAX:
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
