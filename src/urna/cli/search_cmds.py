"""Engine verbs over an opened file: ``stats``, ``search``, ``search-ann``, ``search-graph``,
``search-space``, ``benchmark``, ``media`` (04-surface §2.2-2.3).

Each verb parses its arguments, makes one library call and prints either the reference's
human text or, with ``--json``, one JSON document on stdout.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import click
import numpy as np

from ..errors import UrnaError
from ..format.layout import SECTION_SPACE_TABLE, section_name
from ..format.reader import UrnaView
from ..runtime import SearchResult, UrnaFile, open_file
from ..runtime.catalog import is_catalog_path, open_catalog
from ..runtime.hits import FULL_PRECISION, STORED_PRECISION, SearchExplain
from ..runtime.media import export_blobs
from ._output import emit_json

FILE = click.Path(dir_okay=False, path_type=Path)
_ENCODINGS = {0: "raw", 1: "zstd", 2: "float16", 3: "int8", 4: "intpack", 7: "int4"}


def _b(value: bool) -> str:
    return "true" if value else "false"


def _num(x: float) -> str:
    """A float as Rust's ``{}`` prints it: 1.0 -> "1", 0.5 -> "0.5"."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def parse_query(text: str) -> list[float]:
    """QUERY_JSON -> a list of numbers; a usage-level error names the JSON problem."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"invalid query JSON: {exc}") from exc
    if not isinstance(value, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise click.ClickException("invalid query JSON: expected an array of numbers")
    return [float(v) for v in value]


def result_lines(result: SearchResult) -> list[str]:
    """The shared result block of the search family (§2.2)."""
    lines = []
    if result.space is not None:
        lines.append(f"space:        {result.space}")
    recall = ("(not computed; rerank guarantees real cosine)" if math.isnan(result.recall)
              else _num(result.recall))
    lines += [f"index_type:   {result.index_type}", f"recall:       {recall}",
              f"truncated:    {_b(result.truncated)}", f"k_requested:  {result.k_requested}",
              f"k_returned:   {result.k_returned}",
              f"query_time:   {result.query_time_ms:.3f} ms", "hits:"]
    for i, h in enumerate(result.hits, 1):
        lines.append(
            f"  [{i:3}] chunk_id={h.chunk_id} score={h.score:.6f} score_type={h.score_type} "
            f"source_uri={h.source_uri} offset={h.offset_start}-{h.offset_end} "
            f"model={h.embedding_model} index_type={h.index_type} reranked={_b(h.reranked)} "
            f"file_hash={h.file_hash} content_hash={h.content_hash} citation_id={h.citation_id}")
    return lines


def _show(result: SearchResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo("\n".join(result_lines(result)))


_json_flag = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
_k_opt = click.option("-k", "k", type=int, default=10, show_default=True, help="Hits to return.")


def _search(file: Path, method: str, q, k: int, *args) -> SearchResult:
    """Run ``<method>_result`` on a file, or ``<method>`` on a shard catalog (merged hits)."""
    if not is_catalog_path(file):
        with open_file(file) as f:
            return getattr(f, f"{method}_result")(q, k, *args)
    started = time.perf_counter()
    with open_catalog(file) as cat:
        hits = getattr(cat, method)(q, k, *args)
        n, dtype = cat.n_embeddings, cat.dtype
    route = hits[0].index_type if hits else "exact"
    exact = route == "exact"
    source = FULL_PRECISION if dtype == "float32" else STORED_PRECISION
    explain = SearchExplain(route=route, exact_candidates=n if exact else 0, rerank_source=source,
                            recall_estimate=1.0 if exact else math.nan)
    return SearchResult(hits, route, 1.0 if exact else math.nan, k < n, k,
                        (time.perf_counter() - started) * 1000.0, explain)


@click.command("search")
@click.argument("file", type=FILE)
@click.argument("query")
@_k_opt
@_json_flag
def search_cmd(file: Path, query: str, k: int, as_json: bool) -> None:
    """[engine] Exact top-k of QUERY (a JSON array of numbers) over all chunks of FILE.

    Example: urna search corpus.urna "[0.1, 0.2, 0.3, 0.4]" -k 5
    """
    _show(_search(file, "search", parse_query(query), k), as_json)


@click.command("search-ann")
@click.argument("file", type=FILE)
@click.argument("query")
@_k_opt
@click.option("--ef", type=int, default=100, show_default=True,
              help="HNSW beam width (never below the file's ef_construction).")
@_json_flag
def search_ann_cmd(file: Path, query: str, k: int, ef: int, as_json: bool) -> None:
    """[engine] HNSW candidates reranked by exact cosine; exact without an HNSW section.

    Example: urna search-ann corpus.urna "[0.1, 0.2, 0.3, 0.4]" -k 5 --ef 200
    """
    _show(_search(file, "search_ann", parse_query(query), k, ef), as_json)


@click.command("search-graph")
@click.argument("file", type=FILE)
@click.argument("query")
@_k_opt
@click.option("--hops", type=int, default=1, show_default=True, help="BFS levels.")
@click.option("--ef", type=int, default=100, show_default=True, help="Exact seed budget.")
@_json_flag
def search_graph_cmd(file: Path, query: str, k: int, hops: int, ef: int, as_json: bool) -> None:
    """[engine] Exact seeds expanded over the chunk graph, reranked; exact without a graph.

    Example: urna search-graph corpus.urna "[0.1, 0.2, 0.3, 0.4]" --hops 2
    """
    _show(_search(file, "search_graph", parse_query(query), k, hops, ef), as_json)


@click.command("search-space")
@click.argument("file", type=FILE)
@click.argument("query")
@click.option("--space", "space", required=True, help="Space name (see `urna stats`).")
@_k_opt
@click.option("--expect-model-hash", default=None, help="Refuse a space built with another model.")
@_json_flag
def search_space_cmd(file: Path, query: str, space: str, k: int, expect_model_hash: str | None,
                     as_json: bool) -> None:
    """[engine] Exact search over one named vector space of FILE.

    Example: urna search-space corpus.urna "[1, 0]" --space vision -k 3
    """
    q = parse_query(query)
    with open_file(file) as f:
        _show(f.search_space_result(space, q, k, expect_model_hash), as_json)


def stats_document(file: Path) -> dict:
    """What ``stats`` reports, from the reader alone (as the reference does)."""
    view = UrnaView.from_bytes(file.read_bytes())
    m, h = view.manifest, view.header
    from ..index.exact import simd_backend

    spaces = None
    if view.entry(SECTION_SPACE_TABLE) is not None:
        try:
            spaces = [{"name": s.name, "dim": s.dim, "dtype": s.dtype, "n_vectors": s.n_vectors,
                       "model_hash": s.model_hash} for s in view.space_entries()]
        except UrnaError:  # the reference skips a table it cannot decode
            spaces = None
    return {
        "file": str(file), "size": h.file_size, "chunks": h.n_chunks,
        "embeddings": h.n_embeddings, "dim": h.embedding_dim, "mrl_dim": m.mrl_dim,
        "full_dim": m.full_dim, "dtype": m.dtype, "metric": m.metric,
        "score_type": m.score_type, "normalize": m.normalize, "index_type": m.index_type,
        "rerank": m.rerank_policy, "model": m.embedding_model, "model_hash": m.model_hash,
        "chunker": m.chunker_version, "supports_ann": m.capabilities.supports_ann,
        "supports_bm25": m.capabilities.supports_bm25, "simd_backend": simd_backend(),
        "sections": [{"section_id": e.section_id, "name": section_name(e.section_id) or "unknown",
                      "encoding": _ENCODINGS.get(e.encoding, "unknown"), "size": e.size}
                     for e in view.entries],
        "spaces": spaces, "file_hash": view.file_hash(), "content_hash": view.content_hash(),
    }


@click.command("stats")
@click.argument("file", type=FILE)
@_json_flag
def stats_cmd(file: Path, as_json: bool) -> None:
    """[engine] Size, counts, dtype, contract, sections, spaces and hashes of FILE.

    Example: urna stats corpus.urna
    """
    d = stats_document(file)
    if as_json:
        emit_json(d)
        return
    out = [f"file:         {d['file']}",
           f"size:         {d['size']} bytes ({d['size'] / 1e6:.2f} MB)",
           f"chunks:       {d['chunks']}", f"embeddings:   {d['embeddings']}",
           f"dim:          {d['dim']}"]
    if d["mrl_dim"] is not None and d["full_dim"] is not None:
        out += [f"mrl_dim:      {d['mrl_dim']} (prefix of {d['full_dim']})",
                f"full_dim:     {d['full_dim']}"]
    out += [f"dtype:        {d['dtype']}", f"metric:       {d['metric']}",
            f"score_type:   {d['score_type']}", f"normalize:    {d['normalize']}",
            f"index_type:   {d['index_type']}", f"rerank:       {d['rerank']}",
            f"model:        {d['model']}", f"model_hash:   {d['model_hash']}",
            f"chunker:      {d['chunker']}", f"supports_ann: {_b(d['supports_ann'])}",
            f"supports_bm25:{_b(d['supports_bm25'])}", f"simd_backend: {d['simd_backend']}",
            f"sections:     {len(d['sections'])}"]
    out += [f"  0x{s['section_id']:02x} {s['name']:<24} encoding={s['encoding']:<8} "
            f"{s['size']} bytes"
            for s in d["sections"]]
    if d["spaces"] is not None:
        out.append(f"spaces:       {len(d['spaces'])}")
        out += [f"  {s['name']:<24} dim={s['dim']:<5} dtype={s['dtype']:<8} n={s['n_vectors']:<7} "
                f"model_hash={s['model_hash']}" for s in d["spaces"]]
    out += [f"file_hash:    {d['file_hash']}", f"content_hash: {d['content_hash']}"]
    click.echo("\n".join(out))


def _latency(times: list[float]) -> dict:
    t = sorted(times)

    def pick(q: float) -> float:
        return t[int(round((len(t) - 1) * q))]  # the reference's nearest-rank rule
    return {"mean": sum(t) / len(t), "p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99),
            "qps": len(t) / (sum(t) / 1000.0) if sum(t) > 0 else float("inf")}


def _timed(f: UrnaFile, queries: np.ndarray, call, cold: bool) -> list[float]:
    times = []
    for q in queries:
        if cold:
            f.madvise_cold()
        t0 = time.perf_counter()
        call(q)
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def _own_queries(f: UrnaFile, n: int, seed: int) -> np.ndarray:
    """``n`` of the file's own (non-zero) rows, drawn with replacement: realistic queries."""
    rng = np.random.default_rng(seed)
    picks = f.vectors(rng.integers(0, f.n_embeddings, size=4 * n))
    picks = picks[np.linalg.norm(picks, axis=1) > 0][:n]
    if len(picks) < n:  # a (crafted) file of zero rows: fall back to random unit queries
        return _unit_queries(n, f.embedding_dim, seed)
    return np.ascontiguousarray(picks, dtype=np.float32)


