"""A catalog of shards searched as one corpus (``<name>.catalog.json``).

The catalog lists each shard's file name (relative to the catalog's folder), ``file_hash``,
``content_hash``, ``n_chunks``, ``model_hash`` and ``embedding_dim``, and carries its own
``catalog_hash``: ``sha256:`` of the sorted-key compact JSON of every other key. Opening it
re-checks the hash, opens every shard (the full open-time validation of ``urna.open``) and
checks each against its entry; one model and one width across shards, else it refuses.

Searches fan out to the shards (threads in this process, whose BLAS calls release the GIL,
or one Ray actor per shard holding its map) and the per-shard top-k lists are merged by exact
score with a deterministic tie-break: score descending, then shard order in the catalog, then
the chunk's ordinal inside its shard. Each shard's exact top-k contains every chunk of that
shard in the global top-k, so an exact search over a catalog returns the same hits as one file
holding every chunk. The approximate paths (HNSW beam, BM25 shortlist) run per shard, so their
candidates can differ from one big file's; every score is still the exact cosine. Hits keep
the citation of the shard they came from; :meth:`Catalog.cite` resolves it on that shard.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._atomic import write_atomic
from ..errors import CitationError, UrnaError
from ..format.citation import ResolvedCitation
from ..format.identity import parse_citation
from .file import UrnaFile, open_file
from .hits import RetrieveHit, SearchHit

CATALOG_SCHEMA_VERSION = 1
CATALOG_SUFFIX = ".catalog.json"
SHARD_KEYS = ("file", "file_hash", "content_hash", "n_chunks", "model_hash", "embedding_dim")
MAX_CATALOG_BYTES = 64 << 20  # a catalog is a small index; refuse anything far larger


class CatalogError(UrnaError):
    """A catalog is malformed, altered, or does not match the shards beside it."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


def _sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def catalog_hash(doc: dict[str, Any]) -> str:
    """``sha256:`` of the sorted-key compact JSON of ``doc`` without ``catalog_hash``."""
    body = {k: v for k, v in doc.items() if k != "catalog_hash"}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _sha256_hex(raw.encode("utf-8"))


