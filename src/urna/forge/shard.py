"""Sharded builds: stable row -> shard assignment, shard plans, the local engine.

A row goes to shard ``int.from_bytes(sha256(key)[:8], "big") % n_shards``: it depends on
the row's ``order_by`` key and the shard count only, never on workers or timing. Rows keep
the global ordinal the single-file build gives them (the span is that ordinal), so every
chunk id equals the single-file build's. Each shard is a standalone ``.urna`` written
atomically (``pipeline._emit_one``); a sidecar ``.forge-state/shards/<file>.json`` records
the hash of the shard's inputs and the file's hash once it is complete, so a rerun skips
every shard already built from the same inputs. ``<name>.catalog.json`` ties them together.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urna.forge.cache import canonical_hash, write_json
from urna.forge.embed import Embedder, create_embedder
from urna.forge.ingest import Row, corpus_input_hash, load_rows
from urna.forge.pipeline import (
    PART_ROWS,
    BuildContext,
    ForgeError,
    Progress,
    _emit_one,
    _recipe,
    _spaces,
    finalize,
)
from urna.forge.spec import CorpusSpec, SpecError, cache_root, validate

SHARD_RULE = "sha256(key)[:8] big-endian mod n_shards"
ENGINES = ("local", "ray")


def shard_of(key: str, n_shards: int) -> int:
    """The shard of a row key: the first 8 bytes of sha256(key) as a big-endian int, mod n."""
    if n_shards < 1:
        raise ValueError("n_shards must be >= 1")
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def shard_file_name(name: str, index: int, n_shards: int) -> str:
    """``<name>-<index>-of-<n>.urna`` with five-digit, zero-padded numbers."""
    return f"{name}-{index:05d}-of-{n_shards:05d}.urna"


@dataclass
class ShardTask:
    """One shard to build: its rows (global ordinals kept) and the hash of its inputs."""

    index: int
    file: str
    rows: list[Row]
    input_hash: str
    inputs_key: str = ""


@dataclass
class ShardPlan:
    """Every non-empty shard of a build and what all of them share."""

    name: str
    n_shards: int
    out_dir: Path
    tasks: list[ShardTask]
    model_meta: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        """Where each finished shard's sidecar lives."""
        return self.out_dir / ".forge-state" / "shards"

    def sidecar(self, task: ShardTask) -> Path:
        """The sidecar of one shard."""
        return self.state_dir / f"{task.file}.json"


def assign(rows: Sequence[Row], n_shards: int) -> list[list[Row]]:
    """Rows per shard, each list in global ordinal order."""
    out: list[list[Row]] = [[] for _ in range(n_shards)]
    for r in rows:
        out[shard_of(r.key, n_shards)].append(r)
    return out


def model_meta_for(spec: CorpusSpec) -> tuple[dict[str, dict[str, Any]], dict[str, Embedder]]:
    """Load each ``[[models]]`` embedder once; their manifest metadata as the pipeline keeps it."""
    meta: dict[str, dict[str, Any]] = {}
    embedders: dict[str, Embedder] = {}
    for ms in spec.models:
        emb = create_embedder(ms.preset, model_path=ms.model_path, batch_size=ms.batch_size,
                              device=ms.device or None)
        recipe = _recipe(ms)
        embedders[ms.preset] = emb
        meta[ms.preset] = {"model_hash": emb.model_hash(),
                           "embedding_recipe_hash": canonical_hash(recipe), "recipe": recipe,
                           "embedding_model": emb.embedding_model,
                           "embedding_dim": emb.embedding_dim}
    return meta, embedders


def _spec_identity(spec: CorpusSpec) -> dict[str, Any]:
    """The resolved spec minus the keys that name places rather than inputs."""
    d = spec.to_dict()
    d.pop("spec_path", None)
    d["output"] = {k: v for k, v in d["output"].items() if k not in ("dir", "cache_dir")}
    d["source"] = {k: v for k, v in d["source"].items() if k not in ("path", "db", "input_dir")}
    return d


