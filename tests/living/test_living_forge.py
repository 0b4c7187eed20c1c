"""``urna build --spec --update`` and the living CLI verbs, against a real forge build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import urna
from helpers.cli_runner import invoke
from helpers.specs import write_jsonl_spec
from urna.errors import CatalogError
from urna.forge import pipeline
from urna.forge.spec import load_spec
from urna.runtime.catalog import catalog_hash

from .corpus import ranked, tamper
from .forged import fresh_build, live_spec, live_texts, run_json, source_rows


def _catalog(tmp_path: Path, n: int) -> Path:
    """A living catalog of ``n`` rows made by ``urna build --update``."""
    return Path(run_json("build", "--spec", live_spec(tmp_path / "live", source_rows(n)),
                     "--update")["catalog"])


def test_update_writes_only_the_change_and_answers_like_a_rebuild(tmp_path: Path) -> None:
    spec = live_spec(tmp_path / "live", source_rows(30))
    first = run_json("build", "--spec", spec, "--update")
    assert (first["version"], first["added"], first["removed"]) == (1, 30, 0)
    again = run_json("build", "--spec", spec, "--update")
    assert (again["version"], again["added"], again["removed"]) == (1, 0, 0)  # nothing changed
    catalog = Path(first["catalog"])
    with urna.open_catalog(catalog) as cat:  # every citation version 1 hands out
        kept = [h.citation_id for h in cat.retrieve(cat.shards[0].vectors([5])[0], 30)]
    # row 3 edited, row 29 deleted, rows 30 and 31 new
    new_rows = source_rows(32, {3: "row 3 rewritten entirely"})
    del new_rows[29]
    live_spec(tmp_path / "live", new_rows)
    upd = run_json("build", "--spec", spec, "--update")
    assert (upd["version"], upd["added"], upd["removed"], upd["segments"]) == (2, 3, 2, 2)
    fresh = fresh_build(tmp_path / "fresh", new_rows)
    with urna.open_catalog(catalog) as cat:
        assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())
        for q in fresh.vectors([0, 3, 10, 29]):
            assert ranked(cat.search(q, 5)) == ranked(fresh.search(q, 5))
        statuses = {cat.cite(c).status for c in kept}
        assert statuses == {"live", "removed"}  # untouched rows keep their citations
        assert sum(cat.cite(c).status == "removed" for c in kept) == 2


def test_cli_add_remove_compact_log(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, 12)
    extra = fresh_build(tmp_path / "extra", [{"id": "x1", "text": "an extra row"}])
    added = run_json("add", catalog, extra.path, "--json")
    assert (added["version"], added["chunks"], added["segments"]) == (2, 13, 2)
    removed = run_json("remove", catalog, "--where", '{"byte_start": {"$lt": 2}}', "--json")
    assert removed["version"] == 3 and len(removed["removed"]) == 3  # ordinals 0, 1 and x1's 0
    gone = run_json("remove", catalog, "--chunk-id", fresh_id(extra), "--json")
    assert gone["removed"] == []  # already removed: nothing new
    compacted = run_json("compact", catalog, "--json")
    assert (compacted["segments"], compacted["chunks"], compacted["tombstones"]) == (1, 10, 0)
    log = run_json("log", catalog, "--json")
    assert [v["op"] for v in log] == ["create", "add", "remove", "remove", "compact"]
    assert all(b["parent"] == a["version_hash"] for a, b in zip(log, log[1:], strict=False))
    res = invoke(["log", str(catalog)])
    assert res.exit_code == 0 and "compact" in res.output
    for v in range(1, 6):  # every version reopens and verifies
        with urna.open_catalog(catalog, version=v) as cat:
            assert cat.validate() and cat.version == v


def fresh_id(f: urna.UrnaFile) -> str:
    """The only chunk id of a one-row file."""
    return f.chunk_ids()[0]


def test_a_tampered_log_is_refused(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, 4)
    with urna.open_catalog(catalog) as cat:
        cat.remove(chunk_ids=[cat.chunk_ids()[0]])
    doc = json.loads(catalog.read_text())
    doc["living"]["versions"][1]["tombstones"] = []
    doc["catalog_hash"] = catalog_hash(doc)  # a consistent outer hash: the chain still catches it
    catalog.write_text(json.dumps(doc))
    res = invoke(["log", str(catalog)])
    assert res.exit_code == 1 and "version_hash mismatch" in res.output
    with pytest.raises(CatalogError, match="version 2: version_hash mismatch"):
        urna.open_catalog(catalog)


def test_cli_cite_says_removed_and_compacted(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, 6)
    with urna.open_catalog(catalog) as cat:
        cits = [h.citation_id for h in cat.retrieve(cat.shards[0].vectors([0])[0], 6)]
        gone = cat.remove(chunk_ids=[cits[0].rsplit("/", 1)[1]])["removed"]
        cat.compact()
    assert gone == [cits[0]]
    removed = run_json("cite", catalog, cits[0], "--json")
    assert (removed["status"], removed["removed_in"], removed["version"]) == ("removed", 2, 3)
    moved = run_json("cite", catalog, cits[1], "--json")
    assert (moved["status"], moved["compacted_from"], moved["compacted_in"]) == \
        ("compacted", cits[1], 3)
    assert moved["citation_id"] != cits[1] and moved["chunk_id"] == cits[1].rsplit("/", 1)[1]
    res = invoke(["cite", str(catalog), "urna://sha256:" + "0" * 64 +
                                   "/sha256:" + "1" * 64])
    assert res.exit_code == 1 and "CitationError" in res.output and "unknown" in res.output


def test_an_old_version_naming_a_path_outside_is_refused(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, 4)
    with urna.open_catalog(catalog) as cat:
        cat.remove(chunk_ids=[cat.chunk_ids()[0]])
    segment = json.loads(catalog.read_text())["living"]["versions"][0]["segments"][0]
    tamper(catalog, 1, {"segments": [{**segment, "file": "../escape.urna"}]})
    with pytest.raises(CatalogError, match=r"version 1: segments\[0\].file must be a plain"):
        urna.open_catalog(catalog, version=1)


def test_a_row_shifted_by_a_deletion_is_replaced_when_it_changes(tmp_path: Path) -> None:
    # a row source's span is its ordinal: deleting row 10 shifts every row after it, which
    # keep their chunks (and citations); editing one of them later must replace that chunk
    spec = live_spec(tmp_path / "live", source_rows(30))
    catalog = Path(run_json("build", "--spec", spec, "--update")["catalog"])
    rows = source_rows(30)
    del rows[10]
    live_spec(tmp_path / "live", rows)
    assert run_json("build", "--spec", spec, "--update")["removed"] == 1
    rows[19] = {"id": "0020", "text": "row 20 edited"}
    live_spec(tmp_path / "live", rows)
    upd = run_json("build", "--spec", spec, "--update")
    assert (upd["added"], upd["removed"], upd["chunks"]) == (1, 1, 29)
    assert live_texts(catalog) == sorted(r["text"] for r in rows)


def test_a_record_naming_chunks_not_live_is_rebuilt_from_the_live_ids(tmp_path: Path) -> None:
    # before 2026-12-04 a shifted row was recorded under its new ordinal's id, which no segment
    # holds; the next update sees the record out of step and diffs against the live ids
    spec = live_spec(tmp_path / "live", source_rows(12))
    catalog = Path(run_json("build", "--spec", spec, "--update")["catalog"])
    sources = json.loads(catalog.read_text())["living"]["versions"][0]["sources"]
    sources["0005"] = [sources["0005"][0], "sha256:" + "5" * 64]
    tamper(catalog, 1, {"sources": sources})
    rows = source_rows(12, {5: "row 5 edited"})
    live_spec(tmp_path / "live", rows)
    upd = run_json("build", "--spec", spec, "--update")
    assert (upd["added"], upd["removed"], upd["chunks"]) == (1, 1, 12)
    assert live_texts(catalog) == sorted(r["text"] for r in rows)
    fresh = fresh_build(tmp_path / "fresh", rows)
    with urna.open_catalog(catalog) as cat:
        assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())


def test_an_update_with_another_model_or_chunker_is_refused(tmp_path: Path) -> None:
    from urna.errors import SpecError
    from urna.forge.update import update

    rows = source_rows(6)
    spec = write_jsonl_spec(tmp_path / "live", rows, name="docs", model="floor", mode="single")
    catalog = Path(update(load_spec(spec))["catalog"])
    before = {p.name: p.read_bytes() for p in catalog.parent.iterdir()}
    rows.append({"id": "9999", "text": "a new row"})
    potion = write_jsonl_spec(tmp_path / "live", rows, name="docs", model="potion", mode="single")
    with pytest.raises(SpecError, match="one corpus holds one model"):
        update(load_spec(potion))  # its vectors would sit under the floor model's hash
    rechunked = write_jsonl_spec(tmp_path / "live", rows, name="docs", model="floor",
                                 mode="single")
    rechunked.write_text(rechunked.read_text().replace('chunker_version = "docs/1"',
                                                       'chunker_version = "docs/2"'))
    with pytest.raises(SpecError, match="chunker 'docs/2'"):
        update(load_spec(rechunked))
    assert {p.name: p.read_bytes() for p in catalog.parent.iterdir()} == before


def test_an_mrl_corpus_takes_updates_like_a_fresh_build(tmp_path: Path) -> None:
    from urna.forge.update import update

    def spec_of(root: Path, rows: list[dict]) -> Path:
        spec = write_jsonl_spec(root, rows, name="docs", model="floor", mode="single")
        spec.write_text(spec.read_text().replace("[build]", "[build]\nmrl_dim = 64"))
        return spec

    rows = source_rows(8)
    catalog = Path(update(load_spec(spec_of(tmp_path / "live", rows)))["catalog"])
    rows = source_rows(10, {2: "row 2 rewritten"})
    assert update(load_spec(spec_of(tmp_path / "live", rows)))["added"] == 3
    built = pipeline.build(load_spec(spec_of(tmp_path / "fresh", rows)))
    with urna.open(next(iter(built["outputs"].values()))["file"]) as fresh, \
            urna.open_catalog(catalog) as cat:
        assert cat.embedding_dim == fresh.embedding_dim == 64
        assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())
        for q in fresh.vectors([0, 2, 9]):
            assert ranked(cat.search(q, 4)) == ranked(fresh.search(q, 4))
