"""Fingerprints computed once per model file state, not once per process (#20).

Hashing a model (potion's 30 MB table, a sentence-transformers snapshot) costs more than a
query, and every ``urna ask`` is a new process. The fingerprint is kept under the user cache
(``<URNA_CACHE_DIR or ~/.cache/urna>/fingerprints/``) keyed by the model files' resolved
paths, sizes and ``mtime_ns``: touching or replacing a file changes the key. A missing,
unreadable or corrupt entry just means computing it again; a cache that cannot be written
is skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from urna._cache_dir import user_cache_folder
from urna.forge.canonical import canonical_hash, write_json

SCHEMA = 1
# Paths are strings here (os.path): a question reads its fingerprint through this module, and
# pathlib costs it ~3 ms of imports (#20).


def file_states(paths: Sequence[str | os.PathLike[str]]) -> list[list[Any]]:
    """``[resolved path, size, mtime_ns]`` of each path (``None`` sizes for absent files)."""
    out: list[list[Any]] = []
    for p in paths:
        resolved = os.path.realpath(p)  # what str(Path(p).resolve()) gives
        try:
            st = os.stat(resolved)
        except OSError:
            out.append([resolved, None, None])
            continue
        out.append([resolved, st.st_size, st.st_mtime_ns])
    return out


def entry_path(kind: str, states: list[list[Any]]) -> str:
    """The cache file for one embedder kind and one state of its files."""
    key = canonical_hash({"kind": kind, "files": states}).removeprefix("sha256:")
    return os.path.join(user_cache_folder(), "fingerprints", f"{key}.json")


def cached_fingerprint(kind: str, paths: Sequence[str | os.PathLike[str]],
                       compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``compute()``'s fingerprint, reused while none of ``paths`` changed size or mtime."""
    states = file_states(paths)
    path = entry_path(kind, states)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.loads(fh.read())
        if (isinstance(doc, dict) and doc.get("schema") == SCHEMA
                and doc.get("files") == states and isinstance(doc.get("fingerprint"), dict)):
            return dict(doc["fingerprint"])
    except (OSError, ValueError):
        pass
    fingerprint = compute()
    if file_states(paths) == states:  # a file changed while hashing: do not keep it
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_json(path, {"schema": SCHEMA, "kind": kind, "files": states,
                              "fingerprint": fingerprint})
        except OSError:
            pass
    return fingerprint
