"""Per-query score tables of a built set, cached: the raw material of the fusion study.

For every query: the exact cosine of every row (query embedded with the file's potion model)
and the BM25 top ``BM25_DEPTH`` (ids, scores) from the file's public ``search_bm25``. Rows
outside the BM25 depth count as having no lexical match (score 0): at depth 1,000 that
only drops scores below the 1,000th lexical match, which no fusion here can lift into a
top 100.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import urna
from urna.forge.query import embed_query, manifest_of

BM25_DEPTH = 1000


@dataclass
class ScoreTable:
    """Everything the fusion study needs of one set."""

    name: str
    row_doc: np.ndarray          # (n,) document index of each row
    docs: list[str]              # document (source_uri) of each document index
    queries: list[dict]
    cosine: np.ndarray           # (q, n) float32 exact cosine
    bm25_ids: list[np.ndarray]   # per query, BM25 top ids (rows)
    bm25_scores: list[np.ndarray]


def load(set_dir: Path) -> ScoreTable:
    """Compute (or read from ``scores.npz``) the score table of a built set."""
    lines = (set_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(ln) for ln in lines if ln.strip()]
    cache = set_dir / "scores.npz"
    with urna.open(set_dir / "corpus.urna") as f:
        ids = f.chunk_ids()
        # the row -> source map; a hit carries it, this reads it for all rows at once
        uris = [span[0] for span in f._state.spans]
        docs = sorted(set(uris))
        index = {d: i for i, d in enumerate(docs)}
        row_doc = np.asarray([index[u] for u in uris], dtype=np.int64)
        if cache.exists():
            z = np.load(cache, allow_pickle=False)
            offs, bids, bscores = z["offs"], z["bids"], z["bscores"]  # each read once
            bi = [bids[offs[i]:offs[i + 1]] for i in range(len(queries))]
            bs = [bscores[offs[i]:offs[i + 1]] for i in range(len(queries))]
            return ScoreTable(set_dir.name, row_doc, docs, queries, z["cosine"], bi, bs)
        manifest = manifest_of(f)
        qv = np.stack([embed_query(manifest, q["text"])[0] for q in queries])
        cosine = (qv @ f.vectors().T).astype(np.float32)
        row_of = {c: i for i, c in enumerate(ids)}
        bi, bs = [], []
        for q in queries:
            hits = f.search_bm25(q["text"], BM25_DEPTH)
            bi.append(np.asarray([row_of[h.chunk_id] for h in hits], dtype=np.int64))
            bs.append(np.asarray([h.score for h in hits], dtype=np.float64))
    offs = np.cumsum([0] + [len(b) for b in bi])
    np.savez(cache, cosine=cosine, offs=offs,
             bids=np.concatenate(bi) if bi else np.zeros(0, np.int64),
             bscores=np.concatenate(bs) if bs else np.zeros(0))
    return ScoreTable(set_dir.name, row_doc, docs, queries, cosine, bi, bs)


if __name__ == "__main__":
    from labelled_sets import CACHE

    for name in sys.argv[1:]:
        t = load(CACHE / name)
        print(name, t.cosine.shape, file=sys.stderr)
