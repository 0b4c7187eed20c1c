"""Python arguments converted as the reference wheel's PyO3 binding converts them.

One home for what urna 0.5.1's binding does to an argument before any Rust code runs, shared
by ``urna.build`` (``build_args``) and a file's query methods (``runtime.query``): an integer
goes through ``__index__`` (floats and strs refused with CPython's text, bools accepted), then
its width's range check with PyO3's ``OverflowError`` texts; a ``String`` is a ``str`` (or
subclass) that encodes as UTF-8; a value of the wrong type is named ``'None'`` or
``'<type>' object``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
_C_LONG_MIN, _C_LONG_MAX = -(1 << 63), (1 << 63) - 1
_P = ParamSpec("_P")
_R = TypeVar("_R")


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


def as_f64(value: object) -> float:
    """``PyFloat_AsDouble``: a float, or ``__float__`` / ``__index__`` objects, with its errors."""
    if type(value) is float:
        return value
    return math.ldexp(value, 0)  # type: ignore[arg-type]  # ldexp(x, 0) is x via AsDouble


def as_sequence(value: object) -> Any:
    """What a ``Vec<T>`` iterates: an object with the sequence protocol, never a str."""
    if isinstance(value, str):
        raise TypeError("Can't extract `str` to `Vec`")
    if not _is_sequence(value):
        raise downcast_error(value, "Sequence")
    return value


def _is_sequence(value: object) -> bool:
    # PyO3's test is CPython's PySequence_Check (a type with sq_item, never a dict): no Python
    # spelling matches it (numpy scalars have __getitem__ and are not sequences).
    import ctypes

    return bool(ctypes.pythonapi.PySequence_Check(ctypes.py_object(value)))


def method_binding(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A method whose call, when its arguments do not bind, raises PyO3's TypeError text
    (``self`` not counted, too many positionals reported first; a method without parameters
    says ``takes no arguments`` / ``takes no keyword arguments``)."""
    return _bound(fn, 1)


def function_binding(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A module function whose unbindable call raises PyO3's TypeError text."""
    return _bound(fn, 0)


def _bound(fn: Callable[_P, _R], skip: int) -> Callable[_P, _R]:
    code = fn.__code__  # type: ignore[attr-defined]
    names = code.co_varnames[skip:code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    required = len(names) - len(fn.__defaults__ or ())  # type: ignore[attr-defined]
    label = f"{fn.__qualname__}()"

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            tb = exc.__traceback__
            if tb is None or tb.tb_next is not None:  # raised inside fn: not the binding
                raise
            text = _unbound(label, names, required, keyword_only, args[skip:], kwargs)
            if text is None:
                raise
            raise TypeError(text) from None

    return call


def _unbound(label: str, names: tuple[str, ...], required: int, keyword_only: tuple[str, ...],
             args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """PyO3's message for arguments that do not bind, in its order of checks."""
    if not names:  # METH_NOARGS: keywords are looked at first
        if any(k not in keyword_only for k in kwargs):
            return f"{label} takes no keyword arguments"
        return f"{label} takes no arguments ({len(args)} given)" if args else None
    if len(args) > len(names):
        was = "was" if len(args) == 1 else "were"
        takes = (f"from {required} to {len(names)}" if required != len(names)
                 else str(len(names)))
        return f"{label} takes {takes} positional arguments but {len(args)} {was} given"
    for k in kwargs:
        if k in keyword_only:
            continue
        if k not in names:
            return f"{label} got an unexpected keyword argument '{k}'"
        if names.index(k) < len(args):
            return f"{label} got multiple values for argument '{k}'"
    missing = [n for i, n in enumerate(names[:required]) if i >= len(args) and n not in kwargs]
    if not missing:
        return None
    quoted = [f"'{n}'" for n in missing]
    listed = (quoted[0] if len(quoted) == 1 else " and ".join(quoted) if len(quoted) == 2
              else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
    return (f"{label} missing {len(missing)} required positional "
            f"argument{'s' if len(missing) > 1 else ''}: {listed}")