def plan_shards(spec: CorpusSpec, rows: Sequence[Row], n_shards: int, out_dir: Path,
                model_meta: dict[str, dict[str, Any]]) -> ShardPlan:
    """Assign rows to shards and key each shard by everything that changes its bytes."""
    from urna import __version__

    ident = canonical_hash({"spec": _spec_identity(spec), "urna": __version__,
                            "models": {p: [m["model_hash"], m["embedding_recipe_hash"]]
                                       for p, m in sorted(model_meta.items())}})
    tasks = []
    for i, shard_rows in enumerate(assign(rows, n_shards)):
        if not shard_rows:
            continue  # a tiny corpus may leave a shard empty: no file for it
        ih = corpus_input_hash(shard_rows)
        key = canonical_hash({"identity": ident, "shard": i, "n_shards": n_shards,
                              "corpus_input_hash": ih})
        tasks.append(ShardTask(i, shard_file_name(spec.name, i, n_shards), shard_rows, ih, key))
    return ShardPlan(spec.name, n_shards, out_dir, tasks, model_meta)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def finished_entry(plan: ShardPlan, task: ShardTask) -> dict[str, Any] | None:
    """The catalog entry of a shard already built from the same inputs, else None."""
    try:
        side = json.loads(plan.sidecar(task).read_text(encoding="utf-8"))
        entry = side["entry"]
        if side.get("inputs_key") != task.inputs_key:
            return None
        path = plan.out_dir / task.file
        if not path.is_file() or _file_sha256(path) != entry["file_hash"]:
            return None
        return dict(entry)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def emit_shard(spec: CorpusSpec, plan: ShardPlan, task: ShardTask,
               vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    """Write one shard atomically, open it back (full validation) and record its sidecar."""
    import urna

    ctx = BuildContext(spec=spec, out_dir=plan.out_dir, cache_dir=plan.out_dir,
                       progress=Progress(False), rows=list(task.rows),
                       input_hash=task.input_hash, vectors=vectors,
                       model_meta=plan.model_meta)
    ctx.tmp_dir.mkdir(parents=True, exist_ok=True)
    out = _emit_one(ctx, task.file, _spaces(ctx))
    with urna.open(out["file"]) as f:
        entry = {"shard": task.index, "file": task.file, "file_hash": f.file_hash,
                 "content_hash": f.content_hash, "n_chunks": int(f.n_embeddings),
                 "model_hash": f.model_hash, "embedding_dim": int(f.embedding_dim),
                 "bytes": out["bytes"], "build_s": out["build_s"]}
    plan.state_dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.sidecar(task), {"inputs_key": task.inputs_key, "entry": entry})
    return entry


def embed_rows(embedders: dict[str, Embedder], texts: Sequence[str],
               batch: int = PART_ROWS) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` for every model, embedded in batches of ``batch`` rows."""
    out: dict[str, np.ndarray] = {}
    for preset, emb in embedders.items():
        mats = [np.asarray(emb.embed(list(texts[lo:lo + batch])), dtype=np.float32)
                for lo in range(0, len(texts), batch)]
        got = np.concatenate(mats) if mats else np.empty((0, emb.embedding_dim), np.float32)
        if got.shape != (len(texts), emb.embedding_dim):
            raise ForgeError(f"embedder '{preset}' returned shape {got.shape}, "
                             f"expected {(len(texts), emb.embedding_dim)}")
        out[preset] = got
    return out


def run_local(spec: CorpusSpec, plan: ShardPlan, pending: list[ShardTask],
              embedders: dict[str, Embedder], progress: Progress) -> list[dict[str, Any]]:
    """The in-process engine: the same embed and emit stages, one shard after another."""
    entries = []
    with progress.stage("shards", len(pending)) as advance:
        for task in pending:
            vectors = embed_rows(embedders, [r.canonical_text for r in task.rows])
            entries.append(emit_shard(spec, plan, task, vectors))
            advance(1)
    return entries


def default_engine() -> str:
    """``ray`` when Ray is importable, else ``local``."""
    import importlib.util

    return "ray" if importlib.util.find_spec("ray") is not None else "local"


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
    died. ``_kill_shard`` is a fault-injection hook for tests: the Ray worker that builds that
    shard SIGKILLs itself before writing it.
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
    if out_dir:
        spec.output.dir = out_dir
    progress = progress or Progress()
    out = Path(spec.output.dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        # partial shards of a killed run: this build's names only, others may be building
        for stale in (out / ".tmp").glob(f"{spec.name}-*-of-{n_shards:05d}.urna.partial"):
            stale.unlink(missing_ok=True)
    except OSError as e:
        raise SpecError(f"output.dir: {out} is not a usable directory ({e.strerror})") from e
    t0 = time.perf_counter()
    rows = load_rows(spec, sample=sample, report=report)
    if not rows:
        raise ForgeError("source produced no rows")
    timings = {"rows": round(time.perf_counter() - t0, 3)}
    meta, embedders = model_meta_for(spec)
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
        from urna.forge.ray_engine import run_ray

        built = run_ray(spec, plan, pending, address=address, workers=workers,
                        kill_shard=_kill_shard, max_retries=max_retries)
    elif pending:
        if _kill_shard is not None:
            raise ValueError("_kill_shard is a Ray-engine test hook")
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
    ctx = BuildContext(spec=spec, out_dir=out, cache_dir=cache_root(spec, cache_dir),
                       progress=progress, rows=list(rows), input_hash=doc["corpus_input_hash"],
                       model_meta=meta, timings=timings, report=report)
    finalize(ctx, result)
    return result
