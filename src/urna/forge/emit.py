"""Write one ``.urna`` file from embedded rows: the single build and every shard go through here.

The file's bytes are assembled in memory (``urna.build.build_bytes``), written once with an
atomic rename (``urna._atomic.write_atomic``: a killed write leaves no ``*.urna`` and never
touches an older file of that name) and hashed from those same bytes. Then, past the verdict
cache's size floor, it is opened once with every check and its texts proven
(``runtime.file.keep_verdicts``), so the first query after a build is a repeat open.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urna._atomic import write_atomic
from urna.build import build_bytes, build_steps
from urna.build_options import BuildOptions
from urna.forge.kernels import announce_compile
from urna.forge.progress import Progress
from urna.forge.sources.item import Row
from urna.forge.spec import CorpusSpec
from urna.format.identity import file_hash
from urna.runtime.file import keep_verdicts


def spaces_of(spec: CorpusSpec, vectors: Mapping[str, np.ndarray],
              model_meta: Mapping[str, Mapping[str, Any]],
              only: str | None = None) -> list[dict[str, Any]]:
    """The named spaces of the models with ``text = "space"`` (only ``only``'s, if given)."""
    return [{"name": f"{m.preset}-text", "model_hash": model_meta[m.preset]["model_hash"],
             "dtype": m.space_dtype, "vectors": vectors[m.preset].tolist()}
            for m in spec.models if m.text == "space" and only in (None, m.preset)]


def metadata_of(spec: CorpusSpec, rows: Sequence[Row]
                ) -> tuple[list[dict[str, Any] | None] | None, dict[str, str] | None]:
    """The ``metadata=`` / ``metadata_types=`` build options of ``rows`` (None, None: none)."""
    if spec.source.kind == "documents":
        from urna.forge.sources.documents import DOCUMENT_METADATA_TYPES

        return [r.metadata for r in rows], dict(DOCUMENT_METADATA_TYPES)
    if not spec.source.metadata:
        return None, None
    declared = spec.source.metadata_types
    return [r.metadata for r in rows], dict(declared) if declared else None


def stale_writes(out_dir: Path, filename: str) -> list[Path]:
    """Temp files a killed write of ``filename`` left in ``out_dir`` (``write_atomic``'s names)."""
    return [p for p in out_dir.glob(f".{filename}.*.tmp") if p.is_file()]


def emit_file(spec: CorpusSpec, path: Path, rows: Sequence[Row],
              vectors: Mapping[str, np.ndarray], model_meta: Mapping[str, Mapping[str, Any]],
              input_hash: str, *, spaces: list[dict[str, Any]] | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """Build ``path`` from ``rows`` and their vectors; returns file, bytes, file_hash, build_s.

    The default model's vectors are the core embeddings; ``spaces`` (see ``spaces_of``) are
    written as named spaces.
    """
    progress = progress or Progress(False)
    dm = spec.default_model()
    text = vectors[dm.preset]
    meta = model_meta[dm.preset]
    chunks = [dict(r.as_chunk(), embedding=text[i]) for i, r in enumerate(rows)]
    metadata, metadata_types = metadata_of(spec, rows)
    t0 = time.perf_counter()
    announce_compile(spec, progress, len(chunks))
    options = BuildOptions(
        title=spec.title or spec.name, version=spec.version, reproducible=spec.reproducible,
        preset=spec.build.preset, dtype=spec.build.dtype or None,
        mrl_dim=spec.build.mrl_dim or None, with_graph=spec.build.with_graph,
        graph_top_m=spec.build.graph_top_m, spaces=spaces or None, metadata=metadata,
        metadata_types=metadata_types,
        provenance={"dataset": spec.name, "corpus_input_hash": input_hash})
    steps = build_steps(options, len(chunks))
    with progress.stage(f"index {path.name}", len(steps)) as advance:
        advance(0, steps[0])
        doing_next = iter([*steps[1:], None])  # steps finish in build_steps' order
        data = build_bytes(meta["embedding_model"], int(text.shape[1]), spec.chunker_version,
                           meta["model_hash"], chunks, options,
                           on_step=lambda _done: advance(1, next(doing_next, None)))
    with progress.stage(f"write {path.name}", len(data)) as advance:
        write_atomic(path, data)
        advance(len(data))
    with progress.stage(f"check {path.name}", 1) as advance:
        keep_verdicts(path)  # the first query after the build opens it as a repeat open
        advance(1)
    return {"file": str(path), "bytes": len(data), "file_hash": file_hash(data),
            "build_s": round(time.perf_counter() - t0, 3)}
