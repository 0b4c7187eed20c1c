"""Canonical JSON of the forge: the one hash every fingerprint, recipe and cache key uses."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from urna._atomic import write_atomic


def canonical_hash(obj: Any) -> str:
    """``sha256:`` of the sorted-key compact JSON of ``obj`` (the reference's model_hash rule)."""
    raw = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def write_json(path: Path, obj: Any) -> None:
    """Atomically write sorted-key, one-space-indented JSON."""
    write_atomic(path, (json.dumps(obj, sort_keys=True, indent=1) + "\n").encode("utf-8"))
