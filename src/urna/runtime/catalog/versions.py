"""The version log of a living catalog: records, their hash chain, tombstones and citation map.

A living catalog is ``<name>.catalog.json`` with a ``living`` key::

    {"head": N, "versions": [record_1, ..., record_N]}

Each record names its ``parent`` (the previous record's ``version_hash``, None for the first),
its ``segments`` (catalog entries of the immutable ``.urna`` files live at that version), its
``tombstones`` (every removed ``[segment content_hash, chunk_id, removed_in]`` still inside a
live segment), the segments it ``compacted`` (``[old content_hash, new content_hash]``: chunk
ids are kept, so ``urna://<old>/<id>`` moved to ``urna://<new>/<id>`` unless it was removed
first) and the change of ``sources`` (the forge's ``key -> [input_hash, chunk_id]``, null for a
key gone; the map at a version folds the changes up to it). Records grow with what changed,
not with the corpus. ``version_hash`` is ``sha256:`` of the sorted-key compact UTF-8
JSON of the record without it, so any version can be reopened and its chain checked. The
top-level ``shards`` are always the head's segments, so the catalog stays a plain catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import CatalogError
from ...format.citation import ResolvedCitation
from ...format.hashing import sorted_json_sha256_utf8
from .document import SHARD_KEYS, check_entry

LIVING_KEY = "living"
SEGMENT_KEYS = SHARD_KEYS
OPS = ("import", "create", "add", "remove", "replace", "compact", "update")


def version_hash(record: dict[str, Any]) -> str:
    """``sha256:`` of the record's canonical JSON without its own ``version_hash``."""
    return sorted_json_sha256_utf8({k: v for k, v in record.items() if k != "version_hash"})


def version_record(parent: dict[str, Any] | None, op: str, segments: Sequence[dict[str, Any]],
                   tombstones: Sequence[Sequence[Any]], *,
                   compacted: Sequence[Sequence[str]] = (),
                   sources: dict[str, Any] | None = None,
                   note: str = "") -> dict[str, Any]:
    """The next version after ``parent`` (None: the first), hashed; ``sources`` is a change."""
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    record: dict[str, Any] = {
        "version": 1 if parent is None else int(parent["version"]) + 1,
        "parent": None if parent is None else parent["version_hash"],
        "op": op,
        "segments": [{k: s[k] for k in SEGMENT_KEYS} for s in segments],
        "tombstones": sorted([str(h), str(c), int(v)] for h, c, v in tombstones),
        "compacted": [[str(a), str(b)] for a, b in compacted],
        "sources": dict(sources or {}),
        "note": note,
    }
    record["version_hash"] = version_hash(record)
    return record


def is_living(doc: dict[str, Any]) -> bool:
    """Whether a catalog document carries a version log."""
    return LIVING_KEY in doc


def log_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The version records of a living catalog, checked (hash chain, numbering, head)."""
    living = doc.get(LIVING_KEY)
    if not isinstance(living, dict) or not isinstance(living.get("versions"), list):
        raise CatalogError("living: expected {head, versions}")
    versions = living["versions"]
    if not versions:
        raise CatalogError("living: the version log is empty")
    parent: str | None = None
    for i, rec in enumerate(versions):
        if not isinstance(rec, dict):
            raise CatalogError(f"living.versions[{i}] is not an object")
        if rec.get("version") != i + 1:
            raise CatalogError(f"living.versions[{i}] is version {rec.get('version')!r}, "
                               f"expected {i + 1}")
        if rec.get("parent") != parent:
            raise CatalogError(f"version {i + 1} names parent {rec.get('parent')!r}, but "
                               f"version {i} hashes to {parent!r}")
        got = version_hash(rec)
        if rec.get("version_hash") != got:
            raise CatalogError(f"version {i + 1}: version_hash mismatch: the log says "
                               f"{rec.get('version_hash')!r} but the record hashes to {got}")
        _check_record(i + 1, rec)
        parent = got
    if living.get("head") != len(versions):
        raise CatalogError(f"living.head is {living.get('head')!r} but the log holds "
                           f"{len(versions)} versions")
    head = versions[-1]
    if [e["file"] for e in doc["shards"]] != [s["file"] for s in head["segments"]]:
        raise CatalogError("the catalog's shards are not its head version's segments")
    return versions


def _check_record(v: int, rec: dict[str, Any]) -> None:
    segs = rec.get("segments")
    if not isinstance(segs, list) or not segs:
        raise CatalogError(f"version {v} lists no segments")
    for i, s in enumerate(segs):
        try:
            check_entry(i, s)  # the shard checks: types, and a plain file name beside us
        except CatalogError as e:
            raise CatalogError(f"version {v}: segments{str(e).removeprefix('shards')}") from None
    for key in ("tombstones", "compacted"):
        rows = rec.get(key)
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise CatalogError(f"version {v}: {key} must be a list of lists")
    for t in rec["tombstones"]:
        if len(t) != 3 or not isinstance(t[0], str) or not isinstance(t[1], str) \
                or not isinstance(t[2], int) or isinstance(t[2], bool):
            raise CatalogError(f"version {v}: a tombstone is not [content_hash, chunk_id, int]")
    for pair in rec["compacted"]:
        if len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise CatalogError(f"version {v}: a compacted entry is not [old, new]")
    if not isinstance(rec.get("sources"), dict) or not all(
            x is None or (isinstance(x, list) and len(x) == 2 and
                          all(isinstance(y, str) for y in x))
            for x in rec["sources"].values()):
        raise CatalogError(f"version {v}: sources must map keys to [input_hash, chunk_id] "
                           f"or null")


def record_at(doc: dict[str, Any], version: int | None) -> dict[str, Any]:
    """The record of ``version`` (None: the head); CatalogError when the log lacks it."""
    versions = log_of(doc)
    if version is None:
        return versions[-1]
    if isinstance(version, bool) or not isinstance(version, int) or \
            not 1 <= version <= len(versions):
        raise CatalogError(f"version {version!r} is not in this catalog (versions 1.."
                           f"{len(versions)})")
    return versions[version - 1]


def masks_of(record: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Tombstoned chunk ids per segment content_hash at ``record``."""
    out: dict[str, set[str]] = {}
    for h, cid, _ in record["tombstones"]:
        out.setdefault(h, set()).add(cid)
    return {h: frozenset(ids) for h, ids in out.items()}


