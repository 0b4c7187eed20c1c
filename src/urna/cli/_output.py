"""Shared output helpers of the CLI: JSON documents, labelled lines, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import FileTruncated, MagicMismatch
from ..format.layout import LEGACY_MAGIC, URNA_MAGIC


def emit_json(document: Any) -> None:
    """Print one pretty JSON document on stdout (nothing else goes there under --json)."""
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))


def labelled(label: str, value: Any, width: int) -> str:
    """``label`` padded to ``width`` columns, then the value."""
    return f"{label:<{width}}{value}"


def _not_urna(files: Sequence[Path]) -> list[str]:
    """The names of the input files that do not start with a .urna magic (catalogs aside)."""
    out = []
    for path in files:
        if path.name.endswith(".catalog.json"):
            continue
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(URNA_MAGIC))
        except OSError:
            continue
        if head not in (URNA_MAGIC, LEGACY_MAGIC):
            out.append(path.name)
    return out


def error_line(exc: BaseException, files: Sequence[Path] = ()) -> str:
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


def usage_line(exc: click.UsageError) -> str:
    """A usage error on one line: click's message, then where the help is."""
    message = " ".join(exc.format_message().split())
    where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
    return f"Error: {message}{where}"


def fail(exc: BaseException, code: int = 1) -> None:
    """Print ``error_line`` on stderr and exit with ``code``."""
    click.echo(error_line(exc), err=True)
    sys.exit(code)
