"""The quickstart through the Python API: embed twelve paragraphs offline, build, ask.

Run from anywhere:  python examples/quickstart/quickstart.py
Writes examples/quickstart/out/quickstart-py.urna (spans are each paragraph's byte range,
preset exact), then asks one question and prints cited answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import urna
from urna.forge.embedders import potion_embedder

HERE = Path(__file__).resolve().parent
QUESTION = "can I use this with no internet, everything on my own machine"


def build(out: Path) -> str:
    """Build the corpus file from docs.jsonl; returns its path."""
    rows = [json.loads(line) for line in (HERE / "docs.jsonl").read_text().splitlines() if line]
    emb = potion_embedder()
    vectors = emb.embed([r["text"] for r in rows])
    chunks = [{"canonical_text": r["text"], "source_uri": r["source_uri"], "byte_start": 0,
               "byte_end": len(r["text"].encode("utf-8")), "embedding": vectors[i].tolist()}
              for i, r in enumerate(rows)]
    out.parent.mkdir(parents=True, exist_ok=True)
    return urna.build(str(out), emb.embedding_model, emb.embedding_dim, "quickstart/1",
                      emb.model_hash(), chunks, preset="exact", reproducible=True)


def main() -> None:
    """Build, validate, then ask QUESTION with the model_hash gate on."""
    path = build(HERE / "out" / "quickstart-py.urna")
    emb = potion_embedder()
    with urna.open(path) as f:
        assert f.validate()
        print(f"built {path}: {f.n_embeddings} chunks, dim={f.embedding_dim}, dtype={f.dtype}")
        print()
        print(f"ask: {QUESTION}")
        print()
        hits = f.retrieve(emb.embed([QUESTION])[0], 3, expected_model_hash=emb.model_hash(),
                          query_text=QUESTION)
        for h in hits:
            print(h.text)
            print(f"  -- {h.citation_id}")
            print(f"     score={h.score:.4f} ({h.rerank_source})  source={h.source_uri}")
            print()


if __name__ == "__main__":
    main()
