"""Canonical JSON of the forge: the one hash every fingerprint, recipe and cache key uses."""

from __future__ import annotations

import json
from typing import Any

from urna._atomic import write_atomic
from urna.format.hashing import sorted_json_sha256_ascii

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

# ``sha256:`` of the sorted-key compact (ASCII-escaped) JSON: the reference's model_hash rule.
canonical_hash = sorted_json_sha256_ascii


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write sorted-key, one-space-indented JSON."""
    write_atomic(path, (json.dumps(obj, sort_keys=True, indent=1) + "\n").encode("utf-8"))
