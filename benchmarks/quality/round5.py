"""Fifth-round study: term proximity and lexical feedback for ``rank="fused"``.

``python benchmarks/quality/round5.py [VARIANT,VARIANT...] [set ...]`` prints nDCG@10 per set
for each variant and its paired difference to the fourth round's default (no proximity; mean
± standard error over queries), and the extra milliseconds per query its new evidence costs.
Pools are the runtime's own (``pool_study.SetData``). The proximity evidence reads each pooled
row's stored text, tokenised with the file's BM25 tokenizer; a token counts as a query stem
when it is a member of that stem's group in the file's vocabulary (``stem_group``). Research
code: what is kept lives in ``urna.index.proximity`` and ``urna.runtime.fused``; the table
and what it decided: README "Answer quality", fifth round.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from labelled_sets import SETS
from pool_study import (
    SetData,
    best_coverage,
    by_cosine,
    by_score,
    evidence,
    fused,
    kept,
    no_match,
    paired_cell,
    per_query,
    print_head,
)

from urna.index.fusion import COVERAGE_POWER, ROW_COVERAGE_POWER, bm25_idf, relative_gap, zscore
from urna.index.stemmed_bm25 import stem_group, stemmed_evidence
from urna.index.stemming import porter_stem
from urna.index.tokenize import tokenize
from urna.runtime import fused as rt_fused

TEXTS: dict[int, list[str]] = {}  # id(st) -> the file's stored texts
TIMES: dict[str, float] = {}      # variant -> seconds spent in its extra evidence


def _query_stems(bm25, text: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Surface vocabulary word -> query stem, for the query stems the corpus holds."""
    out: dict[str, str] = {}
    terms = bm25.terms
    for tok in tokenize(text):
        stem = porter_stem(tok)
        for t in stem_group(bm25, stem).tolist():
            out[terms[t]] = stem
    return out


def _positions(words: dict[str, str], row_text: str) -> dict[str, list[int]]:
    """Token positions of each query stem in one row's text."""
    pos: dict[str, list[int]] = {}
    for i, tok in enumerate(tokenize(row_text)):
        s = words.get(tok)
        if s is not None:
            pos.setdefault(s, []).append(i)
    return pos


def min_dist(pos: dict[str, list[int]]) -> float | None:
    """Tao & Zhai's MinDist: the least distance between two different matched query stems."""
    if len(pos) < 2:
        return None
    merged = sorted((p, s) for s, ps in pos.items() for p in ps)
    best = math.inf
    for (p1, s1), (p2, s2) in zip(merged, merged[1:], strict=False):
        if s1 != s2:
            best = min(best, p2 - p1)
    return best


def min_cover(pos: dict[str, list[int]]) -> float | None:
    """The shortest token window holding every matched query stem (its length in tokens)."""
    if len(pos) < 2:
        return None
    merged = sorted((p, s) for s, ps in pos.items() for p in ps)
    need = len(pos)
    have: Counter[str] = Counter()
    best = math.inf
    lo = 0
    for p, s in merged:
        have[s] += 1
        while len(have) == need:
            best = min(best, p - merged[lo][0] + 1)
            ls = merged[lo][1]
            have[ls] -= 1
            if not have[ls]:
                del have[ls]
            lo += 1
    return best


def bm25tp(pos: dict[str, list[int]], idf: dict[str, float], k1: float,
           knorm: float | None = None) -> float:
    """Rasolofo & Savoy's term-proximity score: pairs of different stems within 5 tokens."""
    merged = sorted((p, s) for s, ps in pos.items() for p in ps)
    acc: Counter[tuple[str, str]] = Counter()
    for i, (p1, s1) in enumerate(merged):
        for p2, s2 in merged[i + 1:]:
            if p2 - p1 > 5:
                break
            if s1 != s2:
                key = (s1, s2) if s1 < s2 else (s2, s1)
                acc[key] += 1.0 / (p2 - p1) ** 2
    kk = k1 if knorm is None else knorm
    return sum(min(idf[a], idf[b]) * (k1 + 1) * v / (kk + v) for (a, b), v in acc.items())


