"""The declarative build: rows -> embed (cache first) -> emit -> finalize (04-surface §3.5).

Transactional: the ``.urna`` is written into ``<out>/.tmp/`` and moved into ``<out>`` with
an atomic rename only once it is complete, so a killed build leaves no ``.urna`` behind
(an older file of the same name stays untouched until the rename). The embed cache lives
under the cache root, content-addressed by (model_hash, recipe hash, corpus_input_hash):
``embed/<preset>/<triad>.npz`` with a ``.sha256`` sidecar. While a corpus is being embedded,
every finished batch is also kept as a part file keyed by its own rows, so a build killed
mid-embed resumes from the batches it already paid for.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urna.forge.cache import EmbedCache, canonical_hash, load_part, store_part, write_json
from urna.forge.embed import Embedder, create_embedder
from urna.forge.ingest import Row, corpus_input_hash, load_rows
from urna.forge.spec import CorpusSpec, ModelSpec, SpecError, cache_root, validate

PART_ROWS = 256  # rows per resumable embed part


class ForgeError(RuntimeError):
    """A build step failed for a reason other than the spec (no rows, a missing cache...)."""


# ----------------------------------------------------------------------- progress


class Progress:
    """Per-stage progress: a rich bar on a terminal, silent in a pipe."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[Callable[[int], None]]:
        """Context yielding ``advance(n)`` for one stage of ``total`` units."""
        if not self.enabled:
            yield lambda n: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        with RichProgress("[bold]{task.description}", BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn(), transient=True) as bar:
            task = bar.add_task(name, total=total)
            yield lambda n: bar.advance(task, n)


# ------------------------------------------------------------------------- stages


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
    rebuild_only: bool = False
    strict_env: bool = False
    models_subset: list[str] | None = None
    report: Callable[[str], None] | None = None

    @property
    def tmp_dir(self) -> Path:
        """Where outputs are written before their rename."""
        return self.out_dir / ".tmp"

    @property
    def state_dir(self) -> Path:
        """Per-stage state (the last finished stage and its parameters)."""
        return self.out_dir / ".forge-state"


def _recipe(ms: ModelSpec) -> dict[str, Any]:
    """What changes the vectors besides the model and the inputs."""
    return {"preset": ms.preset, "text_corpus_mode": ms.text_corpus_mode,
            "normalize": ms.normalize, "encode_kwargs": ms.encode_kwargs}


def _embed_unique(emb: Embedder, texts: list[str], preset: str, dim: int) -> np.ndarray:
    """Embed each distinct text once (embedders are deterministic) and fan the rows out."""
    first: dict[str, int] = {}
    inverse = [first.setdefault(t, len(first)) for t in texts]
    vecs = np.asarray(emb.embed(list(first)), dtype=np.float32)
    if vecs.shape != (len(first), dim):
        raise ForgeError(f"embedder '{preset}' returned shape {vecs.shape}, "
                         f"expected {(len(first), dim)}")
    return vecs[np.asarray(inverse, dtype=np.int64)]


def embed_stage(ctx: BuildContext, ms: ModelSpec, *, rebuild_only: bool = False) -> None:
    """Vectors for one model: the cache entry, else resumable parts, else the embedder."""
    emb = create_embedder(ms.preset, model_path=ms.model_path, batch_size=ms.batch_size,
                          device=ms.device or None)
    ctx.embedders[ms.preset] = emb
    model_hash = emb.model_hash()
    recipe = _recipe(ms)
    recipe_hash = canonical_hash(recipe)
    triad = {"model_hash": model_hash, "embedding_recipe_hash": recipe_hash,
             "corpus_input_hash": ctx.input_hash, "arrays": {"text": True, "image": False}}
    cache = EmbedCache(ctx.cache_dir, ms.preset, triad)
    n, dim = len(ctx.rows), emb.embedding_dim
    t0 = time.perf_counter()
    text = cache.load(n, dim)
    stats = {"rows": n, "cached_rows": n if text is not None else 0, "embedded_rows": 0}
    if text is None:
        if rebuild_only:
            raise ForgeError(f"--rebuild-only: cache for '{ms.preset}' is missing or stale")
        text = np.empty((n, dim), dtype=np.float32)
        with ctx.progress.stage(f"embed {ms.preset}", n) as advance:
            for lo in range(0, n, PART_ROWS):
                batch = ctx.rows[lo : lo + PART_ROWS]
                part = cache.part_path(model_hash, recipe_hash, batch)
                got = load_part(part, len(batch), dim)
                if got is None:
                    got = _embed_unique(emb, [r.canonical_text for r in batch], ms.preset, dim)
                    store_part(part, got)
                    stats["embedded_rows"] += len(batch)
                else:
                    stats["cached_rows"] += len(batch)
                text[lo : lo + len(batch)] = got
                advance(len(batch))
        cache.store(text)
        for lo in range(0, n, PART_ROWS):  # the full entry now covers these
            cache.part_path(model_hash, recipe_hash, ctx.rows[lo : lo + PART_ROWS]).unlink(
                missing_ok=True)
    elapsed = time.perf_counter() - t0
    ctx.timings[f"embed.{ms.preset}"] = round(elapsed, 3)
    ctx.vectors[ms.preset] = text
    ctx.cache_stats[ms.preset] = stats
    ctx.model_meta[ms.preset] = {"model_hash": model_hash, "embedding_recipe_hash": recipe_hash,
                                 "recipe": recipe, "embedding_model": emb.embedding_model,
                                 "embedding_dim": dim}
    if stats["embedded_rows"]:
        ctx.model_meta[ms.preset]["items_per_s"] = round(stats["embedded_rows"] / max(elapsed, 1e-9), 2)


