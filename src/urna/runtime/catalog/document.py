"""The catalog document ``<name>.catalog.json``: build, hash, write, read and check it.

The catalog lists each shard's file name (relative to the catalog's folder), ``file_hash``,
``content_hash``, ``n_chunks``, ``model_hash`` and ``embedding_dim``, and carries its own
``catalog_hash``: ``sha256:`` of the sorted-key compact JSON of every other key. Reading it
checks the schema, the types, the hash and that every shard names one model and one width;
it opens no shard (``fanout.open_checked`` does).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._atomic import write_atomic
from ...errors import CatalogError
from ...format.hashing import sorted_json_sha256_utf8

CATALOG_SCHEMA_VERSION = 1
SHARD_KEYS = ("file", "file_hash", "content_hash", "n_chunks", "model_hash", "embedding_dim")
MAX_CATALOG_BYTES = 64 << 20  # a catalog is a small index; refuse anything far larger


def catalog_hash(doc: dict[str, Any]) -> str:
    """``sha256:`` of the sorted-key compact JSON of ``doc`` without ``catalog_hash``."""
    return sorted_json_sha256_utf8({k: v for k, v in doc.items() if k != "catalog_hash"})


def catalog_document(name: str, n_shards: int, shards: Sequence[dict[str, Any]],
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The catalog dict for ``shards`` (entries with the keys of ``SHARD_KEYS``), hashed."""
    entries = []
    for i, s in enumerate(shards):
        missing = [k for k in SHARD_KEYS if k not in s]
        if missing:
            raise CatalogError(f"shards[{i}] missing {missing[0]}")
        entry = {k: s[k] for k in SHARD_KEYS}
        if "shard" in s:
            entry["shard"] = int(s["shard"])
        entries.append(entry)
    doc: dict[str, Any] = {
        "catalog_schema_version": CATALOG_SCHEMA_VERSION, "name": name, "n_shards": int(n_shards),
        "n_chunks": sum(int(s["n_chunks"]) for s in entries),
        "model_hash": entries[0]["model_hash"] if entries else "",
        "embedding_dim": entries[0]["embedding_dim"] if entries else 0,
        "shards": entries,
    }
    if extra:
        doc.update({k: v for k, v in extra.items() if k not in doc})
    doc["catalog_hash"] = catalog_hash(doc)
    return doc


def write_catalog(path: str | os.PathLike, doc: dict[str, Any]) -> str:
    """Write a catalog document atomically (temp file, fsync, rename); returns the path.

    A document larger than ``read_catalog`` takes is refused (CatalogError, nothing written):
    written, it would leave a catalog no reader opens."""
    target = Path(path)
    data = (json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    if len(data) > MAX_CATALOG_BYTES:
        raise CatalogError(f"catalog {target} would be {len(data)} bytes, more than the "
                           f"{MAX_CATALOG_BYTES} a reader opens; nothing written")
    write_atomic(target, data)
    return str(target)


def is_plain_file_name(name: str) -> bool:
    """Whether ``name`` names a file beside the catalog (no way out of its folder)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00")


def check_entry(i: int, e: Any) -> dict[str, Any]:
    """Check one shard entry (keys, types, a plain file name); the entry."""
    if not isinstance(e, dict):
        raise CatalogError(f"shards[{i}] is not an object")
    for k in SHARD_KEYS:
        if k not in e:
            raise CatalogError(f"shards[{i}] missing {k}")
    for k in ("file", "file_hash", "content_hash", "model_hash"):
        if not isinstance(e[k], str):
            raise CatalogError(f"shards[{i}].{k} must be a string")
    for k in ("n_chunks", "embedding_dim"):
        if not isinstance(e[k], int) or isinstance(e[k], bool) or e[k] < 0:
            raise CatalogError(f"shards[{i}].{k} must be a non-negative integer")
    name = e["file"]
    if not is_plain_file_name(name):
        raise CatalogError(f"shards[{i}].file must be a plain file name, got {name!r}")
    return e


def read_catalog(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a catalog document (schema, types, its own hash); opens no shard."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_CATALOG_BYTES + 1)
    except OSError as e:
        raise CatalogError(f"cannot read catalog {p}: {e.strerror}") from e
    if len(raw) > MAX_CATALOG_BYTES:
        raise CatalogError(f"catalog {p} is larger than {MAX_CATALOG_BYTES} bytes")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CatalogError(f"catalog {p} is not JSON: {e}") from e
    if not isinstance(doc, dict):
        raise CatalogError(f"catalog {p} is not a JSON object")
    if doc.get("catalog_schema_version") != CATALOG_SCHEMA_VERSION:
        raise CatalogError(f"unsupported catalog_schema_version "
                           f"{doc.get('catalog_schema_version')!r} (expected 1)")
    shards = doc.get("shards")
    if not isinstance(shards, list) or not shards:
        raise CatalogError("catalog lists no shards")
    entries = [check_entry(i, e) for i, e in enumerate(shards)]
    if len({e["file"] for e in entries}) != len(entries):
        raise CatalogError("catalog lists a shard file twice")
    got = catalog_hash(doc)
    if doc.get("catalog_hash") != got:
        raise CatalogError(f"catalog_hash mismatch: catalog says {doc.get('catalog_hash')!r} "
                           f"but its contents hash to {got}")
    for key in ("model_hash", "embedding_dim"):
        values = sorted({str(e[key]) for e in entries})
        if len(values) > 1:
            raise CatalogError(f"shards disagree on {key}: {', '.join(values)}")
        if doc.get(key) != entries[0][key]:
            raise CatalogError(f"catalog {key} {doc.get(key)!r} differs from its shards' "
                               f"{entries[0][key]!r}")
    if doc.get("n_chunks") != sum(e["n_chunks"] for e in entries):
        raise CatalogError("catalog n_chunks is not the sum of its shards'")
    return doc
