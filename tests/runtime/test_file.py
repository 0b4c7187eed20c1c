"""UrnaFile as an object: mmap lifetime, threads, accessors, cite, blobs and spaces.

Claims: embeddings are views on the map (no copy for float32); close() and ``with`` release
it and later calls fail; concurrent searches from several threads return what a single
thread returns; cite() resolves a citation to the stored text and the (overlaid) span and
refuses a wrong content_hash or an unknown chunk; blob_bytes/blob_refs behave as the
reference's; search_space's errors come in the reference's order with its texts.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import urna
from helpers.vectors import REF, expected
from urna.errors import (
    BlobNotInlined,
    CitationError,
    DimensionMismatch,
    InvalidK,
    SpaceModelMismatch,
    SpaceNotFound,
)


def test_float32_embeddings_are_views_on_the_map() -> None:
    with urna.open(REF / "quickstart-exact.urna") as f:
        arr = f._state.scoring.a
        assert arr.dtype == np.float32 and not arr.flags.owndata and not arr.flags.writeable
        assert arr.shape == (f.n_embeddings, f.embedding_dim)


def test_close_releases_and_later_calls_fail() -> None:
    f = urna.open(REF / "quickstart-exact.urna")
    q = expected()["quickstart-exact.urna"]["queries"][0]["vector"]
    f.search(q, 1)
    f.close()
    f.close()  # idempotent
    assert f.closed
    with pytest.raises(ValueError):
        f.search(q, 1)
    with urna.UrnaFile.open(REF / "quickstart-exact.urna") as g:
        assert not g.closed
    assert g.closed


def test_threads_share_one_file() -> None:
    exp = expected()["synthetic-hybrid.urna"]
    with urna.open(REF / "synthetic-hybrid.urna") as f:
        queries = [q["vector"] for q in exp["queries"]] * 8
        want = [f.search_ann(q, 5, 32) for q in queries]
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(lambda q: f.search_ann(q, 5, 32), queries))
        assert got == want


def test_properties_of_a_plain_file() -> None:
    with urna.open(REF / "quickstart-exact.urna") as f:
        assert (f.embedding_dim, f.n_embeddings, f.dtype) == (256, 12, "float32")
        assert (f.has_ann, f.has_bm25, f.has_graph, f.has_spaces, f.has_blobs) == \
               (False, False, False, False, False)
        assert f.space_names == [] and f.blob_refs() == []
        assert f.simd_backend in ("scalar", "avx2", "neon")
        assert f.model_hash.startswith("sha256:") and f.validate() is True
        assert len(f.texts()) == 12 and all(isinstance(t, str) for t in f.texts())


def test_cite_resolves_and_refuses() -> None:
    with urna.open(REF / "quickstart-blobs.urna") as f:
        hit = f.search(expected()["quickstart-blobs.urna"]["queries"][0]["vector"], 1)[0]
        got = f.cite(hit.citation_id)
        ordinal = f.chunk_ids().index(hit.chunk_id)
        assert got.text == f.texts()[ordinal]
        assert (got.source_uri, got.byte_start, got.byte_end) == \
               (hit.source_uri, hit.offset_start, hit.offset_end)
        bare = hit.citation_id.replace("urna://sha256:", "urna://")
        assert f.cite(bare).chunk_id == hit.chunk_id
        with pytest.raises(CitationError, match="^content_hash mismatch: citation says"):
            f.cite("urna://sha256:" + "0" * 64 + "/" + hit.chunk_id)
        with pytest.raises(CitationError, match="not found in file$"):
            f.cite(f"urna://{f.content_hash}/sha256:" + "1" * 64)


def test_blob_overlay_spans_and_bytes() -> None:
    with urna.open(REF / "quickstart-blobs.urna") as f:
        assert f.has_blobs
        refs = f.blob_refs()
        assert [r["original_uri"] for r in refs] == ["media/blob0.bin", "https://example.invalid/b1.jpg"]
        data = f.blob_bytes(0)
        assert data == (REF / "blob0.bin").read_bytes()
        assert "sha256:" + hashlib.sha256(data).hexdigest() == refs[0]["content_hash"]
        for i in (1, 2, 99):
            with pytest.raises(BlobNotInlined) as err:
                f.blob_bytes(i)
            assert err.value.index == i
        with pytest.raises(OverflowError):
            f.blob_bytes(-1)
        spans = {h.source_uri for h in f.search([1.0] * 256, 12)}
        assert "media/blob0.bin" in spans  # chunks 0, 3, 6, 9 point into the blob


def test_space_errors_in_the_reference_order() -> None:
    with urna.open(REF / "quickstart-spaces.urna") as f:
        assert f.space_names == ["vision", "audio"] and f.has_spaces
        vision = [1.0] + [0.0] * 31
        with pytest.raises(SpaceNotFound) as err:
            f.search_space("depth", vision, 0)
        assert str(err.value) == "embedding space not found: depth"
        with pytest.raises(SpaceModelMismatch):
            f.search_space("vision", vision, 0, expected_model_hash="sha256:" + "9" * 64)
        with pytest.raises(InvalidK):
            f.search_space("vision", vision, 0, expected_model_hash="sha256:" + "1" * 64)
        with pytest.raises(DimensionMismatch) as err:
            f.search_space("audio", vision, 3)
        assert (err.value.expected, err.value.got) == (16, 32)
        hits = f.search_space("vision", vision, 3)
        assert {h.index_type for h in hits} == {"space"} and not any(h.reranked for h in hits)
        result = f.search_space("audio", [1.0] * 16, 20)
        assert result.truncated is False and result.recall == 1.0 and len(result.hits) == 12
        assert result.explain.rerank_source == "stored_precision"
    with urna.open(REF / "quickstart-exact.urna") as plain, pytest.raises(SpaceNotFound):
        plain.search_space("vision", vision, 3)


def test_bytes_and_mmap_give_identical_answers() -> None:
    name = "synthetic-graph.urna"
    with urna.open(REF / name) as mapped:
        mem = urna.UrnaFile.from_bytes((REF / name).read_bytes())
        for q in expected()[name]["queries"]:
            v = q["vector"]
            assert mem.search(v, 7) == mapped.search(v, 7)
            assert mem.search_graph(v, 7, 2, 50) == mapped.search_graph(v, 7, 2, 50)
            assert mem.retrieve(v, 3) == mapped.retrieve(v, 3)
        assert mem.inspect() == mapped.inspect()
        mem.close()
