"""The ``eval`` verb: answer quality of a built file on labelled queries (forge/evaluate.py)."""

from __future__ import annotations

import math
from pathlib import Path

from urna.cli.options import COUNT, Choice, PathType, input_file

from ..forge.evaluate import MODES, RECALL_DEPTH, EvalReport, evaluate_path
from ._output import echo, emit_json
from .command import argument, command, option


def _cell(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


def report_lines(report: EvalReport) -> list[str]:
    """The human table: one row per mode."""
    k = report.k
    head = (f"{'mode':<8} {'nDCG@' + str(k):>8} {'MRR@' + str(k):>8} {'R@1':>6} "
            f"{'R@' + str(k):>6} {'R@' + str(RECALL_DEPTH):>6} {'ms/query':>9}")
    lines = [f"{report.n_judged} judged queries of {report.n_queries}, "
             f"judged per {report.level}", head]
    for m in report.modes:
        lines.append(f"{m.mode:<8} {_cell(m.ndcg):>8} {_cell(m.mrr):>8} {_cell(m.recall_1):>6} "
                     f"{_cell(m.recall_k):>6} {_cell(m.recall_100):>6} {m.ms_per_query:>9.2f}")
    return lines


@command("eval")
@argument("file", type=input_file(exists=True, dir_okay=False))
@option("--queries", "queries", required=True,
              type=PathType(exists=True, dir_okay=False, as_path=True),
              help='JSONL: {"id","text","relevant":[...]} lines, or BEIR queries.jsonl.')
@option("--qrels", type=PathType(exists=True, as_path=True), default=None,
              help="BEIR qrels TSV (or a directory of them); corpus-id = chunk id or source_uri.")
@option("-k", "k", type=COUNT, default=10, show_default=True,
              help="Cut-off of nDCG, MRR and the second recall column.")
@option("--mode", "--rank", "modes", type=Choice(MODES), multiple=True,
              help="Ranking to measure (repeatable; default: every one the file supports).")
@option("--candidates", type=COUNT, default=None,
              help="Candidates per list for hybrid and fused (default max(4k, 64)).")
@option("--model-path", default=None, help="Local directory of the file's embedder.")
@option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def eval_cmd(file: Path, queries: Path, qrels: Path | None, k: int, modes: tuple[str, ...],
             candidates: int | None, model_path: str | None, as_json: bool) -> None:
    """Measure nDCG@k, MRR@k, Recall@1/k/100 and latency of each ranking on labelled queries."""
    report = evaluate_path(file, queries, qrels, k=k, modes=modes or None,
                           candidates=candidates, model_path=model_path)
    if as_json:
        emit_json(report.to_dict())
    else:
        echo("\n".join(report_lines(report)))


COMMANDS = [eval_cmd]
