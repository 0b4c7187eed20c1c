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
