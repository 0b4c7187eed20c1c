"""The user's urna cache folder (model fingerprints, verdicts of verified opens).

A leaf module like ``_atomic``: the runtime and the forge both keep entries there.
"""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """The user's urna cache: URNA_CACHE_DIR, else ``$XDG_CACHE_HOME/urna`` (~/.cache/urna)."""
    chosen = os.environ.get("URNA_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "urna"
