"""Embedders: identity (model_hash) and vectors equal the reference's (04-surface §5.2-5.4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from urna.errors import EmbedderError
from urna.forge.embedders import (
    FloorEmbedder,
    PotionEmbedder,
    create_embedder,
    embedder_for_model,
)
from urna.forge.embedders.floor import FLOOR_MODEL
from urna.forge.embedders.potion import POTION_DIR, POTION_MODEL
from urna.forge.embedders.sentence_transformer import st_fingerprint

DATA = Path(__file__).resolve().parents[1] / "data"
REF = json.loads((DATA / "ref-0.5.1" / "quickstart.chunks.json").read_text())


@pytest.fixture(scope="module")
def potion() -> PotionEmbedder:
    return PotionEmbedder()


def test_potion_identity_equals_the_reference_manifest(potion: PotionEmbedder) -> None:
    assert potion.embedding_model == REF["meta"]["embedding_model"] == POTION_MODEL
    assert potion.embedding_dim == REF["meta"]["embedding_dim"] == 256
    assert potion.model_hash() == REF["meta"]["model_hash"]
    # the files_hash the spec publishes for the vendored table
    assert potion.fingerprint()["files_hash"] == (
        "sha256:fe5770db86d9613d958e73994eceaca79a0fa7b905d87181d33a0d4fd0e2b9bf")


def test_potion_query_vectors_equal_the_reference(potion: PotionEmbedder) -> None:
    texts = [q[0] for q in REF["queries"]]
    want = np.array([q[1] for q in REF["queries"]], dtype=np.float32)
    got = potion.embed(texts)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)


def test_potion_chunk_vectors_equal_the_reference(potion: PotionEmbedder) -> None:
    texts = [c["canonical_text"] for c in REF["chunks"]]
    want = np.array([c["embedding"] for c in REF["chunks"]], dtype=np.float32)
    np.testing.assert_allclose(potion.embed(texts), want, atol=1e-6, rtol=0)


def test_potion_batches_equal_single_calls(potion: PotionEmbedder) -> None:
    texts = [c["canonical_text"] for c in REF["chunks"]] + ["", "Ünïcödé ✓ 漢字"]
    small = PotionEmbedder(batch_size=3)
    together = potion.embed(texts)
    assert np.array_equal(small.embed(texts), together)
    for i, t in enumerate(texts):
        assert np.array_equal(potion.embed([t])[0], together[i])


def test_potion_empty_text_is_the_unk_row(potion: PotionEmbedder) -> None:
    v = potion.embed([""])[0]
    np.testing.assert_allclose(v[:4], [0.050422, -0.164834, -0.097608, -0.008117], atol=1e-6)
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-6


def test_potion_published_token_example(potion: PotionEmbedder) -> None:
    v = potion.embed(["how do citations work"])[0]
    np.testing.assert_allclose(v[:4], [0.037629, 0.346907, -0.109797, -0.070263], atol=1e-6)


def test_floor_identity_and_vector_match_the_spec() -> None:
    f = FloorEmbedder()
    assert f.embedding_model == FLOOR_MODEL == "urna-forge-static/v1"
    assert f.model_hash() == (
        "sha256:75acb1edc57eb9dcb18d989fac562bb2575e20d3de211d849c4dbf649b81d1a1")
    v = f.embed(["hello world"])[0]
    np.testing.assert_allclose(v[:4], [-0.107536, 0.095405, -0.007253, -0.019017], atol=1e-6)


def test_floor_is_lexical_and_deterministic() -> None:
    f = FloorEmbedder()
    a, b, c, empty = f.embed(["Hello, World!", "hello world", "banana split", "!!!"])
    assert np.array_equal(a, b)  # case and punctuation do not matter
    assert float(a @ c) < 0.5
    assert abs(float(np.linalg.norm(empty)) - 1.0) < 1e-6  # "\0empty" token, never zero
    assert np.array_equal(FloorEmbedder().embed(["banana split"])[0], c)


def _copy_table(tmp: Path) -> Path:
    d = tmp / "potion"
    d.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(POTION_DIR / name, d / name)
    return d


def test_lfs_pointer_and_missing_table_are_refused(tmp_path: Path) -> None:
    d = _copy_table(tmp_path)
    with pytest.raises(EmbedderError, match="missing"):
        PotionEmbedder(d).embed(["x"])
    (d / "model.safetensors").write_bytes(b"version https://git-lfs.github.com/spec/v1\noid x\n")
    with pytest.raises(EmbedderError, match="git-lfs pointer"):
        PotionEmbedder(d).embed(["x"])


@pytest.mark.parametrize("blob", [
    b"\x01\x02",                                    # shorter than the length prefix
    (10**9).to_bytes(8, "little") + b"{}",          # header length overruns the file
    (2).to_bytes(8, "little") + b"{}",              # no embeddings tensor
    (len(b'{"embeddings":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}}')).to_bytes(
        8, "little") + b'{"embeddings":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}}'
    + b"\0" * 8,                                    # tensor bytes missing
])
def test_corrupt_tables_raise_a_clear_error(tmp_path: Path, blob: bytes) -> None:
    d = _copy_table(tmp_path)
    (d / "model.safetensors").write_bytes(blob)
    with pytest.raises(EmbedderError):
        PotionEmbedder(d).embed(["x"])


def test_st_fingerprint_follows_the_snapshot_files(tmp_path: Path) -> None:
    d = tmp_path / "st"
    (d / "1_Pooling").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"hidden_size": 8, "_name_or_path": "m/x"}))
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (d / "model.safetensors").write_bytes(b"weights-1")
    fp = st_fingerprint(d)
    assert fp["model_id"] == "m/x" and fp["embedding_dim"] == 8
    assert fp["tokenizer_hash"] is None and fp["normalize_embeddings"] is True
    assert st_fingerprint(d, model_id="org/model")["model_id"] == "org/model"
    (d / "model.safetensors").write_bytes(b"weights-2")
    assert st_fingerprint(d)["files_hash"] != fp["files_hash"]
    with pytest.raises(EmbedderError):
        st_fingerprint(tmp_path / "absent")


def test_lookup_by_preset_and_by_manifest_model() -> None:
    assert isinstance(create_embedder("potion"), PotionEmbedder)
    assert isinstance(create_embedder("floor"), FloorEmbedder)
    assert isinstance(embedder_for_model(POTION_MODEL), PotionEmbedder)
    assert isinstance(embedder_for_model(FLOOR_MODEL), FloorEmbedder)
    with pytest.raises(EmbedderError, match="unknown preset"):
        create_embedder("clip-vit-b32")
    with pytest.raises(EmbedderError, match="--model-path"):
        embedder_for_model("sentence-transformers/all-MiniLM-L6-v2")


def test_the_model_folder_is_a_path_wherever_it_is_asked_for(tmp_path: Path) -> None:
    import urna
    from urna.forge import embed, embedders

    vendored = Path(urna.__file__).resolve().parent / "models" / "potion-base-8M"
    assert isinstance(POTION_DIR, Path)
    assert vendored == POTION_DIR
    assert embedders.POTION_DIR == embed.POTION_DIR == POTION_DIR
    assert PotionEmbedder().model_dir == POTION_DIR
    assert create_embedder("potion").model_dir == POTION_DIR  # type: ignore[attr-defined]
    # a folder given as text is kept as pathlib spells it, and named so in the errors
    d = _copy_table(tmp_path)
    emb = PotionEmbedder(f"{d}//./")
    assert emb.model_dir == d and isinstance(emb.model_dir, Path)
    with pytest.raises(EmbedderError) as info:
        emb.embed(["x"])
    assert str(info.value) == f"potion table missing: {d / 'model.safetensors'}"
    emb.model_dir = POTION_DIR
    assert emb.embed(["x"]).shape == (1, 256)
    with pytest.raises(AttributeError):
        embedders.NOT_A_NAME  # noqa: B018
