"""Plain records for the read path: named fields, equality and repr, without ``dataclasses``.

Why not dataclasses: ``inspect``, ``validate`` and ``cite`` are whole processes that must
answer in well under 100 ms (issue #20), and ``import dataclasses`` alone costs ~17 ms here
(it imports ``inspect``, hence ``ast``, ``dis``, ``tokenize``, ``linecache``), more than
these verbs' own work on a small file; each decorated class then costs ~0.5 ms of generated
code. The modules these verbs import (``urna``, ``format.*`` bar the writers,
``runtime.verdicts`` / ``stats`` / ``catalog_paths``, ``_cache_dir``) therefore also keep
``typing``, ``pathlib``, ``logging`` and ``concurrent.futures`` out of a run (annotations are
strings under ``from __future__ import annotations``; ``typing`` names sit under
``TYPE_CHECKING``); ``tests/cli/test_light_verbs_imports.py`` holds them to it.

A record subclass names its fields once, in ``_fields`` (and, when frozen, ``__slots__``), and
writes a typed ``__init__``; these bases give what the dataclasses gave: equality of the same
class field by field, a ``Name(field=value, ...)`` repr, and for ``FrozenRecord`` immutability,
a hash and pickling.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar


class Record:
    """A mutable record: fields are instance attributes listed in ``_fields``; unhashable."""

    __slots__ = ()  # a subclass without __slots__ of its own keeps its fields in __dict__
    _fields: ClassVar[tuple[str, ...]] = ()
    # No __hash__: defining __eq__ makes the class unhashable, as a mutable @dataclass is.

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def _compared(self) -> tuple[object, ...]:
        """What equality (and a frozen record's hash) compares: every field, unless a
        subclass leaves one out (a dataclass field's ``compare=False``)."""
        return self._values()

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in order (what ``dataclasses.asdict`` gave, without copies)."""
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._compared() == other._compared()

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"


class FrozenRecord(Record):
    """An immutable record over ``__slots__`` (= ``_fields``), set once by ``_set``; hashable."""

    __slots__ = ()

    def _set(self, *values: object) -> None:
        """Assign every field, in ``_fields`` order (the one write a frozen record takes)."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._compared())

    def __reduce__(self) -> tuple[Callable[..., FrozenRecord], tuple[object, ...]]:
        # positional construction in field order: every subclass's __init__ takes them so
        return (type(self), self._values())
