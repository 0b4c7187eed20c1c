"""The typed schema of derived struct reads: what ``#[derive(Deserialize)]`` asks serde for."""

from __future__ import annotations

from ..record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Kind(FrozenRecord):
    """A leaf type of a field."""

    __slots__ = _fields = ("name",)
    name: str  # u32 / u64 / str / bool / str_seq

    def __init__(self, name: str) -> None:
        self._set(name)


U32 = Kind("u32")
U64 = Kind("u64")
STR = Kind("str")
BOOL = Kind("bool")
STR_SEQ = Kind("str_seq")


class Opt(FrozenRecord):
    """``Option<T>``: null or absent reads as None."""

    __slots__ = _fields = ("inner",)
    inner: Any

    def __init__(self, inner: Any) -> None:
        self._set(inner)


class Struct(FrozenRecord):
    """A derived struct: ``fields`` in declaration order; ``flatten`` keeps unknown keys."""

    __slots__ = _fields = ("name", "fields", "flatten")
    name: str
    fields: tuple[tuple[str, Any], ...]
    flatten: bool

    def __init__(self, name: str, fields: tuple[tuple[str, Any], ...],
                 flatten: bool = False) -> None:
        self._set(name, fields, flatten)
