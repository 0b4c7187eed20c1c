"""The Ray engine of a sharded build (``urna build --shards N --engine ray``).

The rows of the shards still to build flow through Ray Data: ``map_batches`` over a pool of
embedding actors, each of which loads every ``[[models]]`` embedder once in its constructor.
The embedded rows are grouped by shard, and each group is built by one task into a standalone
``.urna`` (``shard.emit_shard``: temp file, atomic rename, then the sidecar that lets a rerun
skip it). Output goes to ``output.dir``, which on a multi-node cluster must be a filesystem
every node shares. Importing this module imports Ray; ``urna`` itself never does.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np

from urna.forge.ingest import Row, corpus_input_hash
from urna.forge.pipeline import PART_ROWS, ForgeError
from urna.forge.shard import ShardPlan, ShardTask, embed_rows, emit_shard, model_meta_for
from urna.forge.spec import CorpusSpec

_COLUMNS = ("shard", "ordinal", "key", "label", "text", "source_uri", "byte_start",
            "byte_end", "input_hash")


class EmbedActor:
    """A Ray Data actor: loads the embedders once, then embeds one batch per call."""

    def __init__(self, spec: CorpusSpec) -> None:
        _, self.embedders = model_meta_for(spec)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Add one ``vec:<preset>`` column per model to the batch."""
        vectors = embed_rows(self.embedders, [str(t) for t in batch["text"]], len(batch["text"]))
        out = dict(batch)
        for preset, mat in vectors.items():
            out[f"vec:{preset}"] = mat
        return out


def _die_after_the_others(plan: ShardPlan, index: int, timeout_s: float = 300.0) -> None:
    """Test hook: wait until every other shard of the plan is built, then SIGKILL this worker.

    A real worker death at a known point, so a test can check that a rerun rebuilds only
    this shard.
    """
    deadline = time.monotonic() + timeout_s
    others = [t for t in plan.tasks if t.index != index]
    while time.monotonic() < deadline and not all(plan.sidecar(t).is_file() for t in others):
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)


def build_shard_group(group: dict[str, np.ndarray], spec: CorpusSpec, plan: ShardPlan,
                      kill_shard: int | None) -> dict[str, np.ndarray]:
    """A Ray Data group function: one shard's embedded rows -> one ``.urna`` and its entry."""
    index = int(group["shard"][0])
    if index == kill_shard:
        _die_after_the_others(plan, index)
    order = np.argsort(group["ordinal"], kind="stable")
    rows = [Row(int(group["ordinal"][i]), str(group["key"][i]), str(group["label"][i]),
                str(group["text"][i]), str(group["source_uri"][i]),
                int(group["byte_start"][i]), int(group["byte_end"][i]),
                str(group["input_hash"][i])) for i in order]
    task = next(t for t in plan.tasks if t.index == index)
    if corpus_input_hash(rows) != task.input_hash:  # rows lost or duplicated in transit
        raise ForgeError(f"shard {index}: the {len(rows)} rows Ray delivered are not the "
                         f"planned ones")
    vectors = {p: np.ascontiguousarray(np.stack(list(group[f"vec:{p}"]))[order],
                                       dtype=np.float32)
               for p in plan.model_meta}
    entry = emit_shard(spec, plan, ShardTask(index, task.file, rows, task.input_hash,
                                             task.inputs_key), vectors)
    return {k: np.asarray([v]) for k, v in entry.items()}


def _items(pending: list[ShardTask]) -> list[dict[str, Any]]:
    return [{"shard": t.index, "ordinal": r.ordinal, "key": r.key, "label": r.label,
             "text": r.canonical_text, "source_uri": r.source_uri, "byte_start": r.byte_start,
             "byte_end": r.byte_end, "input_hash": r.input_hash}
            for t in pending for r in t.rows]


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
            kill_shard: int | None = None, max_retries: int = 0) -> list[dict[str, Any]]:
    """Embed the pending shards' rows on Ray Data actors and build each shard in a task.

    ``workers`` is the number of embedding actors (default: the cluster's CPUs).
    """
    import ray
    import ray.data
    import ray.exceptions

    started = ensure_ray(address, workers)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        n_actors = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        ds = ray.data.from_items(_items(pending))
        ds = ds.map_batches(EmbedActor, fn_constructor_kwargs={"spec": spec},
                            batch_size=PART_ROWS, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(size=n_actors), num_cpus=1)
        # the rows travel through Ray Data, so the plan each task gets carries none
        slim = ShardPlan(plan.name, plan.n_shards, plan.out_dir,
                         [ShardTask(t.index, t.file, [], t.input_hash, t.inputs_key)
                          for t in pending], plan.model_meta)
        built = ds.groupby("shard", num_partitions=len(pending)).map_groups(
            build_shard_group, fn_kwargs={"spec": spec, "plan": slim, "kill_shard": kill_shard},
            batch_format="numpy", num_cpus=1, max_retries=max_retries)
        try:
            rows = built.take_all()
        except ray.exceptions.RayError as e:  # a task or actor died; built shards stay built
            raise ForgeError(f"Ray build failed ({type(e).__name__}); shards already written "
                             f"are kept and a rerun skips them: {str(e).splitlines()[0]}") from e
    finally:
        if started:
            ray.shutdown()
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows]
