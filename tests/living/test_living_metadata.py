"""Metadata rides along in a living corpus: it is stored per segment, filters its searches,
selects rows to remove, and survives compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

import urna
from urna.errors import UnknownFilterField

from .corpus import document, new_catalog, queries


def _tagged(uri: str, lang: str) -> list[dict]:
    return [{**c, "metadata": {"lang": lang}} for c in document(uri)]


def test_remove_by_a_metadata_filter_then_compact(tmp_path: Path) -> None:
    path = new_catalog(tmp_path, _tagged("a.md", "pt") + _tagged("b.md", "en"))
    with urna.open_catalog(path) as cat:
        cat.add(_tagged("c.md", "pt"))
        hits = cat.search(queries(1)[0], 9, where={"lang": "pt"})
        assert sorted({h.source_uri for h in hits}) == ["a.md", "c.md"] and len(hits) == 6
        cat.remove(where={"lang": "pt"})
        live = cat.search(queries(1)[0], 9)
        assert {h.source_uri for h in live} == {"b.md"}
        cat.compact()
        after = cat.search(queries(1)[0], 9, where={"lang": "en"})
        assert [h.chunk_id for h in after] == [h.chunk_id for h in live]
        assert cat.search(queries(1)[0], 9, where={"lang": "pt"}) == []


def test_a_field_no_segment_has_is_an_error(tmp_path: Path) -> None:
    path = new_catalog(tmp_path, document("a.md"))
    with urna.open_catalog(path) as cat, pytest.raises(UnknownFilterField):
        cat.remove(where={"lang": "pt"})


def test_an_updated_documents_corpus_filters_like_a_fresh_build(tmp_path: Path) -> None:
    import os

    from helpers.specs import write_documents_spec
    from urna.forge import pipeline
    from urna.forge.spec import load_spec
    from urna.forge.update import update

    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha\n\nOffline search over files.\n", encoding="utf-8")
    (docs / "notes" / "b.txt").write_text("Citations that survive copies.\n", encoding="utf-8")
    spec = load_spec(write_documents_spec(tmp_path / "live.toml", docs, tmp_path / "live",
                                          model="floor"))
    catalog = Path(update(spec)["catalog"])
    old = os.stat(docs / "a.md").st_mtime
    os.utime(docs / "a.md", (old + 3600, old + 3600))  # touched, not changed
    assert update(spec)["added"] == 0  # its chunks (and citations) stay
    (docs / "c.md").write_text("# Gamma\n\nVectors and cosine scores.\n", encoding="utf-8")
    assert update(spec)["added"] == 1
    fresh_spec = write_documents_spec(tmp_path / "fresh.toml", docs, tmp_path / "fresh",
                                      model="floor")
    built = pipeline.build(load_spec(fresh_spec))
    wheres = [{"title": "Gamma"}, {"folder": "notes"}, {"extension": ".md"},
              {"modified": {"$gt": "2000-01-01T00:00:00Z"}}]
    with urna.open(next(iter(built["outputs"].values()))["file"]) as fresh, \
            urna.open_catalog(catalog) as cat:
        q = fresh.vectors([0])[0]
        for where in wheres:
            assert sorted(h.chunk_id for h in cat.search(q, 9, where=where)) == \
                sorted(h.chunk_id for h in fresh.search(q, 9, where=where)), where
        cat.compact()  # one segment again: the stored types (a timestamp) are kept
        assert cat.shards[0].metadata_schema == fresh.metadata_schema
        for where in wheres:
            assert sorted(h.chunk_id for h in cat.search(q, 9, where=where)) == \
                sorted(h.chunk_id for h in fresh.search(q, 9, where=where)), where


def test_compaction_keeps_a_declared_column_with_no_value(tmp_path: Path) -> None:
    # a declared metadata column is stored even when every row is null (a fresh build's
    # schema); merged segments keep it, so a filter on it answers instead of naming an
    # unknown field
    from urna.build_options import BuildOptions
    from urna.runtime.catalog.living import SegmentFormat, create

    from .corpus import CHUNKER, DIM, MODEL, MODEL_HASH

    fmt = SegmentFormat(MODEL, DIM, CHUNKER, MODEL_HASH,
                        BuildOptions(reproducible=True, metadata_types={"note": "string"}))
    path = tmp_path / "live.catalog.json"
    create(path, fmt, document("a.md"))
    with urna.open_catalog(path) as cat:
        cat.remove(chunk_ids=[cat.chunk_ids()[0]])
        assert cat.search(queries(1)[0], 9, where={"note": "x"}) == []
        cat.compact()
        assert cat.shards[0].metadata_schema == {"note": "string"}
        assert cat.search(queries(1)[0], 9, where={"note": "x"}) == []
