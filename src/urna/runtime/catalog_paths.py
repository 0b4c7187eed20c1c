"""What names a shard catalog: the ``.catalog.json`` suffix.

Outside the ``catalog`` package so that opening a plain file (every CLI read verb) can tell
the two apart without importing the catalog machinery.
"""

from __future__ import annotations

import os

CATALOG_SUFFIX = ".catalog.json"


def is_catalog_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a catalog (by its ``.catalog.json`` suffix)."""
    return os.fspath(path).endswith(CATALOG_SUFFIX)
