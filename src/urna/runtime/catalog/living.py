"""Writing a living catalog: add, remove, replace and compact, one atomic version at a time;
``squash`` folds the oldest versions into one record.

A writer takes ``<catalog>.lock`` (``O_CREAT | O_EXCL``, holding its pid; removed on exit), reads
the catalog, writes any new segment (an immutable ``.urna`` beside it, written atomically), then
the whole catalog with the new version appended (``write_catalog``: temp file, fsync, rename).
A writer killed at any point leaves the previous version intact; a segment or sources file it
wrote but never committed is a file no version names, and the next writer deletes it when it
starts (:func:`unnamed_files`: only names of this catalog's own form, under the lock). A second
writer gets :class:`CatalogLocked`; a lock whose pid is dead is reported with the command that
clears it. Segment files some version names are never deleted, so every old version reopens
and every removed chunk's text stays citable.

``URNA_LIVING_CRASH=<point>`` SIGKILLs the writer at a named point and
``URNA_LIVING_PAUSE=<point>:<path>`` makes it create ``<path>.reached`` and wait for ``<path>``
there (the crash and two-writer tests). Points: ``locked``, ``segment-written``,
``before-commit``, ``after-commit``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import re
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...build import build_bytes
from ...build_options import BuildOptions
from ...errors import CatalogError, CatalogLocked
from ...format.identity import format_citation
from ..file import UrnaFile, open_file
from .document import catalog_document, read_catalog, write_catalog
from .sources import (
    INLINE_SOURCES,
    SOURCES_SUFFIX,
    Sources,
    SourcesChange,
    encode_sources,
    sidecar_fields,
    sidecar_name,
    sources_at,
    sources_change,
)
from .versions import (
    LIVING_KEY,
    Tombstones,
    is_living,
    log_of,
    rechained,
    records_of,
    squash_record,
    tombstone_change,
    tombstones_at,
    version_record,
)

CRASH_ENV, PAUSE_ENV = "URNA_LIVING_CRASH", "URNA_LIVING_PAUSE"
CHECKPOINTS = ("locked", "segment-written", "before-commit", "after-commit")
_DERIVED = ("catalog_schema_version", "name", "n_shards", "n_chunks", "model_hash",
            "embedding_dim", "shards", "catalog_hash", LIVING_KEY)


def checkpoint(point: str) -> None:
    """The test hooks: die or wait at ``point`` when the environment asks for it."""
    if os.environ.get(CRASH_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
    pause = os.environ.get(PAUSE_ENV, "")
    if pause.startswith(point + ":"):
        gate = Path(pause[len(point) + 1:])
        Path(f"{gate}.reached").touch()
        while not gate.exists():
            time.sleep(0.01)


def lock_path(catalog: str | os.PathLike) -> Path:
    """The writer lock of a catalog: ``<catalog>.lock``."""
    return Path(f"{os.fspath(catalog)}.lock")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def writer_lock(catalog: str | os.PathLike) -> Iterator[Path]:
    """Hold the catalog's writer lock; CatalogLocked when another writer (or its corpse) has it."""
    lock = lock_path(catalog)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        try:
            pid = int(lock.read_text(encoding="ascii").strip() or "0")
        except (OSError, ValueError):
            pid = 0
        if pid > 0 and _pid_alive(pid):
            raise CatalogLocked(f"catalog {catalog} is being written by pid {pid} (lock {lock}); "
                                f"retry when it finishes") from None
        raise CatalogLocked(f"stale lock {lock} left by pid {pid or '?'}, which is no longer "
                            f"running: if no writer is running, remove it (rm '{lock}') and "
                            f"retry") from None
    except OSError as e:
        raise CatalogError(f"cannot take the writer lock {lock}: {e.strerror}") from e
    try:
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    finally:
        os.close(fd)
    try:
        yield lock
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()


@dataclass(frozen=True)
class SegmentFormat:
    """What every segment of a catalog shares: model, width, chunker and build options."""

    embedding_model: str
    embedding_dim: int
    chunker_version: str
    model_hash: str
    options: BuildOptions

    @classmethod
    def of(cls, f: UrnaFile, options: BuildOptions | None = None) -> SegmentFormat:
        """The format of an existing segment (its dtype and sections, reproducible bytes)."""
        opts = options or BuildOptions(reproducible=True, dtype=f.dtype,
                                       with_hnsw=f.has_ann, with_bm25=f.has_bm25,
                                       with_graph=f.has_graph)
        return cls(f.embedding_model, int(f.embedding_dim), f.chunker_version, f.model_hash,
                   opts)


