"""Bring-your-own sentence-transformers models, with a stand-in backend (no torch here)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import urna
from urna.errors import ModelHashMismatch
from urna.forge.embedders import embedder_for_model
from urna.forge.embedders.sentence_transformer import SentenceTransformerEmbedder
from urna.forge.query import retrieve_text


class _FakeST:
    """Deterministic stand-in for sentence_transformers.SentenceTransformer (dim 8)."""

    def __init__(self, path: str, device: str | None = None) -> None:
        self.path = path

    def encode(self, texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True):
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(w.encode()) % 8] += 2.0  # not unit: the embedder renormalises
        return out


@pytest.fixture()
def st_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setitem(sys.modules, "sentence_transformers",
                        types.SimpleNamespace(SentenceTransformer=_FakeST))
    d = tmp_path / "snap"
    (d / "1_Pooling").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"hidden_size": 8}))
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (d / "tokenizer.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"weights")
    return d


def test_vectors_are_unit_rows_and_identity_is_the_fingerprint(st_dir: Path) -> None:
    emb = SentenceTransformerEmbedder(st_dir, model_id="org/tiny")
    v = emb.embed(["alpha beta", "gamma"])
    assert v.shape == (2, 8) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert emb.embedding_model == "org/tiny" and emb.embedding_dim == 8
    assert emb.model_hash().startswith("sha256:") and len(emb.model_hash()) == 71


def test_a_corpus_built_with_a_snapshot_answers_only_that_snapshot(st_dir: Path,
                                                                   tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(st_dir, model_id="org/tiny")
    texts = ["alpha beta", "gamma delta", "epsilon"]
    vecs = emb.embed(texts)
    out = tmp_path / "st.urna"
    urna.build(str(out), "org/tiny", 8, "st/1", emb.model_hash(),
               [{"canonical_text": t, "source_uri": f"d{i}", "byte_start": 0, "byte_end": len(t),
                 "embedding": vecs[i].tolist()} for i, t in enumerate(texts)])
    with urna.open(out) as f:
        res = retrieve_text(f, "gamma delta", 1, model_path=str(st_dir))
        assert res.hits[0].text == "gamma delta"
        (st_dir / "model.safetensors").write_bytes(b"other weights")  # a different snapshot
        with pytest.raises(ModelHashMismatch):
            retrieve_text(f, "gamma delta", 1, model_path=str(st_dir))
    assert isinstance(embedder_for_model("org/tiny", model_path=str(st_dir)),
                      SentenceTransformerEmbedder)
