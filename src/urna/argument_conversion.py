"""Python arguments converted as the reference wheel's PyO3 binding converts them.

One home for what urna 0.5.1's binding does to an argument before any Rust code runs, shared
by ``urna.build`` (``build_args``) and a file's query methods (``runtime.query``): an integer
goes through ``__index__`` (floats and strs refused with CPython's text, bools accepted), then
its width's range check with PyO3's ``OverflowError`` texts; a ``String`` is a ``str`` (or
subclass) that encodes as UTF-8; a value of the wrong type is named ``'None'`` or
``'<type>' object``.
"""

from __future__ import annotations

import operator

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
_C_LONG_MIN, _C_LONG_MAX = -(1 << 63), (1 << 63) - 1


def describe(value: object) -> str:
    """How the binding names a value of the wrong type: ``'None'`` or ``'<type>' object``."""
    return "'None'" if value is None else f"'{type(value).__qualname__}' object"


def downcast_error(value: object, target: str) -> TypeError:
    """PyO3's refusal of a value whose type is not ``target``."""
    return TypeError(f"{describe(value)} is not an instance of '{target}'")


def as_index(value: object) -> int:
    """``PyNumber_Index``: the plain int of an int, a bool or an ``__index__`` object."""
    return int.__index__(operator.index(value))  # type: ignore[arg-type]


def _c_long(value: object) -> int:
    n = as_index(value)
    if not _C_LONG_MIN <= n <= _C_LONG_MAX:
        raise OverflowError("Python int too large to convert to C long")
    return n


def as_i32(value: object) -> int:
    """A Rust ``i32``: taken as a C long, then range-checked."""
    n = _c_long(value)
    if not I32_MIN <= n <= I32_MAX:
        raise OverflowError("out of range integral type conversion attempted")
    return n


def as_u32(value: object) -> int:
    """A Rust ``u32``: taken as a C long, then range-checked."""
    n = _c_long(value)
    if not 0 <= n <= U32_MAX:
        raise OverflowError("out of range integral type conversion attempted")
    return n


def as_u64(value: object) -> int:
    """A Rust ``u64`` / ``usize``: an unsigned long long."""
    n = as_index(value)
    if n < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if n > U64_MAX:
        raise OverflowError("int too big to convert")
    return n


def as_str(value: object) -> str:
    """A Rust ``String``: a str (or subclass) that encodes as UTF-8 (no lone surrogates)."""
    if not isinstance(value, str):
        raise downcast_error(value, "str")
    if not value.isascii():
        value.encode("utf-8")  # a lone surrogate raises the UnicodeEncodeError PyO3 raises
    return str.__str__(value)  # the characters, not a subclass's __str__
