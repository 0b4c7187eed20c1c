"""Rows -> chunks (04-surface §3.4): order, template, source_uri, spans, input hashes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from urna.errors import IngestError, SpecError
from urna.forge.sources import load_rows
from urna.forge.sources.rows import render_template
from urna.forge.spec import load_spec, parse_spec, validate

ROOT = Path(__file__).resolve().parents[2]
# 04-surface §8.4(a): the reference's chunk ids of the quickstart spec build
QUICKSTART_IDS = [
    "sha256:19f36b3e072d553eb83626bf30db5e8f3b1f729a495f7826999ffeae53848e6e",
    "sha256:d4d0d94bc909b7e09a85d60947b55c2132d0ff71140a037c08231038683d8b45",
    "sha256:58f2445fcb0c2feb7b09e79d78f8e6bd183d786a0af1de8987b61a6ada9a2940",
    "sha256:6234159bd21e2a30eb80ab39bd8226fd3ab6c112a1635ba9fd3e00a43e94c134",
    "sha256:170dcfea4fb24050b0adf917aaab5737204c36750953f16d6de3667f53e7832d",
    "sha256:2abbba19493ed131f2c7e20cf3ab329d07e4364923b0cf682782e5095f7243d8",
    "sha256:47ecc7e1141759d285f08545d74de807a0196a73d5db27b024e7bbe3b2f78bb4",
    "sha256:b5dfeb09a643f6f0afde3f361316dde3ea503ff86c525d297e6ba79b5781a4be",
    "sha256:2be5a0f62d1bb7a69556b1a59d15e3a7d7cf9991baa579e83c1ae67cdd657748",
    "sha256:ada39fe0b2a0358d8a22814fae601d830e8e29b37e3f252b6a247632ad6a5444",
    "sha256:eed9a60b68133464e91c831f8af5960491f6c444cf1645fc5e4864435ab4bd44",
    "sha256:bb02652321d1671d5a915953e9e90db35e3788e19f53043ef11b06a2fb47d58b",
]


def _spec(source: dict, template: str = "", name: str = "demo"):
    doc = {"corpus": {"name": name, "chunker_version": "demo/1"}, "source": dict(source),
           "models": [{"preset": "potion", "text": "default"}]}
    if template:
        doc["source"]["text"] = {"template": template}
    spec = parse_spec(doc)
    validate(spec)
    return spec


def test_quickstart_rows_give_the_reference_chunk_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    from urna.forge.sources import corpus_input_hash

    monkeypatch.chdir(ROOT)
    spec = load_spec("examples/quickstart/corpus.toml")
    validate(spec)
    rows = load_rows(spec)
    ids = [__import__("urna").chunk_id(r.canonical_text, r.source_uri, r.byte_start, r.byte_end,
                                       spec.chunker_version) for r in rows]
    assert ids == QUICKSTART_IDS
    assert [(r.byte_start, r.byte_end) for r in rows] == [(i, i + 1) for i in range(12)]
    assert rows[7].key == "03-citations#2" and rows[7].source_uri == "demo/03-citations.md"
    assert corpus_input_hash(rows) == (
        "sha256:00ebc2f0e96cbbf0effd0ce5b38a80f8b8eb13c972fdcde4968affa21caaa8bb")


def _jsonl(tmp_path: Path, rows: list[dict]) -> str:
    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps(r) + "\n\n" for r in rows))
    return str(p)


def test_sort_is_by_string_not_number(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"id": 10, "t": "ten"}, {"id": 9, "t": "nine"}, {"id": 1, "t": "one"}])
    rows = load_rows(_spec({"kind": "jsonl", "path": path, "order_by": ["id"]}, "{t}"))
    assert [r.key for r in rows] == ["1", "10", "9"]
    assert [r.canonical_text for r in rows] == ["one", "ten", "nine"]
    assert [r.source_uri for r in rows] == ["item://demo/1", "item://demo/10", "item://demo/9"]


def test_non_unique_order_by_names_the_key(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"a": "x", "b": 1}, {"a": "x", "b": 2}])
    with pytest.raises(SpecError, match=r"^source\.order_by: \['a'\] is not unique.*append"):
        load_rows(_spec({"kind": "jsonl", "path": path, "order_by": ["a"]}))
    rows = load_rows(_spec({"kind": "jsonl", "path": path, "order_by": ["a", "b"]}))
    assert [r.key for r in rows] == ["x|1", "x|2"]
    assert [r.canonical_text for r in rows] == ["x|1", "x|2"]  # no template: identity text


def test_missing_order_by_column_is_named(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"a": "x"}])
    with pytest.raises(SpecError, match=r"^source\.order_by: column 'zz' missing in row 0"):
        load_rows(_spec({"kind": "jsonl", "path": path, "order_by": ["zz"]}))


def test_template_line_rules() -> None:
    tpl = """
    {title} \u2014 {subtitle}
    tags: [{tags}]
    {title} [{tags}]
    price: {price:.2f} ({unit})
    {missing}
    literal line
    {body}
    """
    row = {"title": "Card", "subtitle": "", "tags": "", "price": 2.5, "unit": "",
           "body": "  spaced   out\ttext "}
    assert render_template(tpl, row) == "Card\nCard\nprice: 2.50\nliteral line\nspaced out text"


def test_sample_keeps_evenly_spaced_rows(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"id": f"{i:02d}", "t": f"row {i}"} for i in range(10)])
    rows = load_rows(_spec({"kind": "jsonl", "path": path, "order_by": "id"}, "{t}"), sample=3)
    assert [r.key for r in rows] == ["00", "03", "06"]
    assert [(r.ordinal, r.byte_start, r.byte_end) for r in rows] == [
        (0, 0, 1), (1, 1, 2), (2, 2, 3)]


def test_csv_source(tmp_path: Path) -> None:
    p = tmp_path / "rows.csv"
    p.write_text("\ufeffid,text,source_uri\nb,second,doc://b\na,first,\n", encoding="utf-8")
    rows = load_rows(_spec({"kind": "csv", "path": str(p), "order_by": ["id"]}, "{text}"))
    assert [(r.canonical_text, r.source_uri) for r in rows] == [
        ("first", "item://demo/a"), ("second", "doc://b")]


def test_sqlite_source_with_join_and_derive(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    con = sqlite3.connect(db)
    con.execute("create table cards(id integer, path text)")
    con.execute("create table names(id integer, name text)")
    con.executemany("insert into cards values (?, ?)", [(2, "img/B.PNG"), (1, "img/a.png")])
    con.executemany("insert into names values (?, ?)", [(1, "Alpha"), (2, "Beta")])
    con.commit()
    con.close()
    spec = _spec({"kind": "sqlite", "db": str(db), "query": "select * from cards",
                  "order_by": ["id"],
                  "derive": {"stem": "basename_stem(path)", "low": "lower(path)"},
                  "joins": [{"query": "select * from names", "on": "id"}]}, "{name} ({stem}) {low}")
    rows = load_rows(spec)
    assert [r.canonical_text for r in rows] == ["Alpha (a) img/a.png", "Beta (B) img/b.png"]
    with pytest.raises(IngestError, match="source.query"):
        load_rows(_spec({"kind": "sqlite", "db": str(db), "query": "select * from nope",
                         "order_by": ["id"]}))


def test_bad_jsonl_line_is_reported_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text('{"id": 1}\n[1, 2]\n')
    with pytest.raises(IngestError, match=r"rows\.jsonl:2: not a JSON object"):
        load_rows(_spec({"kind": "jsonl", "path": str(p), "order_by": ["id"]}))
    p.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(IngestError, match="not UTF-8"):
        load_rows(_spec({"kind": "jsonl", "path": str(p), "order_by": ["id"]}))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]),
                       st.one_of(st.none(), st.text(max_size=30), st.integers(), st.floats())),
       st.sampled_from(["{a}", "{a} \u2014 {b}\n({c})", "x: {a:.2f}\n\n[{b}, ]\n{c}", "{a}{b}{c}"]))
def test_rendered_lines_are_clean_and_deterministic(row: dict, template: str) -> None:
    out = render_template(template, row)
    assert out == render_template(template, dict(row))
    for line in out.split("\n") if out else []:
        assert line and line == line.strip() and "  " not in line
        assert line[0] not in "\u2014\u2013" and line[-1] not in "\u2014\u2013"


def test_lone_surrogates_are_an_ingest_error(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text('{"id": "a", "t": "bad \\ud800 text"}\n')
    with pytest.raises(IngestError, match=r"row 'a': text is not valid Unicode"):
        load_rows(_spec({"kind": "jsonl", "path": str(p), "order_by": ["id"]}, "{t}"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}[]().:!0a b\u2014\n", max_size=25),
       st.dictionaries(st.sampled_from(["a", "b", "0"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=5))))
def test_any_template_renders_or_raises_a_spec_error(template: str, row: dict) -> None:
    try:
        out = render_template(template, row)
    except SpecError as e:
        assert str(e).startswith("source.text.template:")
    else:
        assert isinstance(out, str)


def _clean_line_by_the_rules(line: str) -> str:
    """§3.4's line cleaning written plainly: empty () / [] dropped, ", ]" closed, every run
    of whitespace one space, ends stripped, then dangling dashes at either end."""
    import re

    line = re.sub(r"\(\s*\)|\[\s*\]", "", line)
    line = re.sub(r",\s*\]", "]", line)
    line = re.sub(r"\s+", " ", line).strip()
    while line and line[0] in "\u2014\u2013":
        line = line[1:].lstrip()
    while line and line[-1] in "\u2014\u2013":
        line = line[:-1].rstrip()
    return line


_LINE_PARTS = st.lists(st.one_of(
    st.sampled_from(["(", ")", "[", "]", ",", " ", "\t", "\u00a0", "\u2003", "\u3000", "\x1c",
                     "\x85", "\u2028", "\u200b", "\u2014", "\u2013", "-", "x", "é"]),
    st.text(max_size=4)), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(_LINE_PARTS)
def test_a_line_is_cleaned_as_the_rules_say(line: str) -> None:
    from urna.forge.sources.rows import _clean_line

    assert _clean_line(line) == _clean_line_by_the_rules(line)


def test_split_and_the_regex_agree_on_whitespace_at_every_code_point() -> None:
    # _clean_line folds whitespace with str.split, the rules with \s: the same set here
    import re
    import sys

    space = re.compile(r"\s")
    assert [cp for cp in range(sys.maxunicode + 1)
            if bool(space.fullmatch(chr(cp))) != chr(cp).isspace()] == []