def _spaces(ctx: BuildContext, only: str | None = None) -> list[dict[str, Any]]:
    return [{"name": f"{m.preset}-text", "model_hash": ctx.model_meta[m.preset]["model_hash"],
             "dtype": m.space_dtype, "vectors": ctx.vectors[m.preset].tolist()}
            for m in ctx.spec.models if m.text == "space" and only in (None, m.preset)]


def _emit_one(ctx: BuildContext, filename: str, spaces: list[dict[str, Any]]) -> dict[str, Any]:
    import urna

    spec = ctx.spec
    dm = spec.default_model()
    text = ctx.vectors[dm.preset]
    chunks = [dict(r.as_chunk(), embedding=text[i]) for i, r in enumerate(ctx.rows)]
    tmp = ctx.tmp_dir / f"{filename}.partial"  # never a *.urna until it is complete
    final = ctx.out_dir / filename
    t0 = time.perf_counter()
    try:
        urna.build(str(tmp), ctx.model_meta[dm.preset]["embedding_model"], int(text.shape[1]),
                   spec.chunker_version, ctx.model_meta[dm.preset]["model_hash"], chunks,
                   title=spec.title or spec.name, version=spec.version,
                   reproducible=spec.reproducible, preset=spec.build.preset,
                   dtype=spec.build.dtype or None, mrl_dim=spec.build.mrl_dim or None,
                   with_graph=spec.build.with_graph, graph_top_m=spec.build.graph_top_m,
                   spaces=spaces or None,
                   provenance={"dataset": spec.name, "corpus_input_hash": ctx.input_hash})
        data = tmp.read_bytes()
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    from urna.format.identity import file_hash

    return {"file": str(final), "bytes": len(data), "file_hash": file_hash(data),
            "build_s": round(time.perf_counter() - t0, 3)}


def emit_stage(ctx: BuildContext) -> dict[str, dict[str, Any]]:
    """Write every output file the spec asks for (tmp, then atomic rename)."""
    spec = ctx.spec
    outputs: dict[str, dict[str, Any]] = {}
    with ctx.progress.stage("emit", 1) as advance:
        if spec.output.mode in ("single", "both"):
            outputs[f"{spec.name}.urna"] = _emit_one(ctx, f"{spec.name}.urna", _spaces(ctx))
        if spec.output.mode in ("per-model", "both"):
            dm = spec.default_model()
            for ms in spec.models:
                if ms.preset == dm.preset and spec.output.mode == "per-model":
                    continue  # alone it would duplicate the single file's core
                name = f"{spec.name}-{ms.preset}.urna"
                outputs[name] = _emit_one(ctx, name, _spaces(ctx, ms.preset))
        advance(1)
    return outputs


def _redact(path: str, mode: str, spec_dir: Path) -> str:
    if mode == "full":
        return str(Path(path).resolve())
    try:
        return os.path.relpath(Path(path).resolve(), spec_dir.resolve())
    except ValueError:
        return Path(path).name


