"""The Ray engine of a sharded build (``urna build --shards N --engine ray``).

The rows of the shards still to build flow through Ray Data (Arrow blocks): ``map_batches``
over a pool of embedding actors, each of which loads every ``[[models]]`` embedder once in its
constructor.
The embedded blocks stay in the object store: one small task per block splits it by shard
(``num_returns`` = shards), and each shard is then built by exactly one task from its pieces
into a standalone ``.urna`` (``shard_task.emit_shard``: temp file, atomic rename, then the sidecar
that lets a rerun skip it). Data never funnels through the driver. Output goes to
``output.dir``, which on a multi-node cluster must be a filesystem every node shares.
Importing this module imports Ray; ``import urna`` never does.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np

from urna.errors import ForgeError
from urna.forge.embedders.models import EMBED_BATCH, embed_all, load_models
from urna.forge.engines.shard_task import ShardPlan, ShardTask, emit_shard
from urna.forge.sources.item import Row, corpus_input_hash
from urna.forge.spec import CorpusSpec

Batch = dict[str, np.ndarray]


class EmbedActor:
    """A Ray Data actor: loads the embedders once, then embeds one batch per call."""

    def __init__(self, spec: CorpusSpec) -> None:
        _, self.embedders = load_models(spec)

    def __call__(self, batch: Batch) -> Batch:
        """Add one ``vec:<preset>`` column per model to the batch."""
        vectors = embed_all(self.embedders, [str(t) for t in batch["text"]],
                            max(1, len(batch["text"])))
        out = dict(batch)
        for preset, mat in vectors.items():
            out[f"vec:{preset}"] = mat
        return out


def split_block(block: Batch, shards: list[int]) -> tuple[Batch, ...] | Batch:
    """One embedded block cut into one piece per shard (in ``shards`` order).

    A single shard gets its piece itself: Ray stores a one-return task's value as one object.
    """
    ids = np.asarray(block["shard"])
    pieces = tuple({k: np.asarray(v)[ids == s] for k, v in block.items()} for s in shards)
    return pieces[0] if len(pieces) == 1 else pieces


def _wait_for_others(plan: ShardPlan, index: int, timeout_s: float = 120.0) -> None:
    """Test hook: wait (bounded) until every other planned shard is written."""
    deadline = time.monotonic() + timeout_s
    others = [t for t in plan.tasks if t.index != index]
    while time.monotonic() < deadline and not all(plan.sidecar(t).is_file() for t in others):
        time.sleep(0.05)


def build_shard(spec: CorpusSpec, plan: ShardPlan, index: int, kill_shard: int | None,
                *pieces: Batch) -> dict[str, Any]:
    """One Ray task: a shard's embedded rows -> one ``.urna``; returns its catalog entry."""
    if index == kill_shard:  # test hook: a real worker death once the other shards are out
        _wait_for_others(plan, index)
        os.kill(os.getpid(), signal.SIGKILL)
    cols = {k: np.concatenate([np.asarray(p[k]) for p in pieces]) for k in pieces[0]}
    order = np.argsort(cols["ordinal"], kind="stable")
    rows = [Row(int(cols["ordinal"][i]), str(cols["key"][i]), str(cols["label"][i]),
                str(cols["text"][i]), str(cols["source_uri"][i]), int(cols["byte_start"][i]),
                int(cols["byte_end"][i]), str(cols["input_hash"][i])) for i in order]
    task = next(t for t in plan.tasks if t.index == index)
    if corpus_input_hash(rows) != task.input_hash:  # rows lost or duplicated in transit
        raise ForgeError(f"shard {index}: the {len(rows)} rows Ray delivered are not the "
                         f"planned ones")
    vectors = {p: np.ascontiguousarray(np.stack(list(cols[f"vec:{p}"]))[order], dtype=np.float32)
               for p in plan.model_meta}
    return emit_shard(spec, plan, ShardTask(index, task.file, rows, task.input_hash,
                                            task.inputs_key), vectors)


def _blocks(pending: list[ShardTask], n_actors: int) -> list[Any]:
    """The pending rows as Arrow tables, one Ray Data block each.

    Blocks hold at most ``8 * EMBED_BATCH`` rows and there are at least four per actor when
    the rows allow it, so every actor gets work.
    """
    import pyarrow as pa

    flat = [(t.index, r) for t in pending for r in t.rows]
    rows_per_block = max(1, min(8 * EMBED_BATCH, -(-len(flat) // (4 * n_actors))))
    out = []
    for lo in range(0, len(flat), rows_per_block):
        part = flat[lo:lo + rows_per_block]
        out.append(pa.table({
            "shard": pa.array([s for s, _ in part], pa.int64()),
            "ordinal": pa.array([r.ordinal for _, r in part], pa.int64()),
            "key": [r.key for _, r in part], "label": [r.label for _, r in part],
            "text": [r.canonical_text for _, r in part],
            "source_uri": [r.source_uri for _, r in part],
            "byte_start": pa.array([r.byte_start for _, r in part], pa.uint64()),
            "byte_end": pa.array([r.byte_end for _, r in part], pa.uint64()),
            "input_hash": [r.input_hash for _, r in part]}))
    return out


def ensure_ray(address: str | None, workers: int | None) -> bool:
    """Connect to ``address`` or start a local Ray; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=workers or os.cpu_count() or 1, **kwargs)
    return True


def run_ray(spec: CorpusSpec, plan: ShardPlan, pending: list[ShardTask], *,
            address: str | None = None, workers: int | None = None,
            kill_shard: int | None = None, max_retries: int = 2) -> list[dict[str, Any]]:
    """Embed the pending shards' rows on Ray Data actors and build each shard in one task.

    ``workers`` is the number of embedding actors (default: the cluster's CPUs).
    """
    import ray
    import ray.data
    import ray.exceptions

    started = ensure_ray(address, workers)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        n_actors = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        ds: Any = ray.data.from_arrow(_blocks(pending, n_actors))
        ds = ds.map_batches(EmbedActor, fn_constructor_kwargs={"spec": spec},
                            batch_size=EMBED_BATCH, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(size=n_actors), num_cpus=1)
        # the plan each task receives carries no rows: those travel as the pieces
        slim = ShardPlan(plan.name, plan.n_shards, plan.out_dir,
                         [ShardTask(t.index, t.file, [], t.input_hash, t.inputs_key)
                          for t in pending], plan.model_meta)
        indices = [t.index for t in pending]
        split: Any = ray.remote(split_block).options(num_returns=len(indices), num_cpus=0.5)
        build = ray.remote(build_shard).options(num_cpus=1, max_retries=max_retries)
        try:
            pieces = []
            for ref in ds.to_numpy_refs():
                got = split.remote(ref, indices)
                pieces.append([got] if len(indices) == 1 else list(got))
            spec_ref, plan_ref = ray.put(spec), ray.put(slim)
            futures = [build.remote(spec_ref, plan_ref, s, kill_shard, *[p[j] for p in pieces])
                       for j, s in enumerate(indices)]
            entries = ray.get(futures)
        except ray.exceptions.RayError as e:  # a task or actor died; built shards stay built
            raise ForgeError(f"Ray build failed ({type(e).__name__}); shards already written "
                             f"are kept and a rerun skips them: {str(e).splitlines()[0]}") from e
    finally:
        if started:
            ray.shutdown()
    return list(entries)