def is_catalog_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a catalog (by its ``.catalog.json`` suffix)."""
    return os.fspath(path).endswith(CATALOG_SUFFIX)


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
    """Write a catalog document atomically (temp file, fsync, rename); returns the path."""
    target = Path(path)
    data = (json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    write_atomic(target, data)
    return str(target)


def _check_entry(i: int, e: Any) -> dict[str, Any]:
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
    # shard names are plain file names beside the catalog: no way out of its folder
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
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
    entries = [_check_entry(i, e) for i, e in enumerate(shards)]
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


@dataclass(frozen=True)
class ShardInfo:
    """What the catalog knows of one opened shard (read once at open)."""

    file: str
    file_hash: str
    content_hash: str
    n_chunks: int
    model_hash: str
    embedding_dim: int
    embedding_model: str
    dtype: str
    has_ann: bool
    has_bm25: bool
    has_graph: bool

    @classmethod
    def of(cls, f: UrnaFile) -> ShardInfo:
        """The info of an open file."""
        return cls(f.path, f.file_hash, f.content_hash, int(f.n_embeddings), f.model_hash,
                   int(f.embedding_dim), f.embedding_model, f.dtype, f.has_ann, f.has_bm25,
                   f.has_graph)


def open_checked(path: str | os.PathLike, index: int, entry: dict[str, Any]) -> UrnaFile:
    """Open one shard (the file's own checks) and check it against its catalog entry."""
    f = open_file(path)
    try:
        got = {"file_hash": f.file_hash, "content_hash": f.content_hash,
               "n_chunks": f.n_embeddings, "model_hash": f.model_hash,
               "embedding_dim": f.embedding_dim}
        for key, value in got.items():
            if entry[key] != value:
                raise CatalogError(f"shard {index} ({entry['file']}): {key} is {value!r}, "
                                   f"the catalog says {entry[key]!r}")
    except BaseException:
        f.close()
        raise
    return f


def ranked(f: UrnaFile, ordinals: dict[str, int], method: str, args: tuple,
           kwargs: dict[str, Any]) -> list[tuple[int, Any]]:
    """Run one search method on a shard; each hit with its ordinal there (the merge key)."""
    return [(ordinals[h.chunk_id], h) for h in getattr(f, method)(*args, **kwargs)]


def _ordinals(f: UrnaFile) -> dict[str, int]:
    return {c: i for i, c in enumerate(f.chunk_ids())}


# -- shards held by Ray actors (engine="ray"); Ray is imported only when asked for -------

class ShardServer:
    """One shard opened (mmap) inside an actor process."""

    def __init__(self, path: str, index: int, entry: dict[str, Any]) -> None:
        # opened in open(), not here: an error there reaches the caller as itself
        self.args = (path, index, entry)
        self.f: UrnaFile | None = None
        self.ordinals: dict[str, int] = {}

    def open(self) -> ShardInfo:
        """Open and check the shard; its ShardInfo."""
        self.f = open_checked(*self.args)
        self.ordinals = _ordinals(self.f)
        return ShardInfo.of(self.f)

    def ranked(self, method: str, args: tuple, kwargs: dict[str, Any]) -> list[tuple[int, Any]]:
        """One search method's hits, each with its ordinal in this shard."""
        assert self.f is not None
        return ranked(self.f, self.ordinals, method, args, kwargs)

    def call(self, method: str, args: tuple) -> Any:
        """``inspect``, ``chunk_ids`` or ``cite`` on the shard."""
        if method not in ("inspect", "chunk_ids", "cite"):
            raise ValueError(f"not a shard call: {method}")
        return getattr(self.f, method)(*args)


def _open_actors(shards: list[tuple[str, int, dict[str, Any]]]
                 ) -> tuple[list[Any], list[ShardInfo]]:
    """Start one actor per shard (Ray must be reachable); their infos in catalog order."""
    import ray
    import ray.exceptions

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    remote = ray.remote(num_cpus=0)(ShardServer)
    actors = [remote.remote(path, i, entry) for path, i, entry in shards]
    try:
        return actors, ray.get([a.open.remote() for a in actors])
    except ray.exceptions.RayTaskError as e:  # the shard's own error, not Ray's wrapper
        close_actors(actors)
        raise e.cause from None
    except BaseException:
        close_actors(actors)
        raise


def close_actors(actors: list[Any]) -> None:
    """Stop the actors (their maps close with their processes)."""
    import ray

    for a in actors:
        ray.kill(a)


class Catalog:
    """Shards opened together and searched as one corpus. Use :func:`open_catalog`.

    ``engine="threads"`` maps every shard in this process (``shards`` holds the UrnaFiles);
    ``engine="ray"`` opens each shard in a Ray actor that holds its map (``shards`` is empty,
    the actors answer), for shards spread over a cluster's nodes.
    """

    def __init__(self, path: str | os.PathLike, *, max_workers: int | None = None,
                 engine: str = "threads") -> None:
        if engine not in ("threads", "ray"):
            raise ValueError(f"engine must be 'threads' or 'ray', not {engine!r}")
        self.path, self.engine = os.fspath(path), engine
        self.document = read_catalog(path)
        base = Path(self.path).parent
        entries = self.document["shards"]
        self.shards: list[UrnaFile] = []
        self._actors: list[Any] = []
        self._pool: ThreadPoolExecutor | None = None
        try:
            if engine == "ray":
                self._actors, infos = _open_actors(
                    [(str((base / e["file"]).resolve()), i, e) for i, e in enumerate(entries)])
            else:
                for i, e in enumerate(entries):
                    self.shards.append(open_checked(base / e["file"], i, e))
                infos = [ShardInfo.of(f) for f in self.shards]
            self.shard_info: list[ShardInfo] = infos
            _same_model(infos)
        except BaseException:
            self.close()
            raise
        self._ordinals: list[dict[str, int] | None] = [None] * len(entries)
        if engine == "threads":
            workers = max_workers or min(len(entries), os.cpu_count() or 1)
            self._pool = ThreadPoolExecutor(max_workers=max(1, workers),
                                            thread_name_prefix="urna-catalog")
        self._closed = False

    # -- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Close every shard, the thread pool or the actors (idempotent)."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for f in self.shards:
            f.close()
        if self._actors:
            close_actors(self._actors)
            self._actors = []

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Catalog {self.path!r} shards={len(self.shard_info)} n={self.n_embeddings}>"

    # -- properties (the UrnaFile names a caller of both relies on) -----------------------

    name = property(lambda self: self.document["name"], doc="Corpus name.")
    catalog_hash = property(lambda self: self.document["catalog_hash"], doc="The catalog's hash.")
    n_embeddings = property(lambda self: sum(s.n_chunks for s in self.shard_info),
                            doc="Chunks across all shards.")
    embedding_dim = property(lambda self: self.shard_info[0].embedding_dim, doc="Vector width.")
    model_hash = property(lambda self: self.shard_info[0].model_hash, doc="The shards' model_hash.")
    embedding_model = property(lambda self: self.shard_info[0].embedding_model, doc="Text model.")
    has_ann = property(lambda self: all(s.has_ann for s in self.shard_info),
                       doc="Every shard has HNSW.")
    has_bm25 = property(lambda self: all(s.has_bm25 for s in self.shard_info),
                        doc="Every shard has BM25.")
    has_graph = property(lambda self: all(s.has_graph for s in self.shard_info),
                         doc="Every shard has a graph.")

    @property
    def dtype(self) -> str:
        """The stored dtype when every shard shares it, else ``"mixed"``."""
        kinds = {s.dtype for s in self.shard_info}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def inspect(self) -> dict[str, Any]:
        """The catalog document, the shared manifest (first shard's) and each shard's hashes."""
        first = (self.shards[0].inspect() if self.shards
                 else self._actor_call(0, "inspect"))
        return {"catalog": self.document, "manifest": dict(first["manifest"]),
                "shards": [{"file": s.file, "file_hash": s.file_hash,
                            "content_hash": s.content_hash, "n_chunks": s.n_chunks}
                           for s in self.shard_info]}

    def chunk_ids(self) -> list[str]:
        """Chunk ids of every shard, shard by shard in catalog order."""
        if self.shards:
            return [c for f in self.shards for c in f.chunk_ids()]
        return [c for i in range(len(self._actors)) for c in self._actor_call(i, "chunk_ids")]

    # -- fan-out and merge ----------------------------------------------------------------

    def _actor_call(self, i: int, method: str, *args: Any) -> Any:
        import ray

        return ray.get(self._actors[i].call.remote(method, args))

    def _ordinal_table(self, i: int) -> dict[str, int]:
        table = self._ordinals[i]
        if table is None:
            table = self._ordinals[i] = _ordinals(self.shards[i])
        return table

    def _merged(self, k: int, method: str, *args: Any, **kwargs: Any) -> list[Any]:
        """Run ``method`` on every shard, then keep the k best by (-score, shard, ordinal)."""
        if self._closed:
            raise ValueError("I/O operation on closed Catalog")
        if self._actors:
            import ray

            per_shard = ray.get([a.ranked.remote(method, args, kwargs) for a in self._actors])
        else:
            assert self._pool is not None
            per_shard = list(self._pool.map(
                lambda i: ranked(self.shards[i], self._ordinal_table(i), method, args, kwargs),
                range(len(self.shards))))
        keyed = [(-h.score, s, o, h) for s, hits in enumerate(per_shard) for o, h in hits]
        keyed.sort(key=lambda t: t[:3])
        return [t[3] for t in keyed[:k]]

    def search(self, query: Any, k: int) -> list[SearchHit]:
        """Exact top-k over every shard; equals one file holding all the chunks."""
        return self._merged(k, "search", query, k)

    def search_ann(self, query: Any, k: int, ef: int) -> list[SearchHit]:
        """Each shard's HNSW top-k (exact rerank), merged by score."""
        return self._merged(k, "search_ann", query, k, ef)

    def search_hybrid(self, query: Any, query_text: str, k: int,
                      candidates: int) -> list[SearchHit]:
        """Each shard's hybrid top-k (``candidates`` per path per shard), merged by score."""
        return self._merged(k, "search_hybrid", query, query_text, k, candidates)

    def search_graph(self, query: Any, k: int, hops: int = 1, ef: int = 100) -> list[SearchHit]:
        """Each shard's graph search (edges never cross shards), merged by score."""
        return self._merged(k, "search_graph", query, k, hops, ef)

    def retrieve(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                 ef: int = 100, expected_model_hash: str | None = None,
                 query_text: str | None = None) -> list[RetrieveHit]:
        """Each shard's routed retrieve, merged by score; hits carry their shard's citation."""
        return self._merged(k, "retrieve", query, k, candidates=candidates, hops=hops, ef=ef,
                            expected_model_hash=expected_model_hash, query_text=query_text)

    def cite(self, citation: str) -> ResolvedCitation:
        """Resolve a citation on the shard whose content_hash it names."""
        expected, _ = parse_citation(citation)
        for i, s in enumerate(self.shard_info):
            if s.content_hash == expected:
                return self.shards[i].cite(citation) if self.shards else \
                    self._actor_call(i, "cite", citation)
        raise CitationError(f"content_hash {expected} is not a shard of this catalog")


def _same_model(infos: list[ShardInfo]) -> None:
    for attr in ("model_hash", "embedding_dim", "embedding_model"):
        values = sorted({str(getattr(s, attr)) for s in infos})
        if len(values) > 1:
            raise CatalogError(f"shards disagree on {attr}: {', '.join(values)}")


def open_catalog(path: str | os.PathLike, *, max_workers: int | None = None,
                 engine: str = "threads") -> Catalog:
    """Open ``<name>.catalog.json`` and every shard it lists, checking each against it.

    ``engine="ray"`` holds each shard in a Ray actor (an initialised Ray is used as is).
    """
    return Catalog(path, max_workers=max_workers, engine=engine)


def open_corpus(path: str | os.PathLike) -> UrnaFile | Catalog:
    """Open a ``.urna`` file, or a ``.catalog.json`` and its shards (by the suffix)."""
    return open_catalog(path) if is_catalog_path(path) else open_file(path)
