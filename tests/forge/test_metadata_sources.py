"""``[source] metadata = [...]`` for table sources and the document fields, through the build."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

import urna
from helpers.cli_runner import invoke
from urna.errors import IngestError, SpecError
from urna.forge.sources import load_rows
from urna.forge.sources.documents import load_document_rows
from urna.forge.spec import parse_spec, validate


def _spec(source: dict):
    spec = parse_spec({"corpus": {"name": "demo", "chunker_version": "demo/1"},
                       "source": source, "models": [{"preset": "potion", "text": "default"}]})
    validate(spec)
    return spec


def _jsonl(tmp_path: Path, rows: list[dict]) -> str:
    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


ROWS = [{"id": "a", "text": "red fox", "author": "ana", "year": 2020, "date": "2024-05-01"},
        {"id": "b", "text": "blue sky", "author": "bo", "year": 2021},
        {"id": "c", "text": "green sea", "year": None, "date": "2023-01-02T10:00:00Z"}]


def test_jsonl_columns_become_row_metadata(tmp_path: Path) -> None:
    spec = _spec({"kind": "jsonl", "path": _jsonl(tmp_path, ROWS), "order_by": ["id"],
                  "metadata": ["author", "year", "date"],
                  "metadata_types": {"date": "timestamp"}})
    rows = load_rows(spec)
    assert [r.metadata for r in rows] == [
        {"author": "ana", "year": 2020, "date": "2024-05-01"}, {"author": "bo", "year": 2021},
        {"date": "2023-01-02T10:00:00Z"}]


def test_csv_text_is_parsed_by_the_declared_type(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("id,text,n,ok,tags\n1,x,7,true,\"a, b\"\n2,y,,no,\n")
    spec = _spec({"kind": "csv", "path": str(p), "order_by": ["id"],
                  "metadata": ["n", "ok", "tags"],
                  "metadata_types": {"n": "int", "ok": "bool", "tags": "string_list"}})
    assert [r.metadata for r in load_rows(spec)] == [{"n": 7, "ok": True, "tags": ["a", "b"]},
                                                      {"ok": False}]
    p.write_text("id,text,n,ok,tags\n1,x,seven,,\n")
    with pytest.raises(IngestError, match="column 'n' = 'seven' is not of type int"):
        load_rows(spec)


def test_a_missing_column_is_a_spec_error_naming_it(tmp_path: Path) -> None:
    spec = _spec({"kind": "jsonl", "path": _jsonl(tmp_path, ROWS), "order_by": ["id"],
                  "metadata": ["author", "publisher"]})
    with pytest.raises(SpecError, match="source.metadata: column 'publisher'"):
        load_rows(spec)


@pytest.mark.parametrize("source, words", [
    ({"metadata": ["source_uri"]}, "built-in filter field"),
    ({"metadata": ["a", "a"]}, "listed twice"),
    ({"metadata": ["a"], "metadata_types": {"b": "int"}}, "metadata_types.b: not listed"),
    ({"metadata": ["a"], "metadata_types": {"a": "date"}}, "must be one of"),
    ({"metadata": "a"}, "expected list"),
])
def test_bad_metadata_keys_are_spec_errors(tmp_path: Path, source: dict, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        _spec({"kind": "jsonl", "path": "x.jsonl", "order_by": ["id"], **source})


def test_documents_carry_their_file_fields(docs_dir: Path) -> None:
    os.utime(docs_dir / "a.md", (1714521600, 1714521600))  # 2024-05-01T00:00:00Z
    spec = _spec({"kind": "documents", "path": str(docs_dir)})
    rows = load_document_rows(spec, report=lambda m: None)
    md = next(r for r in rows if r.source_uri == "a.md")
    assert md.metadata == {"path": "a.md", "folder": "", "extension": ".md",
                           "title": "Citations",
                           "modified": datetime(2024, 5, 1, tzinfo=UTC)}
    html = next(r for r in rows if r.source_uri == "e.html")
    assert html.metadata is not None and html.metadata["title"] == "Offline"
    pdf = next(r for r in rows if r.source_uri == "sub/d.pdf#page=1")  # a PDF cites by page
    assert pdf.metadata is not None
    assert (pdf.metadata["folder"], pdf.metadata["extension"]) == ("sub", ".pdf")
    assert "title" not in pdf.metadata


def test_a_built_corpus_answers_where(tmp_path: Path, docs_dir: Path) -> None:
    data = _jsonl(tmp_path, ROWS)
    spec = tmp_path / "corpus.toml"
    spec.write_text("\n".join([
        "[corpus]", 'name = "meta"', 'chunker_version = "meta/1"',
        "[source]", 'kind = "jsonl"', f'path = "{data}"', 'order_by = ["id"]',
        'metadata = ["author", "year", "date"]', "[source.metadata_types]",
        'date = "timestamp"', "[source.text]", 'template = "{text}"',
        "[[models]]", 'preset = "potion"', 'text = "default"',
        "[build]", 'preset = "exact"', "with_graph = false",
        "[output]", f'dir = "{(tmp_path / "out").as_posix()}"']) + "\n")
    res = invoke(["build", "--spec", str(spec), "--json"])
    assert res.exit_code == 0, res.output
    with urna.open(tmp_path / "out" / "meta.urna") as f:
        assert f.metadata_schema == {"author": "string", "date": "timestamp", "year": "int"}
        q = f.vectors([0])[0]
        hits = f.search(q, 3, where={"date": {"$gte": "2024-01-01"}})
        assert [h.metadata["author"] for h in hits] == ["ana"]
