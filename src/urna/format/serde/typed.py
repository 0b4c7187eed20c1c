"""Derived-struct reads (``serde_json::from_slice::<T>``) on top of ``SerdeReader``."""

from __future__ import annotations

from ...errors import SerdeSyntax
from .numbers import format_float
from .reader import DIGITS, EOF_VALUE, SerdeReader
from .schema import STR, Opt, Struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TypedReader(SerdeReader):
    """A SerdeReader that also reads the typed schema (required/optional fields, flatten)."""

    __slots__ = ()

    def typed(self, kind: Any) -> Any:
        """One value of ``kind`` (a schema kind or Struct); a positionless error gets the index."""
        try:
            return self._typed(kind)
        except SerdeSyntax as e:
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
            if c != 0x2D and c not in DIGITS:
                raise self.invalid_type(name)
            if c == 0x2D:
                self.i += 1
            v = self.number(c != 0x2D)
            if isinstance(v, float):
                raise SerdeSyntax(
                    f"invalid type: floating point `{format_float(v)}`, expected {name}")
            if v < 0 or v >= (1 << (32 if name == "u32" else 64)):
                raise SerdeSyntax(f"invalid value: integer `{v}`, expected {name}")
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
            except SerdeSyntax as e:
                err = e
            self.depth += 1
            self._finish(err, self.end_seq)
            return out
        raise AssertionError(f"unknown kind {kind!r}")

    def _finish(self, err: SerdeSyntax | None, end: Any) -> None:
        """serde_json runs end_seq/end_map even after the visitor failed; its error wins."""
        try:
            end()
        except SerdeSyntax:
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
                        raise SerdeSyntax(f"invalid length {idx}, expected struct {spec.name} with "
                                   f"{n} element{'s' if n != 1 else ''}")
                    vals[key] = self.typed(kind)
            except SerdeSyntax as e:
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
                        raise SerdeSyntax(f"duplicate field `{key}`")
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
                        raise SerdeSyntax(f"missing field `{key}`")
                    vals[key] = None
        except SerdeSyntax as e:
            err = e
        self.depth += 1
        self._finish(err, self.end_map)
        if spec.flatten:
            vals["\0extra"] = extra
        return vals
