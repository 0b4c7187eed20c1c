"""The three-layer gate and MRL slicing of text queries (04-surface §2.6)."""

from __future__ import annotations

import numpy as np
import pytest

from urna.errors import DimensionMismatch, InvalidInput, ModelHashMismatch
from urna.forge.embedders import PLACEHOLDER_HASH, FloorEmbedder, PotionEmbedder
from urna.forge.query import default_candidates, embed_query

POTION = PotionEmbedder()


def _manifest(**kw: object) -> dict:
    return {"embedding_model": POTION.embedding_model, "embedding_dim": 256,
            "model_hash": POTION.model_hash(), **kw}


def test_matching_model_passes_and_returns_the_query_vector() -> None:
    vec, emb = embed_query(_manifest(), "how do citations work")
    assert emb.embedding_model == POTION.embedding_model
    assert np.array_equal(vec, POTION.embed(["how do citations work"])[0])


def test_a_different_model_hash_is_never_skipped() -> None:
    floor_hash = FloorEmbedder().model_hash()
    with pytest.raises(ModelHashMismatch) as ei:
        embed_query(_manifest(model_hash=floor_hash), "x", skip_placeholder=True)
    assert (ei.value.expected, ei.value.actual) == (POTION.model_hash(), floor_hash)


def test_placeholder_hash_needs_the_explicit_skip() -> None:
    with pytest.raises(InvalidInput, match="placeholder"):
        embed_query(_manifest(model_hash=PLACEHOLDER_HASH), "x")
    vec, _ = embed_query(_manifest(model_hash=PLACEHOLDER_HASH), "x", skip_placeholder=True)
    assert vec.shape == (256,)


def test_name_and_width_layers() -> None:
    with pytest.raises(InvalidInput, match="embedding_model mismatch"):
        embed_query(_manifest(), "x", embedder=FloorEmbedder())
    with pytest.raises(DimensionMismatch):
        embed_query(_manifest(embedding_dim=128), "x")
    with pytest.raises(InvalidInput, match="empty"):
        embed_query(_manifest(), "   ")


def test_mrl_corpus_gets_the_sliced_renormalised_prefix() -> None:
    vec, _ = embed_query(_manifest(embedding_dim=128, full_dim=256), "offline")
    full = POTION.embed(["offline"])[0]
    assert vec.shape == (128,)
    np.testing.assert_allclose(vec, full[:128] / np.linalg.norm(full[:128]), atol=1e-7)


def test_candidate_budget() -> None:
    assert [default_candidates(k) for k in (1, 16, 17, 100)] == [64, 64, 68, 400]
