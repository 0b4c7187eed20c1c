"""The single-file build: read rows -> embed (cache first) -> emit -> sidecars (04-surface §3.5).

The caller's spec is never edited: the build works on a copy (``spec.copy_with``). Each
output is written once, atomically (``emit.emit_file``), so a killed build leaves no
``.urna`` behind and an older file of the same name stays whole until the rename. The embed
cache lives under the cache root, content-addressed by (model_hash, recipe hash,
corpus_input_hash): ``embed/<preset>/<triad>.npz`` with a ``.sha256`` sidecar. While a
corpus is being embedded, every finished batch is also kept as a part file keyed by its own
rows, so a build killed mid-embed resumes from the batches it already paid for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import ForgeError, SpecError
from urna.forge.canonical import canonical_hash, write_json
from urna.forge.embedders import create_embedder
from urna.forge.embedders.base import Embedder
from urna.forge.embedders.cache import EmbedCache, load_part, store_part
from urna.forge.embedders.models import EMBED_BATCH, checked_vectors, recipe
from urna.forge.emit import emit_file, spaces_of, stale_writes
from urna.forge.progress import Progress
from urna.forge.sidecars import BuildRecord, finalize, start_package_versions
from urna.forge.sources import Row, corpus_input_hash, load_rows, source_report
from urna.forge.spec import CorpusSpec, ModelSpec, cache_root, copy_with, validate

__all__ = ["PART_ROWS", "BuildContext", "ForgeError", "Progress", "build", "embed_stage",
           "emit_stage", "output_names"]

PART_ROWS = EMBED_BATCH  # rows per resumable embed part


@dataclass
class BuildContext:
    """Everything one build carries from stage to stage."""

    spec: CorpusSpec
    out_dir: Path
    cache_dir: Path
    progress: Progress
    rows: list[Row] = field(default_factory=list)
    input_hash: str = ""
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    embedders: dict[str, Embedder] = field(default_factory=dict)
    model_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    cache_stats: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        """Per-stage state (the last finished stage and its parameters)."""
        return self.out_dir / ".forge-state"


def _embed_unique(emb: Embedder, texts: list[str], preset: str, dim: int) -> np.ndarray:
    """Embed each distinct text once (embedders are deterministic) and fan the rows out."""
    first: dict[str, int] = {}
    inverse = [first.setdefault(t, len(first)) for t in texts]
    vecs = checked_vectors(emb.embed(list(first)), preset, len(first), dim)
    return vecs[np.asarray(inverse, dtype=np.int64)]


def embed_stage(ctx: BuildContext, ms: ModelSpec, *, rebuild_only: bool = False) -> None:
    """Vectors for one model: the cache entry, else resumable parts, else the embedder."""
    emb = create_embedder(ms.preset, model_path=ms.model_path, batch_size=ms.batch_size,
                          device=ms.device or None)
    ctx.embedders[ms.preset] = emb
    model_hash = emb.model_hash()
    rec = recipe(ms)
    recipe_hash = canonical_hash(rec)
    triad = {"model_hash": model_hash, "embedding_recipe_hash": recipe_hash,
             "corpus_input_hash": ctx.input_hash, "arrays": {"text": True, "image": False}}
    cache = EmbedCache(ctx.cache_dir, ms.preset, triad)
    n, dim = len(ctx.rows), emb.embedding_dim
    t0 = time.perf_counter()
    text = cache.load(n, dim)
    stats = {"rows": n, "cached_rows": n if text is not None else 0, "embedded_rows": 0}
    batches = [ctx.rows[lo : lo + PART_ROWS] for lo in range(0, n, PART_ROWS)]
    with ctx.progress.stage(f"embed {ms.preset}", n) as advance:
        if text is None:
            if rebuild_only:
                raise ForgeError(f"--rebuild-only: cache for '{ms.preset}' is missing or stale")
            text = np.empty((n, dim), dtype=np.float32)
            lo = 0
            for batch in batches:
                part = cache.part_path(model_hash, recipe_hash, (r.input_hash for r in batch))
                got = load_part(part, len(batch), dim)
                if got is None:
                    got = _embed_unique(emb, [r.canonical_text for r in batch], ms.preset, dim)
                    store_part(part, got)
                    stats["embedded_rows"] += len(batch)
                else:
                    stats["cached_rows"] += len(batch)
                text[lo : lo + len(batch)] = got
                lo += len(batch)
                advance(len(batch))
            cache.store(text)
            for batch in batches:  # the full entry now covers these
                cache.part_path(model_hash, recipe_hash,
                                (r.input_hash for r in batch)).unlink(missing_ok=True)
        else:
            advance(n)
    elapsed = time.perf_counter() - t0
    ctx.timings[f"embed.{ms.preset}"] = round(elapsed, 3)
    ctx.vectors[ms.preset] = text
    ctx.cache_stats[ms.preset] = stats
    ctx.model_meta[ms.preset] = {"model_hash": model_hash, "embedding_recipe_hash": recipe_hash,
                                 "recipe": rec, "embedding_model": emb.embedding_model,
                                 "embedding_dim": dim}
    if stats["embedded_rows"]:
        rate = stats["embedded_rows"] / max(elapsed, 1e-9)
        ctx.model_meta[ms.preset]["items_per_s"] = round(rate, 2)


def output_names(spec: CorpusSpec) -> list[tuple[str, str | None]]:
    """Each output file's name and whose spaces it carries (None: every space model's)."""
    names: list[tuple[str, str | None]] = []
    if spec.output.mode in ("single", "both"):
        names.append((f"{spec.name}.urna", None))
    if spec.output.mode in ("per-model", "both"):
        dm = spec.default_model()
        for ms in spec.models:
            if ms.preset == dm.preset and spec.output.mode == "per-model":
                continue  # alone it would duplicate the single file's core
            names.append((f"{spec.name}-{ms.preset}.urna", ms.preset))
    return names


def emit_stage(ctx: BuildContext) -> dict[str, dict[str, Any]]:
    """Write every output file the spec asks for (each once, atomically)."""
    return {name: emit_file(ctx.spec, ctx.out_dir / name, ctx.rows, ctx.vectors,
                            ctx.model_meta, ctx.input_hash,
                            spaces=spaces_of(ctx.spec, ctx.vectors, ctx.model_meta, only),
                            progress=ctx.progress)
            for name, only in output_names(ctx.spec)}


def _prepare_dirs(ctx: BuildContext) -> None:
    try:
        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        ctx.state_dir.mkdir(exist_ok=True)
        for name, _ in output_names(ctx.spec):  # leftovers of a killed write (ours alone)
            for stale in stale_writes(ctx.out_dir, name):
                stale.unlink(missing_ok=True)
    except OSError as e:
        raise SpecError(f"output.dir: {ctx.out_dir} is not a usable directory "
                        f"({e.strerror})") from e
    try:
        ctx.cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError(f"output.cache_dir: cache root {ctx.cache_dir} is not a usable directory "
                        f"({e.strerror}); set [output] cache_dir, --cache-dir or "
                        "URNA_CACHE_DIR") from e


def build(spec: CorpusSpec, *, sample: int | None = None, out_dir: str | None = None,
          cache_dir: str | None = None, rebuild_only: bool = False, strict_env: bool = False,
          models: list[str] | None = None, progress: Progress | None = None,
          report: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a whole declarative build; returns the result document of §3.5.

    ``models`` builds a subset of the ``[[models]]`` presets (an existing lock is kept);
    ``rebuild_only`` re-emits from the embed cache and compares the new lock with the old
    one (a divergence warns, or fails with ``strict_env``, and goes to
    ``<name>.build.lock.rebuild.json``). ``spec`` itself is left as it was.
    """
    validate(spec)
    start_package_versions()  # for the lock, read while the build runs
    spec = copy_with(spec, out_dir=out_dir)
    if models:
        unknown = sorted(set(models) - {m.preset for m in spec.models})
        if unknown:
            raise SpecError(f"--models: {unknown} not in the spec's [[models]] presets")
        spec.models = [m for m in spec.models if m.preset in models]
        validate(spec)
    progress = progress or Progress()
    ctx = BuildContext(spec=spec, out_dir=Path(spec.output.dir),
                       cache_dir=cache_root(spec, cache_dir), progress=progress)
    _prepare_dirs(ctx)
    t0 = time.perf_counter()
    with progress.stage("read", None):
        ctx.rows = load_rows(spec, sample=sample, report=report)
    if not ctx.rows:
        raise ForgeError("source produced no rows")
    ctx.input_hash = corpus_input_hash(ctx.rows)
    ctx.timings["rows"] = round(time.perf_counter() - t0, 3)
    write_json(ctx.state_dir / "rows.json", {"corpus_input_hash": ctx.input_hash,
                                             "n_items": len(ctx.rows)})
    for ms in spec.models:
        embed_stage(ctx, ms, rebuild_only=rebuild_only)
    write_json(ctx.state_dir / "embed.json", {"models": ctx.model_meta})
    t1 = time.perf_counter()
    outputs = emit_stage(ctx)
    ctx.timings["emit"] = round(time.perf_counter() - t1, 3)
    result: dict[str, Any] = {"outputs": outputs, "n_items": len(ctx.rows),
                              "n_unique_frames": len(ctx.rows),
                              "corpus_input_hash": ctx.input_hash, "timings": ctx.timings,
                              "embed_cache": ctx.cache_stats}
    documents = source_report(ctx.rows)
    if documents is not None:
        result["documents"] = documents
    finalize(BuildRecord(spec=spec, out_dir=ctx.out_dir, rows=ctx.rows,
                         input_hash=ctx.input_hash, model_meta=ctx.model_meta,
                         timings=ctx.timings, rebuild_only=rebuild_only, strict_env=strict_env,
                         models_subset=list(models) if models else None, report=report), result)
    return result
