"""What a call ends in, as a value two paths can be compared by: its result or its typed error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from urna.errors import UrnaError


def outcome(fn: Callable[..., Any], *args: Any) -> tuple:
    """``("ok", fn(*args))``, or the class name and message of the typed error it raises."""
    try:
        return "ok", fn(*args)
    except UrnaError as exc:
        return type(exc).__name__, str(exc)


def verdict(fn: Callable[..., Any], *args: Any) -> tuple:
    """``("ok",)`` when ``fn(*args)`` returns, whatever it returns; else as :func:`outcome`."""
    got = outcome(fn, *args)
    return ("ok",) if got[0] == "ok" else got
