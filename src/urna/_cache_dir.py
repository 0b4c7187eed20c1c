"""The user's urna cache folder (model fingerprints, verdicts of verified opens).

A leaf module like ``_atomic``: the runtime and the forge both keep entries there. The folder
is found with ``os.path`` (``user_cache_folder``): the light CLI verbs keep their verdicts
there and do not import ``pathlib`` (``format/record.py`` says why).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def user_cache_folder() -> str:
    """The user's urna cache: URNA_CACHE_DIR, else ``$XDG_CACHE_HOME/urna`` (~/.cache/urna)."""
    chosen = os.environ.get("URNA_CACHE_DIR")
    if chosen:
        return os.path.expanduser(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "urna")


def user_cache_dir() -> Path:
    """``user_cache_folder()`` as a Path (the forge's caches)."""
    from pathlib import Path

    return Path(user_cache_folder())