def _proximity(st, text: str, pool: np.ndarray, how: str,  # type: ignore[no-untyped-def]
               only: np.ndarray | None = None) -> np.ndarray:
    """One proximity value per pool row (``how``: mindist, cover, tp, tpn); ``only``: the
    pool positions to measure (the rest get 0)."""
    bm = st.bm25
    words = _query_stems(bm, text)
    texts = TEXTS[id(st)]
    out = np.zeros(pool.size)
    idf: dict[str, float] = {}
    if how in ("tp", "tpn"):
        for stem in set(words.values()):
            docs = set()
            offs = bm.offsets
            for t in stem_group(bm, stem).tolist():
                docs.update(bm.docs[int(offs[t]):int(offs[t + 1])].tolist())
            idf[stem] = bm25_idf(len(docs), bm.n_docs)
    k1, b = float(bm.k1), float(bm.b)
    lens = np.asarray(bm.payload.doc_lens, dtype=np.float64)
    avgdl = max(float(bm.avgdl), 1.0)
    js = range(pool.size) if only is None else only.tolist()
    for j in js:
        row = int(pool[j])
        pos = _positions(words, texts[row])
        if how == "tp":
            out[j] = bm25tp(pos, idf, 1.2)
            continue
        if how == "tpn":
            out[j] = bm25tp(pos, idf, k1, k1 * ((1 - b) + b * lens[row] / avgdl))
            continue
        d = min_dist(pos) if how == "mindist" else min_cover(pos)
        if how == "cover" and d is not None:
            # window length beyond the tightest possible one (the matched stems side by side)
            d = d - len(pos)
        if d is None:
            out[j] = 0.0
        else:
            out[j] = math.log(0.3 + math.exp(-d)) - math.log(0.3)
    return out


def proximity(how: str, where: str, depth: int | None = None):  # type: ignore[no-untyped-def]
    """The kept fusion with a proximity term added to the stemmed BM25 score of matching rows.

    ``where``: "bm25" adds it before the row coverage (gate and gap see the raw BM25);
    "gap" also measures the lexical gap on the boosted list.
    """
    name = f"{how}@{where}" + ("" if depth is None else f"-top{depth}")

    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        cos, ev = evidence(st, q, text, pool)
        if no_match(ev):
            return by_cosine(pool, cos)
        t0 = time.perf_counter()
        only = None
        if depth is not None:
            e0 = ev.scores * ev.coverage ** ROW_COVERAGE_POWER
            only = np.argsort(-e0, kind="stable")[:depth]
            only = only[e0[only] > 0]
        prox = _proximity(st, text, pool, how, only)
        TIMES[name] = TIMES.get(name, 0.0) + time.perf_counter() - t0
        boosted = np.where(ev.scores > 0, ev.scores + prox, 0.0)
        gap_list = boosted if where == "gap" else ev.scores
        w_cos = relative_gap(cos)
        w_lex = relative_gap(gap_list) * best_coverage(ev) ** COVERAGE_POWER
        e = boosted * ev.coverage ** ROW_COVERAGE_POWER
        return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(e))
    return f


