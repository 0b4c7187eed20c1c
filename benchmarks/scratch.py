"""One home for a benchmark's scratch folders: made under the temp folder, removed at exit.

Each run's own verdict cache (``URNA_CACHE_DIR``) and built files go in one, so a run never
reuses another's state and leaves nothing in ``/tmp`` behind it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile


def scratch_dir(prefix: str) -> str:
    """A new empty folder, removed with its contents when the process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
