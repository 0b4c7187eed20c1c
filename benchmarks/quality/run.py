"""The answer-quality runner: build the labelled sets (when missing) and ``urna eval`` each.

``python benchmarks/quality/run.py [set ...]`` (or ``make quality``) prints one markdown
table: nDCG@10, MRR@10, Recall@1/10/100 and ms/query per set and mode, as in the README.
"""

from __future__ import annotations

import sys

from labelled_sets import CACHE, SETS, build_set

from urna.forge.evaluate import evaluate_path


def main(names: list[str]) -> None:
    """Evaluate every named set (all when none is named) and print the table."""
    print("| set | mode | nDCG@10 | MRR@10 | R@1 | R@10 | R@100 | ms/query |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names or SETS:
        d = CACHE / name
        if not (d / "corpus.urna").exists():
            build_set(name)
        report = evaluate_path(d / "corpus.urna", d / "queries.jsonl", k=10)
        for m in report.modes:
            print(f"| {name} | {m.mode} | {m.ndcg:.3f} | {m.mrr:.3f} | {m.recall_1:.3f} | "
                  f"{m.recall_k:.3f} | {m.recall_100:.3f} | {m.ms_per_query:.1f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
