"""Several corpora opened at once and named by their file, as the servers (HTTP, MCP) serve them."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ..errors import InvalidInput
from .catalog import CATALOG_SUFFIX

T = TypeVar("T")


def corpus_name(path: str | os.PathLike) -> str:
    """``docs/quickstart.urna`` -> ``quickstart``; ``big.catalog.json`` -> ``big``."""
    name = Path(path).name
    return name[: -len(CATALOG_SUFFIX)] if name.endswith(CATALOG_SUFFIX) else Path(name).stem


def open_named(paths: Sequence[str | os.PathLike], opener: Callable[[str, str], T],
               close: Callable[[T], None]) -> dict[str, T]:
    """``{name: opener(name, path)}`` for every path; two files of one name are refused.

    Everything opened so far is closed again (``close``) when one path fails, so a server that
    cannot start holds no maps.
    """
    opened: dict[str, T] = {}
    where: dict[str, str] = {}
    try:
        for p in paths:
            name = corpus_name(p)
            if name in opened:
                raise InvalidInput(f"two files share the corpus name {name!r}: "
                                   f"{where[name]} and {os.fspath(p)}")
            opened[name] = opener(name, os.fspath(p))
            where[name] = os.fspath(p)
    except BaseException:
        for item in opened.values():
            close(item)
        raise
    return opened
