"""The forge's per-key record of a living catalog: inline for a small change, a sidecar file
for a large one (``runtime.catalog.sources``).

A first ``--update`` records every row; inline, that made a catalog of ~190 bytes a row which
every open parsed and hashed whole. Past ``INLINE_SOURCES`` keys the change goes to a sidecar
named and hashed by its record: a search never reads it, an update reads and checks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from urna.errors import CatalogError
from urna.format.hashing import sha256_bytes
from urna.runtime.catalog import document as catalog_document_module
from urna.runtime.catalog.sources import (
    INLINE_SOURCES,
    encode_sources,
    read_sidecar,
    sidecar_fields,
)

from .corpus import ranked
from .forged import fresh_build, live_spec, live_texts, run_json, source_rows

N = INLINE_SOURCES + 44  # a first version past the inline limit


def _records(catalog: Path) -> list[dict[str, Any]]:
    return json.loads(catalog.read_text(encoding="utf-8"))["living"]["versions"]


def test_a_large_change_goes_to_a_sidecar_and_an_update_reads_it(tmp_path: Path) -> None:
    spec = live_spec(tmp_path / "live", source_rows(N))
    catalog = Path(run_json("build", "--spec", spec, "--update")["catalog"])
    first = _records(catalog)[0]
    assert "sources" not in first and first["n_sources"] == N
    sidecar = catalog.parent / first["sources_file"]
    assert sidecar.is_file() and len(sidecar.read_bytes().splitlines()) == N
    assert catalog.stat().st_size < 4096  # one record of counts and names, not N keys
    # a small change stays inline, and is taken against the sidecar's map
    new_rows = source_rows(N + 2, {3: "row 3 rewritten entirely"})
    del new_rows[10]
    live_spec(tmp_path / "live", new_rows)
    upd = run_json("build", "--spec", spec, "--update")
    assert (upd["version"], upd["added"], upd["removed"]) == (2, 3, 2)
    second = _records(catalog)[1]
    assert sorted(second["sources"]) == sorted({"0003", "0010", f"{N:04d}", f"{N + 1:04d}"})
    assert second["sources"]["0010"] is None
    assert run_json("build", "--spec", spec, "--update")["version"] == 2  # nothing changed since
    # the rows after the deleted one keep their chunks (their ids name their old ordinals)
    assert live_texts(catalog) == sorted(r["text"] for r in new_rows)
    fresh = fresh_build(tmp_path / "fresh", new_rows[:10])
    with urna.open_catalog(catalog) as cat:
        for q in fresh.vectors([0, 3, 9]):
            assert ranked(cat.search(q, 3))[0] == ranked(fresh.search(q, 1))[0]


@pytest.mark.parametrize("damage", ["missing", "altered"])
def test_a_search_never_reads_the_sidecar_and_an_update_checks_it(tmp_path: Path,
                                                                  damage: str) -> None:
    spec = live_spec(tmp_path / "live", source_rows(N))
    catalog = Path(run_json("build", "--spec", spec, "--update")["catalog"])
    sidecar = catalog.parent / _records(catalog)[0]["sources_file"]
    if damage == "missing":
        sidecar.unlink()
    else:
        sidecar.write_bytes(sidecar.read_bytes().replace(b'"0007"', b'"0008"', 1))
    with urna.open_catalog(catalog) as cat:
        q = cat.shards[0].vectors([7])[0]
        assert cat.search(q, 1)[0].score == pytest.approx(1.0)
    before = {p.name: p.read_bytes() for p in catalog.parent.iterdir()}
    live_spec(tmp_path / "live", source_rows(N + 1))
    with pytest.raises(CatalogError, match="version 1: " + (
            "cannot read its sources file" if damage == "missing" else
            "is not the sources file the log hashed|is not \\[key")):
        urna.forge.update.update(urna.forge.spec.load_spec(spec))
    assert {p.name: p.read_bytes() for p in catalog.parent.iterdir()} == before


_CHANGES = st.dictionaries(
    st.text(max_size=12), st.one_of(st.none(), st.lists(st.text(max_size=8), min_size=2,
                                                        max_size=2)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(_CHANGES)
def test_a_sidecar_reads_back_its_change(tmp_path_factory: pytest.TempPathFactory,
                                         change: dict[str, Any]) -> None:
    folder = tmp_path_factory.mktemp("sidecar")
    data = encode_sources(change)
    (folder / "s.sources.jsonl").write_bytes(data)
    rec = {"version": 3, **sidecar_fields("s.sources.jsonl", sha256_bytes(data), len(change))}
    assert read_sidecar(folder, rec) == change


@pytest.mark.parametrize("lines, message", [
    ([b"not json"], "line 1 of"),
    ([b'["k","a"]'], "line 1 of"),
    ([b'["k","a","b","c"]'], "line 1 of"),
    ([b'[1,"a","b"]'], "line 1 of"),
    ([b'["k",null,"b"]'], "line 1 of"),
    ([b'["b","x","y"]', b'["a","x","y"]'], "line 2 of"),
    ([b'["a","x","y"]', b'["a",null]'], "line 2 of"),
    ([b'["\xff","x","y"]'], "line 1 of"),
    ([b"[]"], "line 1 of"),
])
def test_a_malformed_sidecar_is_refused_by_line(tmp_path: Path, lines: list[bytes],
                                                message: str) -> None:
    data = b"".join(line + b"\n" for line in lines)
    (tmp_path / "s.sources.jsonl").write_bytes(data)
    rec = {"version": 2, **sidecar_fields("s.sources.jsonl", sha256_bytes(data), len(lines))}
    with pytest.raises(CatalogError, match=f"version 2: {message}"):
        read_sidecar(tmp_path, rec)


def test_a_refused_first_version_leaves_no_file(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    spec = live_spec(tmp_path / "live", source_rows(N))
    monkeypatch.setattr(catalog_document_module, "MAX_CATALOG_BYTES", 200)
    with pytest.raises(CatalogError, match="nothing written"):
        urna.forge.update.update(urna.forge.spec.load_spec(spec))
    assert list((tmp_path / "live" / "out").iterdir()) == []
