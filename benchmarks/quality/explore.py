"""The fusion study: every candidate fusion over the cached score tables of every set.

Run ``python benchmarks/quality/explore.py [set ...]`` after ``labelled_sets.py``; prints
nDCG@10 / MRR@10 / R@10 per set and candidate. Research code: the chosen method lives in
``urna.index.fusion``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from labelled_sets import CACHE, SETS
from score_tables import ScoreTable, load

from urna.index import metrics

C = 100  # candidates per list


def pool(t: ScoreTable, qi: int, c: int = C):
    """(rows, cosine, bm25, cos_rank, bm25_rank) of the union of both top-c lists."""
    cos = t.cosine[qi]
    ctop = np.argsort(-cos, kind="stable")[:c]
    bids, bsc = t.bm25_ids[qi], t.bm25_scores[qi]
    rows = np.unique(np.concatenate([ctop, bids[:c]]))
    bm = np.zeros(len(cos))
    bm[bids] = bsc
    brank = np.full(len(cos), 10**9, dtype=np.int64)
    brank[bids] = np.arange(len(bids))
    crank = np.empty(len(cos), dtype=np.int64)
    crank[np.argsort(-cos, kind="stable")] = np.arange(len(cos))
    return rows, cos[rows].astype(np.float64), bm[rows], crank[rows], brank[rows]


def z(x: np.ndarray) -> np.ndarray:
    s = x.std()
    return (x - x.mean()) / s if s > 0 else np.zeros_like(x)


def mm(x: np.ndarray) -> np.ndarray:
    r = x.max() - x.min()
    return (x - x.min()) / r if r > 0 else np.zeros_like(x)


def rrf(k=60.0, w=1.0):
    def f(cos, bm, cr, br):
        s = 1.0 / (k + cr + 1)
        return s + w * np.where(bm > 0, 1.0 / (k + br + 1), 0.0)
    return f


def minmax(a=0.5):
    return lambda cos, bm, cr, br: a * mm(cos) + (1 - a) * mm(bm)


def zsum(w=1.0):
    return lambda cos, bm, cr, br: z(cos) + w * z(bm)


def zsum_top(n=C, w=1.0):
    """z-scores against each list's own top-n distribution (not the union)."""
    def f(cos, bm, cr, br):
        cs = np.sort(cos)[::-1][:n]
        bs = np.sort(bm)[::-1][:n]
        zc = (cos - cs.mean()) / (cs.std() or 1.0)
        zb = (bm - bs.mean()) / (bs.std() or 1.0)
        return zc + w * zb
    return f


def zadapt(p=1.0):
    """z over the pool, each list weighted by how far its top stands out (its top z)^p."""
    def f(cos, bm, cr, br):
        zc, zb = z(cos), z(bm)
        wc = max(zc.max(), 0.0) ** p
        wb = max(zb.max(), 0.0) ** p
        return wc * zc + wb * zb
    return f


def zgap(n=10):
    """z over the pool, each list weighted by its top-1 minus top-n gap in its own std."""
    def f(cos, bm, cr, br):
        out = []
        for x in (cos, bm):
            sd = x.std() or 1.0
            srt = np.sort(x)[::-1]
            out.append(((srt[0] - srt[min(n, len(srt)) - 1]) / sd, (x - x.mean()) / sd))
        return out[0][0] * out[0][1] + out[1][0] * out[1][1]
    return f


def _relgap(x: np.ndarray, n: int) -> float:
    """How far a list's top stands above its n-th score, relative to the top (scale-free)."""
    srt = np.sort(x)[::-1]
    top = srt[0]
    return float((top - srt[min(n, len(srt)) - 1]) / top) if top > 0 else 0.0


def relgap_z(n=10, p=1.0):
    """z over the pool, each list weighted by its relative top gap ** p."""
    def f(cos, bm, cr, br):
        return _relgap(cos, n) ** p * z(cos) + _relgap(bm, n) ** p * z(bm)
    return f


def relgap_mm(n=10, p=1.0):
    """min-max over the pool, each list weighted by its relative top gap ** p."""
    def f(cos, bm, cr, br):
        return _relgap(cos, n) ** p * mm(cos) + _relgap(bm, n) ** p * mm(bm)
    return f


def only_cos():
    return lambda cos, bm, cr, br: cos


def only_bm():
    return lambda cos, bm, cr, br: bm + 1e-9 * cos


def evaluate(t: ScoreTable, fn: Callable, c: int = C) -> tuple[float, float, float]:
    nd, mr, rc = [], [], []
    for qi, q in enumerate(t.queries):
        rows, cos, bm, cr, br = pool(t, qi, c)
        if hasattr(fn, "query"):  # a per-query candidate (gated_fusion.py) learns which query
            fn.query = qi
        s = fn(cos, bm, cr, br)
        order = np.lexsort((rows, -cos, -s))
        seen, ranked = set(), []
        for r in rows[order]:
            d = t.docs[t.row_doc[r]]
            if d not in seen:
                seen.add(d)
                ranked.append(d)
        rel = {d: 1.0 for d in q["relevant"]}
        nd.append(metrics.ndcg_at_k(ranked, rel, 10))
        mr.append(metrics.mrr_at_k(ranked, rel, 10))
        rc.append(metrics.recall_at_k(ranked, rel, 10))
    return metrics.mean(nd), metrics.mean(mr), metrics.mean(rc)


CANDIDATES: dict[str, Callable] = {
    "cosine": only_cos(), "bm25": only_bm(),
    "rrf60": rrf(60), "rrf10": rrf(10), "rrf2": rrf(2),
    "mm.3": minmax(0.3), "mm.5": minmax(0.5), "mm.7": minmax(0.7),
    "z1": zsum(1.0), "z.7": zsum(0.7), "z1.5": zsum(1.5),
    "zadapt1": zadapt(1.0), "zadapt2": zadapt(2.0), "zgap10": zgap(10), "zgap3": zgap(3),
    "rgz10": relgap_z(10), "rgz10p2": relgap_z(10, 2.0), "rgmm10": relgap_mm(10),
    "rgmm10p2": relgap_mm(10, 2.0),
}


def main(names: list[str]) -> None:
    only = [c for c in names if c.startswith("+")]
    names = [n for n in names if not n.startswith("+")]
    todo = {k: v for k, v in CANDIDATES.items() if not only or "+" + k in only}
    tables = [load(CACHE / n) for n in names or SETS]
    print("candidate      " + "  ".join(f"{t.name:>22}" for t in tables))
    for label, fn in todo.items():
        cells = []
        for t in tables:
            nd, mr, rc = evaluate(t, fn)
            cells.append(f"{nd:.3f}/{mr:.3f}/{rc:.3f}")
        print(f"{label:<14} " + "  ".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
