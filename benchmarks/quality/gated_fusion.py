"""The coverage-gated fusion candidates: BM25 is trusted by how much of the query its top
match covers (IDF-weighted share of the query's distinct terms present in that chunk).

Research code beside explore.py; needs the stored texts and BM25 document frequencies
(computed here from the texts with the file's tokenizer).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from explore import evaluate, z
from labelled_sets import CACHE
from score_tables import load

import urna
from urna.index.fusion import lexical_coverage, relative_gap
from urna.index.tokenize import tokenize


class Gated:
    """z-score fusion with the lexical weight times coverage ** p (and gap weights if gap)."""

    def __init__(self, cover: list[float], p: float, gap: bool) -> None:
        self.cover, self.p, self.gap, self.query = cover, p, gap, 0

    def __call__(self, cos, bm, cr, br):
        c = self.cover[self.query] ** self.p
        wc = relative_gap(cos) if self.gap else 1.0
        wb = (relative_gap(bm) if self.gap else 1.0) * c
        return wc * z(cos) + wb * z(bm)


def main(names: list[str]) -> None:
    print("candidate      " + "  ".join(f"{n:>22}" for n in names), flush=True)
    rows_out: dict[str, list[str]] = {}
    for name in names:
        t = load(CACHE / name)
        with urna.open(CACHE / name / "corpus.urna") as f:
            toks = [set(tokenize(x)) for x in f.texts()]
        df = Counter(term for s in toks for term in s)
        cover = [lexical_coverage(tokenize(q["text"]), toks[int(t.bm25_ids[qi][0])], df,
                                  len(toks)) if len(t.bm25_ids[qi]) else 0.0
                 for qi, q in enumerate(t.queries)]
        for label, fn in {"cov1": Gated(cover, 1, False), "cov2": Gated(cover, 2, False),
                          "cov3": Gated(cover, 3, False), "rgcov2": Gated(cover, 2, True),
                          "rgcov3": Gated(cover, 3, True)}.items():
            nd, mr, rc = evaluate(t, fn)
            rows_out.setdefault(label, []).append(f"{nd:.3f}/{mr:.3f}/{rc:.3f}")
        print(name, f"mean coverage {float(np.mean(cover)):.3f}", file=sys.stderr, flush=True)
    for label, cells in rows_out.items():
        print(f"{label:<14} " + "  ".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
