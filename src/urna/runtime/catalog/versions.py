"""The version log of a living catalog: records, their hash chain, tombstones and citation map.

A living catalog is ``<name>.catalog.json`` with a ``living`` key::

    {"head": N, "versions": [record_1, ..., record_N]}

Each record names its ``parent`` (the previous record's ``version_hash``, None for the first),
its ``segments`` (catalog entries of the immutable ``.urna`` files live at that version), the
change of its tombstones (below), the segments it ``compacted`` (``[old content_hash, new
content_hash]``: chunk ids are kept, so ``urna://<old>/<id>`` moved to ``urna://<new>/<id>``
unless it was removed first) and the change of the forge's ``sources`` (``key ->
[input_hash, chunk_id]``, null for a key gone; the map at a version folds the changes up to
it), inline or in a sidecar file (``catalog.sources``).

Tombstones (the removed ``(segment content_hash, chunk_id)`` still inside a live segment, each
with the version that removed it) are a change too: ``removed`` lists the ``[content_hash,
chunk_id]`` this version tombstones, ``restored`` the ones it lifts while their segment stays
(the segment was added again), and ``n_tombstones`` how many are live after it, which the fold
checks. The set at version v is the set at v - 1 without the tombstones of segments v no
longer lists (compacted away), without ``restored``, plus ``removed``. Records written before
this form carry ``tombstones``, the whole set at that version (``[content_hash, chunk_id,
removed_in]``); such a record sets the fold to its list. A record's size grows with what
changed, never with the corpus or the history: a whole set in every record made the log grow
with versions x removals.

``version_hash`` is ``sha256:`` of the sorted-key compact UTF-8 JSON of the record without it,
so any version can be reopened and its chain checked. The top-level ``shards`` are always the
head's segments, so the catalog stays a plain catalog.

A squashed log (``squash``) starts at a version K > 1: its first record (op ``squash``, no
parent) holds version K's state whole (segments, ``tombstones`` in the earlier whole-set form,
the folded ``sources`` map as a change from nothing) and, under ``squashed``, what citations
still need of versions 1..K: every segment file they listed (``files``) and every compaction
move (``moved``: ``[old, new, version]``). Versions before K no longer open, and the exact
version that removed a chunk of a segment compacted away by K is gone with them (``cite``
answers such a chunk ``removed`` with ``removed_in`` None). The later records are the same
changes re-chained onto the new first record, so their version hashes change, as a squash of
history does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import CatalogError
from ...format.citation import ResolvedCitation
from ...format.hashing import sorted_json_sha256_utf8
from .document import SHARD_KEYS, check_entry, is_plain_file_name
from .sources import check_sources_fields

LIVING_KEY = "living"
SEGMENT_KEYS = SHARD_KEYS
OPS = ("import", "create", "add", "remove", "replace", "compact", "update", "squash")


def version_hash(record: dict[str, Any]) -> str:
    """``sha256:`` of the record's canonical JSON without its own ``version_hash``."""
    return sorted_json_sha256_utf8({k: v for k, v in record.items() if k != "version_hash"})


Tombstones = dict[tuple[str, str], int]  # (segment content_hash, chunk_id) -> removed in


def version_record(parent: dict[str, Any] | None, op: str, segments: Sequence[dict[str, Any]],
                   *, removed: Sequence[Sequence[str]] = (),
                   restored: Sequence[Sequence[str]] = (), n_tombstones: int = 0,
                   compacted: Sequence[Sequence[str]] = (),
                   sources: dict[str, Any] | None = None,
                   sources_sidecar: dict[str, Any] | None = None,
                   note: str = "") -> dict[str, Any]:
    """The next version after ``parent`` (None: the first), hashed; ``removed``, ``restored``
    and ``sources`` are changes (``tombstone_change`` gives the first two); a change written
    to a sidecar is named by ``sources_sidecar`` (``sources.sidecar_fields``) instead."""
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    record: dict[str, Any] = {
        "version": 1 if parent is None else int(parent["version"]) + 1,
        "parent": None if parent is None else parent["version_hash"],
        "op": op,
        "segments": [{k: s[k] for k in SEGMENT_KEYS} for s in segments],
        "removed": sorted([str(h), str(c)] for h, c in removed),
        "restored": sorted([str(h), str(c)] for h, c in restored),
        "n_tombstones": int(n_tombstones),
        "compacted": [[str(a), str(b)] for a, b in compacted],
        **({"sources": dict(sources or {})} if sources_sidecar is None else sources_sidecar),
        "note": note,
    }
    record["version_hash"] = version_hash(record)
    return record


