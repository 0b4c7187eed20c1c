"""Shared output helpers of the CLI: lines, JSON documents, errors."""

from __future__ import annotations

import json
import os
import sys

from ..errors import FileTruncated, MagicMismatch
from ..format.layout import LEGACY_MAGIC, URNA_MAGIC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..errors import UsageError


def echo(message: str = "", err: bool = False) -> None:
    """Print one line on stdout (or stderr) and flush it, so lines keep their order."""
    stream = sys.stderr if err else sys.stdout
    stream.write(message + "\n")
    stream.flush()


def emit_json(document: Any) -> None:
    """Print one pretty JSON document on stdout (nothing else goes there under --json)."""
    echo(json.dumps(document, indent=2, ensure_ascii=False))


def labelled(label: str, value: Any, width: int) -> str:
    """``label`` padded to ``width`` columns, then the value."""
    return f"{label:<{width}}{value}"


def _not_urna(files: Sequence[str]) -> list[str]:
    """The names of the input files that do not start with a .urna magic (catalogs aside)."""
    out = []
    for path in files:
        if path.endswith(".catalog.json"):
            continue
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(URNA_MAGIC))
        except OSError:
            continue
        if head not in (URNA_MAGIC, LEGACY_MAGIC):
            out.append(os.path.basename(path))
    return out


def error_line(exc: BaseException, files: Sequence[str] = ()) -> str:
    """The one-line error a user sees: the error class, then the reference's text.

    A magic mismatch (or a file too short to hold a header) also names the input file that
    is not a .urna file; the library's message stays the reference's.
    """
    line = f"Error: {type(exc).__name__}: {exc}"
    if isinstance(exc, (MagicMismatch, FileTruncated)):
        names = _not_urna(files)
        if names:
            line += f" ({', '.join(names)} is not a .urna file)"
    return line


def usage_line(exc: UsageError) -> str:
    """A usage error on one line: the message, then where the help is."""
    message = " ".join(exc.message.split())
    where = f" (see '{exc.command} --help')" if exc.command else ""
    return f"Error: {message}{where}"


def fail(exc: BaseException, code: int = 1) -> None:
    """Print ``error_line`` on stderr and exit with ``code``."""
    echo(error_line(exc), err=True)
    sys.exit(code)
