"""Shared output helpers of the CLI: JSON documents, labelled lines, errors."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def emit_json(document: Any) -> None:
    """Print one pretty JSON document on stdout (nothing else goes there under --json)."""
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))


def labelled(label: str, value: Any, width: int) -> str:
    """``label`` padded to ``width`` columns, then the value."""
    return f"{label:<{width}}{value}"


def error_line(exc: BaseException) -> str:
    """The one-line error a user sees: the error class, then the reference's text."""
    return f"Error: {type(exc).__name__}: {exc}"


def fail(exc: BaseException, code: int = 1) -> None:
    """Print ``error_line`` on stderr and exit with ``code``."""
    click.echo(error_line(exc), err=True)
    sys.exit(code)