def _package_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for pkg in ("urna", "numpy", "tokenizers", "zstandard", "numba"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


# keys that name places, not inputs: a rebuild elsewhere may differ in them
_LOCATION_KEYS = ("spec_path", "output.dir", "output.cache_dir", "source.path", "source.db")


def lock_diffs(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two build locks (location keys ignored)."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        dotted = f"{prefix}{key}"
        if dotted.removeprefix("spec.") in _LOCATION_KEYS:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += lock_diffs(a, b, dotted + ".")
        elif a != b:
            out.append(f"{dotted}: {a!r} -> {b!r}")
    return out


def finalize(ctx: BuildContext, result: dict[str, Any]) -> None:
    """Write ``<name>.manifest.json`` and ``<name>.build.lock.json`` (atomic)."""
    spec = ctx.spec
    mode = spec.output.provenance
    spec_dir = Path(spec.spec_path).parent if spec.spec_path else ctx.out_dir
    resolved = spec.to_dict()
    resolved["output"].pop("cache_dir", None)
    lock = {"lock_schema_version": 1, "platform": {"python": platform.python_version(),
            "system": platform.system(), "machine": platform.machine()},
            "packages": _package_versions(),
            "models": {p: m["model_hash"] for p, m in ctx.model_meta.items()},
            "device": os.environ.get("URNA_ST_DEVICE", "auto"), "spec": resolved}
    lock_path = ctx.out_dir / f"{spec.name}.build.lock.json"
    say = ctx.report or (lambda m: print(m, file=sys.stderr))
    if ctx.rebuild_only and lock_path.is_file():
        diffs = lock_diffs(json.loads(lock_path.read_text()), lock)
        if diffs:
            msg = "build.lock divergence (L3 not claimable): " + "; ".join(diffs[:8])
            if ctx.strict_env:
                raise ForgeError(msg)
            say(f"[forge] warning: {msg}")
            lock_path = ctx.out_dir / f"{spec.name}.build.lock.rebuild.json"
    if ctx.models_subset is not None:
        lock["models_subset"] = sorted(ctx.models_subset)
    if ctx.models_subset is not None and lock_path.is_file():
        say("[forge] --models subset: keeping the existing build.lock untouched")
    else:
        write_json(lock_path, lock)
    items: Any
    if mode == "minimal":
        items = [{"key": r.key, "ordinal": r.ordinal} for r in ctx.rows]
    else:
        items = [{"key": r.key, "label": r.label, "ordinal": r.ordinal,
                  "source_uri": r.source_uri} for r in ctx.rows]
    manifest = {
        "manifest_schema_version": 1, "name": spec.name, "n_items": len(ctx.rows),
        "n_unique_frames": len(ctx.rows), "corpus_input_hash": ctx.input_hash,
        "text_quality": "template" if spec.source.text.template or spec.source.kind == "documents"
        else "identity-only",
        "models": ctx.model_meta, "spaces": [
            {"name": f"{m.preset}-text", "preset": m.preset, "modality": "text", "dim": None,
             "space_dtype": m.space_dtype} for m in spec.models if m.text == "space"],
        "media": None, "provenance_mode": mode, "timings": ctx.timings,
        "outputs": {k: {**v, "file": _redact(v["file"], mode, spec_dir)}
                    for k, v in result["outputs"].items()},
        "items": items,
    }
    if mode == "full":
        manifest["sql"] = spec.source.query
    man_path = ctx.out_dir / f"{spec.name}.manifest.json"
    write_json(man_path, manifest)
    result["manifest"] = str(man_path)
    result["build_lock"] = str(lock_path)


def build(spec: CorpusSpec, *, sample: int | None = None, out_dir: str | None = None,
          cache_dir: str | None = None, rebuild_only: bool = False, strict_env: bool = False,
          models: list[str] | None = None, progress: Progress | None = None,
          report: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a whole declarative build; returns the result document of §3.5.

    ``models`` builds a subset of the ``[[models]]`` presets (an existing lock is kept);
    ``rebuild_only`` re-emits from the embed cache and compares the new lock with the old
    one (a divergence warns, or fails with ``strict_env``, and goes to
    ``<name>.build.lock.rebuild.json``).
    """
    validate(spec)
    if models:
        unknown = sorted(set(models) - {m.preset for m in spec.models})
        if unknown:
            raise SpecError(f"--models: {unknown} not in the spec's [[models]] presets")
        spec.models = [m for m in spec.models if m.preset in models]
        validate(spec)
    if out_dir:
        spec.output.dir = out_dir
    ctx = BuildContext(spec=spec, out_dir=Path(spec.output.dir),
                       cache_dir=cache_root(spec, cache_dir), progress=progress or Progress(),
                       rebuild_only=rebuild_only, strict_env=strict_env,
                       models_subset=list(models) if models else None, report=report)
    try:
        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        ctx.tmp_dir.mkdir(exist_ok=True)
        ctx.state_dir.mkdir(exist_ok=True)
        for stale in ctx.tmp_dir.iterdir():  # leftovers of a killed build (ours alone)
            if stale.is_file():
                stale.unlink()
    except OSError as e:
        raise SpecError(f"output.dir: {ctx.out_dir} is not a usable directory ({e.strerror})") from e
    try:
        ctx.cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError(f"output.cache_dir: cache root {ctx.cache_dir} is not a usable directory "
                        f"({e.strerror}); set [output] cache_dir, --cache-dir or URNA_CACHE_DIR") from e
    t0 = time.perf_counter()
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
    finalize(ctx, result)
    return result
