"""Capability gating of the optional sections at open (03-runtime §1.2).

The graph, blob and space sections open only behind their ``capabilities_ext`` flag; HNSW and
BM25 open whenever their section exists, whatever ``supports_ann`` / ``supports_bm25`` say.
Files are the reference vectors re-assembled with an edited manifest (the flag removed or
flipped), so only the flag differs.
"""

from __future__ import annotations

import json

import pytest

import urna
from helpers.vectors import REF, expected
from urna.errors import SpaceNotFound
from urna.format.reader import UrnaView
from urna.format.writer import EncodedSection, assemble


def _edit_manifest(tmp_path, name: str, edit) -> str:
    view = UrnaView.from_bytes((REF / name).read_bytes())
    manifest = json.loads(view.manifest_bytes)
    edit(manifest)
    sections = [EncodedSection(e.section_id, e.encoding, bytes(view.payload(e)))
                for e in view.entries]
    h = view.header
    data = assemble(json.dumps(manifest, separators=(",", ":")).encode(), h.embedding_dim,
                    h.n_chunks, h.n_embeddings, sections)
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_graph_section_without_its_flag_is_ignored(tmp_path) -> None:
    path = _edit_manifest(tmp_path, "quickstart-graph.urna", lambda m: m.pop("capabilities_ext"))
    q = expected()["quickstart-graph.urna"]["queries"][0]["vector"]
    with urna.open(path) as f:
        assert not f.has_graph
        hits = f.search_graph(q, 3, 2, 100)
        assert {h.index_type for h in hits} == {"exact"} and not any(h.reranked for h in hits)


def test_blob_sections_without_their_flag_are_ignored(tmp_path) -> None:
    path = _edit_manifest(tmp_path, "quickstart-blobs.urna", lambda m: m.pop("capabilities_ext"))
    with urna.open(path) as f:
        assert not f.has_blobs and f.blob_refs() == [] and f.inspect()["blobs"] is None
        uris = {h.source_uri for h in f.search([1.0] * 256, 12)}
        assert "media/blob0.bin" not in uris  # spans stay those of 0x03


def test_spaces_without_their_flag_are_not_searchable(tmp_path) -> None:
    path = _edit_manifest(tmp_path, "quickstart-spaces.urna", lambda m: m.pop("capabilities_ext"))
    with urna.open(path) as f:
        assert not f.has_spaces and f.space_names == []
        with pytest.raises(SpaceNotFound):
            f.search_space("vision", [1.0] + [0.0] * 31, 3)


def test_hnsw_and_bm25_open_whatever_the_capabilities_say(tmp_path) -> None:
    def clear(m: dict) -> None:
        m["capabilities"]["supports_bm25"] = False

    path = _edit_manifest(tmp_path, "quickstart-hybrid.urna", clear)
    q = expected()["quickstart-hybrid.urna"]["queries"][0]
    with urna.open(path) as f:
        assert f.has_ann and f.has_bm25
        got = f.search_hybrid(q["vector"], q["text"], 5, 50)
        assert [h.chunk_id for h in got] == [h["chunk_id"] for h in q["search_hybrid"]]