def _entry(path: Path) -> dict[str, Any]:
    with open_file(path) as f:
        return {"file": path.name, "file_hash": f.file_hash, "content_hash": f.content_hash,
                "n_chunks": int(f.n_embeddings), "model_hash": f.model_hash,
                "embedding_dim": int(f.embedding_dim)}


def write_segment(folder: Path, name: str, version: int, fmt: SegmentFormat,
                  chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build ``chunks`` into ``<name>-v<version>-<hash>.urna`` in ``folder``; its catalog entry."""
    import dataclasses

    from ..._atomic import write_atomic
    from ...format.hashing import sha256_bytes

    plain = [{k: v for k, v in c.items() if k != "metadata"} for c in chunks]
    meta = [c.get("metadata") or None for c in chunks]
    # declared types keep their columns even when every row is null, as a forge build does
    options = (dataclasses.replace(fmt.options, metadata=meta)
               if any(meta) or fmt.options.metadata_types else
               dataclasses.replace(fmt.options, metadata=None, metadata_types=None))
    data = build_bytes(fmt.embedding_model, fmt.embedding_dim, fmt.chunker_version,
                       fmt.model_hash, plain, options)
    path = folder / segment_name(name, version, sha256_bytes(data))
    write_atomic(path, data)
    return _entry(path)


def segment_name(name: str, version: int, digest: str) -> str:
    """``<name>-v<version>-<hash>.urna``: a version's segment whose bytes hash to ``digest``
    (``sha256:`` + hex); its sources sidecar is named the same way (``sources.sidecar_name``)."""
    return f"{name}-v{version:06d}-{digest[7:19]}.urna"


def unnamed_files(folder: Path, name: str, versions: Sequence[dict[str, Any]]) -> list[Path]:
    """This catalog's segment and sources files in ``folder`` that none of ``versions`` names:
    what a writer killed before its commit (or between its commit and its cleanup) left.
    Only names of the form :func:`segment_name` and ``sidecar_name`` give for ``name``."""
    named = {s["file"] for rec in versions for s in rec["segments"]}
    named.update(rec["sources_file"] for rec in versions if "sources_file" in rec)
    named.update(f for rec in versions for f in rec.get("squashed", {"files": {}})["files"]
                 .values())
    own = re.compile(re.escape(name) + r"-v[0-9]{6}-[0-9a-f]{12}(?:\.urna|"
                     + re.escape(SOURCES_SUFFIX) + ")")
    with os.scandir(folder) as entries:
        return sorted(Path(e.path) for e in entries if own.fullmatch(e.name)
                      and e.name not in named and e.is_file(follow_symlinks=False))


@dataclass
class Row:
    """One stored row of a segment, enough to rebuild it (and its chunk id) elsewhere."""

    segment: str  # content_hash
    chunk_id: str
    text: str
    source_uri: str
    byte_start: int
    byte_end: int


def segment_rows(f: UrnaFile) -> list[Row]:
    """Every row of an open segment."""
    return [Row(f.content_hash, c, t, u, s, e) for c, t, (u, s, e)
            in zip(f.chunk_ids(), f.texts(), f.spans(), strict=True)]


def segment_chunks(f: UrnaFile, keep: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """urna.build chunk dicts of a segment's rows (all, or ``keep``): text, span, vector."""
    rows = segment_rows(f)
    picked = list(range(len(rows))) if keep is None else list(keep)
    if not picked:
        return []
    emb = f.vectors(picked)
    return [{"canonical_text": rows[i].text, "source_uri": rows[i].source_uri,
             "byte_start": rows[i].byte_start, "byte_end": rows[i].byte_end,
             "embedding": emb[j], "metadata": f.metadata(i) or None}
            for j, i in enumerate(picked)]


class Writer:
    """One version being written (use :func:`writing`): stage changes, then ``commit``."""

    def __init__(self, path: str | os.PathLike, options: BuildOptions | None = None) -> None:
        self.path = Path(path)
        self.folder = self.path.parent
        self.doc = read_catalog(self.path)
        self.versions = records_of(self.doc)  # a sharded build's shards become version 1
        head = self.versions[-1]
        self.segments: list[dict[str, Any]] = [dict(s) for s in head["segments"]]
        self._head_tombstones: Tombstones = tombstones_at(self.versions)
        self.tombstones: Tombstones = dict(self._head_tombstones)
        self.compacted: list[list[str]] = []
        self.written: list[Path] = []  # segment files this writer made (gone if it fails)
        self.sidecars: list[Path] = []  # and its sources file
        self.committed = False
        self._head_sources: Sources | None = None  # read on first use: only updates need it
        self._sources: Sources | None = None
        self.version = head["version"] + 1
        with open_file(self.folder / self.segments[0]["file"]) as f:
            self.format = SegmentFormat.of(f, options)
        # what a killed writer left (this lock is ours: no writer is between write and commit)
        self.swept = unnamed_files(self.folder, self.name, self.versions)
        for path in self.swept:
            path.unlink(missing_ok=True)

    @property
    def name(self) -> str:
        """The corpus name."""
        return str(self.doc["name"])

    @property
    def sources(self) -> Sources:
        """The forge's ``key -> [input_hash, chunk_id]`` staged for this version (read from
        the log, sidecars included, on first use); set it to record an update's."""
        if self._sources is None:
            self._sources = dict(self._sources_at_head())
        return self._sources

    @sources.setter
    def sources(self, value: Sources) -> None:
        self._sources_at_head()  # the change is taken against the head's map
        self._sources = value

    def _sources_at_head(self) -> Sources:
        if self._head_sources is None:
            self._head_sources = sources_at(self.versions, self.folder)
        return self._head_sources

    def _sources_record(self) -> dict[str, Any]:
        """This version's sources change as record fields, a large one written to a sidecar."""
        change: SourcesChange = ({} if self._sources is None else
                                 sources_change(self._sources_at_head(), self._sources))
        return sources_fields(self.folder, self.name, self.version, change, self.sidecars)

    def open_segment(self, entry: Mapping[str, Any]) -> UrnaFile:
        """Open one listed segment."""
        return open_file(self.folder / entry["file"])

    def live_chunk_ids(self) -> set[str]:
        """The chunk ids live in the staged version (ids only: no text is read)."""
        out: set[str] = set()
        for s in self.segments:
            h = s["content_hash"]
            with self.open_segment(s) as f:
                out.update(c for c in f.chunk_ids() if (h, c) not in self.tombstones)
        return out

    def add_file(self, f: UrnaFile) -> dict[str, Any] | None:
        """Stage every row of another .urna file (same model and width) as a new segment."""
        fmt = self.format
        if f.model_hash != fmt.model_hash or int(f.embedding_dim) != fmt.embedding_dim:
            raise CatalogError(f"{f.path}: model_hash {f.model_hash} / dim {f.embedding_dim} "
                               f"differ from the catalog's {fmt.model_hash} / "
                               f"{fmt.embedding_dim}")
        return self.add(segment_chunks(f))

    def add(self, chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """Stage ``chunks`` (urna.build's chunk dicts) as a new segment; its entry."""
        if not chunks:
            return None
        entry = write_segment(self.folder, self.name, self.version, self.format, chunks)
        self.written.append(self.folder / entry["file"])
        checkpoint("segment-written")
        self._list(entry)
        return entry

    def _list(self, entry: dict[str, Any], at: int | None = None) -> None:
        # same chunks, same content_hash: a segment already listed is revived, not doubled
        # (a citation names one segment), so its tombstones go instead. The content hash does
        # not cover metadata (0x18): other bytes under the same content hash carry new
        # metadata, and the new file takes the listed one's place
        h = entry["content_hash"]
        for i, listed in enumerate(self.segments):
            if listed["content_hash"] == h:
                self.tombstones = {k: v for k, v in self.tombstones.items() if k[0] != h}
                if listed["file_hash"] != entry["file_hash"]:
                    self.segments[i] = entry
                return
        if at is None:
            self.segments.append(entry)
        else:
            self.segments.insert(at, entry)

    def remove(self, *, chunk_ids: Sequence[str] = (), sources: Sequence[str] = (),
               source_glob: str | None = None,
               where: Mapping[str, Any] | None = None) -> list[str]:
        """Stage tombstones for the live rows matching any selector; the citations removed."""
        from ...errors import UnknownFilterField
        from ..filtering import row_mask

        ids, uris = set(chunk_ids), set(sources)
        gone: list[str] = []
        unknown: UnknownFilterField | None = None
        known_somewhere = False
        for s in self.segments:
            with self.open_segment(s) as f:
                rows = segment_rows(f)
                mask = None
                if where:  # each segment's own metadata schema, as a catalog search does
                    try:
                        found = row_mask(f._state, where)
                        mask = None if found is None else found.mask
                        known_somewhere = True
                    except UnknownFilterField as exc:
                        unknown = exc
            hit = [r.chunk_id in ids or r.source_uri in uris or
                   (source_glob is not None and fnmatch.fnmatchcase(r.source_uri, source_glob))
                   for r in rows]
            if mask is not None:
                hit = [a or bool(b) for a, b in zip(hit, mask.tolist(), strict=True)]
            for r, h in zip(rows, hit, strict=True):
                if h and (r.segment, r.chunk_id) not in self.tombstones:
                    self.tombstones[(r.segment, r.chunk_id)] = self.version
                    gone.append(format_citation(r.segment, r.chunk_id))
        if where and not known_somewhere and unknown is not None:
            raise unknown  # a field no segment has is an error, as on a catalog search
        return gone

    def compact(self, min_rows: int | None = None) -> dict[str, Any] | None:
        """Merge segments (with tombstones, or under ``min_rows`` rows; all when None) into one.

        Tombstoned rows are dropped, chunk ids kept (same text, span and chunker), and each
        merged segment is recorded old -> new. Nothing to merge (or nothing live): None.
        """
        dead_in = {h for h, _ in self.tombstones}
        pick = [i for i, s in enumerate(self.segments)
                if min_rows is None or s["content_hash"] in dead_in or s["n_chunks"] < min_rows]
        if not pick or (len(pick) == 1 and self.segments[pick[0]]["content_hash"] not in dead_in):
            return None
        rows: list[Row] = []
        chunks: list[dict[str, Any]] = []
        schemas: list[dict[str, str]] = []
        for i in pick:
            with self.open_segment(self.segments[i]) as f:
                all_rows = segment_rows(f)
                keep = [j for j, r in enumerate(all_rows)
                        if (r.segment, r.chunk_id) not in self.tombstones]
                rows += [all_rows[j] for j in keep]
                chunks += segment_chunks(f, keep)
                schemas.append(f.metadata_schema)
        if not rows:
            return None
        entry = write_segment(self.folder, self.name, self.version,
                              with_options(self.format, metadata_types=_agreed(schemas)), chunks)
        self.written.append(self.folder / entry["file"])
        with self.open_segment(entry) as f:
            if f.chunk_ids() != [r.chunk_id for r in rows]:
                raise CatalogError("compaction changed chunk ids (a segment's spans or chunker "
                                   "differ from what its ids were made of); nothing committed")
        checkpoint("segment-written")
        picked = {self.segments[i]["content_hash"] for i in pick}
        self.compacted += [[h, entry["content_hash"]] for h in sorted(picked)
                           if h != entry["content_hash"]]
        self.segments = [s for i, s in enumerate(self.segments) if i not in pick]
        self.tombstones = {k: v for k, v in self.tombstones.items() if k[0] not in picked}
        self._list(entry, pick[0])
        return entry

    def commit(self, op: str, note: str = "") -> dict[str, Any]:
        """Append the staged version and write the catalog atomically; the new record."""
        removed, restored = tombstone_change(self._head_tombstones, self.segments,
                                             self.tombstones, self.version)
        rec = version_record(self.versions[-1], op, self.segments, removed=removed,
                             restored=restored, n_tombstones=len(self.tombstones),
                             compacted=self.compacted, note=note, **self._sources_record())
        doc = _log_document(self.doc, [*self.versions, rec])
        checkpoint("before-commit")
        write_catalog(self.path, doc)
        self.committed = True
        listed = {s["file"] for s in self.segments}
        for path in self.written:  # content already listed: the revived entry names the older
            if path.name not in listed:
                path.unlink(missing_ok=True)
        checkpoint("after-commit")
        return rec

    def discard(self) -> None:
        """Delete the segment and sources files this writer made for a version it never
        committed (no version names them; a reused name was this same uncommitted version's)."""
        if self.committed:
            return
        for path in [*self.written, *self.sidecars]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.written.clear()
        self.sidecars.clear()


def sources_fields(folder: Path, name: str, version: int, change: SourcesChange,
                   written: list[Path]) -> dict[str, Any]:
    """The record fields of a sources ``change``: inline, or past ``INLINE_SOURCES`` keys a
    sidecar written in ``folder`` (its path appended to ``written``)."""
    from ..._atomic import write_atomic
    from ...format.hashing import sha256_bytes

    if len(change) <= INLINE_SOURCES:
        return {"sources": change}
    data = encode_sources(change)
    digest = sha256_bytes(data)
    path = folder / sidecar_name(name, version, digest)
    write_atomic(path, data)
    written.append(path)
    return {"sources_sidecar": sidecar_fields(path.name, digest, len(change))}


@contextlib.contextmanager
def writing(path: str | os.PathLike, options: BuildOptions | None = None) -> Iterator[Writer]:
    """A Writer on ``path`` under its writer lock (released however the block ends)."""
    with writer_lock(path):
        checkpoint("locked")
        writer = Writer(path, options)
        try:
            yield writer
        finally:
            writer.discard()  # a version left uncommitted leaves no segment behind


def create(path: str | os.PathLike, fmt: SegmentFormat,
           chunks: Sequence[Mapping[str, Any]], *, note: str = "",
           sources: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new living catalog ``<name>.catalog.json`` whose version 1 holds ``chunks``."""
    target = Path(path)
    name = target.name.removesuffix(".catalog.json")
    if name == target.name or not name:
        raise CatalogError(f"a catalog path ends in .catalog.json, got {target.name!r}")
    if not chunks:
        raise CatalogError("a new catalog needs at least one chunk")
    with writer_lock(target):
        if target.exists():
            raise CatalogError(f"catalog {target} already exists")
        entry = write_segment(target.parent, name, 1, fmt, chunks)
        written: list[Path] = [target.parent / entry["file"]]
        try:
            rec = version_record(None, "create", [entry], note=note,
                                 **sources_fields(target.parent, name, 1, sources or {},
                                                  written))
            doc = catalog_document(name, 1, [entry], extra={
                "embedding_model": fmt.embedding_model,
                LIVING_KEY: {"head": 1, "versions": [rec]}})
            write_catalog(target, doc)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        return rec


def squash(path: str | os.PathLike, keep: int, note: str = "") -> dict[str, Any] | None:
    """Fold every version of a living catalog before its last ``keep`` into one record (the
    oldest kept version, holding its state whole); None when there is nothing before them.

    The catalog then holds what it needs for its kept versions and its citations, and no
    longer grows with every removal ever made (``versions`` says what is given up). Segment
    files stay; sources sidecars of the folded versions are deleted.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise CatalogError(f"keep must be a whole number >= 1, not {keep!r}")
    target = Path(path)
    with writer_lock(target):
        doc = read_catalog(target)
        if not is_living(doc):
            raise CatalogError(f"{target} has no version log (not a living catalog)")
        versions = log_of(doc)
        cut = len(versions) - keep  # versions[cut] becomes the first record
        if cut <= 0:
            return None
        folded = versions[:cut + 1]
        k = int(folded[-1]["version"])
        written: list[Path] = []
        try:
            sources = sources_fields(target.parent, str(doc["name"]), k,
                                     dict(sources_at(folded, target.parent)), written)
            files = {seg["content_hash"]: target.parent / seg["file"]
                     for seg in folded[-1]["segments"]}

            @functools.cache
            def chunk_ids_of(h: str) -> frozenset[str]:
                with open_file(files[h]) as f:
                    return frozenset(f.chunk_ids())

            first = squash_record(folded, sources,
                                  note or f"versions {folded[0]['version']}..{k} squashed",
                                  chunk_ids_of)
            kept = [first, *rechained(first["version_hash"], versions[cut + 1:])]
            write_catalog(target, _log_document(doc, kept))
        except BaseException:
            named = {rec.get("sources_file") for rec in versions}
            for p in written:  # (the same bytes as a version's own sidecar are its file)
                if p.name not in named:
                    p.unlink(missing_ok=True)
            raise
        for p in unnamed_files(target.parent, str(doc["name"]), kept):
            p.unlink(missing_ok=True)  # the folded versions' sources sidecars
        return first


def _log_document(doc: dict[str, Any], versions: list[dict[str, Any]]) -> dict[str, Any]:
    """The catalog ``doc`` with ``versions`` as its log: its own keys kept, the derived ones
    (shards, counts, hash) made anew from the head's segments."""
    extra = {k: v for k, v in doc.items() if k not in _DERIVED}
    extra[LIVING_KEY] = {"head": versions[-1]["version"], "versions": versions}
    head = versions[-1]["segments"]
    return catalog_document(str(doc["name"]), len(head), head, extra=extra)


def _agreed(schemas: Sequence[dict[str, str]]) -> dict[str, str] | None:
    """The metadata types the merged segments agree on (a timestamp stays a timestamp; a key
    typed two ways is left to inference); None when they have none."""
    out: dict[str, str] = {}
    for schema in schemas:
        for key, type_ in schema.items():
            out.setdefault(key, type_)
    clash = {k for schema in schemas for k, t in schema.items() if out[k] != t}
    return {k: t for k, t in out.items() if k not in clash} or None


def with_options(fmt: SegmentFormat, **changes: Any) -> SegmentFormat:
    """``fmt`` with some build options changed."""
    return replace(fmt, options=replace(fmt.options, **changes))