def _carried(before: Tombstones, record: dict[str, Any]) -> Tombstones:
    """The tombstones of ``before`` whose segment ``record`` still lists."""
    listed = {s["content_hash"] for s in record["segments"]}
    return {k: v for k, v in before.items() if k[0] in listed}


def tombstone_change(before: Tombstones, segments: Sequence[dict[str, Any]], after: Tombstones,
                     version: int) -> tuple[list[list[str]], list[list[str]]]:
    """``(removed, restored)`` that turn ``before`` (the set at the parent) into ``after`` at
    ``version`` listing ``segments``; every tombstone new in ``after`` must be ``version``'s."""
    carried = _carried(before, {"segments": segments})
    restored = [[h, c] for (h, c), v in carried.items() if after.get((h, c)) != v]
    removed = [[h, c] for (h, c), v in after.items() if carried.get((h, c)) != v]
    if any(after[(h, c)] != version for h, c in removed):
        raise ValueError("a new tombstone must carry the version that removes it")
    return removed, restored


def fold_tombstones(before: Tombstones, record: dict[str, Any]) -> Tombstones:
    """The tombstones after ``record``, given those before it (checked against its count)."""
    v = int(record["version"])
    if "tombstones" in record:  # a record of the earlier form: the whole set
        return {(h, c): int(r) for h, c, r in record["tombstones"]}
    out = _carried(before, record)
    for h, c in record["restored"]:
        out.pop((h, c), None)
    listed = {s["content_hash"] for s in record["segments"]}
    for h, c in record["removed"]:
        if h not in listed:
            raise CatalogError(f"version {v} removes a chunk of segment {h}, which it does "
                               f"not list")
        out[(h, c)] = v
    if len(out) != record["n_tombstones"]:
        raise CatalogError(f"version {v}: its changes leave {len(out)} tombstones, but it "
                           f"says n_tombstones = {record['n_tombstones']}")
    return out


def tombstones_at(versions: Sequence[dict[str, Any]]) -> Tombstones:
    """The tombstones after the last of ``versions`` (records 1..v of one checked log)."""
    out: Tombstones = {}
    for rec in versions:
        out = fold_tombstones(out, rec)
    return out


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
    tombstones: Tombstones = {}
    first = _first_version(versions[0])
    for i, rec in enumerate(versions):
        if not isinstance(rec, dict):
            raise CatalogError(f"living.versions[{i}] is not an object")
        v = first + i
        if rec.get("version") != v:
            raise CatalogError(f"living.versions[{i}] is version {rec.get('version')!r}, "
                               f"expected {v}")
        if rec.get("parent") != parent:
            raise CatalogError(f"version {v} names parent {rec.get('parent')!r}, but "
                               f"version {v - 1} hashes to {parent!r}")
        if i and rec.get("op") == "squash":
            raise CatalogError(f"version {v} is a squash, which only a log's first record is")
        got = version_hash(rec)
        if rec.get("version_hash") != got:
            raise CatalogError(f"version {v}: version_hash mismatch: the log says "
                               f"{rec.get('version_hash')!r} but the record hashes to {got}")
        _check_record(v, rec)
        tombstones = fold_tombstones(tombstones, rec)  # its own checks: counts, segments
        parent = got
    if living.get("head") != first + len(versions) - 1:
        raise CatalogError(f"living.head is {living.get('head')!r} but the log holds "
                           f"versions {first}..{first + len(versions) - 1}")
    head = versions[-1]
    if [e["file"] for e in doc["shards"]] != [s["file"] for s in head["segments"]]:
        raise CatalogError("the catalog's shards are not its head version's segments")
    return versions


