"""Fourth-round study: document aggregation, pool depth and gate input for ``rank="fused"``.

``python benchmarks/quality/round4.py [VARIANT,VARIANT...] [set ...]`` prints nDCG@10 per set
for each variant and its paired difference to ``kept`` (mean ± standard error over queries).
Pools are the runtime's own (``pool_study.SetData``); the ``depth-C`` variants capture the pool
``retrieve(rank="fused", candidates=C)`` builds, cached as ``pools4-C.npz``. Research code:
what is kept lives in ``urna.index.fusion`` and ``urna.runtime.fused``; the table and what
it decided: README "Answer quality", fourth round.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from labelled_sets import CACHE, SETS
from pool_study import (
    SetData,
    best_coverage,
    by_cosine,
    by_score,
    capture_pools,
    evidence,
    fused,
    kept,
    no_match,
    paired_cell,
    per_query,
    print_head,
)
from round3 import stemmed

from urna.index.fusion import COVERAGE_POWER, ROW_COVERAGE_POWER, relative_gap, zscore


def pools_at(d: SetData, cand: int) -> list[np.ndarray]:
    """The runtime's fused pool of every query with ``cand`` candidates per list (cached)."""
    return capture_pools(d, cand, CACHE / d.name / f"pools4-{cand}.npz")


def _scored(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The kept fusion's score of every pool row (pool order) and its evidence."""
    cos, ev = evidence(st, q, text, pool)
    r = fused(pool, cos, ev)
    at = np.searchsorted(pool, r.ids)
    s = np.empty(pool.size)
    s[at] = r.scores
    return cos, ev, s


def doc_bonus(gamma: float, how: str):  # type: ignore[no-untyped-def]
    """Each chunk's fused score + gamma x its document's best other pooled chunk (>= 0)."""
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        cos, ev, s = _scored(st, q, text, pool)
        uris = [st.spans[int(i)][0] for i in pool]
        by: dict[str, list[int]] = {}
        for j, u in enumerate(uris):
            by.setdefault(u, []).append(j)
        bonus = np.zeros(pool.size)
        pos = np.maximum(s, 0.0)
        for js in by.values():
            if len(js) < 2:
                continue
            vals = pos[js]
            for a, j in enumerate(js):
                others = np.delete(vals, a)
                bonus[j] = others.max() if how == "max" else others.sum() / len(js)
        return by_score(pool, cos, s + gamma * bonus)
    return f


def gate_on_evidence(st, q, text, pool):  # type: ignore[no-untyped-def]
    """Gate and lexical gap measured on the list that is fused (BM25 x coverage^2)."""
    cos, ev = evidence(st, q, text, pool)
    if no_match(ev):
        return by_cosine(pool, cos)
    e = ev.scores * ev.coverage ** ROW_COVERAGE_POWER
    cov = float(ev.coverage[int(np.argmax(e))])
    w_cos, w_lex = relative_gap(cos), relative_gap(e) * cov ** COVERAGE_POWER
    return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(e))


def gate_best_evidence_row(st, q, text, pool):  # type: ignore[no-untyped-def]
    """Gate = coverage of the best row of the fused lexical list; gap still on raw BM25."""
    cos, ev = evidence(st, q, text, pool)
    if no_match(ev):
        return by_cosine(pool, cos)
    e = ev.scores * ev.coverage ** ROW_COVERAGE_POWER
    return fused(pool, cos, ev, float(ev.coverage[int(np.argmax(e))])).ids


def lexz_matched(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The lexical list z-scored with the mean and spread of the rows that match at all."""
    cos, ev = evidence(st, q, text, pool)
    if no_match(ev):
        return by_cosine(pool, cos)
    e = ev.scores * ev.coverage ** ROW_COVERAGE_POWER
    m = e[e > 0]
    sd = float(m.std()) if m.size > 1 else 0.0
    ze = (e - float(m.mean())) / sd if sd > 0 else zscore(e)
    ze[e == 0] = min(float(ze.min()), 0.0) if sd > 0 else ze[e == 0]
    w_cos, w_lex = relative_gap(cos), relative_gap(ev.scores) * best_coverage(ev) ** COVERAGE_POWER
    return by_score(pool, cos, w_cos * zscore(cos) + w_lex * ze)


def _background_gap(x: np.ndarray, depth: int = 10) -> float:
    """``(top1 - top_depth) / (top1 - median)``: the gap in units of the top's lead."""
    srt = np.sort(x)[::-1]
    lead = float(srt[0] - np.median(x))
    return float(srt[0] - srt[min(depth, srt.size) - 1]) / lead if lead > 0 else 0.0


def background_gap(both: bool):  # type: ignore[no-untyped-def]
    """Gaps over the pool's median instead of zero (cosine only, or both lists)."""
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        cos, ev = evidence(st, q, text, pool)
        if no_match(ev):
            return by_cosine(pool, cos)
        e = ev.scores * ev.coverage ** ROW_COVERAGE_POWER
        g_lex = _background_gap(ev.scores) if both else relative_gap(ev.scores)
        w_cos, w_lex = _background_gap(cos), g_lex * best_coverage(ev) ** COVERAGE_POWER
        return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(e))
    return f


def gate_max_coverage(st, q, text, pool):  # type: ignore[no-untyped-def]
    """Gate = the most any pool row holds of the query (not the best BM25 row's share)."""
    cos, ev = evidence(st, q, text, pool)
    return fused(pool, cos, ev, 0.0 if no_match(ev) else float(ev.coverage.max())).ids


VARIANTS: dict[str, Callable[..., np.ndarray]] = {
    "kept": kept,
    "doc+0.25max": doc_bonus(0.25, "max"),
    "doc+0.5max": doc_bonus(0.5, "max"),
    "doc+1mean": doc_bonus(1.0, "mean"),
    "doc+2mean": doc_bonus(2.0, "mean"),
    "doc+1max": doc_bonus(1.0, "max"),
    "lexz-matched": lexz_matched,
    "gate-max-coverage": gate_max_coverage,
    "rowcov3": stemmed(3.0),
    "cosgap-over-median": background_gap(False),
    "gaps-over-median": background_gap(True),
    "gate-on-evidence": gate_on_evidence,
    "gate-best-evidence-row": gate_best_evidence_row,
}
DEPTHS = {"depth-32": 32, "depth-128": 128}
DEPTH_COMBOS = {"depth-32+doc+1mean": (32, "doc+1mean")}


def main(argv: list[str]) -> None:
    """Evaluate the named variants (comma-separated) on the named sets."""
    names = argv[0].split(",") if argv else list(VARIANTS) + list(DEPTHS) + list(DEPTH_COMBOS)
    sets = argv[1:] or list(SETS)
    data = [SetData(s) for s in sets]
    base = [per_query(d, kept) for d in data]
    print_head(sets)
    for n in names:
        cells = []
        for d, b in zip(data, base, strict=True):
            if n in DEPTHS:
                got = per_query(d, kept, pools_at(d, DEPTHS[n]))
            elif n in DEPTH_COMBOS:
                depth, variant = DEPTH_COMBOS[n]
                got = per_query(d, VARIANTS[variant], pools_at(d, depth))
            else:
                got = per_query(d, VARIANTS[n])
            cells.append(paired_cell(got, b))
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
