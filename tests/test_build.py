"""urna.build: same inputs => the reference's bytes; the binding's option checks; atomic writes."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest

import urna
from helpers.vectors import REF, build_kwargs, expected
from urna import errors as E
from urna.format.reader import UrnaView

ZERO = "sha256:" + "0" * 64
ONE = [{"canonical_text": "hi", "source_uri": "doc.txt", "byte_start": 0, "byte_end": 2,
        "embedding": [1.0, 0.0, 0.0, 0.0]}]


@pytest.mark.parametrize("name", sorted(expected()))
def test_rebuild_every_vector_gives_reference_bytes(tmp_path, name):
    """Every preset, dtype, index, graph, space and blob variant: the reference's exact bytes.

    zstd frames are byte-identical because zstandard 0.25 bundles libzstd 1.5.7, the version
    the reference links; the pin in pyproject.toml keeps it so.
    """
    import zstandard

    assert zstandard.ZSTD_VERSION == (1, 5, 7)
    args, opts = build_kwargs(name)
    out = tmp_path / name
    urna.build(out, *args, **opts)
    data = out.read_bytes()
    info = expected()[name]
    assert len(data) == info["bytes"]
    assert "sha256:" + hashlib.sha256(data).hexdigest() == info["file_hash"]
    assert data == (REF / name).read_bytes()


@pytest.mark.parametrize("name", sorted(expected()))
def test_every_vector_reports_the_reference_identity(name):
    info = expected()[name]
    data = (REF / name).read_bytes()
    view = UrnaView.from_bytes(data)
    assert view.content_hash() == info["content_hash"]
    assert "sha256:" + hashlib.sha256(data).hexdigest() == info["file_hash"]
    from urna.format.sections.canonical import decode_chunk_ids
    assert decode_chunk_ids(view.decoded(1), view.header.n_chunks) == info["chunk_ids"]
    assert view.manifest.to_dict() == info["inspect"]["manifest"]


@pytest.mark.parametrize("kwargs, text", [
    ({"preset": "foo"}, "unknown preset: foo (expected exact|compressed|tiny|nano|hybrid)"),
    ({"text_encoding": "foo"}, "unknown text_encoding: foo (expected raw|zstd)"),
    ({"dtype": "bfloat16"}, "unknown dtype: bfloat16 (expected float32|float16|int8|int4)"),
    ({"dtype": "int4"}, "int4 requires (effective) embedding_dim divisible by 64, got 4"),
    ({"mrl_dim": 0}, "mrl_dim must satisfy 0 < mrl_dim <= embedding_dim (4), got 0"),
    ({"mrl_dim": 5}, "mrl_dim must satisfy 0 < mrl_dim <= embedding_dim (4), got 5"),
    ({"blob_data_paths": ["x"]},
     "blob_data_paths requires blob_refs (the 0x17 table parallels the 0x14 order)"),
])
def test_binding_option_errors_match_the_reference(tmp_path, kwargs, text):
    with pytest.raises(E.BuildError) as info:
        urna.build(tmp_path / "x.urna", "demo", 4, "c/1", ZERO, ONE, **kwargs)
    assert str(info.value) == text
    assert isinstance(info.value, ValueError)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("chunk, cls, text", [
    ({"embedding": [float("nan"), 0, 0, 0]}, E.InvalidEmbeddingValue,
     "NaN or Inf detected in embeddings"),
    ({"embedding": [1e39, 0, 0, 0]}, E.InvalidEmbeddingValue, "NaN or Inf detected in embeddings"),
    ({"embedding": [1, 0, 0]}, E.DimensionMismatch, "dimension mismatch: expected 4, got 3"),
    ({"byte_start": 3, "byte_end": 2}, E.InvalidInput,
     "invalid input: byte_end (2) < byte_start (3)"),
])
def test_writer_chunk_checks(tmp_path, chunk, cls, text):
    with pytest.raises(cls) as info:
        urna.build(tmp_path / "x.urna", "demo", 4, "c/1", ZERO, [{**ONE[0], **chunk}])
    assert str(info.value) == text


def test_missing_chunk_key_is_named(tmp_path):
    chunk = dict(ONE[0])
    del chunk["byte_end"]
    with pytest.raises(E.BuildError, match=r"^chunks\[0\] missing byte_end$"):
        urna.build(tmp_path / "x.urna", "demo", 4, "c/1", ZERO, [chunk])


@pytest.mark.parametrize("kwargs, cls", [
    ({"chunks": []}, E.ManifestInvalid),
    ({"model_hash": "deadbeef"}, E.InvalidModelHash),
    ({"embedding_model": ""}, E.ManifestInvalid),
])
def test_manifest_errors_from_the_writer(tmp_path, kwargs, cls):
    args = {"embedding_model": "demo", "embedding_dim": 4, "chunker_version": "c/1",
            "model_hash": ZERO, "chunks": ONE, **kwargs}
    with pytest.raises(cls):
        urna.build(tmp_path / "x.urna", **args)


def test_failed_build_leaves_existing_file_untouched(tmp_path):
    target = tmp_path / "keep.urna"
    target.write_bytes(b"previous contents")
    with pytest.raises(E.InvalidEmbeddingValue):
        urna.build(target, "demo", 4, "c/1", ZERO,
                   [{**ONE[0], "embedding": [float("inf"), 0, 0, 0]}])
    assert target.read_bytes() == b"previous contents"
    assert sorted(os.listdir(tmp_path)) == ["keep.urna"]


def test_write_failure_leaves_no_temp_file(tmp_path, monkeypatch):
    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    # The reference's text for a failed write: ValueError "write <path>: <io error>".
    with pytest.raises(ValueError, match=r"^write .*x\.urna: No space left on device "
                                         r"\(os error 28\)$"):
        urna.build(tmp_path / "x.urna", "demo", 4, "c/1", ZERO, ONE)
    assert list(tmp_path.iterdir()) == []


def test_same_inputs_same_bytes(tmp_path):
    a = urna.build(tmp_path / "a.urna", "demo", 4, "c/1", ZERO, ONE * 3, reproducible=True)
    b = urna.build(tmp_path / "b.urna", "demo", 4, "c/1", ZERO, ONE * 3, reproducible=True)
    assert Path(a).read_bytes() == Path(b).read_bytes()


def test_mrl_dim_equal_to_dim_keeps_rows_but_records_the_fields(tmp_path):
    # Reference behaviour (checked against the 0.5.1 wheel): a full-width mrl_dim is no cut,
    # so rows are stored as given (not renormalised), while mrl_dim/full_dim are written.
    chunks = [{**ONE[0], "embedding": [2.0, 0.0, 0.0, 0.0]},
              {**ONE[0], "embedding": [3.0, 4.0, 0.0, 0.0]}]
    full = UrnaView.from_bytes(
        Path(urna.build(tmp_path / "f.urna", "m", 4, "c", ZERO, chunks, mrl_dim=4)).read_bytes())
    assert bytes(full.payload(4)) == struct.pack("<8f", 2, 0, 0, 0, 3, 4, 0, 0)
    assert (full.manifest.mrl_dim, full.manifest.full_dim) == (4, 4)
    half = UrnaView.from_bytes(
        Path(urna.build(tmp_path / "h.urna", "m", 4, "c", ZERO, chunks, mrl_dim=2)).read_bytes())
    assert bytes(half.payload(4)) == struct.pack("<4f", 1, 0, 0.6, 0.8)


def test_built_file_gets_normal_permissions(tmp_path):
    mask = os.umask(0)
    os.umask(mask)
    path = urna.build(tmp_path / "m.urna", "demo", 4, "c/1", ZERO, ONE)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's 0600


def test_build_keywords_are_the_options_record():
    """build()'s keyword options and BuildOptions agree on names, order and defaults."""
    import inspect
    from dataclasses import fields

    from urna.build_options import BuildOptions

    params = list(inspect.signature(urna.build).parameters.values())[6:]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert [(p.name, p.default) for p in params] == [(f.name, f.default)
                                                     for f in fields(BuildOptions)]
    assert [p.name for p in params][:3] == ["title", "version", "created"]
    assert inspect.signature(urna.build).parameters["preset"].default == "exact"
    assert inspect.signature(urna.build).parameters["hnsw_m"].default == 16


