"""Engine verbs over an opened file: ``stats``, ``search``, ``search-ann``, ``search-graph``,
``search-space``, ``benchmark``, ``media`` (04-surface §2.2-2.3).

Each verb parses its arguments, makes one library call (a ``Searcher`` search, a file or a
shard catalog alike; ``runtime.stats``; ``runtime.benchmark``) and prints either the
reference's human text or, with ``--json``, one JSON document on stdout. Nothing here routes,
counts candidates or measures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CommandLineError, SpaceNotFound
from ._output import echo, emit_json
from .command import Command, argument, command, option
from .options import BEAM, COUNT, ENGINE_K, HOPS, SEED, Choice, PathType, input_file

if TYPE_CHECKING:
    from pathlib import Path

    from ..runtime import SearchResult, UrnaFile
    from ..runtime.searcher import Searcher

# The runtime, filters, stats and benchmark are imported by the verbs that call them: a
# process runs one verb, and the CLI's start-up is part of every answer's time. FILE is the
# text ``str(Path(value))`` spells (how the verbs print it), so pathlib stays out of a search.
FILE = input_file(dir_okay=False, as_path=False, shown=True)


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
        raise CommandLineError(f"invalid query JSON: {exc}") from exc
    if not isinstance(value, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise CommandLineError("invalid query JSON: expected an array of numbers")
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
              f"query_time:   {result.query_time_ms:.3f} ms"]
    info = result.explain.filter
    if info is not None:  # only with --where: the reference's block is unchanged without it
        lines.append(f"filter:       {info['path']} matches={info['matches']} "
                     f"selectivity={info['selectivity']:.6g}")
    lines.append("hits:")
    for i, h in enumerate(result.hits, 1):
        line = (
            f"  [{i:3}] chunk_id={h.chunk_id} score={h.score:.6f} score_type={h.score_type} "
            f"source_uri={h.source_uri} offset={h.offset_start}-{h.offset_end} "
            f"model={h.embedding_model} index_type={h.index_type} reranked={_b(h.reranked)} "
            f"file_hash={h.file_hash} content_hash={h.content_hash} citation_id={h.citation_id}")
        if h.metadata is not None:
            line += " metadata=" + json.dumps(h.to_dict()["metadata"], ensure_ascii=False,
                                              sort_keys=True)
        lines.append(line)
    return lines


def _show(result: SearchResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
    else:
        echo("\n".join(result_lines(result)))


_json_flag = option("--json", "as_json", is_flag=True, help="Print one JSON document.")
_k_opt = option("-k", "k", type=ENGINE_K, default=10, show_default=True,
                      help="Hits to return.")
where_option = option(
    "--where", "where", default=None, metavar="JSON",
    help='Only chunks matching this filter, e.g. \'{"lang": "pt", "year": {"$gte": 2020}}\' '
         "(see README, Metadata and filters).")


def parse_where(text: str | None) -> dict[str, Any] | None:
    """The --where JSON as a filter mapping (None when the option is absent)."""
    if text is None:
        return None
    from ..index.filter import parse_where_json

    return parse_where_json(text)


def _search(file: str, run: Callable[[Searcher], SearchResult]) -> SearchResult:
    """Run one search on FILE: a .urna file, or a shard catalog (its hits merged)."""
    from ..runtime.searcher import open_searcher

    with open_searcher(file) as searcher:
        return run(searcher)


@command("search")
@argument("file", type=FILE)
@argument("query")
@_k_opt
@where_option
@_json_flag
def search_cmd(file: str, query: str, k: int, where: str | None, as_json: bool) -> None:
    """[engine] Exact top-k of QUERY (a JSON array of numbers) over all chunks of FILE.

    Example: urna search corpus.urna "[0.1, 0.2, 0.3, 0.4]" -k 5 --where '{"lang": "en"}'
    """
    q, w = parse_query(query), parse_where(where)
    _show(_search(file, lambda s: s.search(q, k, where=w)), as_json)


@command("search-ann")
@argument("file", type=FILE)
@argument("query")
@_k_opt
@option("--ef", type=BEAM, default=100, show_default=True,
              help="HNSW beam width (never below the file's ef_construction).")
@where_option
@_json_flag
def search_ann_cmd(file: str, query: str, k: int, ef: int, where: str | None,
                   as_json: bool) -> None:
    """[engine] HNSW candidates reranked by exact cosine; exact without an HNSW section.

    Example: urna search-ann corpus.urna "[0.1, 0.2, 0.3, 0.4]" -k 5 --ef 200
    """
    q, w = parse_query(query), parse_where(where)
    _show(_search(file, lambda s: s.search_ann(q, k, ef, where=w)), as_json)


@command("search-graph")
@argument("file", type=FILE)
@argument("query")
@_k_opt
@option("--hops", type=HOPS, default=1, show_default=True, help="BFS levels.")
@option("--ef", type=BEAM, default=100, show_default=True, help="Exact seed budget.")
@where_option
@_json_flag
def search_graph_cmd(file: str, query: str, k: int, hops: int, ef: int, where: str | None,
                     as_json: bool) -> None:
    """[engine] Exact seeds expanded over the chunk graph, reranked; exact without a graph.

    Example: urna search-graph corpus.urna "[0.1, 0.2, 0.3, 0.4]" --hops 2
    """
    q, w = parse_query(query), parse_where(where)
    _show(_search(file, lambda s: s.search_graph(q, k, hops, ef, where=w)), as_json)


@command("search-space")
@argument("file", type=FILE)
@argument("query")
@option("--space", "space", required=True, help="Space name (see `urna stats`).")
@_k_opt
@option("--expect-model-hash", default=None, help="Refuse a space built with another model.")
@where_option
@_json_flag
def search_space_cmd(file: str, query: str, space: str, k: int, expect_model_hash: str | None,
                     where: str | None, as_json: bool) -> None:
    """[engine] Exact search over one named vector space of FILE.

    Example: urna search-space corpus.urna "[1, 0]" --space vision -k 3
    """
    q, w = parse_query(query), parse_where(where)
    _show(_search(file, lambda s: s.search_space(space, q, k, expect_model_hash, where=w)),
          as_json)


@command("stats")
@argument("file", type=FILE)
@_json_flag
def stats_cmd(file: str, as_json: bool) -> None:
    """[engine] Size, counts, dtype, contract, sections, spaces and hashes of FILE.

    Example: urna stats corpus.urna
    """
    from ..runtime.stats import stats_document
    from .file_cmds import read_file

    d = stats_document(file, read_file(file))
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
    if "metadata" in d:  # only files with section 0x18
        schema = d["metadata"]
        out.append(f"metadata:     {'unreadable' if schema is None else len(schema)} fields")
        out += [f"  {name:<24} {type_}" for name, type_ in (schema or {}).items()]
    if d["spaces"] is not None:
        out.append(f"spaces:       {len(d['spaces'])}")
        out += [f"  {s['name']:<24} dim={s['dim']:<5} dtype={s['dtype']:<8} n={s['n_vectors']:<7} "
                f"model_hash={s['model_hash']}" for s in d["spaces"]]
    out += [f"file_hash:    {d['file_hash']}", f"content_hash: {d['content_hash']}"]
    echo("\n".join(out))


@command("benchmark")
@argument("file", type=FILE)
@option("-q", "n_queries", type=COUNT, default=100, show_default=True)
@_k_opt
@option("--ann", "ann_ef", type=BEAM, default=None, help="Also time search_ann at this ef.")
@option("--madvise-cold", is_flag=True, help="Add a pass that drops the pages first.")
@option("--space", default=None, help="Benchmark one named space instead.")
@option("--seed", type=SEED, default=0, show_default=True, help="Query generator seed.")
@option("--queries", "source", type=Choice(["own", "random"]), default="own",
              show_default=True, help="Queries drawn from the file's own rows, or random unit "
              "vectors (the reference's benchmark).")
@_json_flag
def benchmark_cmd(file: str, n_queries: int, k: int, ann_ef: int | None, madvise_cold: bool,
                  space: str | None, seed: int, source: str, as_json: bool) -> None:
    """[engine] Latency (mean, p50, p95, p99) and QPS of exact, ANN or space search.

    Example: urna benchmark corpus.urna -q 200 -k 10 --ann 100
    """
    from ..runtime import open_file
    from ..runtime.benchmark import run_benchmark

    try:
        with open_file(file) as f:
            report = run_benchmark(f, n_queries, k, ann_ef=ann_ef, madvise_cold=madvise_cold,
                                   space=space, seed=seed, source=source)
    except SpaceNotFound:
        raise CommandLineError(f"space '{space}' not found in the space_table") from None
    if as_json:
        doc: dict = {"file": str(file), "queries": n_queries, "k": k,
                     "passes": [p.to_dict() for p in report.passes],
                     "first_query_ms": report.first_query_ms}
        if report.recall_ann_vs_exact is not None:
            doc["recall_ann_vs_exact"] = report.recall_ann_vs_exact
        emit_json(doc)
        return
    lines: list[str] = []
    for event in report.events:
        if isinstance(event, str):
            lines.append(event)
            continue
        lines.append(f"{event.name}:")
        lines.extend(f"  {key + ':':<7} {getattr(event, key):.3f} ms"
                     for key in ("mean", "p50", "p95", "p99"))
        lines.append(f"  {'qps:':<7} {event.qps:.1f}")
    if report.recall_ann_vs_exact is not None:
        lines.append(f"  recall@{k} (ANN vs exact): {report.recall_ann_vs_exact:.4f}")
    lines.append("first query (cold, kept out of the [hot] figures): " + ", ".join(
        f"{path} {ms:.3f} ms" for path, ms in report.first_query_ms.items()))
    echo("\n".join(lines))


@command("media")
@argument("file", type=FILE)
@option("--export", "export", type=PathType(file_okay=False, as_path=True),
              default=None, help="Write each inlined blob (hash-checked first) into this folder.")
@_json_flag
def media_cmd(file: str, export: Path | None, as_json: bool) -> None:
    """[engine] List the media blobs FILE references; export the inlined ones.

    Example: urna media corpus.urna --export ./media
    """
    from ..runtime import open_file

    with open_file(file) as f:
        if not f.has_blobs:
            if as_json:
                emit_json({"file": str(file), "blobs": None})
            else:
                echo(f"no media: {file} declares no blob_refs (0x14)")
            return
        refs = f.blob_refs()
        inlined = [r for r in refs if r["inlined"]]
        lines = [f"media blobs: {len(refs)} ({len(inlined)} inlined, {len(refs) - len(inlined)} "
                 f"sidecar), inlined bytes: {sum(r['byte_len'] for r in inlined)}"]
        lines += [f"  [{i}] {r['original_uri']} {r['byte_len']} bytes "
                  f"{'inlined' if r['inlined'] else 'sidecar'}" for i, r in enumerate(refs)]
        if not as_json:
            echo("\n".join(lines))
        exported = None
        if export is not None:
            exported = _export(f, file, refs, export)
            if not as_json:
                echo(f"exported {len(exported)} blobs to {export}")
    if as_json:
        emit_json({"file": str(file), "blobs": refs, "exported": exported})


def _export(f: UrnaFile, file: str, refs: list[dict], folder: Path) -> list[str]:
    """Write each inlined blob (hash-checked, safe names) under ``folder``."""
    if not f.has_blob_data:
        raise CommandLineError(
            f"{file} has no blob_data (0x17): its media lives in the sidecar files listed above")
    from ..runtime.media import export_blobs

    return export_blobs(f, folder)


COMMANDS: list[Command] = [stats_cmd, media_cmd, search_cmd, search_ann_cmd,
                                 search_graph_cmd, search_space_cmd, benchmark_cmd]
