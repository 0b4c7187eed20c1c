"""``urna build --spec corpus.toml --update``: write only what changed since the last version.

The living corpus is ``<output dir>/<name>.catalog.json``. Its version log records, per source
key, the row's input hash and chunk id (``sources``). An update reads the source, compares:
a key that is new or whose input hash changed is embedded (only those texts) and written as
one new segment; a key that changed or disappeared has its old chunk tombstoned; everything
else is untouched and keeps its citation. With no catalog yet, the first update writes version
1 with every row. A sharded build's catalog (no ``sources`` recorded) is diffed by chunk id
once, then recorded. Row sources (csv, jsonl, parquet, sqlite) span a row's ordinal, so a row
kept across an insertion keeps its old chunk id while a fresh build would renumber it;
document sources span bytes of their file, so a chunk whose bytes moved is replaced, and they
match a fresh build exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urna.build_options import BuildOptions
from urna.errors import ForgeError, SpecError
from urna.forge.embedders.models import embed_all, load_models
from urna.forge.emit import metadata_of
from urna.forge.sources import Row, load_rows
from urna.forge.spec import CorpusSpec, copy_with, validate
from urna.format.hashing import sorted_json_sha256_utf8
from urna.format.identity import chunk_id
from urna.runtime.catalog.living import SegmentFormat, create, writing
from urna.runtime.catalog.versions import summary


def catalog_path(spec: CorpusSpec) -> Path:
    """Where the living corpus of ``spec`` lives: ``<output dir>/<name>.catalog.json``."""
    return Path(spec.output.dir) / f"{spec.name}.catalog.json"


def _format(spec: CorpusSpec, meta: dict[str, dict[str, Any]], dim: int,
            rows: list[Row]) -> SegmentFormat:
    dm = spec.default_model()
    m = meta[dm.preset]
    _, metadata_types = metadata_of(spec, rows)  # a fresh build's declared types
    return SegmentFormat(m["embedding_model"], dim, spec.chunker_version, m["model_hash"],
                         BuildOptions(title=spec.title or spec.name, version=spec.version,
                                      reproducible=True, preset=spec.build.preset,
                                      dtype=spec.build.dtype or None,
                                      mrl_dim=spec.build.mrl_dim or None,
                                      with_graph=spec.build.with_graph,
                                      graph_top_m=spec.build.graph_top_m,
                                      provenance={"dataset": spec.name},
                                      metadata_types=metadata_types))


def _row_id(row: Row, chunker: str) -> str:
    return chunk_id(row.canonical_text, row.source_uri, row.byte_start, row.byte_end, chunker)


# A document's file time changes with every checkout or copy: it is stored, but a file whose
# text did not change keeps its chunks (and citations) instead of being written again.
_UNTRACKED_DOCUMENT_FIELDS = ("modified",)


def _recorded_hash(spec: CorpusSpec, row: Row) -> str:
    """What the log records of a row: its input hash, and its metadata when it stores any, so a
    change of a metadata column alone is a change of the row."""
    meta = row.metadata
    if meta and spec.source.kind == "documents":
        meta = {k: v for k, v in meta.items() if k not in _UNTRACKED_DOCUMENT_FIELDS}
    if not meta:
        return row.input_hash
    return sorted_json_sha256_utf8({"input": row.input_hash, "metadata": meta})


Models = tuple[dict[str, dict[str, Any]], dict[str, Any]]  # load_models: meta, embedders


def _check_same_model(spec_format: SegmentFormat, stored: SegmentFormat) -> None:
    """SpecError unless the spec embeds and chunks as the catalog's segments were: new rows
    embedded by another model would be stored under the catalog's model hash and searched
    beside vectors they cannot be compared with."""
    f = spec_format
    ours = (f.embedding_model, f.model_hash, f.options.mrl_dim or f.embedding_dim,
            f.chunker_version)
    theirs = (stored.embedding_model, stored.model_hash, stored.embedding_dim,
              stored.chunker_version)
    if ours != theirs:
        raise SpecError(f"--update: the spec embeds with {ours[0]} ({ours[1]}, dim {ours[2]}) "
                        f"and chunker {ours[3]!r}, but the living corpus holds {theirs[0]} "
                        f"({theirs[1]}, dim {theirs[2]}) and chunker {theirs[3]!r}; one corpus "
                        f"holds one model: build it anew without --update (or into another "
                        f"output dir)")


def _embedded(spec: CorpusSpec, rows: list[Row],
              models: Models | None = None) -> tuple[list[dict[str, Any]], dict, int]:
    meta, embedders = models or load_models(spec)
    vectors = embed_all(embedders, [r.canonical_text for r in rows])[spec.default_model().preset]
    metadata, _ = metadata_of(spec, rows)
    chunks = [dict(r.as_chunk(), embedding=vectors[i],
                   metadata=None if metadata is None else metadata[i])
              for i, r in enumerate(rows)]
    return chunks, meta, int(vectors.shape[1]) if len(rows) else 0


def update(spec: CorpusSpec, *, out_dir: str | None = None) -> dict[str, Any]:
    """Bring the living corpus of ``spec`` up to its source; what was added and removed."""
    validate(spec)
    if spec.output.mode != "single":
        raise SpecError(f"output.mode: --update keeps one living catalog (mode 'single'), "
                        f"not '{spec.output.mode}'")
    if any(m.text == "space" for m in spec.models):
        raise SpecError("models: --update writes the default model's vectors only; named "
                        "spaces (text = \"space\") are not supported by living corpora yet")
    spec = copy_with(spec, out_dir=out_dir)
    path = catalog_path(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = load_rows(spec)
    if not rows:
        raise ForgeError("source produced no rows")
    chunker = spec.chunker_version
    recorded = {r.key: [_recorded_hash(spec, r), _row_id(r, chunker)] for r in rows}
    if not path.exists():
        chunks, meta, dim = _embedded(spec, rows)
        rec = create(path, _format(spec, meta, dim, rows), chunks, note="update: first version",
                     sources=recorded)
        return {"catalog": str(path), **summary(rec), "added": len(rows), "removed": 0}
    with writing(path) as w:
        models = load_models(spec)
        dim = int(models[0][spec.default_model().preset]["embedding_dim"])
        spec_format = _format(spec, models[0], dim, rows)
        _check_same_model(spec_format, w.format)
        w.format = spec_format  # new rows are built as a fresh build of the spec builds them
        old: dict[str, list[str]] = w.sources
        live = w.live_chunk_ids()
        if old and {cid for _, cid in old.values()} <= live:
            # A document's span is bytes of its file: a chunk whose text moved (an edit before
            # it) has a new span, so a new id, and is replaced, or its citation would point at
            # other bytes. A row source's span is its ordinal, which a row inserted or deleted
            # before it shifts: an unchanged row keeps its chunk and old id.
            same = (lambda k, v: old.get(k) == v) if spec.source.kind == "documents" else \
                (lambda k, v: k in old and old[k][0] == v[0])
            fresh = [r for r in rows if not same(r.key, recorded[r.key])]
            stale = [cid for key, (h, cid) in old.items()
                     if key not in recorded or not same(key, recorded[key])]
            recorded = {k: old[k] if same(k, v) else v for k, v in recorded.items()}
        else:
            # a catalog the forge never recorded, or whose record names chunks that are not
            # live (before 2026-12-04 an unchanged row was recorded under its new ordinal's id,
            # so the next change of it tombstoned nothing): the live chunk ids are the baseline
            fresh = [r for r in rows if recorded[r.key][1] not in live]
            wanted = {v[1] for v in recorded.values()}
            stale = sorted(live - wanted)
        if not fresh and not stale:
            return {"catalog": str(path), **summary(w.versions[-1]), "added": 0, "removed": 0}
        removed = w.remove(chunk_ids=stale) if stale else []
        if fresh:
            chunks, _, _ = _embedded(spec, fresh, models)
            w.add(chunks)
        w.sources = recorded
        rec = w.commit("update", f"update: +{len(fresh)} -{len(stale)} rows")
    return {"catalog": str(path), **summary(rec), "added": len(fresh), "removed": len(removed)}


def add_from_spec(path: str | Path, spec: CorpusSpec) -> dict[str, Any]:
    """Embed every row of ``spec``'s source and add them to the catalog as one new segment."""
    validate(spec)
    rows = load_rows(spec)
    if not rows:
        raise ForgeError("source produced no rows")
    chunks, _, _ = _embedded(spec, rows)
    with writing(path) as w:
        w.add(chunks)
        rec = w.commit("add", f"add: {len(rows)} rows of {spec.name}")
    return {"catalog": str(path), **summary(rec), "added": len(rows)}
