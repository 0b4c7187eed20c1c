"""The typed schema of derived struct reads: what ``#[derive(Deserialize)]`` asks serde for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """A leaf type of a field."""

    name: str  # u32 / u64 / str / bool / str_seq


U32 = Kind("u32")
U64 = Kind("u64")
STR = Kind("str")
BOOL = Kind("bool")
STR_SEQ = Kind("str_seq")


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
