"""The agent verbs: ``build``, ``ask``, ``retrieve``, ``search-text`` and ``doctor``.

Thin commands over ``urna.forge``; the main group imports ``COMMANDS``. Exit status:
0 success; 1 the file or input failed a check (``Error: <Class>: <text>`` on stderr, from the
one boundary in ``urna.cli.main``; a source that cannot be read is ``Error: <text>``,
the text naming the file); 2 usage, and for ``build`` a spec error (``spec error: <text>``);
4 a ``[[models]]`` preset this build cannot provide (``registry error: <text>``). ``doctor``
exits with its first failure code.
``ask``, ``retrieve`` and ``search-text`` take a ``<name>.catalog.json`` (a sharded build)
wherever they take a ``.urna`` file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from urna.errors import CommandLineError, IngestError, RegistryError, SpecError, UsageError

from ._output import echo
from .command import Command, argument, command, option
from .options import COUNT, Choice, PathType, input_file


def _fail(e: BaseException, code: int, prefix: str) -> NoReturn:
    raise CommandLineError(str(e), code, prefix) from None


@contextmanager
def _build_errors() -> Iterator[None]:
    """The build verb's pinned exits; every other error goes to ``urna.cli.main``'s boundary."""
    try:
        yield
    except RegistryError as e:
        _fail(e, 4, "registry error")
    except SpecError as e:
        _fail(e, 2, "spec error")
    except IngestError as e:  # the message names the source; no class name before it
        _fail(e, 1, "Error")


def _open(path: str) -> Any:
    from urna.forge.kernels import announce, file_kernels
    from urna.forge.progress import Progress
    from urna.forge.query import manifest_of
    from urna.runtime.searcher import open_searcher

    f = open_searcher(path)
    announce(file_kernels(manifest_of(f)), Progress())  # a first query compiles them
    return f


# ------------------------------------------------------------------------------ build


@command("build")
@option("--spec", "spec_path", required=True, type=PathType(dir_okay=False),
              help="corpus.toml (or .json / .yaml) build spec.")
@option("--sample", type=COUNT, default=None,
              help="Keep N evenly spaced rows (a quick trial build).")
@option("--out-dir", default=None, help="Override [output] dir.")
@option("--cache-dir", default=None, help="Embed-cache root (else URNA_CACHE_DIR, XDG).")
@option("--dry-run", is_flag=True,
              help="Validate, check every source is readable and print the plan; load nothing.")
@option("--json", "as_json", is_flag=True,
              help="The result (or the --dry-run plan) as JSON; the default for the result "
                   "when stdout is not a terminal.")
@option("--models", "models", default=None,
              help="Comma list of [[models]] presets to build (a subset; keeps the lock).")
@option("--rebuild-only", is_flag=True,
              help="Re-emit from the embed cache only and compare the build lock.")
@option("--strict-env", is_flag=True, help="With --rebuild-only: a lock divergence fails.")
@option("--stop-on-error", is_flag=True,
              help="documents source: stop at the first unusable file instead of skipping it.")
@option("--shards", type=COUNT, default=None,
              help="Build N standalone shard files plus <name>.catalog.json (rows assigned "
                   "by a hash of their key; a rerun skips finished shards).")
@option("--engine", type=Choice(["local", "ray"]), default=None,
              help="With --shards: run in process (the default), or on Ray.")
@option("--address", default=None,
              help="With --shards: the Ray cluster to join (implies --engine ray).")
@option("--update", is_flag=True,
              help="Keep <out>/<name>.catalog.json living: write only the new and changed "
                   "rows as a segment, tombstone the changed and deleted ones.")
def build_cmd(spec_path: str, sample: int | None, out_dir: str | None, cache_dir: str | None,
              dry_run: bool, as_json: bool, models: str | None, rebuild_only: bool,
              strict_env: bool, stop_on_error: bool, shards: int | None, engine: str | None,
              address: str | None, update: bool) -> None:
    """[agent] Build .urna file(s) from a declarative spec.

    On a terminal: progress bars on stderr and a short summary; the result JSON with --json
    or when stdout is a pipe. Example: urna build --spec examples/quickstart/corpus.toml
    """
    if shards is None and (engine or address):
        raise UsageError("--engine and --address need --shards")
    if shards is not None and (rebuild_only or models):
        raise UsageError("--shards cannot be combined with --rebuild-only or --models")
    if address and engine == "local":
        raise UsageError("--address joins a Ray cluster: it needs --engine ray")
    from urna.forge.plan import format_plan, plan
    from urna.forge.spec import load_spec

    report = lambda m: echo(m, err=True)  # noqa: E731
    with _build_errors():
        spec = load_spec(spec_path)
        if stop_on_error:
            spec.source.on_error = "stop"
        if dry_run:
            p = plan(spec, out_dir=out_dir, cache_dir=cache_dir)
            echo(json.dumps(p, indent=1, sort_keys=True) if as_json else format_plan(p))
            return
        if update:
            if shards is not None or rebuild_only or models or sample:
                raise UsageError("--update cannot be combined with --shards, --sample, "
                                       "--rebuild-only or --models")
            from urna.forge.update import update as update_living

            result = update_living(spec, out_dir=out_dir)
            echo(json.dumps(result, indent=1, sort_keys=True))
            return
        if shards is not None:
            from contextlib import redirect_stdout

            from urna.forge.shard import build_sharded

            # stdout carries the result alone: Ray prints a raylet's error messages (a worker
            # died and was retried) on stdout, so whatever the build prints goes to stderr
            with redirect_stdout(sys.stderr):
                result = build_sharded(spec, n_shards=shards,
                                       engine=engine or ("ray" if address else "local"),
                                       address=address, sample=sample, out_dir=out_dir,
                                       cache_dir=cache_dir, report=report)
        else:
            from urna.forge.pipeline import build

            result = build(spec, sample=sample, out_dir=out_dir, cache_dir=cache_dir,
                           rebuild_only=rebuild_only, strict_env=strict_env,
                           models=[m for m in models.split(",") if m] if models else None,
                           report=report)
    if as_json or not sys.stdout.isatty():
        echo(json.dumps(result, indent=1, sort_keys=True))
    else:
        from urna.forge.summary import format_result

        echo(format_result(result))


# ------------------------------------------------------------------- ask / retrieve


def _query_options(fn: Any) -> Any:
    from .search_cmds import where_option

    fn = where_option(fn)
    fn = option("--model-path", default=None,
                      help="Local model dir (a sentence-transformers snapshot).")(fn)
    fn = option("--candidates", type=COUNT, default=None,
                      help="Candidates per path (default max(4k, 64)).")(fn)
    fn = option("-k", "k", type=COUNT, default=10, show_default=True)(fn)
    fn = argument("text")(fn)
    return argument("file", type=input_file(exists=True, dir_okay=False, as_path=False))(fn)


def _rank_option(fn: Any) -> Any:
    from urna.runtime.ranks import RANKS

    # default None: forge.query.DEFAULT_RANK decides, without importing forge at start-up
    return option("--rank", type=Choice(RANKS), default=None,
                        help="fused (the default, the best measured): cosine + BM25; "
                             "cosine: the reference's order exactly.")(fn)


def _recall(route: str) -> str:
    return "1" if route == "exact" else "(not computed; rerank guarantees real cosine)"


def _hit_dict(h: Any) -> dict[str, Any]:
    keys = ("chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
            "citation_id", "text", "file_hash", "content_hash", "rerank_source")
    out = {k: getattr(h, k) for k in keys}
    if h.fused_score is not None:  # a fused list: the evidence that ordered it
        out["lexical_score"], out["fused_score"] = h.lexical_score, h.fused_score
    if h.metadata is not None:  # only files with a metadata section
        out["metadata"] = h.to_dict()["metadata"]
    return out


def _where(text: str | None) -> dict[str, Any] | None:
    from .search_cmds import parse_where

    return parse_where(text)


@command("ask")
@_query_options
@_rank_option
@option("--disclose", type=Choice(["answer", "explain"]), default="answer",
              show_default=True, help="explain: also print route, candidates, rerank.")
@option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def ask_cmd(file: str, text: str, k: int, candidates: int | None, model_path: str | None,
            where: str | None, rank: str | None, disclose: str, as_json: bool) -> None:
    """[agent] Ask a question in plain text; prints cited passages.

    Example: urna ask quickstart.urna "can I use this offline" -k 1
    """
    from urna.forge.query import DEFAULT_RANK, ask

    w = _where(where)
    with _open(file) as f:
        res = ask(f, text, k, candidates=candidates, model_path=model_path, where=w,
                  rank=rank or DEFAULT_RANK)
    budget = res.candidate_budget or {}
    if as_json:
        doc: dict[str, Any] = {"route": res.route, "candidates": budget,
                               "fusion": res.explain.fusion_mode,
                               "rerank_source": res.disclosure}
        if res.explain.filter is not None:
            doc["filter"] = res.explain.filter
        doc["hits"] = [_hit_dict(h) for h in res.hits]
        echo(json.dumps(doc, indent=1))
        return
    out: list[str] = []
    if disclose == "explain":
        c = budget
        out += [f"route:         {res.route}",
                f"candidates:    exact={c['exact']} ann={c['ann']} bm25={c['bm25']} "
                f"graph={c['graph']} fusion={res.explain.fusion_mode}",
                f"rerank_source: {res.disclosure}",
                f"recall:        {_recall(res.route)}"]
        if res.explain.filter is not None:
            fi = res.explain.filter
            out.append(f"filter:        {fi['path']} matches={fi['matches']} "
                       f"selectivity={fi['selectivity']:.6g}")
        out.append("")
    if not res.hits:
        out.append("no hits.")
    for h in res.hits:
        out += [h.text, f"  -- {h.citation_id} ({h.source_uri})", ""]
    echo("\n".join(out))


@command("retrieve")
@_query_options
@_rank_option
@option("--format", "fmt", type=Choice(["jsonl", "json"]), default="jsonl",
              show_default=True)
def retrieve_cmd(file: str, text: str, k: int, candidates: int | None, model_path: str | None,
                 where: str | None, rank: str | None, fmt: str) -> None:
    """[agent] Retrieve cited hits as JSON lines (or one JSON array) for a program.

    Example: urna retrieve quickstart.urna "how do citations work" -k 2 --format jsonl
    """
    from urna.forge.query import DEFAULT_RANK, ask

    w = _where(where)
    with _open(file) as f:
        res = ask(f, text, k, candidates=candidates, model_path=model_path, where=w,
                  rank=rank or DEFAULT_RANK)
    hits = [_hit_dict(h) for h in res.hits]
    if fmt == "json":
        echo(json.dumps(hits, indent=2))
    else:
        for h in hits:
            echo(json.dumps(h, separators=(",", ":")))


@command("search-text")
@_query_options
@option("--skip-model-hash-check", is_flag=True,
              help="Only lets a corpus with the all-zero placeholder hash through.")
@option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def search_text_cmd(file: str, text: str, k: int, candidates: int | None,
                    model_path: str | None, where: str | None, skip_model_hash_check: bool,
                    as_json: bool) -> None:
    """[engine] Embed TEXT with the file's model and search (routed like ask).

    Example: urna search-text quickstart.urna "how do citations work" -k 3
    """
    from urna.forge.query import manifest_of, search_text

    w = _where(where)
    with _open(file) as f:
        model = manifest_of(f).get("embedding_model", "?")
        echo(f"[urna] embedding query with {model} in-process"
                   + (f" (--model-path {model_path})" if model_path else ""), err=True)
        res = search_text(f, text, k, candidates=candidates, model_path=model_path,
                          skip_placeholder=skip_model_hash_check, where=w)
    if as_json:
        keys = ("chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
                "embedding_model", "index_type", "reranked", "file_hash", "content_hash",
                "citation_id")
        echo(json.dumps({"index_type": res.route, "k_requested": k,
                               "k_returned": len(res.hits), "truncated": res.truncated,
                               "query_time_ms": res.query_time_ms,
                               "hits": [{key: getattr(h, key) for key in keys}
                                        | ({} if h.metadata is None
                                           else {"metadata": h.to_dict()["metadata"]})
                                        for h in res.hits]}, indent=1))
        return
    c = res.candidate_budget or {}
    lines = [f"index_type:   {res.route}",
             f"recall:       {_recall(res.route)}",
             f"truncated:    {'true' if res.truncated else 'false'}",
             f"k_requested:  {k}", f"k_returned:   {len(res.hits)}",
             f"candidates:   exact={c['exact']} ann={c['ann']} bm25={c['bm25']} "
             f"graph={c['graph']} fusion={res.explain.fusion_mode}",
             f"query_time:   {res.query_time_ms:.3f} ms", "hits:"]
    for i, h in enumerate(res.hits, 1):
        lines.append(
            f"  [{i:>3}] chunk_id={h.chunk_id} score={h.score:.6f} score_type={h.score_type} "
            f"source_uri={h.source_uri} offset={h.offset_start}-{h.offset_end} "
            f"model={h.embedding_model} index_type={h.index_type} "
            f"reranked={'true' if h.reranked else 'false'} file_hash={h.file_hash} "
            f"content_hash={h.content_hash} citation_id={h.citation_id}")
    echo("\n".join(lines))


# ----------------------------------------------------------------------------- doctor


@command("doctor")
@option("--json", "as_json", is_flag=True, help="The checks as one JSON document.")
def doctor_cmd(as_json: bool) -> None:
    """[engine] Check the install: package, potion table and hash, extras, one embed.

    Exit 0 ok, 3 a required dependency is missing, 5 the potion table is missing or an
    LFS pointer, 6 the offline embed failed.
    """
    from urna.forge.doctor import run_checks

    checks, code = run_checks()
    if as_json:
        echo(json.dumps({"ok": code == 0, "exit_code": code, "checks": checks}, indent=1))
    else:
        echo("urna doctor")
        for c in checks:
            status = c["status"] if c["status"] != "fail" else f"fail({c['code']})"
            echo(f"  {status:<8} {c['what']}: {c['detail']}")
        echo(f"urna doctor: {'ok' if code == 0 else 'failed'}")
    sys.exit(code)


COMMANDS: list[Command] = [build_cmd, ask_cmd, retrieve_cmd, search_text_cmd, doctor_cmd]