def _first_version(rec: object) -> int:
    """The version a log starts at: 1, or a squash record's own (CatalogError otherwise)."""
    if not isinstance(rec, dict) or rec.get("op") != "squash":
        return 1
    v = rec.get("version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise CatalogError(f"a squash record's version must be an integer >= 1, not {v!r}")
    if "tombstones" not in rec:
        raise CatalogError(f"version {v}: a squash record holds its tombstones whole")
    return v


def records_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The checked log of a living catalog; for a plain shard catalog its shards as the one
    version a first write imports."""
    if is_living(doc):
        return log_of(doc)
    return [version_record(None, "import", doc["shards"])]


def _check_record(v: int, rec: dict[str, Any]) -> None:
    segs = rec.get("segments")
    if not isinstance(segs, list) or not segs:
        raise CatalogError(f"version {v} lists no segments")
    for i, s in enumerate(segs):
        try:
            check_entry(i, s)  # the shard checks: types, and a plain file name beside us
        except CatalogError as e:
            raise CatalogError(f"version {v}: segments{str(e).removeprefix('shards')}") from None
    whole = "tombstones" in rec  # the earlier form: the whole set, not its change
    for key in ("tombstones", "compacted") if whole else ("removed", "restored", "compacted"):
        rows = rec.get(key)
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise CatalogError(f"version {v}: {key} must be a list of lists")
    if whole:
        for t in rec["tombstones"]:
            if len(t) != 3 or not isinstance(t[0], str) or not isinstance(t[1], str) \
                    or not isinstance(t[2], int) or isinstance(t[2], bool):
                raise CatalogError(f"version {v}: a tombstone is not [content_hash, chunk_id, "
                                   f"int]")
    else:
        for key in ("removed", "restored"):
            if not all(len(t) == 2 and all(isinstance(x, str) for x in t) for t in rec[key]):
                raise CatalogError(f"version {v}: a {key} entry is not [content_hash, chunk_id]")
        n = rec.get("n_tombstones")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise CatalogError(f"version {v}: n_tombstones must be a non-negative integer")
    for pair in rec["compacted"]:
        if len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise CatalogError(f"version {v}: a compacted entry is not [old, new]")
    check_sources_fields(v, rec)
    if "squashed" in rec or rec.get("op") == "squash":
        _check_squashed(v, rec.get("squashed"))


def _check_squashed(v: int, squashed: object) -> None:
    """A squash record's ``squashed``: segment files by content hash, compaction moves, and
    (when any) the removals a citation still needs."""
    if not isinstance(squashed, dict) or not {"files", "moved"} <= set(squashed) <= {
            "files", "moved", "removed"}:
        raise CatalogError(f"version {v}: squashed must be {{files, moved[, removed]}}")
    if not _str_str_versions(squashed.get("removed", [])):
        raise CatalogError(f"version {v}: squashed.removed must be a list of "
                           f"[segment, chunk_id, version]")
    files = squashed["files"]
    if not isinstance(files, dict) or not all(
            isinstance(h, str) and isinstance(f, str) and is_plain_file_name(f)
            for h, f in files.items()):
        raise CatalogError(f"version {v}: squashed.files must map content hashes to plain file "
                           f"names beside the catalog")
    if not _str_str_versions(squashed["moved"]):
        raise CatalogError(f"version {v}: squashed.moved must be a list of [old, new, version]")


def _str_str_versions(value: object) -> bool:
    """Whether ``value`` is a list of ``[str, str, int]`` (a bool is no version)."""
    return isinstance(value, list) and all(
        isinstance(m, list) and len(m) == 3 and isinstance(m[0], str) and isinstance(m[1], str)
        and isinstance(m[2], int) and not isinstance(m[2], bool) for m in value)


def versions_to(doc: dict[str, Any], version: int | None) -> list[dict[str, Any]]:
    """Records 1..``version`` of the checked log (None: every one); CatalogError when the log
    lacks that version."""
    versions = log_of(doc)
    if version is None:
        return versions
    first, head = versions[0]["version"], versions[-1]["version"]
    if isinstance(version, bool) or not isinstance(version, int) or not version <= head:
        raise CatalogError(f"version {version!r} is not in this catalog (versions {first}.."
                           f"{head})")
    if version < first:
        raise CatalogError(f"version {version} was squashed: this catalog keeps versions "
                           f"{first}..{head}")
    return versions[:version - first + 1]


def squash_record(versions: Sequence[dict[str, Any]], sources: dict[str, Any],
                  note: str = "",
                  chunk_ids_of: Callable[[str], frozenset[str]] | None = None) -> dict[str, Any]:
    """Version K (the last of ``versions``, records up to K of a checked log) as one record
    holding its state whole (``sources``: the folded map's record fields, inline or a
    sidecar's) and what citations need of the versions before it.

    A folded removal is dropped, except where the chunk's segment was later compacted into a
    head segment that holds the same chunk id again (the chunk was added back): without it a
    citation of the removed row would resolve to the new one. ``chunk_ids_of`` gives a head
    segment's chunk ids by content_hash (None: every folded removal is dropped)."""
    head = versions[-1]
    hist = history(versions)
    live = tombstones_at(versions)
    heads = {seg["content_hash"] for seg in head["segments"]}
    needed = []
    for (h, c), removals in hist.removed_in.items():
        if chunk_ids_of is None or (h, c) in live:
            continue
        for v in removals:
            end = hist.end_of(h, v)
            if end in heads and c in chunk_ids_of(end):
                needed.append([h, c, v])
    squashed: dict[str, Any] = {
        "files": dict(sorted(hist.files.items())),
        "moved": sorted([old, new, v] for old, moves in hist.moved.items() for new, v in moves)}
    if needed:
        squashed["removed"] = sorted(needed)
    record: dict[str, Any] = {
        "version": int(head["version"]),
        "parent": None,
        "op": "squash",
        "segments": [{k: seg[k] for k in SEGMENT_KEYS} for seg in head["segments"]],
        "tombstones": sorted([h, c, v] for (h, c), v in live.items()),
        "compacted": [],
        **sources,
        "squashed": squashed,
        "note": note,
    }
    record["version_hash"] = version_hash(record)
    return record


def rechained(parent: str | None, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` in order, each with its parent the one before it (the first's ``parent``),
    re-hashed."""
    out: list[dict[str, Any]] = []
    for rec in records:
        again = {k: v for k, v in rec.items() if k != "version_hash"}
        again["parent"] = parent
        again["version_hash"] = parent = version_hash(again)
        out.append(again)
    return out


def masks_of(tombstones: Tombstones) -> dict[str, frozenset[str]]:
    """Tombstoned chunk ids per segment content_hash."""
    out: dict[str, set[str]] = {}
    for h, cid in tombstones:
        out.setdefault(h, set()).add(cid)
    return {h: frozenset(ids) for h, ids in out.items()}


@dataclass
class History:
    """What every version up to one knows of its citations: removals, moves, segment files.

    A segment is named by its content_hash, and one may come back: a compaction that leaves
    exactly an earlier segment's chunks writes that segment again. So removals and moves are
    kept per segment in version order, and a citation follows only those after the version
    it reached the segment in (``removed_after``, ``moved_after``). A removal that a later
    version restored (the same segment written again) is not kept: the chunk lived on.
    """

    removed_in: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    moved: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # (new, version)s
    files: dict[str, str] = field(default_factory=dict)  # segment content_hash -> file name

    def removed_after(self, segment: str, chunk: str, since: int) -> int | None:
        """The first version after ``since`` that removed ``chunk`` from ``segment``."""
        return next((v for v in self.removed_in.get((segment, chunk), ()) if v > since), None)

    def moved_after(self, segment: str, since: int) -> tuple[str, int] | None:
        """The first compaction after version ``since`` that moved ``segment``: (new, v)."""
        return next((m for m in self.moved.get(segment, ()) if m[1] > since), None)

    def end_of(self, segment: str, since: int) -> str:
        """Where the rows ``segment`` held at version ``since`` were last moved to."""
        while (move := self.moved_after(segment, since)) is not None:
            segment, since = move
        return segment


def history(versions: Sequence[dict[str, Any]]) -> History:
    """The removals, compaction moves and segment files of ``versions`` (1..v of a checked
    log)."""
    out = History()
    removed: dict[tuple[str, str], set[int]] = {}
    restored: dict[tuple[str, str], int] = {}  # the last version that restored each chunk
    for rec in versions:
        squashed = rec.get("squashed")
        if squashed is not None:  # what versions before a squash knew of their segments
            out.files.update(squashed["files"])
            for old, new, v in squashed["moved"]:
                out.moved.setdefault(old, []).append((new, v))
            for h, cid, v in squashed.get("removed", ()):
                removed.setdefault((h, cid), set()).add(v)
        for s in rec["segments"]:
            out.files.setdefault(s["content_hash"], s["file"])
        if "tombstones" in rec:  # the earlier form: the whole set, each with its version
            for h, cid, v in rec["tombstones"]:
                removed.setdefault((h, cid), set()).add(v)
        for h, cid in rec.get("removed", ()):
            removed.setdefault((h, cid), set()).add(rec["version"])
        for h, cid in rec.get("restored", ()):
            restored[(h, cid)] = rec["version"]
        for old, new in rec["compacted"]:
            out.moved.setdefault(old, []).append((new, rec["version"]))
    # A removal that a later version undid (its segment written again, the chunk live once
    # more) no longer stands: a citation follows the chunk past it.
    out.removed_in = {key: kept for key, vs in removed.items()
                      if (kept := [v for v in sorted(vs) if v > restored.get(key, 0)])}
    for moves in out.moved.values():
        moves.sort(key=lambda m: m[1])
    return out


def summary(rec: dict[str, Any]) -> dict[str, Any]:
    """One version as ``urna log`` prints it."""
    return {"version": rec["version"], "version_hash": rec["version_hash"],
            "parent": rec["parent"], "op": rec["op"], "note": rec["note"],
            "segments": len(rec["segments"]),
            "chunks": sum(s["n_chunks"] for s in rec["segments"]) - n_tombstones(rec),
            "tombstones": n_tombstones(rec), "compacted": len(rec["compacted"])}


def n_tombstones(rec: dict[str, Any]) -> int:
    """How many tombstones are live after ``rec`` (either form of record)."""
    return len(rec["tombstones"]) if "tombstones" in rec else int(rec["n_tombstones"])


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
