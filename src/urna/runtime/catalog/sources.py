"""The forge's record of a living catalog's sources: ``key -> [input_hash, chunk_id]``.

``urna build --update`` compares each source key's input hash with the one the log recorded.
Each version record carries the change of that map (a key's new pair, or null for a key gone),
in one of two forms:

* inline, ``"sources": {key: [input_hash, chunk_id] | null}`` (a small change, and every
  record written before the sidecar form);
* a sidecar file beside the catalog, for a change of more than ``INLINE_SOURCES`` keys (a
  first version records every row): the record names it (``sources_file``) with its
  ``sources_hash`` (``sha256:`` of its bytes, so the hash chain covers it) and ``n_sources``.
  The file is UTF-8 JSON lines sorted by key, ``[key, input_hash, chunk_id]`` or ``[key,
  null]``.

Only an update reads the map, so a catalog opened to search never reads a sidecar, and the
catalog itself stays small however many rows the corpus has (inline, each row cost ~190 bytes
of a JSON document every open parses and hashes whole).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import CatalogError
from ...format.hashing import HASH_PREFIX, sha256_state
from .document import is_plain_file_name

INLINE_SOURCES = 256  # a change of more keys than this goes to a sidecar file
SOURCES_SUFFIX = ".sources.jsonl"
_HEX = frozenset("0123456789abcdef")

Sources = dict[str, list[str]]
SourcesChange = dict[str, Any]  # key -> [input_hash, chunk_id] | None


def sources_change(old: Sources, new: Sources) -> SourcesChange:
    """The ``sources`` change that turns ``old`` into ``new``."""
    out: SourcesChange = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new})
    return out


def _is_pair(x: Any) -> bool:
    return isinstance(x, list) and len(x) == 2 and all(isinstance(y, str) for y in x)


def check_sources_fields(v: int, rec: dict[str, Any]) -> None:
    """A record's sources fields: an inline change, or a sidecar's name, hash and count."""
    if "sources_file" not in rec:
        if not isinstance(rec.get("sources"), dict) or not all(
                x is None or _is_pair(x) for x in rec["sources"].values()):
            raise CatalogError(f"version {v}: sources must map keys to [input_hash, chunk_id] "
                               f"or null")
        return
    name, digest, n = rec["sources_file"], rec.get("sources_hash"), rec.get("n_sources")
    if "sources" in rec or not isinstance(name, str) or not is_plain_file_name(name):
        raise CatalogError(f"version {v}: sources_file must be a plain file name beside the "
                           f"catalog, and the record carries no inline sources")
    if not (isinstance(digest, str) and len(digest) == 71 and digest.startswith("sha256:")
            and set(digest[7:]) <= _HEX):
        raise CatalogError(f"version {v}: sources_hash must be sha256: and 64 hex digits")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise CatalogError(f"version {v}: n_sources must be a non-negative integer")


def encode_sources(change: SourcesChange) -> bytes:
    """A change as the sidecar's JSON lines, sorted by key."""
    lines = (json.dumps([k] + (change[k] if change[k] is not None else [None]),
                        ensure_ascii=False, separators=(",", ":"))
             for k in sorted(change))
    return "".join(line + "\n" for line in lines).encode("utf-8")


def sidecar_name(catalog_name: str, version: int, digest: str) -> str:
    """``<name>-v<version>-<hash>.sources.jsonl``: a version's sidecar whose bytes hash to
    ``digest`` (``sha256:`` + hex)."""
    return f"{catalog_name}-v{version:06d}-{digest[7:19]}{SOURCES_SUFFIX}"


def sidecar_fields(name: str, digest: str, n: int) -> dict[str, Any]:
    """The record fields that name a sidecar whose bytes hash to ``digest``, holding ``n``
    keys."""
    return {"sources_file": name, "sources_hash": digest, "n_sources": n}


def _sidecar_lines(path: Path, v: int) -> Iterator[bytes]:
    try:
        with path.open("rb") as fh:
            yield from fh
    except OSError as e:
        raise CatalogError(f"version {v}: cannot read its sources file {path.name}: "
                           f"{e.strerror}") from e


def read_sidecar(folder: Path, rec: dict[str, Any]) -> SourcesChange:
    """The change a record's sidecar holds, streamed, checked against the record's hash and
    count (CatalogError naming the version when it is missing, altered or malformed)."""
    v, name = rec["version"], rec["sources_file"]
    h = sha256_state(b"")
    out: SourcesChange = {}
    last = None
    for no, raw in enumerate(_sidecar_lines(folder / name, v), start=1):
        h.update(raw)
        try:
            item = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            item = None
        ok = isinstance(item, list) and len(item) in (2, 3) and isinstance(item[0], str) and (
            item[1:] == [None] if len(item) == 2 else _is_pair(item[1:]))
        if not ok or (last is not None and item[0] <= last):
            raise CatalogError(f"version {v}: line {no} of {name} is not [key, input_hash, "
                               f"chunk_id] or [key, null] in key order")
        last = item[0]
        out[item[0]] = None if len(item) == 2 else item[1:]
    if HASH_PREFIX + h.hexdigest() != rec["sources_hash"] or len(out) != rec["n_sources"]:
        raise CatalogError(f"version {v}: {name} is not the sources file the log hashed "
                           f"({rec['n_sources']} keys, {rec['sources_hash']})")
    return out


def record_sources(folder: Path, rec: dict[str, Any]) -> SourcesChange:
    """A record's sources change, inline or from its sidecar in ``folder``."""
    return read_sidecar(folder, rec) if "sources_file" in rec else rec["sources"]


def sources_at(versions: Sequence[dict[str, Any]], folder: Path) -> Sources:
    """The forge's ``key -> [input_hash, chunk_id]`` after ``versions`` (their changes folded;
    sidecars read from ``folder``)."""
    out: Sources = {}
    for rec in versions:
        for key, value in record_sources(folder, rec).items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = list(value)
    return out