def _unit_queries(n: int, dim: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).random((n, dim), dtype=np.float32)  # [0, 1) as the reference
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    return np.where(norms > 0, q / np.maximum(norms, 1e-30), q).astype(np.float32)


@click.command("benchmark")
@click.argument("file", type=FILE)
@click.option("-q", "n_queries", type=click.IntRange(min=1), default=100, show_default=True)
@_k_opt
@click.option("--ann", "ann_ef", type=int, default=None, help="Also time search_ann at this ef.")
@click.option("--madvise-cold", is_flag=True, help="Add a pass that drops the pages first.")
@click.option("--space", default=None, help="Benchmark one named space instead.")
@click.option("--seed", type=int, default=0, show_default=True, help="Query generator seed.")
@click.option("--queries", "source", type=click.Choice(["own", "random"]), default="own",
              show_default=True, help="Queries drawn from the file's own rows, or random unit "
              "vectors (the reference's benchmark).")
@_json_flag
def benchmark_cmd(file: Path, n_queries: int, k: int, ann_ef: int | None, madvise_cold: bool,
                  space: str | None, seed: int, source: str, as_json: bool) -> None:
    """[engine] Latency (mean, p50, p95, p99) and QPS of exact, ANN or space search.

    Example: urna benchmark corpus.urna -q 200 -k 10 --ann 100
    """
    doc: dict = {"file": str(file), "queries": n_queries, "k": k, "passes": []}
    lines: list[str] = []

    def report(header: str, times: list[float]) -> None:
        lat = _latency(times)
        doc["passes"].append({"name": header, **lat})
        lines.append(f"{header}:")
        lines.extend(f"  {key + ':':<7} {lat[key]:.3f} ms" for key in ("mean", "p50", "p95", "p99"))
        lines.append(f"  {'qps:':<7} {lat['qps']:.1f}")

    with open_file(file) as f:
        if space is not None:
            entry = next((s.entry for s in f._state.spaces or () if s.entry.name == space), None)
            if entry is None:
                raise click.ClickException(f"space '{space}' not found in the space_table")
            qs = _unit_queries(n_queries, entry.dim, seed)
            head = f"Space '{space}' ({n_queries} queries, dim={entry.dim}, dtype={entry.dtype})"
            call = lambda q: f.search_space(space, q, k)  # noqa: E731
            report(f"{head} [hot]", _timed(f, qs, call, False))
            if madvise_cold:
                report(f"{head} [madvise-cold]", _timed(f, qs, call, True))
        else:
            qs = (_own_queries(f, n_queries, seed) if source == "own"
                  else _unit_queries(n_queries, f.embedding_dim, seed))
            head = (f"Exact ({n_queries} queries, dim={f.embedding_dim}, dtype={f.dtype}, "
                    f"simd={f.simd_backend})")
            report(f"{head} [hot]", _timed(f, qs, lambda q: f.search(q, k), False))
            if madvise_cold:
                report(f"{head} [madvise-cold]", _timed(f, qs, lambda q: f.search(q, k), True))
                lines.append("  (note: posix_madvise(MADV_DONTNEED) is a hint, not a guarantee. "
                             "Treat as an upper bound on cold-cache latency, not absolute cold.)")
            if ann_ef is not None and not f.has_ann:
                lines.append("(no HNSW section — ANN bench skipped)")
            elif ann_ef is not None:
                ann = lambda q: f.search_ann(q, k, ann_ef)  # noqa: E731
                report(f"ANN ef={ann_ef} ({n_queries} queries) [hot]", _timed(f, qs, ann, False))
                if madvise_cold:
                    report(f"ANN ef={ann_ef} ({n_queries} queries) [madvise-cold]",
                           _timed(f, qs, ann, True))
                overlap = 0.0
                for q in qs:
                    want = {h.chunk_id for h in f.search(q, k)}
                    overlap += sum(h.chunk_id in want for h in f.search_ann(q, k, ann_ef)) / k
                doc["recall_ann_vs_exact"] = overlap / n_queries
                lines.append(f"  recall@{k} (ANN vs exact): {overlap / n_queries:.4f}")
    if as_json:
        emit_json(doc)
    else:
        click.echo("\n".join(lines))


