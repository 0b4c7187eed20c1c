"""The sharded build's orchestrator: stable row -> shard assignment, the plan, the engine run.

A row goes to shard ``int.from_bytes(sha256(key)[:8], "big") % n_shards``: it depends on
the row's ``order_by`` key and the shard count only, never on workers or timing. Rows keep
the global ordinal the single-file build gives them (the span is that ordinal), so every
chunk id equals the single-file build's. Each shard is a standalone ``.urna`` written
atomically by an engine (``engines.local`` in process, the default; ``engines.ray`` only when
asked for) through ``engines.shard_task.emit_shard``; a sidecar
``.forge-state/shards/<file>.json`` records the hash of the shard's inputs and the file's hash
once it is complete, so a rerun skips every shard already built from the same inputs.
``<name>.catalog.json`` ties them together.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from urna.errors import ForgeError, SpecError
from urna.forge.canonical import canonical_hash
from urna.forge.embedders.models import load_models
from urna.forge.emit import stale_writes
from urna.forge.engines import ENGINES
from urna.forge.engines.shard_task import ShardPlan, ShardTask
from urna.forge.progress import Progress
from urna.forge.sidecars import BuildRecord, finalize
from urna.forge.sources import Row, corpus_input_hash, load_rows
from urna.forge.spec import CorpusSpec, copy_with, validate
from urna.format.hashing import sha256_file

__all__ = ["ENGINES", "SHARD_RULE", "ShardPlan", "ShardTask", "assign", "build_sharded",
           "finished_entry", "plan_shards", "shard_file_name", "shard_of"]

SHARD_RULE = "sha256(key)[:8] big-endian mod n_shards"


def shard_of(key: str, n_shards: int) -> int:
    """The shard of a row key: the first 8 bytes of sha256(key) as a big-endian int, mod n."""
    if n_shards < 1:
        raise ValueError("n_shards must be >= 1")
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def shard_file_name(name: str, index: int, n_shards: int) -> str:
    """``<name>-<index>-of-<n>.urna`` with five-digit, zero-padded numbers."""
    return f"{name}-{index:05d}-of-{n_shards:05d}.urna"


def assign(rows: Sequence[Row], n_shards: int) -> list[list[Row]]:
    """Rows per shard, each list in global ordinal order."""
    out: list[list[Row]] = [[] for _ in range(n_shards)]
    for r in rows:
        out[shard_of(r.key, n_shards)].append(r)
    return out


def _spec_identity(spec: CorpusSpec) -> dict[str, Any]:
    """The resolved spec minus the keys that name places rather than inputs."""
    d = spec.to_dict()
    d.pop("spec_path", None)
    d["output"] = {k: v for k, v in d["output"].items() if k not in ("dir", "cache_dir")}
    d["source"] = {k: v for k, v in d["source"].items() if k not in ("path", "db", "input_dir")}
    return d


def _metadata_key(rows: Sequence[Row]) -> dict[str, str]:
    """The rows' metadata in a shard's key (empty without metadata: older keys stay valid)."""
    if all(r.metadata is None for r in rows):
        return {}
    return {"metadata": canonical_hash([json.loads(json.dumps(r.metadata, sort_keys=True,
                                                              default=str)) for r in rows])}


def plan_shards(spec: CorpusSpec, rows: Sequence[Row], n_shards: int, out_dir: Path,
                model_meta: dict[str, dict[str, Any]]) -> ShardPlan:
    """Assign rows to shards and key each shard by everything that changes its bytes."""
    from urna._version import __version__

    ident = canonical_hash({"spec": _spec_identity(spec), "urna": __version__,
                            "models": {p: [m["model_hash"], m["embedding_recipe_hash"]]
                                       for p, m in sorted(model_meta.items())}})
    tasks = []
    for i, shard_rows in enumerate(assign(rows, n_shards)):
        if not shard_rows:
            continue  # a tiny corpus may leave a shard empty: no file for it
        ih = corpus_input_hash(shard_rows)
        key = canonical_hash({"identity": ident, "shard": i, "n_shards": n_shards,
                              "corpus_input_hash": ih, **_metadata_key(shard_rows)})
        tasks.append(ShardTask(i, shard_file_name(spec.name, i, n_shards), shard_rows, ih, key))
    return ShardPlan(spec.name, n_shards, out_dir, tasks, model_meta)


def finished_entry(plan: ShardPlan, task: ShardTask) -> dict[str, Any] | None:
    """The catalog entry of a shard already built from the same inputs, else None."""
    try:
        side = json.loads(plan.sidecar(task).read_text(encoding="utf-8"))
        entry = side["entry"]
        if side.get("inputs_key") != task.inputs_key:
            return None
        path = plan.out_dir / task.file
        if not path.is_file() or sha256_file(path) != entry["file_hash"]:
            return None
        return dict(entry)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_sharded(spec: CorpusSpec, *, n_shards: int, engine: str = "local",
                  address: str | None = None, workers: int | None = None,
                  sample: int | None = None, out_dir: str | None = None,
                  cache_dir: str | None = None, progress: Progress | None = None,
                  report: Callable[[str], None] | None = None, max_retries: int = 2,
                  _kill_shard: int | None = None) -> dict[str, Any]:
    """Build ``spec`` as ``n_shards`` standalone files plus ``<name>.catalog.json``.

    ``engine="ray"`` streams the rows through Ray Data (embedding actors) and builds each
    shard in a Ray task (``address`` joins a running cluster, else a local one starts with
    ``workers`` CPUs); ``engine="local"`` runs in process. Shards already built from the same
    inputs are skipped. ``max_retries`` is how often Ray retries a shard task whose worker
    died. ``cache_dir`` is accepted for symmetry with ``pipeline.build`` (shards are not
    embed-cached). ``spec`` itself is left as it was. ``_kill_shard`` is a fault-injection
    hook for tests: the Ray worker that builds that shard SIGKILLs itself before writing it.
    """
    from urna.runtime.catalog import catalog_document, write_catalog

    if engine not in ENGINES:
        raise SpecError(f"--engine: '{engine}' is not one of {', '.join(ENGINES)}")
    if n_shards < 1:
        raise SpecError("--shards: must be >= 1")
    validate(spec)
    if spec.output.mode != "single":
        raise SpecError(f"output.mode: a sharded build writes one file per shard (mode "
                        f"'single'), not '{spec.output.mode}'")
    spec = copy_with(spec, out_dir=out_dir)
    progress = progress or Progress()
    out = Path(spec.output.dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        # partial shards of a killed run: this build's names only, others may be building
        for i in range(n_shards):
            for stale in stale_writes(out, shard_file_name(spec.name, i, n_shards)):
                stale.unlink(missing_ok=True)
    except OSError as e:
        raise SpecError(f"output.dir: {out} is not a usable directory ({e.strerror})") from e
    t0 = time.perf_counter()
    with progress.stage("read", None):
        rows = load_rows(spec, sample=sample, report=report)
    if not rows:
        raise ForgeError("source produced no rows")
    timings = {"rows": round(time.perf_counter() - t0, 3)}
    meta, embedders = load_models(spec)
    plan = plan_shards(spec, rows, n_shards, out, meta)
    done: dict[int, dict[str, Any]] = {}
    pending: list[ShardTask] = []
    for task in plan.tasks:
        entry = finished_entry(plan, task)
        if entry is None:
            pending.append(task)
        else:
            done[task.index] = entry
    t1 = time.perf_counter()
    if pending and engine == "ray":
        from urna.forge.engines.ray import run_ray

        built = run_ray(spec, plan, pending, address=address, workers=workers,
                        kill_shard=_kill_shard, max_retries=max_retries)
    elif pending:
        if _kill_shard is not None:
            raise ValueError("_kill_shard is a Ray-engine test hook")
        from urna.forge.engines.local import run_local

        built = run_local(spec, plan, pending, embedders, progress)
    else:
        built = []
    timings["shards"] = round(time.perf_counter() - t1, 3)
    for entry in built:
        done[entry["shard"]] = entry
    entries = [done[t.index] for t in plan.tasks]
    dm = spec.default_model()
    doc = catalog_document(spec.name, n_shards, entries, extra={
        "shard_rule": SHARD_RULE, "embedding_model": meta[dm.preset]["embedding_model"],
        "corpus_input_hash": corpus_input_hash(rows)})
    cat_path = write_catalog(out / f"{spec.name}.catalog.json", doc)
    result: dict[str, Any] = {
        "outputs": {e["file"]: {**e, "file": str(out / e["file"])} for e in entries},
        "catalog": cat_path, "catalog_hash": doc["catalog_hash"], "engine": engine,
        "n_shards": n_shards, "n_items": len(rows), "n_unique_frames": len(rows),
        "corpus_input_hash": doc["corpus_input_hash"],
        "built": sorted(e["shard"] for e in built),
        "skipped": sorted(i for i in done if i not in {e["shard"] for e in built}),
        "timings": timings,
    }
    finalize(BuildRecord(spec=spec, out_dir=out, rows=rows, input_hash=doc["corpus_input_hash"],
                         model_meta=meta, timings=timings, report=report), result)
    return result
