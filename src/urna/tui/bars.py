"""Plain-text bars and labels the TUI draws (no textual here, so they are easy to test)."""

from __future__ import annotations

import os
from pathlib import Path

FULL, EMPTY = "█", "░"


def bar(fraction: float, width: int) -> str:
    """A ``width``-cell bar filled to ``fraction`` (clamped to 0..1; NaN draws empty)."""
    if fraction != fraction:  # NaN
        fraction = 0.0
    cells = round(max(0.0, min(1.0, fraction)) * width)
    return FULL * cells + EMPTY * (width - cells)


def human_size(n: int) -> str:
    """Bytes as a short human figure (``17.5 KB``)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover - loop always returns


def display_path(path: Path, cwd: Path | None = None) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    base = (cwd or Path.cwd()).resolve()
    full = path.resolve()
    try:
        rel = full.relative_to(base)
    except ValueError:
        return str(full)
    return str(rel) if str(rel) != "." else "."


def masked(text: str, package_dir: str) -> str:
    """``text`` with the urna package directory shown as ``<urna>`` (stable across installs)."""
    return text.replace(package_dir + os.sep, "<urna>/").replace(package_dir, "<urna>")