@click.command("media")
@click.argument("file", type=FILE)
@click.option("--export", "export", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Write each inlined blob (hash-checked first) into this folder.")
@_json_flag
def media_cmd(file: Path, export: Path | None, as_json: bool) -> None:
    """[engine] List the media blobs FILE references; export the inlined ones.

    Example: urna media corpus.urna --export ./media
    """
    with open_file(file) as f:
        if not f.has_blobs:
            if as_json:
                emit_json({"file": str(file), "blobs": None})
            else:
                click.echo(f"no media: {file} declares no blob_refs (0x14)")
            return
        refs = f.blob_refs()
        inlined = [r for r in refs if r["inlined"]]
        lines = [f"media blobs: {len(refs)} ({len(inlined)} inlined, {len(refs) - len(inlined)} "
                 f"sidecar), inlined bytes: {sum(r['byte_len'] for r in inlined)}"]
        lines += [f"  [{i}] {r['original_uri']} {r['byte_len']} bytes "
                  f"{'inlined' if r['inlined'] else 'sidecar'}" for i, r in enumerate(refs)]
        if not as_json:
            click.echo("\n".join(lines))
        exported = None
        if export is not None:
            exported = _export(f, file, refs, export)
            if not as_json:
                click.echo(f"exported {len(exported)} blobs to {export}")
    if as_json:
        emit_json({"file": str(file), "blobs": refs, "exported": exported})


def _export(f: UrnaFile, file: Path, refs: list[dict], folder: Path) -> list[str]:
    """Write each inlined blob (hash-checked, safe names) under ``folder``."""
    if not f.has_blob_data:
        raise click.ClickException(
            f"{file} has no blob_data (0x17): its media lives in the sidecar files listed above")
    return export_blobs(f, folder)


COMMANDS: list[click.Command] = [stats_cmd, media_cmd, search_cmd, search_ann_cmd,
                                 search_graph_cmd, search_space_cmd, benchmark_cmd]