@dataclass
class History:
    """What every version up to one knows of its citations: removals, moves, segment files."""

    removed_in: dict[tuple[str, str], int] = field(default_factory=dict)
    moved: dict[str, tuple[str, int]] = field(default_factory=dict)  # segment -> (new, version)
    files: dict[str, str] = field(default_factory=dict)  # segment content_hash -> file name


def history(doc: dict[str, Any], version: int | None) -> History:
    """The removals, compaction moves and segment files of versions 1..``version``."""
    head = record_at(doc, version)["version"]
    out = History()
    for rec in log_of(doc)[:head]:
        for s in rec["segments"]:
            out.files.setdefault(s["content_hash"], s["file"])
        for h, cid, v in rec["tombstones"]:
            out.removed_in.setdefault((h, cid), v)
        for old, new in rec["compacted"]:
            out.moved[old] = (new, rec["version"])
    return out


def sources_at(versions: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """The forge's ``key -> [input_hash, chunk_id]`` after ``versions`` (their changes folded)."""
    out: dict[str, list[str]] = {}
    for rec in versions:
        for key, value in rec["sources"].items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = list(value)
    return out


def sources_change(old: dict[str, list[str]], new: dict[str, list[str]]) -> dict[str, Any]:
    """The ``sources`` change that turns ``old`` into ``new``."""
    out: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new})
    return out


def summary(rec: dict[str, Any]) -> dict[str, Any]:
    """One version as ``urna log`` prints it."""
    return {"version": rec["version"], "version_hash": rec["version_hash"],
            "parent": rec["parent"], "op": rec["op"], "note": rec["note"],
            "segments": len(rec["segments"]),
            "chunks": sum(s["n_chunks"] for s in rec["segments"]) - len(rec["tombstones"]),
            "tombstones": len(rec["tombstones"]), "compacted": len(rec["compacted"])}


class LivingCitation(ResolvedCitation):
    """A citation resolved on a living catalog, with what became of it.

    ``status`` is ``live`` (its segment is current), ``compacted`` (``compacted_from`` is the
    citation asked for, ``citation_id`` the one it moved to in version ``compacted_in``) or
    ``removed`` (``removed_in`` names the version; the text is the old segment's; a chunk
    compacted, then removed, keeps ``compacted_from``).
    """

    _fields: ClassVar[tuple[str, ...]] = (*ResolvedCitation._fields, "status", "removed_in",
                                          "compacted_from", "compacted_in")
    __slots__ = ("status", "removed_in", "compacted_from", "compacted_in")
    status: str
    removed_in: int | None
    compacted_from: str | None
    compacted_in: int | None

    def __init__(self, citation_id: str, chunk_id: str, content_hash: str, ordinal: int,
                 text: str, source_uri: str, byte_start: int, byte_end: int,
                 status: str = "live", removed_in: int | None = None,
                 compacted_from: str | None = None, compacted_in: int | None = None) -> None:
        self._set(citation_id, chunk_id, content_hash, ordinal, text, source_uri, byte_start,
                  byte_end, status, removed_in, compacted_from, compacted_in)
