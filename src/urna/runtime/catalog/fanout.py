"""The fan-out of a catalog: every shard opened and checked, and one call run on each.

Two backends behind one interface (:class:`Fanout`): :class:`ThreadFanout` maps every shard in
this process and runs calls on a thread pool (the kernels release the GIL);
:class:`RayFanout` opens each shard inside a Ray actor that holds its map. A call is a plain
callable on a :class:`Shard` (``lambda s: s.file.search(q, k)``), so nothing dispatches by
method name and the Catalog never branches on the backend. Ray is imported only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ...errors import CatalogError
from ..file import UrnaFile, open_file
from .masked import masked

T = TypeVar("T")


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
    index_type: str = "exact"
    space_names: tuple[str, ...] = ()

    @classmethod
    def of(cls, f: UrnaFile) -> ShardInfo:
        """The info of an open file."""
        return cls(f.path, f.file_hash, f.content_hash, int(f.n_embeddings), f.model_hash,
                   int(f.embedding_dim), f.embedding_model, f.dtype, f.has_ann, f.has_bm25,
                   f.has_graph, f.index_type, tuple(f.space_names))


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


class Shard:
    """One shard opened (mmap) where its calls run: this process, or a Ray actor."""

    def __init__(self, path: str, index: int, entry: dict[str, Any]) -> None:
        # opened in open(), not here: in an actor, an error there reaches the caller as itself
        self._args = (path, index, entry)
        self._file: UrnaFile | None = None
        self._ordinals: dict[str, int] | None = None

    def open(self) -> ShardInfo:
        """Open and check the shard (its tombstones masked, if any); its ShardInfo."""
        entry = self._args[2]
        self._file = masked(open_checked(*self._args), frozenset(entry.get("tombstones", ())))
        return ShardInfo.of(self._file)

    @property
    def file(self) -> UrnaFile:
        """The opened shard."""
        if self._file is None:
            raise ValueError("I/O operation on closed Catalog")
        return self._file

    def ordinals(self) -> dict[str, int]:
        """Chunk id -> ordinal in this shard (the merge's tie-break), built once."""
        if self._ordinals is None:
            self._ordinals = {c: i for i, c in enumerate(self.file.chunk_ids())}
        return self._ordinals

    def run(self, call: Callable[[Shard], T]) -> T:
        """Run one call on this shard."""
        return call(self)

    def close(self) -> None:
        """Close the shard's map (idempotent)."""
        f, self._file = self._file, None
        if f is not None:
            f.close()


class Fanout(Protocol):
    """Run calls on every shard of a catalog, in catalog order."""

    infos: list[ShardInfo]
    files: list[UrnaFile]  # the in-process shards (empty when actors hold them)

    def each(self, call: Callable[[Shard], T]) -> list[T]:
        """``call`` on every shard; results in catalog order."""

    def on(self, index: int, call: Callable[[Shard], T]) -> T:
        """``call`` on shard ``index``."""

    def close(self) -> None:
        """Release every shard (idempotent)."""


# (path, index in the catalog, catalog entry; a living version adds its "tombstones" ids)
ShardSpec = tuple[str, int, dict[str, Any]]


class ThreadFanout:
    """Every shard mapped in this process; calls run on a thread pool."""

    def __init__(self, specs: list[ShardSpec], max_workers: int | None = None) -> None:
        self._shards: list[Shard] = []
        self._pool: ThreadPoolExecutor | None = None
        try:
            for spec in specs:
                shard = Shard(*spec)
                shard.open()
                self._shards.append(shard)
        except BaseException:
            self.close()
            raise
        self.files = [s.file for s in self._shards]
        self.infos = [ShardInfo.of(f) for f in self.files]
        workers = max_workers or min(len(specs), os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers),
                                        thread_name_prefix="urna-catalog")

    def each(self, call: Callable[[Shard], T]) -> list[T]:
        """``call`` on every shard, in parallel threads; results in catalog order."""
        if self._pool is None:
            raise ValueError("I/O operation on closed Catalog")
        return list(self._pool.map(call, self._shards))

    def on(self, index: int, call: Callable[[Shard], T]) -> T:
        """``call`` on shard ``index``, in this thread."""
        return call(self._shards[index])

    def close(self) -> None:
        """Stop the pool and close every shard (idempotent)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        for s in self._shards:
            s.close()


class RayFanout:
    """One Ray actor per shard holding its map (an initialised Ray is used as is)."""

    def __init__(self, specs: list[ShardSpec]) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        remote = ray.remote(num_cpus=0)(Shard)
        self._actors: list[Any] = [remote.remote(*spec) for spec in specs]
        self.files: list[UrnaFile] = []
        try:
            self.infos = self._get([a.open.remote() for a in self._actors])
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _get(refs: Any) -> Any:
        import ray
        import ray.exceptions

        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as e:  # the shard's own error, not Ray's wrapper
            raise e.cause from None

    def each(self, call: Callable[[Shard], T]) -> list[T]:
        """``call`` on every actor's shard; results in catalog order."""
        if not self._actors:
            raise ValueError("I/O operation on closed Catalog")
        return self._get([a.run.remote(call) for a in self._actors])

    def on(self, index: int, call: Callable[[Shard], T]) -> T:
        """``call`` on the shard of actor ``index``."""
        return self._get(self._actors[index].run.remote(call))

    def close(self) -> None:
        """Stop the actors; their maps close with their processes (idempotent)."""
        import ray

        actors, self._actors = self._actors, []
        for a in actors:
            ray.kill(a)


def open_fanout(engine: str, specs: list[ShardSpec], max_workers: int | None = None) -> Fanout:
    """The fan-out of ``engine`` (``threads`` or ``ray``) over the shards of ``specs``."""
    if engine == "ray":
        return RayFanout(specs)
    if engine == "threads":
        return ThreadFanout(specs, max_workers)
    raise ValueError(f"engine must be 'threads' or 'ray', not {engine!r}")