def rm3(m: int, n_terms: int, lam: float):  # type: ignore[no-untyped-def]
    """Lexical pseudo-relevance feedback: expansion stems from the top-m stemmed-BM25 rows.

    Each candidate stem w weighs sum over the m rows of P(w|row) (tf / row length) x the
    row's normalised BM25 (RM1, Lavrenko & Croft); the n_terms best that are not query stems
    form the expansion, each scored over the pool as stemmed BM25; the lexical list becomes
    ``(1 - lam) x original + lam x expansion``. The lexical weight (gap x coverage gate) is
    the original's, so feedback cannot help where BM25 itself is distrusted.
    """
    name = f"rm3-{m}-{n_terms}-{lam}"

    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        bm = st.bm25
        cos, ev = evidence(st, q, text, pool)
        if no_match(ev):
            return by_cosine(pool, cos)
        t0 = time.perf_counter()
        texts = TEXTS[id(st)]
        top = np.argsort(-ev.scores, kind="stable")[:m]
        top = top[ev.scores[top] > 0]
        qstems = {porter_stem(t) for t in tokenize(text)}
        rel = ev.scores[top] / ev.scores[top].sum()
        weight: Counter[str] = Counter()
        surface: dict[str, Counter[str]] = {}
        for r, j in zip(rel.tolist(), top.tolist(), strict=True):
            toks = tokenize(texts[int(pool[j])])
            c = Counter(toks)
            for tok, n in c.items():
                s = porter_stem(tok)
                if s in qstems:
                    continue
                weight[s] += r * n / len(toks)
                surface.setdefault(s, Counter())[tok] += n
        # an expansion term must be specific: weight x idf (a stop word is in every row)
        scored = []
        for s, w in weight.items():
            members = stem_group(bm, s)
            if not members.size:
                continue
            df = int(bm.document_frequency(surface[s].most_common(1)[0][0]))
            scored.append((w * bm25_idf(df, bm.n_docs), s))
        scored.sort(reverse=True)
        exp_words = [surface[s].most_common(1)[0][0] for _, s in scored[:n_terms]]
        exp = stemmed_evidence(bm, " ".join(exp_words), pool).scores if exp_words else 0.0
        TIMES[name] = TIMES.get(name, 0.0) + time.perf_counter() - t0
        w_cos = relative_gap(cos)
        w_lex = relative_gap(ev.scores) * best_coverage(ev) ** COVERAGE_POWER
        e = (1 - lam) * (ev.scores * ev.coverage ** ROW_COVERAGE_POWER) + lam * exp
        return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(e))
    return f


def round4_default(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The fourth round's default: the kept fusion without proximity evidence."""
    return fused(pool, *evidence(st, q, text, pool)).ids


def kept_timed(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The runtime's fused order, timing its proximity step (``pool_proximity``)."""
    real = rt_fused.pool_proximity

    def timed(*args):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return real(*args)
        finally:
            TIMES["kept"] = TIMES.get("kept", 0.0) + time.perf_counter() - t0

    rt_fused.pool_proximity = timed
    try:
        return kept(st, q, text, pool)
    finally:
        rt_fused.pool_proximity = real


VARIANTS: dict[str, Callable[..., np.ndarray]] = {
    "round4-default": round4_default,
    "kept": kept_timed,
    "mindist@bm25": proximity("mindist", "bm25"),
    "mindist@gap": proximity("mindist", "gap"),
    "cover@bm25": proximity("cover", "bm25"),
    "tp@bm25": proximity("tp", "bm25"),
    "tpn@bm25": proximity("tpn", "bm25"),
    "tp@bm25-top10": proximity("tp", "bm25", 10),
    "tp@bm25-top30": proximity("tp", "bm25", 30),
    "tpn@bm25-top30": proximity("tpn", "bm25", 30),
    "rm3-3-10-0.2": rm3(3, 10, 0.2),
    "rm3-10-10-0.2": rm3(10, 10, 0.2),
}


def main(argv: list[str]) -> None:
    """Evaluate the named variants (comma-separated) on the named sets."""
    names = argv[0].split(",") if argv else list(VARIANTS)
    sets = argv[1:] or list(SETS)
    data = []
    for s in sets:
        d = SetData(s)
        TEXTS[id(d.st)] = d.file.texts()
        data.append(d)
    base = [per_query(d, round4_default) for d in data]
    print_head(sets)
    for n in names:
        cells = []
        for d, b in zip(data, base, strict=True):
            TIMES.pop(n, None)
            got = per_query(d, VARIANTS[n])
            ms = 1000 * TIMES.get(n, 0.0) / len(d.queries)
            cells.append(paired_cell(got, b) + (f" {ms:.1f} ms" if n in TIMES else ""))
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
