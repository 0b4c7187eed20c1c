"""Third-round study: new evidence for ``rank="fused"`` over the runtime's own candidate pools.

``python benchmarks/quality/round3.py [VARIANT,VARIANT...] [set ...]`` prints nDCG@10 per set
for each variant (all variants, all sets by default). The pool of every query is the one
``retrieve(rank="fused")`` builds (the runtime's hybrid shortlists, captured once and cached
next to the set as ``pools3.npz``); a variant only reorders it. Research code: what is kept
lives in ``urna.index.stemmed_bm25``, ``urna.index.fusion`` and ``urna.runtime.fused``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from labelled_sets import SETS
from pool_study import (
    SetData,
    best_coverage,
    by_cosine,
    by_score,
    cosine,
    evidence,
    fused,
    kept,
    no_match,
    print_head,
)

from urna.forge.embedders.potion import POTION_FOLDER, _load_table, _load_tokenizer
from urna.index.fusion import bm25_idf, lexical_coverage, relative_gap, zscore
from urna.index.stemmed_bm25 import stemmed_evidence
from urna.index.tokenize import tokenize

# ------------------------------------------------------------------------------- variants
# Each takes (opened file state, query vector, query text, sorted pool) -> the pool reordered.


def cosine_only(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The pool by exact cosine."""
    return by_cosine(pool, cosine(st, q, pool))


def _reference_lexical(st, text, pool):  # type: ignore[no-untyped-def]
    """The reference's BM25 of each pool row and the coverage of the best one (round 2)."""
    bm = st.bm25
    lex = bm.scores_of(text, pool).astype(np.float64)
    lex[~(lex > 0)] = 0.0
    if not lex.max() > 0:
        return lex, 0.0
    best = int(pool[int(np.argmax(lex))])
    terms = set(tokenize(text))
    df = {t: bm.document_frequency(t) for t in terms}
    held = {t for t in terms if df[t] > 0 and bm.doc_has_term(best, t)}
    return lex, lexical_coverage(terms, held, df, bm.n_docs)


def round2(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The second round's default: reference BM25, relative gaps, coverage ** 2 gate."""
    cos = cosine(st, q, pool)
    lex, cov = _reference_lexical(st, text, pool)
    w_cos = relative_gap(cos)
    w_lex = relative_gap(lex) * cov ** 2 if lex.max() > 0 else 0.0
    return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(lex))


def stemmed(row_power: float | None, gate=None,  # type: ignore[no-untyped-def]
            cov_power: float = 3.0):
    """Porter-widened BM25, gate coverage ** cov_power, rows weighted by coverage ** row_power.

    ``gate(cos, evidence, w_cos, w_lex, st) -> (w_cos, w_lex)`` changes the two weights.
    """
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        cos, ev = evidence(st, q, text, pool)
        if no_match(ev):
            return by_cosine(pool, cos)
        w_cos, w_lex = relative_gap(cos), relative_gap(ev.scores) * best_coverage(ev) ** cov_power
        if gate is not None:
            w_cos, w_lex = gate(cos, ev, w_cos, w_lex, st)
        lex = ev.scores if row_power is None else ev.scores * ev.coverage ** row_power
        return by_score(pool, cos, w_cos * zscore(cos) + w_lex * zscore(lex))
    return f


def _specificity(cos, ev, w_cos, w_lex, st):  # type: ignore[no-untyped-def]
    """Lexical weight / the number of pool rows holding as much of the query as the best."""
    return w_cos, w_lex / int((ev.coverage >= ev.coverage.max() - 1e-12).sum())


def _gap_depth(depth: int, side: str):  # type: ignore[no-untyped-def]
    def g(cos, ev, w_cos, w_lex, st):  # type: ignore[no-untyped-def]
        if side == "cos":
            return relative_gap(cos, depth), w_lex
        return w_cos, relative_gap(ev.scores, depth) * best_coverage(ev) ** 3
    return g


def coverage_only(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The lexical evidence is the row's query coverage alone (no BM25 score)."""
    cos, ev = evidence(st, q, text, pool)
    if no_match(ev):
        return by_cosine(pool, cos)
    w_cov = relative_gap(ev.coverage) * best_coverage(ev) ** 3
    return by_score(pool, cos, relative_gap(cos) * zscore(cos) + w_cov * zscore(ev.coverage))


def feedback(m: int, beta: float):  # type: ignore[no-untyped-def]
    """Embedding-space pseudo-relevance feedback: q' = norm(q + beta * mean of the kept
    order's top-m stored rows); the pool is fused again with the cosines to q'."""
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        top = kept(st, q, text, pool)[:m]
        rows = np.stack([st.scoring.dequantize(int(i), int(i) + 1)[0] for i in top])
        q2 = q.astype(np.float64) + beta * rows.mean(axis=0)
        q2 = (q2 / np.linalg.norm(q2)).astype(np.float32)
        return fused(pool, cosine(st, q2, pool), stemmed_evidence(st.bm25, text, pool)).ids
    return f


def idf_query_vector(st, text: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The potion query embedding with each token weighted by its word's BM25 idf ** 0.5."""
    tok, unk = _load_tokenizer(POTION_FOLDER)
    table = _load_table(POTION_FOLDER)
    enc = tok.encode(text, add_special_tokens=False)
    ids = enc.ids or [unk]
    n = st.bm25.n_docs
    w = np.ones(len(ids))
    for j, wid in enumerate(enc.word_ids):
        if wid is not None:
            s, e = enc.word_to_chars(wid)
            word = text[s:e].lower()
            df = st.bm25.document_frequency(word) if len(word) >= 2 else n
            w[j] = bm25_idf(df, n) ** 0.5
    v = (table[ids].astype(np.float64) * w[:, None]).sum(axis=0)
    return (v / np.linalg.norm(v)).astype(np.float32)


def idf_query(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The kept fusion with the vector evidence from the IDF-weighted query embedding."""
    ev = stemmed_evidence(st.bm25, text, pool)
    return fused(pool, cosine(st, idf_query_vector(st, text), pool), ev).ids


def idf_cosine(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The pool by cosine to the IDF-weighted query embedding alone."""
    return by_cosine(pool, cosine(st, idf_query_vector(st, text), pool))


VARIANTS: dict[str, Callable[..., np.ndarray]] = {
    "cosine": cosine_only,
    "idf-query-cosine": idf_cosine,
    "round2": round2,
    "porter": stemmed(None, cov_power=2.0),
    "porter+rowcov1": stemmed(1.0, cov_power=2.0),
    "porter+rowcov2": stemmed(2.0, cov_power=2.0),
    "porter+rowcov2+gate3": stemmed(2.0),
    "kept": kept,
    "kept+feedback3": feedback(3, 0.5),
    "kept+idf-query": idf_query,
    "kept+specificity": stemmed(2.0, _specificity),
    "kept+lexgap3": stemmed(2.0, _gap_depth(3, "lex")),
    "kept+cosgap5": stemmed(2.0, _gap_depth(5, "cos")),
    "coverage-only": coverage_only,
}


def main(argv: list[str]) -> None:
    """Evaluate the named variants (comma-separated) on the named sets."""
    names = argv[0].split(",") if argv else list(VARIANTS)
    sets = argv[1:] or list(SETS)
    data = []
    for s in sets:
        data.append(SetData(s))
        print(f"loaded {s}", file=sys.stderr, flush=True)
    print_head(sets)
    for n in names:
        print(f"| {n} | " + " | ".join(f"{d.ndcg(VARIANTS[n]):.3f}" for d in data) + " |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
