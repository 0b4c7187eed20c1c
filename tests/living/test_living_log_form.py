"""The version log stores each version's tombstone change, and reads the earlier whole-set form.

A record lists the tombstones it adds (``removed``), the ones it lifts (``restored``) and how
many are live after it (``n_tombstones``), so a record grows with what its version changed:
before, each record carried the whole set, and a catalog's log grew with versions x removals.
Catalogs written in that earlier form (``tests/data/living-whole-tombstones``, written by the
previous code) open at every version, cite as they did, and take new versions in the new form.
The log's checks refuse a change that does not add up, and a catalog a reader would refuse for
its size is never written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import urna
from urna.errors import CatalogError
from urna.runtime.catalog import document as catalog_document_module

from .corpus import WHOLE, cid, document, fresh_file, new_catalog, queries, ranked, tamper

URIS = ("a.txt", "b.txt", "c.txt")


def whole_states() -> list[list[dict[str, Any]]]:
    """The live chunks of the fixture at versions 1..6 (tests/data/README.md)."""
    a, b, c = (document(u) for u in URIS)
    b10 = document("b.txt", 10)
    a_less = [a[0], a[2]]
    return [a + b + c, a_less + b + c, a_less + c + b10, a_less + b10, a_less + b10,
            a_less + b10[1:]]


def assert_versions_equal_fresh_builds(path: Path, states: list[list[dict[str, Any]]],
                                       folder: Path) -> None:
    """Every version searches like one file built from its live chunks."""
    qs = queries(3)
    for version, chunks in enumerate(states, start=1):
        fresh = fresh_file(folder / f"fresh-{version}.urna", chunks)
        with urna.open_catalog(path, version=version) as cat:
            assert cat.n_embeddings == len(chunks), version
            assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids()), version
            for q in qs:
                assert ranked(cat.search(q, len(chunks) + 2)) == \
                    ranked(fresh.search(q, len(chunks) + 2)), version
        fresh.close()


def records(path: Path) -> list[dict[str, Any]]:
    """The version records of a catalog file."""
    return json.loads(path.read_text(encoding="utf-8"))["living"]["versions"]


def test_a_catalog_of_the_whole_set_form_reads_at_every_version(tmp_path: Path) -> None:
    path = tmp_path / "whole.catalog.json"
    shutil.copytree(WHOLE, tmp_path, dirs_exist_ok=True)
    assert all("tombstones" in r and "removed" not in r for r in records(path))
    assert_versions_equal_fresh_builds(path, whole_states(), tmp_path)
    a, b = document("a.txt"), document("b.txt")
    with urna.open_catalog(path) as cat:
        assert [v["tombstones"] for v in cat.log()] == [0, 1, 4, 7, 0, 1]
        v1 = records(path)[0]["segments"][0]["content_hash"]
        gone = cat.cite(f"urna://{v1}/{cid(a[1])}")
        assert (gone.status, gone.removed_in) == ("removed", 2)
        gone = cat.cite(f"urna://{v1}/{cid(b[2])}")
        assert (gone.status, gone.removed_in) == ("removed", 3)
        moved = cat.cite(f"urna://{v1}/{cid(a[0])}")
        assert (moved.status, moved.compacted_in) == ("compacted", 5)


def test_new_versions_on_the_whole_set_form_record_their_change(tmp_path: Path) -> None:
    path = tmp_path / "whole.catalog.json"
    shutil.copytree(WHOLE, tmp_path, dirs_exist_ok=True)
    states = whole_states()
    a, b10 = document("a.txt"), document("b.txt", 10)
    with urna.open_catalog(path) as cat:
        cat.remove(chunk_ids=[cid(a[2])])  # version 7
        cat.add(document("d.txt"))  # version 8
        cat.remove(sources=["d.txt"])  # version 9
    states += [[a[0]] + b10[1:], [a[0]] + b10[1:] + document("d.txt"), [a[0]] + b10[1:]]
    new = records(path)[6:]
    assert [(r["removed"], r["restored"], r["n_tombstones"]) for r in new] == [
        ([[new[0]["segments"][0]["content_hash"], cid(a[2])]], [], 2),
        ([], [], 2),
        (sorted([new[2]["segments"][1]["content_hash"], cid(c)] for c in document("d.txt")),
         [], 5)]
    assert all("tombstones" not in r for r in new)
    assert_versions_equal_fresh_builds(path, states, tmp_path)


def test_a_record_grows_with_its_change_not_with_the_history(tmp_path: Path) -> None:
    docs = [document(f"doc{i}.txt", n_chunks=4) for i in range(12)]
    path = new_catalog(tmp_path, [c for d in docs for c in d])
    sizes = []
    with urna.open_catalog(path) as cat:
        for d in docs[:-1]:
            cat.remove(chunk_ids=[cid(d[0])])
            sizes.append(len(json.dumps(records(path)[-1])))
        assert cat.log()[-1]["tombstones"] == 11
    # each version removes one chunk: its record stays one entry long, whatever came before
    assert max(sizes) - min(sizes) <= 16, sizes
    assert [len(r["removed"]) for r in records(path)] == [0] + [1] * 11


def test_adding_a_segment_again_restores_it_and_leaves_no_file(tmp_path: Path) -> None:
    a, b = document("a.txt"), document("b.txt")
    path = new_catalog(tmp_path, a)
    with urna.open_catalog(path) as cat:
        cat.add(b)  # version 2: b's segment
        cat.remove(sources=["b.txt"])  # version 3: its three chunks tombstoned
        files = sorted(p.name for p in tmp_path.iterdir())
        cat.add(b)  # version 4: the same content, so the same segment, revived
        assert sorted(p.name for p in tmp_path.iterdir()) == files
        assert cat.n_embeddings == 6
    last = records(path)[-1]
    seg_b = last["segments"][1]["content_hash"]
    assert last["restored"] == sorted([seg_b, cid(c)] for c in b)
    assert (last["removed"], last["n_tombstones"]) == ([], 0)
    assert_versions_equal_fresh_builds(path, [a, a + b, a, a + b], tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"n_tombstones": 3}, "leave 2 tombstones, but it says n_tombstones = 3"),
    ({"n_tombstones": -1}, "n_tombstones must be a non-negative integer"),
    ({"n_tombstones": True}, "n_tombstones must be a non-negative integer"),
    ({"removed": [["sha256:" + "0" * 64, "x"]]}, "which it does not list"),
    ({"removed": [["a", "b", 2]]}, "a removed entry is not"),
    ({"restored": [[1, 2]]}, "a restored entry is not"),
    ({"restored": {}}, "restored must be a list of lists"),
])
def test_a_change_that_does_not_add_up_is_refused(tmp_path: Path, change: dict[str, Any],
                                                  message: str) -> None:
    a = document("a.txt")
    path = new_catalog(tmp_path, a)
    with urna.open_catalog(path) as cat:
        cat.remove(chunk_ids=[cid(a[0]), cid(a[1])])
    tamper(path, 2, change)
    with pytest.raises(CatalogError, match=message):
        urna.open_catalog(path)


def test_a_catalog_too_large_to_read_is_never_written(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = new_catalog(tmp_path, document("a.txt"))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(catalog_document_module, "MAX_CATALOG_BYTES", len(path.read_bytes()))
    with urna.open_catalog(path) as cat:
        with pytest.raises(CatalogError, match="nothing written"):
            cat.add(document("b.txt"))  # its record makes the catalog larger than a reader takes
        assert cat.version == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no new segment
    with urna.open_catalog(path) as cat:
        assert cat.n_embeddings == 3
    fresh = tmp_path / "new"
    fresh.mkdir()
    monkeypatch.setattr(catalog_document_module, "MAX_CATALOG_BYTES", 100)
    with pytest.raises(CatalogError, match="nothing written"):
        new_catalog(fresh, document("c.txt"))
    assert list(fresh.iterdir()) == []
