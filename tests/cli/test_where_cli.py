"""``--where`` on the search verbs, and inspect / stats naming section 0x18 with its schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_runner import invoke
from helpers.vectors import REF, expected
from urna.format.append import with_section
from urna.format.layout import SECTION_METADATA
from urna.format.sections.metadata import encode_metadata

NAME = "quickstart-hybrid.urna"


def run(*args: object):
    return invoke([str(a) for a in args])


@pytest.fixture(scope="module")
def tagged(tmp_path_factory) -> Path:
    """The reference quickstart-hybrid with a ``part`` (int) and ``topic`` per chunk."""
    n = expected()[NAME]["inspect"]["n_chunks"]
    rows = [{"part": i % 3, "topic": "odd" if i % 2 else "even"} for i in range(n)]
    path = tmp_path_factory.mktemp("where") / NAME
    path.write_bytes(with_section((REF / NAME).read_bytes(), SECTION_METADATA,
                                  encode_metadata(rows, n)))
    return path


def _vector() -> str:
    return json.dumps(expected()[NAME]["queries"][0]["vector"])


@pytest.mark.parametrize("verb", [["search"], ["search-ann", "--ef", "16"],
                                  ["search-graph", "--hops", "1"]])
def test_search_verbs_take_where(tagged: Path, verb: list[str]) -> None:
    res = run(verb[0], tagged, _vector(), *verb[1:], "-k", "3", "--where", '{"part": 1}',
              "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["explain"]["filter"]["matches"] == 4
    assert len(doc["hits"]) == 3 and all(h["metadata"]["part"] == 1 for h in doc["hits"])
    text = run(verb[0], tagged, _vector(), *verb[1:], "-k", "2", "--where", '{"part": 2}')
    assert text.exit_code == 0, text.output
    assert "filter:       exact-filtered matches=4" in text.output
    assert text.output.count('metadata={"part": 2,') == 2


def test_without_where_the_output_has_no_filter_or_metadata_lines(tagged: Path) -> None:
    plain = run("search", REF / NAME, _vector(), "-k", "3")
    assert plain.exit_code == 0 and "filter:" not in plain.output
    assert "metadata=" not in plain.output


def test_text_verbs_take_where(tagged: Path) -> None:
    res = run("retrieve", tagged, "can I use this offline", "-k", "2", "--where",
              '{"topic": "odd"}', "--format", "json")
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert len(hits) == 2 and all(h["metadata"]["topic"] == "odd" for h in hits)
    ask = run("ask", tagged, "can I use this offline", "-k", "1", "--where",
              '{"topic": "even"}', "--json")
    assert ask.exit_code == 0, ask.output
    doc = json.loads(ask.output)
    assert doc["filter"]["matches"] == 6 and doc["hits"][0]["metadata"]["topic"] == "even"


@pytest.mark.parametrize("where, words", [("{not json", "InvalidFilterJson: filter: invalid JSON"),
                                          ("[1]", "expected an object"),
                                          ('{"nope": 1}', "unknown field 'nope'"),
                                          ('{"part": {"$near": 1}}', "$near")])
def test_a_bad_where_exits_1_naming_the_problem(tagged: Path, where: str, words: str) -> None:
    res = run("search", tagged, _vector(), "--where", where)
    assert res.exit_code == 1
    assert words in res.output


def test_inspect_and_stats_name_the_section_and_show_the_schema(tagged: Path) -> None:
    ins = run("inspect", tagged)
    assert ins.exit_code == 0, ins.output
    assert any(line.startswith("0x18 metadata ") for line in ins.output.splitlines())
    assert "Metadata: part (int), topic (string)" in ins.output
    doc = json.loads(run("inspect", tagged, "--json").output)
    assert doc["metadata"] == {"part": "int", "topic": "string"}
    stats = run("stats", tagged)
    assert "  0x18 metadata" in stats.output and "metadata:     2 fields" in stats.output
    assert json.loads(run("stats", tagged, "--json").output)["metadata"] == \
        {"part": "int", "topic": "string"}
    plain = json.loads(run("stats", REF / NAME, "--json").output)
    assert "metadata" not in plain