def test_unknown_keyword_is_a_type_error(tmp_path):
    out = tmp_path / "x.urna"
    with pytest.raises(TypeError, match="titel"):
        urna.build(out, "m", 4, "c/1", ZERO, ONE, titel="typo")
    assert not out.exists()


def test_options_record_is_frozen():
    import dataclasses

    from urna.build_options import BuildOptions

    with pytest.raises(dataclasses.FrozenInstanceError):
        BuildOptions().preset = "tiny"  # type: ignore[misc]


def test_build_leaves_the_callers_inputs_unchanged(tmp_path):
    import copy

    import numpy as np

    rows = np.eye(64, dtype=np.float64)[:3]
    chunks = [{"canonical_text": f"t{i}", "source_uri": "d.txt", "byte_start": i, "byte_end": i + 1,
               "embedding": rows[i]} for i in range(3)]
    spaces = [{"name": "img", "model_hash": ZERO, "vectors": [[1.0, 0.0]] * 3, "dtype": "int8"}]
    blob_refs = [{"content_hash": ZERO, "original_uri": "a.png", "byte_len": 1, "inlined": False}]
    spans = [{"blob_ref_index": None, "byte_start": 0, "byte_end": 0}] * 3
    authors, provenance = ["a"], {"k": ["v"]}
    inputs = (chunks, spaces, blob_refs, spans, authors, provenance)
    before = copy.deepcopy(inputs)
    urna.build(tmp_path / "x.urna", "m", 64, "c/1", ZERO, chunks, preset="nano", mrl_dim=64,
               spaces=spaces, blob_refs=blob_refs, chunk_blob_spans=spans, authors=authors,
               provenance=provenance, with_graph=True)
    after_rows = [c["embedding"] for c in chunks]
    assert all((a == b).all() for a, b in zip(after_rows, [c["embedding"] for c in before[0]],
                                              strict=True))
    assert [{k: v for k, v in c.items() if k != "embedding"} for c in chunks] == [
        {k: v for k, v in c.items() if k != "embedding"} for c in before[0]]
    assert inputs[1:] == before[1:]
