"""The one home of CLI input validation: the parameter types every verb's options use.

A value out of range is a click usage error (exit 2, one line, see ``_output.usage_line``)
before any library call, so no verb can hand the engine a number it cannot hold (k, ef, hops
and candidates are 32-bit in the format and the reference). Input files are recorded in the
context so an error about their bytes can name the file (``_output.error_line``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

I32_MAX = 2**31 - 1
FILES_SEEN = "urna.input_files"  # ctx.meta key: every input file path of this invocation


class IntRange(click.IntRange):
    """click's IntRange, saying "not a valid integer" (not "integer range") for 'x'."""

    name = "integer"



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


class FiniteFloatRange(click.FloatRange):
    """A FloatRange that also refuses NaN and infinities."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The float, or a usage error for NaN, infinities and values out of range."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class InputFile(click.Path):
    """A path argument whose value is remembered, so an error can say which file was bad."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The path (as click.Path converts it), recorded under ``ctx.meta[FILES_SEEN]``."""
        path = super().convert(value, param, ctx)
        if ctx is not None:
            ctx.meta.setdefault(FILES_SEEN, []).append(str(path))
        return path


def input_file(*, exists: bool = False, dir_okay: bool = True,
               as_path: bool = True) -> InputFile:
    """An input-file argument type (``pathlib.Path`` values unless ``as_path`` is False)."""
    return InputFile(exists=exists, dir_okay=dir_okay, path_type=Path if as_path else None)


def recorded_files(ctx: click.Context) -> list[Path]:
    """The input files this invocation named, in order."""
    return [Path(p) for p in ctx.meta.get(FILES_SEEN, [])]
