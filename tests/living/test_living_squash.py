"""``squash``: every version before the newest KEEP folded into one record.

Claims: after random add / remove / replace / compact sequences and a squash, every kept
version answers exactly as before (chunk ids, searches, citations handed out); an older one
is refused by name; every citation ever handed out still resolves as before, except that a
chunk removed and compacted away within the folded versions answers ``removed`` with
``removed_in`` None and the same text; writes go on from the squashed log and a second squash
works. The catalog of a long churning history shrinks. A squash record anywhere but first,
malformed, or altered is refused on open.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import urna
from helpers.cli_runner import invoke
from urna.errors import CatalogError

from .corpus import (
    OPS,
    WHOLE,
    apply_op,
    cid,
    document,
    fresh_file,
    new_catalog,
    queries,
    ranked,
    tamper,
)


def _answers(path: Path, version: int, qs: Any) -> dict[str, Any]:
    with urna.open_catalog(path, version=version) as cat:
        return {"ids": sorted(cat.chunk_ids()), "n": cat.n_embeddings,
                "search": [ranked(cat.search(q, 4)) for q in qs],
                "cited": [h.citation_id for h in cat.retrieve(qs[0], cat.n_embeddings)]}


def _cite(path: Path, citation: str) -> dict[str, Any]:
    with urna.open_catalog(path) as cat:
        return cat.cite(citation).as_dict()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, keep=st.integers(1, 4))
# a segment's content comes back: doc2 added, compacted, removed, compacted again leaves the
# first segment's exact chunks (its content_hash moves to a segment and back)
@example(ops=[("add", "doc2.txt", 3), ("compact", "", 0), ("remove", "doc2.txt", 0),
              ("compact", "", 0)], keep=1)
# a removed chunk added back: its old citation must stay removed, not follow the new row
@example(ops=[("remove", "doc0.txt", 0), ("add", "doc0.txt", 0), ("compact", "", 0)], keep=1)
# the same content written again restores its removed chunks: the removal in force is the
# second one, before and after the squash
@example(ops=[("replace", "doc0.txt", 1), ("remove", "doc0.txt", 0), ("replace", "doc0.txt", 1),
              ("remove", "doc0.txt", 0)], keep=1)
def test_kept_versions_and_every_citation_survive_a_squash(ops, keep) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        live = {"doc0.txt": document("doc0.txt"), "doc1.txt": document("doc1.txt")}
        path = new_catalog(folder, [c for d in live.values() for c in d])
        with urna.open_catalog(path) as cat:
            for op in ops:
                apply_op(cat, live, op)
            head = cat.version
        qs = queries(3)
        before = {v: _answers(path, v, qs) for v in range(1, head + 1)}
        cited = sorted({c for a in before.values() for c in a["cited"]})
        cites = {c: _cite(path, c) for c in cited}
        with urna.open_catalog(path) as cat:
            first = cat.squash(keep)
        kept_from = max(1, head - keep + 1)
        assert (first is None) == (kept_from == 1)
        for v in range(1, head + 1):
            if v < kept_from:
                with pytest.raises(CatalogError, match=f"version {v} was squashed"):
                    urna.open_catalog(path, version=v)
            else:
                assert _answers(path, v, qs) == before[v]
        for c in cited:
            now = _cite(path, c)
            if now["status"] == "removed" and now["removed_in"] is None:
                # removed, then compacted away, both within the folded versions
                was = cites[c]
                assert was["status"] == "removed" and was["removed_in"] < kept_from
                assert (now["text"], now["citation_id"]) == (was["text"], c)
            else:
                assert now == cites[c]
        # writes go on from the squashed log, as they would have from the full one
        with urna.open_catalog(path) as cat:
            cat.add(document("new.txt"))
            live["new.txt"] = document("new.txt")
            assert cat.version == head + 1 and cat.validate()
            chunks = [c for d in live.values() for c in d]
            fresh = fresh_file(folder / "fresh.urna", chunks)
            assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())
            for q in qs:
                assert ranked(cat.search(q, 3)) == ranked(fresh.search(q, 3))
            fresh.close()


def _churned(folder: Path, versions: int) -> Path:
    """A catalog of 20 documents, every version removing one and adding its next revision,
    compacted every fifth version."""
    docs = [f"d{i}.txt" for i in range(20)]
    path = new_catalog(folder, [c for u in docs for c in document(u, 0, 6)])
    with urna.open_catalog(path) as cat:
        for v in range(versions):
            cat.replace(docs[v % 20], document(docs[v % 20], v + 1, 6))
            if v % 5 == 4:
                cat.compact()
    return path


def test_a_long_history_shrinks_and_old_segments_stay_citable(tmp_path: Path) -> None:
    path = _churned(tmp_path, 40)
    size = path.stat().st_size
    with urna.open_catalog(path) as cat:
        head = cat.version
        hit = cat.retrieve(queries(1)[0], 1)[0]
        gone = hit.citation_id
        cat.replace(hit.source_uri, document(hit.source_uri, 99, 6))  # its chunks removed
        cat.compact()  # and compacted away
        was = cat.cite(gone).as_dict()
        assert was["status"] == "removed" and was["removed_in"] == head + 1
        cat.squash(1)
        assert cat.version == head + 2 and cat.log()[0]["op"] == "squash"
    assert path.stat().st_size < size / 3
    now = _cite(path, gone)
    assert now["status"] == "removed" and now["removed_in"] is None
    assert now["text"] == was["text"]
    # every segment file a citation may need is kept, by the squash and by the next writer
    squashed = json.loads(path.read_text())["living"]["versions"][0]["squashed"]["files"]
    with urna.open_catalog(path) as cat:
        cat.add(document("after.txt"))
    assert all((tmp_path / f).is_file() for f in squashed.values())
    assert _cite(path, gone) == now


def test_a_second_squash_and_the_log(tmp_path: Path) -> None:
    path = _churned(tmp_path, 12)
    with urna.open_catalog(path) as cat:
        head = cat.version  # 1 + 12 replaces + 2 compactions
        assert head == 15
        assert cat.squash(5)["version"] == 11
        assert cat.squash(5) is None  # nothing older than the newest five
        cat.remove(sources=["d3.txt"])
        assert cat.squash(2)["version"] == 15
        assert [r["version"] for r in cat.log()] == [15, 16]
        assert cat.validate()


def test_the_cli_squashes_and_logs(tmp_path: Path) -> None:
    path = _churned(tmp_path, 6)  # versions 1..8
    got = invoke(["squash", path, "--keep", "2", "--json"])
    assert got.exit_code == 0, got.output
    first = json.loads(got.stdout)
    assert first["op"] == "squash" and first["version"] == 7
    lines = invoke(["log", path]).stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["7", "squash"], ["8", "replace"]]
    again = invoke(["squash", path, "--keep", "5"])
    assert again.exit_code == 0 and "nothing to squash" in again.stdout
    assert invoke(["squash", path, "--keep", "0"]).exit_code == 2  # a usage error


@pytest.mark.parametrize(("where", "change", "message"), [
    ("later", {"op": "squash"}, "only a log's first record"),
    ("first", {"squashed": {"files": {"h": "../x.urna"}, "moved": []}}, "plain file names"),
    ("first", {"squashed": {"files": {}}}, "squashed must be"),
    ("first", {"squashed": {"files": {}, "moved": [["a", "b", "3"]]}}, "old, new, version"),
    ("first", {"squashed": {"files": {}, "moved": [], "removed": [["a", "b"]]}},
     "segment, chunk_id, version"),
    ("first", {"squashed": {"files": {}, "moved": [], "other": []}}, "squashed must be"),
    ("first", {"tombstones": None}, "tombstones must be a list"),
    ("first", {"tombstones": []}, "leave"),  # a tombstone dropped: the next record's count
])
def test_a_malformed_or_altered_squash_is_refused(tmp_path: Path, where, change,
                                                  message) -> None:
    path = _churned(tmp_path, 6)
    with urna.open_catalog(path) as cat:
        cat.remove(sources=["d9.txt"])  # live tombstones in the squash record
        cat.add(document("e.txt"))
        cat.squash(2)
        first, head = cat.log()[0]["version"], cat.version
        assert cat.log()[0]["tombstones"] > 0
    tamper(path, first if where == "first" else head, change)
    with pytest.raises(CatalogError, match=message):
        urna.open_catalog(path)


def test_a_log_of_the_whole_set_form_squashes(tmp_path: Path) -> None:
    # the earlier record form (tests/data/living-whole-tombstones): versions 1..6, 5 compacts
    shutil.copytree(WHOLE, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "whole.catalog.json"
    qs = queries(3)
    before = {v: _answers(path, v, qs) for v in (5, 6)}
    a = document("a.txt")
    v1 = json.loads(path.read_text())["living"]["versions"][0]["segments"][0]["content_hash"]
    with urna.open_catalog(path) as cat:
        assert cat.squash(2)["version"] == 5
    assert {v: _answers(path, v, qs) for v in (5, 6)} == before
    removed = _cite(path, f"urna://{v1}/{cid(a[1])}")  # removed in 2, compacted away in 5
    assert (removed["status"], removed["removed_in"]) == ("removed", None)
    moved = _cite(path, f"urna://{v1}/{cid(a[0])}")
    assert (moved["status"], moved["compacted_in"]) == ("compacted", 5)
