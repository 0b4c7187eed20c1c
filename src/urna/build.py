"""``urna.build``: chunks + options -> a .urna file, byte-identical to the reference's.

The steps follow the reference binding and builder (01-container §6, 04-surface §6.2):
resolve the preset, take the chunks, build the manifest, validate it and the chunks, then
build the optional indexes (HNSW, BM25, graph) with ``index/`` and encode every section with
``format/``. The file is written atomically: a temp file in the target folder, fsync, rename.
On any error nothing is left behind and an existing file of that name is untouched.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence

import numpy as np

from ._atomic import write_atomic
from .argument_conversion import function_binding
from .build_args import convert_call, extract_f32_vec, extract_str, extract_u64, field, record
from .build_media import media_sections
from .build_options import DEFAULTS, BuildOptions, Storage, TextEncoding, resolve_storage
from .errors import (
    BuildError,
    DimensionMismatch,
    InvalidEmbeddingValue,
    InvalidInput,
    Json,
    ManifestInvalid,
)
from .format import layout
from .format.ahead import Job, worker_count
from .format.fanout import Fanout
from .format.identity import chunk_id
from .format.manifest import CapabilitiesExt, Manifest
from .format.sections import canonical
from .format.sections.hnsw import HnswPayload
from .format.writer import EncodedSection, assemble


def _take_chunks(chunks: Sequence[dict]) -> tuple[list[str], list[tuple[str, int, int]], list]:
    """Each chunk's fields, read in the reference's order with its conversions and texts."""
    texts, spans, rows = [], [], []
    for i, item in enumerate(chunks):
        where = f"chunks[{i}]"
        chunk = record(item, where)
        texts.append(field(chunk, "canonical_text", where, extract_str))
        uri = field(chunk, "source_uri", where, extract_str)
        start = field(chunk, "byte_start", where, extract_u64)
        spans.append((uri, start, field(chunk, "byte_end", where, extract_u64)))
        rows.append(field(chunk, "embedding", where, extract_f32_vec))
    return texts, spans, rows


def mrl_truncate(rows: list[np.ndarray], mrl_dim: int, full_dim: int) -> list[np.ndarray]:
    """Cut each row to ``mrl_dim`` and re-L2-normalise it in f32 (sequential sum of squares).

    A row narrower or wider than ``full_dim`` is returned as it is (the reference's rule).
    """
    out = []
    for row in rows:
        if row.shape[0] != full_dim:
            out.append(row)
            continue
        prefix = np.ascontiguousarray(row[:mrl_dim], dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            sq = prefix * prefix
            total = np.cumsum(sq, dtype=np.float32)[-1] if prefix.size else np.float32(0)
            norm = np.sqrt(np.float32(total), dtype=np.float32)
            if norm != 0 and math.isfinite(float(norm)):
                prefix = (prefix / norm).astype(np.float32)
        out.append(prefix)
    return out


def _provenance_json(provenance: dict | None) -> bytes:
    """The binding's path: Python json.dumps, then serde_json compact re-serialisation."""
    from .format.json_text import dumps_compact, parse_json

    if provenance is None:
        return b"{}"
    try:
        value = parse_json(json.dumps(provenance))
    except Json as exc:
        raise BuildError(f"provenance JSON: {exc.detail}") from exc
    return dumps_compact(value).encode("utf-8")


def _ext(manifest: Manifest) -> CapabilitiesExt:
    if manifest.capabilities_ext is None:
        manifest.capabilities_ext = CapabilitiesExt()
    return manifest.capabilities_ext


def _check_chunks(manifest: Manifest, rows: list[np.ndarray],
                  spans: list[tuple[str, int, int]]) -> None:
    """Writer steps 3-4: chunk count, then per chunk dimension, finiteness and span order."""
    if len(rows) != manifest.n_chunks:
        raise ManifestInvalid(f"n_chunks={manifest.n_chunks} but builder has {len(rows)} chunks")
    for row, (_, start, end) in zip(rows, spans, strict=True):
        if row.shape[0] != manifest.embedding_dim:
            raise DimensionMismatch(manifest.embedding_dim, int(row.shape[0]))
        if not np.isfinite(row).all():
            raise InvalidEmbeddingValue()
        if end < start:
            raise InvalidInput(f"byte_end ({end}) < byte_start ({start})")


@function_binding  # PyO3's texts for a call that does not bind (a 7th positional, ...)
def build(output_path: str | os.PathLike, embedding_model: str, embedding_dim: int,
          chunker_version: str, model_hash: str, chunks: Sequence[dict], *,
          title: str | None = DEFAULTS.title, version: str | None = DEFAULTS.version,
          created: str | None = DEFAULTS.created, description: str | None = DEFAULTS.description,
          authors: list[str] | None = DEFAULTS.authors, license: str | None = DEFAULTS.license,
          provenance: dict | None = DEFAULTS.provenance,
          reproducible: bool = DEFAULTS.reproducible, preset: str = DEFAULTS.preset,
          text_encoding: str | None = DEFAULTS.text_encoding, dtype: str | None = DEFAULTS.dtype,
          mrl_dim: int | None = DEFAULTS.mrl_dim, with_hnsw: bool | None = DEFAULTS.with_hnsw,
          with_bm25: bool | None = DEFAULTS.with_bm25, with_graph: bool = DEFAULTS.with_graph,
          graph_top_m: int = DEFAULTS.graph_top_m,
          blob_refs: list[dict] | None = DEFAULTS.blob_refs,
          blob_data_paths: list[str | None] | None = DEFAULTS.blob_data_paths,
          chunk_blob_spans: list[dict] | None = DEFAULTS.chunk_blob_spans,
          spaces: list[dict] | None = DEFAULTS.spaces, hnsw_m: int = DEFAULTS.hnsw_m,
          hnsw_ef_construction: int = DEFAULTS.hnsw_ef_construction,
          hnsw_seed: int = DEFAULTS.hnsw_seed,
          metadata: list[dict | None] | None = DEFAULTS.metadata,
          metadata_types: dict[str, str] | None = DEFAULTS.metadata_types) -> str:
    """Build a .urna file from already-embedded chunks; returns the output path.

    ``chunks`` are dicts with canonical_text, source_uri, byte_start, byte_end and embedding
    (L2-normalised floats). Same inputs give the reference's bytes. ``metadata`` (one dict or
    None per chunk, types inferred unless ``metadata_types`` names them) adds section 0x18,
    which leaves content_hash, citations and the reference's answers unchanged. Example::

        urna.build("k.urna", "demo", 4, "demo-chunker/1", "sha256:" + "0" * 64,
                   [{"canonical_text": "hi", "source_uri": "doc.txt", "byte_start": 0,
                     "byte_end": 2, "embedding": [1.0, 0.0, 0.0, 0.0]}])
    """
    # The keywords above are exactly BuildOptions' fields (a test pins names, order, defaults);
    # every argument is converted first, in order, as the reference's PyO3 wrapper does.
    call = convert_call(locals())
    options = BuildOptions.from_keywords(call)
    data = build_bytes(call["embedding_model"], call["embedding_dim"], call["chunker_version"],
                       call["model_hash"], call["chunks"], options)
    _write(call["output_path"], data)
    return str(output_path)


def _write(path: str, data: bytes) -> None:
    """Write atomically; a failure is the reference's ``write <path>: <io error>`` ValueError."""
    if "\0" in path:
        raise BuildError(f"write {path}: file name contained an unexpected NUL byte")
    errno = _open_errno(path)
    try:
        if errno is not None:
            raise OSError(errno, os.strerror(errno))
        write_atomic(path, data)
    except OSError as exc:
        raise BuildError(f"write {path}: {exc.strerror} (os error {exc.errno})") from exc


def _open_errno(path: str) -> int | None:
    """The error the reference's ``File::create(path)`` gets where a temp file + rename differ."""
    import errno

    if path == "":
        return errno.ENOENT
    if os.path.isdir(path):
        return errno.EISDIR
    if path.endswith("/"):
        bare = path.rstrip("/")
        if os.path.exists(bare):
            return errno.ENOTDIR
        return errno.EISDIR if os.path.isdir(os.path.dirname(bare) or ".") else errno.ENOENT
    return None


def build_steps(options: BuildOptions, n_chunks: int) -> list[str]:
    """The steps ``build_bytes`` reports to ``on_step`` for these options, in their order."""
    storage = resolve_storage(options)
    steps = ["hnsw"] if storage.with_hnsw or _wants_graph(options, n_chunks) else []
    steps += ["bm25"] if storage.with_bm25 else []
    steps += ["graph"] if _wants_graph(options, n_chunks) else []
    return [*steps, "texts", "assemble"]


def build_bytes(embedding_model: str, embedding_dim: int, chunker_version: str, model_hash: str,
                chunks: Sequence[dict], options: BuildOptions = DEFAULTS, *,
                on_step: Callable[[str], None] | None = None) -> bytes:
    """Everything ``build`` does except writing: returns the file's bytes.

    ``on_step`` is called with each name of ``build_steps`` as that step finishes (a
    progress bar's hook; it never changes the bytes).
    """
    step = on_step or _no_step
    # The reference's order: the chunks, mrl_dim, provenance, the preset and its overrides,
    # the int4 width, the media options, then the manifest and the chunks' values.
    texts, spans, rows = _take_chunks(chunks)
    mrl_dim = options.mrl_dim
    dim = int(embedding_dim)
    if mrl_dim is not None and not 0 < mrl_dim <= dim:
        raise BuildError(f"mrl_dim must satisfy 0 < mrl_dim <= embedding_dim ({dim}), "
                         f"got {mrl_dim}")
    provenance_json = _provenance_json(options.provenance)
    storage = resolve_storage(options)
    effective_dim = mrl_dim if mrl_dim is not None else dim
    if not storage.dtype.dim_supported(effective_dim):
        raise BuildError(
            f"int4 requires (effective) embedding_dim divisible by 64, got {effective_dim}")
    media = media_sections(options.blob_refs, options.blob_data_paths,
                           options.chunk_blob_spans, options.spaces, len(rows))
    if mrl_dim is not None and mrl_dim < dim:  # the reference leaves rows as is at mrl == dim
        rows = mrl_truncate(rows, mrl_dim, dim)

    manifest = Manifest.new(embedding_model, effective_dim, len(rows), chunker_version, model_hash)
    manifest.title, manifest.version = options.title, options.version
    manifest.created, manifest.description = options.created, options.description
    manifest.license = options.license
    if options.authors is not None:
        manifest.authors = [str(a) for a in options.authors]
    if mrl_dim is not None:
        manifest.mrl_dim, manifest.full_dim = mrl_dim, dim
    manifest.dtype = storage.dtype.value
    if options.reproducible:
        manifest.created = layout.REPRODUCIBLE_CREATED
    # Validate before the index setters run: they only write valid values (hnsw/exact,
    # capability flags), so the outcome is the same and the indexes see checked rows.
    manifest.validate()
    _check_chunks(manifest, rows, spans)
    metadata_section = _metadata_section(options, len(rows))  # checked before any index work
    matrix = np.stack(rows).astype(np.float32) if rows else np.zeros((0, effective_dim), np.float32)
    # The heavy steps run side by side, the longest first (the HNSW build, then the core
    # sections with the level-19 text frame), and are claimed in the sequential order (HNSW,
    # BM25, media, the core sections), so errors and bytes are those of a one-thread build.
    with Fanout(3) as fan:
        graph_job = (fan.start(_hnsw_graph, options, matrix)
                     if storage.with_hnsw or _wants_graph(options, len(matrix)) else None)
        # Beside the HNSW build the text candidates get the cores it leaves: on two cores that
        # is one, where they run one after another and most stop part way (see ``chooser``).
        text_threads = max(1, worker_count() - 1) if graph_job is not None else worker_count()
        core_job = fan.start(_core_sections, storage, chunker_version, texts, spans, matrix,
                             text_threads)
        bm25_job = fan.start(_bm25_payload, storage, texts) if storage.with_bm25 else None
        optional = _index_sections(manifest, options, storage, len(matrix), graph_job, bm25_job,
                                   step)
        optional += media.sections
        if media.blobs_present:
            _ext(manifest).blobs_present = True
        if media.supports_multimodal:
            _ext(manifest).supports_multimodal = True
        sections = core_job.result()
        step("texts")
    if metadata_section is not None:
        optional.append(metadata_section)
    sections += _provenance_and_contract(manifest, storage, provenance_json)
    data = assemble(manifest.to_json_bytes(), manifest.embedding_dim, manifest.n_chunks,
                    len(rows), sections + optional)
    step("assemble")
    return data


def _no_step(name: str) -> None:
    """The default ``on_step``: nobody is watching."""


def _core_sections(storage: Storage, chunker_version: str, texts: list[str],
                   spans: list[tuple[str, int, int]], matrix: np.ndarray,
                   text_threads: int) -> list[EncodedSection]:
    """Embeddings, chunk ids, texts (+ their aux sections) and spans, encoded."""
    from .format import encodings

    ids = [chunk_id(t, s[0], s[1], s[2], chunker_version)
           for t, s in zip(texts, spans, strict=True)]
    raw_ids = canonical.encode_chunk_ids(ids)
    raw_texts = canonical.encode_texts(texts)
    raw_spans = canonical.encode_spans(spans)
    emb_encoding, emb_payload = encodings.encode_embeddings(matrix, storage.dtype)
    out = [EncodedSection(layout.SECTION_EMBEDDINGS, emb_encoding, emb_payload)]
    if storage.text_encoding is TextEncoding.RAW:
        raw = layout.ENCODING_RAW
        out += [EncodedSection(layout.SECTION_CHUNK_IDS, raw, raw_ids),
                EncodedSection(layout.SECTION_CHUNKS_CANONICAL, raw, raw_texts),
                EncodedSection(layout.SECTION_CHUNKS_ORIGINAL_SPANS, raw, raw_spans)]
        return out
    enc, payload = encodings.choose_chunk_ids(raw_ids, ids)
    out.append(EncodedSection(layout.SECTION_CHUNK_IDS, enc, payload))
    enc, payload, aux = encodings.choose_chunks_canonical(texts, text_threads)
    out.append(EncodedSection(layout.SECTION_CHUNKS_CANONICAL, enc, payload))
    out += [EncodedSection(sid, layout.ENCODING_RAW, body) for sid, body in aux]
    enc, payload = encodings.choose_spans(raw_spans, spans)
    out.append(EncodedSection(layout.SECTION_CHUNKS_ORIGINAL_SPANS, enc, payload))
    return out


def _provenance_and_contract(manifest: Manifest, storage: Storage,
                             provenance_json: bytes) -> list[EncodedSection]:
    """Provenance and the search contract (read after the index setters changed the manifest)."""
    raw_prov = canonical.encode_provenance(provenance_json)
    raw_contract = canonical.encode_contract(
        {k: getattr(manifest, k) for k in canonical.CONTRACT_KEYS})
    if storage.text_encoding is TextEncoding.RAW:
        return [EncodedSection(layout.SECTION_PROVENANCE, layout.ENCODING_RAW, raw_prov),
                EncodedSection(layout.SECTION_SEARCH_CONTRACT, layout.ENCODING_RAW, raw_contract)]
    return [_zstd_section(layout.SECTION_PROVENANCE, raw_prov),
            _zstd_section(layout.SECTION_SEARCH_CONTRACT, raw_contract)]


def _zstd_section(section_id: int, raw: bytes) -> EncodedSection:
    from .format import encodings

    return EncodedSection(section_id, layout.ENCODING_ZSTD, encodings.zstd_compress(raw))


def _wants_graph(options: BuildOptions, n: int) -> bool:
    return bool(options.with_graph) and n >= 2


def _hnsw_graph(options: BuildOptions, vectors: np.ndarray) -> HnswPayload:
    from .index.hnsw import build_hnsw

    return build_hnsw(vectors, int(options.hnsw_m), int(options.hnsw_ef_construction),
                      int(options.hnsw_seed))


def _bm25_payload(storage: Storage, texts: list[str]) -> EncodedSection:
    from .index.bm25 import Bm25Index

    payload = Bm25Index.build(texts).to_bytes()
    if storage.text_encoding is TextEncoding.ZSTD:
        return _zstd_section(layout.SECTION_BM25_INDEX, payload)
    return EncodedSection(layout.SECTION_BM25_INDEX, layout.ENCODING_RAW, payload)


def _index_sections(manifest: Manifest, options: BuildOptions, storage: Storage, n: int,
                    graph_job: Job | None, bm25_job: Job | None,
                    step: Callable[[str], None]) -> list[EncodedSection]:
    """HNSW, BM25 and graph payloads, with the manifest changes their setters make.

    A new optional section is one more step here or in ``_media_sections`` (the writer
    sorts sections by id).
    """
    out: list[EncodedSection] = []
    graph: HnswPayload | None = graph_job.result() if graph_job is not None else None
    if graph_job is not None:
        step("hnsw")
    if storage.with_hnsw and graph is not None:
        from .format.sections.hnsw import encode_hnsw

        out.append(EncodedSection(layout.SECTION_HNSW_INDEX, layout.ENCODING_RAW,
                                  encode_hnsw(graph)))
        manifest.index_type, manifest.rerank_policy = "hnsw", "exact"
        manifest.capabilities.supports_ann = True
    if bm25_job is not None:
        out.append(bm25_job.result())
        manifest.capabilities.supports_bm25 = True
        step("bm25")
    if _wants_graph(options, n) and graph is not None:
        from .format.sections.graph import encode_graph
        from .index.graph import graph_edges
        from .index.hnsw import level0_neighbors

        level0 = [level0_neighbors(graph, i) for i in range(n)]
        edges = graph_edges(n, level0, int(options.graph_top_m))
        out.append(EncodedSection(layout.SECTION_GRAPH_ADJACENCY, layout.ENCODING_RAW,
                                  encode_graph(n, edges)))
        _ext(manifest).graph_present = True
        step("graph")
    return out


def _metadata_section(options: BuildOptions, n_chunks: int) -> EncodedSection | None:
    """Section 0x18 from ``options.metadata`` (typed errors for a wrong length or value)."""
    if options.metadata is None:
        if options.metadata_types is not None:
            raise BuildError("metadata_types requires metadata")
        return None
    from .format.sections.metadata import encode_metadata

    if not isinstance(options.metadata, list | tuple):
        raise BuildError(f"metadata must be a list (one dict or None per chunk), not "
                         f"{type(options.metadata).__name__}")
    payload = encode_metadata(options.metadata, n_chunks, options.metadata_types)
    return EncodedSection(layout.SECTION_METADATA, layout.ENCODING_RAW, payload)
