"""Third-round study: new evidence for ``rank="fused"`` over the runtime's own candidate pools.

``python benchmarks/quality/round3.py [VARIANT,VARIANT...] [set ...]`` prints nDCG@10 per set
for each variant (all variants, all sets by default). The pool of every query is the one
``retrieve(rank="fused")`` builds (the runtime's hybrid shortlists, captured once and cached
next to the set as ``pools3.npz``); a variant only reorders it. Research code: what is kept
lives in ``urna.index.stemmed_bm25``, ``urna.index.fusion`` and ``urna.runtime.fused``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from labelled_sets import CACHE, SETS

import urna
from urna.forge.embedders.potion import POTION_FOLDER, _load_table, _load_tokenizer
from urna.forge.evaluate import RECALL_DEPTH
from urna.forge.query import default_candidates, embed_query, manifest_of
from urna.index import exact, metrics
from urna.index.fusion import bm25_idf, fuse, lexical_coverage, relative_gap, zscore
from urna.index.stemmed_bm25 import stemmed_evidence
from urna.index.tokenize import tokenize
from urna.runtime import fused as rt_fused

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
        out = []
        for q, v, pool in zip(self.queries, self.vecs, self.pools, strict=True):
            ids = order_of(self.st, v, q["text"], pool)
            seen: set[str] = set()
            ranked: list[str] = []
            for i in ids.tolist():
                u = self.uris[i]
                if u not in seen:
                    seen.add(u)
                    ranked.append(u)
            out.append(metrics.ndcg_at_k(ranked, {r: 1.0 for r in q["relevant"]}, K))
        return metrics.mean(out)




# ------------------------------------------------------------------------------- variants
# Each takes (opened file state, query vector, query text, sorted pool) -> the pool reordered.


def kept(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The runtime's fused order (what ``urna retrieve`` returns)."""
    return rt_fused.fused_order(st, q, text, pool, RECALL_DEPTH).ids


def cosine_only(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The pool by exact cosine."""
    cos = exact.score_rows(st.scoring, q, pool)
    return pool[np.lexsort((pool, -cos))]


def _cosine(st, q, pool):  # type: ignore[no-untyped-def]
    return exact.score_rows(st.scoring, q, pool).astype(np.float64)


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
    cos = _cosine(st, q, pool)
    lex, cov = _reference_lexical(st, text, pool)
    w_cos = relative_gap(cos)
    w_lex = relative_gap(lex) * cov ** 2 if lex.max() > 0 else 0.0
    s = w_cos * zscore(cos) + w_lex * zscore(lex)
    return pool[np.lexsort((pool, -cos, -s))]


def stemmed(row_power: float | None, gate=None,  # type: ignore[no-untyped-def]
            cov_power: float = 3.0):
    """Porter-widened BM25, gate coverage ** cov_power, rows weighted by coverage ** row_power.

    ``gate(cos, evidence, w_cos, w_lex, st) -> (w_cos, w_lex)`` changes the two weights.
    """
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        cos = _cosine(st, q, pool)
        ev = stemmed_evidence(st.bm25, text, pool)
        if not ev.scores.max() > 0:
            return pool[np.lexsort((pool, -cos))]
        cov = float(ev.coverage[int(np.argmax(ev.scores))])
        w_cos, w_lex = relative_gap(cos), relative_gap(ev.scores) * cov ** cov_power
        if gate is not None:
            w_cos, w_lex = gate(cos, ev, w_cos, w_lex, st)
        lex = ev.scores if row_power is None else ev.scores * ev.coverage ** row_power
        s = w_cos * zscore(cos) + w_lex * zscore(lex)
        return pool[np.lexsort((pool, -cos, -s))]
    return f


def _specificity(cos, ev, w_cos, w_lex, st):  # type: ignore[no-untyped-def]
    """Lexical weight / the number of pool rows holding as much of the query as the best."""
    return w_cos, w_lex / int((ev.coverage >= ev.coverage.max() - 1e-12).sum())


def _gap_depth(depth: int, side: str):  # type: ignore[no-untyped-def]
    def g(cos, ev, w_cos, w_lex, st):  # type: ignore[no-untyped-def]
        if side == "cos":
            return relative_gap(cos, depth), w_lex
        cov = float(ev.coverage[int(np.argmax(ev.scores))])
        return w_cos, relative_gap(ev.scores, depth) * cov ** 3
    return g


def coverage_only(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The lexical evidence is the row's query coverage alone (no BM25 score)."""
    cos = _cosine(st, q, pool)
    ev = stemmed_evidence(st.bm25, text, pool)
    if not ev.scores.max() > 0:
        return pool[np.lexsort((pool, -cos))]
    cov = float(ev.coverage[int(np.argmax(ev.scores))])
    s = relative_gap(cos) * zscore(cos) + relative_gap(ev.coverage) * cov ** 3 * zscore(
        ev.coverage)
    return pool[np.lexsort((pool, -cos, -s))]


def feedback(m: int, beta: float):  # type: ignore[no-untyped-def]
    """Embedding-space pseudo-relevance feedback: q' = norm(q + beta * mean of the kept
    order's top-m stored rows); the pool is fused again with the cosines to q'."""
    def f(st, q, text, pool):  # type: ignore[no-untyped-def]
        top = kept(st, q, text, pool)[:m]
        rows = np.stack([st.scoring.dequantize(int(i), int(i) + 1)[0] for i in top])
        q2 = q.astype(np.float64) + beta * rows.mean(axis=0)
        q2 = (q2 / np.linalg.norm(q2)).astype(np.float32)
        cos2 = _cosine(st, q2, pool)
        ev = stemmed_evidence(st.bm25, text, pool)
        cov = float(ev.coverage[int(np.argmax(ev.scores))]) if ev.scores.max() > 0 else 0.0
        return fuse(pool, cos2, ev.scores, coverage=cov, row_coverage=ev.coverage).ids
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
    cov = float(ev.coverage[int(np.argmax(ev.scores))]) if ev.scores.max() > 0 else 0.0
    cos = _cosine(st, idf_query_vector(st, text), pool)
    return fuse(pool, cos, ev.scores, coverage=cov, row_coverage=ev.coverage).ids


def idf_cosine(st, q, text, pool):  # type: ignore[no-untyped-def]
    """The pool by cosine to the IDF-weighted query embedding alone."""
    cos = _cosine(st, idf_query_vector(st, text), pool)
    return pool[np.lexsort((pool, -cos))]


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
    print("| variant | " + " | ".join(sets) + " |")
    print("|---|" + "---|" * len(sets))
    for n in names:
        print(f"| {n} | " + " | ".join(f"{d.ndcg(VARIANTS[n]):.3f}" for d in data) + " |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
