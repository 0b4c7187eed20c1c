"""What the third to fifth rounds of the ``rank="fused"`` study share (round3/4/5.py).

A set is opened once with the runtime's own fused pool of every query captured and cached
(``SetData``); a variant is a function ``(opened file state, query vector, query text, sorted
pool) -> the pool reordered``, scored by nDCG@10 with documents judged at their best chunk
(``per_query``). The small pieces below are the steps most variants take: exact cosines of
the pool, stemmed BM25 evidence, the orders by cosine or by a fused score, the kept fusion.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from labelled_sets import CACHE

import urna
from urna.forge.evaluate import RECALL_DEPTH
from urna.forge.query import default_candidates, embed_query, manifest_of
from urna.index import exact, metrics
from urna.index.fusion import fuse
from urna.index.stemmed_bm25 import StemmedEvidence, stemmed_evidence
from urna.runtime import fused as rt_fused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

K = 10


def capture_pools(d: SetData, candidates: int, cache: Path) -> list[np.ndarray]:
    """The runtime's fused pool of every query of ``d`` (``retrieve(rank="fused")``), cached."""
    if cache.exists():
        z = np.load(cache)
        offs, rows = z["offs"], z["rows"]
        return [rows[offs[i]:offs[i + 1]] for i in range(len(d.queries))]
    got: list[np.ndarray] = []
    real = rt_fused.fused_order

    def capture(st, q, text, pool, k):  # type: ignore[no-untyped-def]
        got.append(np.unique(np.asarray(pool, dtype=np.int64)))
        return real(st, q, text, pool, k)

    rt_fused.fused_order = capture
    try:
        for q, v in zip(d.queries, d.vecs, strict=True):
            d.file.retrieve(v, RECALL_DEPTH, candidates=candidates, query_text=q["text"],
                            rank="fused")
    finally:
        rt_fused.fused_order = real
    offs = np.cumsum([0] + [len(p) for p in got])
    np.savez(cache, offs=offs, rows=np.concatenate(got))
    return got


class SetData:
    """One built set: the open file, its queries, their vectors and captured pools."""

    def __init__(self, name: str) -> None:
        d = CACHE / name
        self.name = name
        self.file = urna.open(d / "corpus.urna")
        self.st = self.file._state
        lines = (d / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        self.queries = [json.loads(ln) for ln in lines if ln.strip()]
        manifest = manifest_of(self.file)
        self.vecs = np.stack([embed_query(manifest, q["text"])[0] for q in self.queries])
        self.uris = [s[0] for s in self.st.spans]
        self.pools = capture_pools(self, default_candidates(K), d / "pools3.npz")

    def ndcg(self, order_of: Callable[..., np.ndarray]) -> float:
        """Mean nDCG@10 (documents judged at their best chunk) of a pool-ordering function."""
        return metrics.mean(per_query(self, order_of).tolist())


def per_query(d: SetData, order_of: Callable[..., np.ndarray],
              pools: list[np.ndarray] | None = None) -> np.ndarray:
    """nDCG@10 of each query (documents judged at their best chunk)."""
    out = []
    for q, v, pool in zip(d.queries, d.vecs, pools or d.pools, strict=True):
        ids = order_of(d.st, v, q["text"], pool)
        seen: set[str] = set()
        ranked: list[str] = []
        for i in ids.tolist():
            u = d.uris[i]
            if u not in seen:
                seen.add(u)
                ranked.append(u)
        out.append(metrics.ndcg_at_k(ranked, {r: 1.0 for r in q["relevant"]}, K))
    return np.asarray(out)


def paired_cell(got: np.ndarray, base: np.ndarray) -> str:
    """``mean (paired difference to base ± its standard error over queries)``."""
    diff = got - base
    se = float(diff.std(ddof=1) / np.sqrt(diff.size))
    return f"{got.mean():.3f} ({diff.mean():+.3f} ± {se:.3f})"


def print_head(sets: list[str]) -> None:
    """The markdown table's header: one column per set."""
    print("| variant | " + " | ".join(sets) + " |")
    print("|---|" + "---|" * len(sets))


def cosine(st, q, pool):  # type: ignore[no-untyped-def]
    """The exact cosine of every pool row, as float64."""
    return exact.score_rows(st.scoring, q, pool).astype(np.float64)


def evidence(st, q, text, pool):  # type: ignore[no-untyped-def]
    """(cosines, stemmed BM25 evidence) of the pool."""
    return cosine(st, q, pool), stemmed_evidence(st.bm25, text, pool)


def no_match(ev: StemmedEvidence) -> bool:
    """Whether no pool row matches the query lexically (the variants then order by cosine)."""
    return not ev.scores.max() > 0


def best_coverage(ev: StemmedEvidence) -> float:
    """The query coverage of the best BM25 row (0 when nothing matches): the gate's input."""
    return 0.0 if no_match(ev) else float(ev.coverage[int(np.argmax(ev.scores))])


def by_cosine(pool: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """The pool by cosine, ties by row."""
    return pool[np.lexsort((pool, -cos))]


def by_score(pool: np.ndarray, cos: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The pool by a fused score, ties by cosine then row."""
    return pool[np.lexsort((pool, -cos, -s))]


def fused(pool, cos, ev, coverage=None):  # type: ignore[no-untyped-def]
    """``fusion.fuse`` of cosines and stemmed evidence (gate: ``coverage``, else the best row)."""
    cov = best_coverage(ev) if coverage is None else coverage
    return fuse(pool, cos, ev.scores, coverage=cov, row_coverage=ev.coverage)


def kept(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The runtime's fused order (what ``urna retrieve`` returns)."""
    return rt_fused.fused_order(st, q, text, pool, RECALL_DEPTH).ids
