"""The one home of CLI input validation: the parameter types every verb's options use.

A value out of range is a usage error (exit 2, one line, see ``_output.usage_line``) before
any library call, so no verb can hand the engine a number it cannot hold (k, ef, hops and
candidates are 32-bit in the format and the reference). Each type's ``convert`` takes the
text of the command line and returns the value or raises ``BadParameter`` with the text the
CLI has always shown (click's, before #20 moved the parser to argparse). Input files
(``InputFile``) are recorded by the parser so an error about their bytes can name the file
(``_output.error_line``).

No pathlib, typing or dataclasses at runtime: these modules are on every light verb's path.
"""

from __future__ import annotations

import math
import os
import stat

from ..errors import BadParameter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

I32_MAX = 2**31 - 1


class ParamType:
    """Text as given (the type of a parameter declared without one)."""

    name = "text"

    def convert(self, value: str) -> Any:
        """The value for the verb, or ``BadParameter``."""
        return value

    def metavar(self) -> str:
        """The placeholder the help shows for a value of this type."""
        return self.name.upper()

    def describe(self) -> str:
        """Extra help text (a range), or ''."""
        return ""


TEXT = ParamType()


class _NumberRange(ParamType):
    """A number, optionally bounded on either side (inclusive)."""

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        self.min, self.max = min, max

    def _number(self, value: str) -> Any:
        raise NotImplementedError

    def convert(self, value: str) -> Any:
        """The number, or a usage error for text that is none or one out of range."""
        try:
            number = self._number(value)
        except (TypeError, ValueError):  # also int()'s digit limit: no huge work on bad text
            raise BadParameter(f"{value!r} is not a valid {self.name}.") from None
        if ((self.min is not None and number < self.min)
                or (self.max is not None and number > self.max)):
            raise BadParameter(f"{number} is not in the range {self.describe()}.")
        return number

    def describe(self) -> str:
        """The range as ``min<=x<=max``, ``x>=min`` or ``x<=max``."""
        if self.min is None:
            return "" if self.max is None else f"x<={self.max}"
        if self.max is None:
            return f"x>={self.min}"
        return f"{self.min}<=x<={self.max}"


class IntRange(_NumberRange):
    """An integer within ``[min, max]``."""

    name = "integer"

    def _number(self, value: str) -> int:
        return int(value)


class FloatRange(_NumberRange):
    """A float within ``[min, max]``."""

    name = "float"

    def _number(self, value: str) -> float:
        return float(value)


class FiniteFloatRange(FloatRange):
    """A FloatRange that also refuses NaN and infinities."""

    def convert(self, value: str) -> Any:
        """The float, or a usage error for NaN, infinities and values out of range."""
        number = super().convert(value)
        if not math.isfinite(number):
            raise BadParameter(f"{value!r} is not a finite number.")
        return number


class Choice(ParamType):
    """One of a fixed list of words."""

    name = "choice"

    def __init__(self, choices: Sequence[str]) -> None:
        self.choices = tuple(choices)

    def convert(self, value: str) -> Any:
        """The word, or a usage error naming the choices."""
        if value in self.choices:
            return value
        raise BadParameter(f"{value!r} is not one of {', '.join(map(repr, self.choices))}.")

    def metavar(self) -> str:
        """``[a|b|c]``."""
        return "[" + "|".join(self.choices) + "]"


class PathType(ParamType):
    """A path, optionally one that must exist, be a file or be a directory.

    Values are the text as given, or ``pathlib.Path`` ones with ``as_path`` (imported then),
    or with ``shown`` the text as ``str(Path(value))`` spells it (``shown_path``: the light
    verbs print the path as they did when they took ``Path`` values, without pathlib).
    """

    def __init__(self, *, exists: bool = False, file_okay: bool = True, dir_okay: bool = True,
                 as_path: bool = False, shown: bool = False) -> None:
        self.exists, self.file_okay, self.dir_okay = exists, file_okay, dir_okay
        self.as_path, self.shown = as_path, shown
        self.name = ("file" if file_okay and not dir_okay else
                     "directory" if dir_okay and not file_okay else "path")

    def convert(self, value: str) -> Any:
        """The path, or a usage error for a missing, unreadable or wrong kind of entry."""
        kind = self.name.title()
        try:
            mode = os.stat(value).st_mode
        except (OSError, ValueError):  # ValueError: an embedded NUL byte
            if self.exists:
                raise BadParameter(f"{kind} {value!r} does not exist.") from None
            return self._coerce(value)
        if not self.file_okay and stat.S_ISREG(mode):
            raise BadParameter(f"{kind} {value!r} is a file.")
        if not self.dir_okay and stat.S_ISDIR(mode):
            raise BadParameter(f"{kind} {value!r} is a directory.")
        if not os.access(value, os.R_OK):
            raise BadParameter(f"{kind} {value!r} is not readable.")
        return self._coerce(value)

    def _coerce(self, value: str) -> Any:
        if not self.as_path:
            return shown_path(value) if self.shown else value
        from pathlib import Path

        return Path(value)


def shown_path(value: str) -> str:
    """``str(pathlib.PurePosixPath(value))`` without importing pathlib: no ``.`` parts, no
    repeated or trailing slashes; POSIX keeps a leading ``//``."""
    if os.sep != "/":  # elsewhere pathlib's own rules apply
        from pathlib import Path

        return str(Path(value))
    root = "//" if value.startswith("//") and not value.startswith("///") else (
        "/" if value.startswith("/") else "")
    parts = [p for p in value.split("/") if p and p != "."]
    return root + "/".join(parts) if root or parts else "."


class InputFile(PathType):
    """A path the verb reads: the parser records it, so an error can say which file was bad."""


def input_file(*, exists: bool = False, dir_okay: bool = True, as_path: bool = True,
               shown: bool = False) -> InputFile:
    """An input-file argument type (``pathlib.Path`` values unless ``as_path`` is False)."""
    return InputFile(exists=exists, dir_okay=dir_okay, as_path=as_path, shown=shown)


# k of the engine verbs: any 32-bit value reaches the library, which answers 0 and negatives
# with the reference's InvalidK (exit 1); beyond 32 bits is a usage error.
ENGINE_K = IntRange(-(2**31), I32_MAX)
# a count that must be positive: ask/retrieve -k, --candidates, benchmark -q, --sample, --shards
COUNT = IntRange(1, I32_MAX)
# a beam width (HNSW ef, graph seed budget): at least 1
BEAM = IntRange(1, I32_MAX)
# graph hops: 0 (seeds only) and up
HOPS = IntRange(0, I32_MAX)
# a 64-bit seed
SEED = IntRange(0, 2**64 - 1)
PORT = IntRange(0, 65535)


def size(minimum: int = 0) -> IntRange:
    """A 32-bit size or period of at least ``minimum`` (serve --max-body, --reload-check-ms)."""
    return IntRange(minimum, I32_MAX)
