"""corpus.toml: parsing, defaults, and SpecErrors that name the key (04-surface §3.1-3.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from urna.errors import RegistryError, SpecError, UrnaError
from urna.forge.spec import load_spec, validate

BASE = """
[corpus]
name = "demo"
chunker_version = "demo/1"

[source]
kind = "jsonl"
path = "rows.jsonl"
order_by = "id"

[[models]]
preset = "potion"
text = "default"
"""


def _spec(tmp_path: Path, text: str, name: str = "corpus.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _err(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as ei:
        validate(load_spec(_spec(tmp_path, text)))
    assert isinstance(ei.value, UrnaError) and isinstance(ei.value, ValueError)
    return str(ei.value)


def test_defaults_of_a_minimal_spec(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, BASE))
    validate(spec)
    assert spec.source.order_by == ["id"]  # a string is a one-column list
    assert (spec.title, spec.version, spec.reproducible) == ("", "0.1.0", True)
    assert (spec.build.preset, spec.build.with_graph, spec.build.graph_top_m) == ("hybrid", True, 8)
    assert (spec.output.mode, spec.output.dir, spec.output.provenance) == (
        "single", "out", "standard")
    assert spec.default_model().preset == "potion"


def test_json_spec_is_accepted(tmp_path: Path) -> None:
    import json
    import tomllib

    spec = load_spec(_spec(tmp_path, json.dumps(tomllib.loads(BASE)), "corpus.json"))
    validate(spec)
    assert spec.name == "demo"


def test_unknown_table_is_named(tmp_path: Path) -> None:
    msg = _err(tmp_path, BASE + "\n[indexes]\nhnsw = true\n")
    assert msg.startswith("indexes: unknown top-level table") and "corpus" in msg


def test_unknown_key_is_named_with_its_table(tmp_path: Path) -> None:
    msg = _err(tmp_path, BASE.replace('kind = "jsonl"', 'kind = "jsonl"\npth = "x"'))
    assert msg.startswith("source: unknown key 'pth'") and "path" in msg
    msg = _err(tmp_path, BASE + '\n[build]\npreset = "tiny"\ngraph = true\n')
    assert msg.startswith("build: unknown key 'graph'")


@pytest.mark.parametrize("drop,key", [
    ('name = "demo"\n', "corpus.name"),
    ('chunker_version = "demo/1"\n', "corpus.chunker_version"),
    ('path = "rows.jsonl"\n', "source.path"),
    ('order_by = "id"\n', "source.order_by"),
    ('kind = "jsonl"\n', "source.kind"),
])
def test_missing_required_key_is_named(tmp_path: Path, drop: str, key: str) -> None:
    assert _err(tmp_path, BASE.replace(drop, "")).startswith(f"{key}:")


def test_unset_and_empty_env_vars_name_the_key(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("URNA_TEST_UNSET", raising=False)
    text = BASE.replace('path = "rows.jsonl"', 'path = "${URNA_TEST_UNSET}/rows.jsonl"')
    msg = _err(tmp_path, text)
    assert msg.startswith("source.path: ${URNA_TEST_UNSET} is not set")
    assert "export URNA_TEST_UNSET=" in msg
    monkeypatch.setenv("URNA_TEST_UNSET", "")
    assert "is empty" in _err(tmp_path, text)
    monkeypatch.setenv("URNA_TEST_UNSET", "/data")
    assert load_spec(_spec(tmp_path, text)).source.path == "/data/rows.jsonl"


def test_bare_dollar_and_placeholders_are_untouched(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, BASE + '\n[source.text]\ntemplate = "{title}: $5 {text}"\n'))
    assert spec.source.text.template == "{title}: $5 {text}"


def test_tilde_expands_to_home(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, BASE.replace('"rows.jsonl"', '"~/rows.jsonl"')))
    assert spec.source.path == str(Path.home() / "rows.jsonl")


@pytest.mark.parametrize("extra,key", [
    ('\n[media]\nbackend = "av1"\n', "media"),
    ('\n[source.image]\npath_template = "{path}"\n', "source.image"),
])
def test_image_and_media_tables_are_refused_clearly(tmp_path: Path, extra: str, key: str) -> None:
    msg = _err(tmp_path, BASE + extra)
    assert msg.startswith(f"{key}:") and "not supported" in msg


@pytest.mark.parametrize("kind", ["image_dir", "pdf_dir"])
def test_image_kinds_are_refused(tmp_path: Path, kind: str) -> None:
    msg = _err(tmp_path, BASE.replace('kind = "jsonl"', f'kind = "{kind}"'))
    assert msg.startswith("source.kind:") and "not supported" in msg


def test_models_must_be_an_array_of_tables(tmp_path: Path) -> None:
    text = BASE.replace("[[models]]", "[models]")
    with pytest.raises(SpecError, match=r"^models: .*\[\[models\]\]"):
        load_spec(_spec(tmp_path, text))


def test_exactly_one_default_model(tmp_path: Path) -> None:
    text = BASE + '\n[[models]]\npreset = "floor"\ntext = "default"\n'
    assert _err(tmp_path, text).startswith('models: exactly one text="default"')


def test_unknown_preset_is_a_registry_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="clip-vit-b32"):
        validate(load_spec(_spec(tmp_path, BASE.replace('"potion"', '"clip-vit-b32"'))))


def test_wrong_value_type_is_named(tmp_path: Path) -> None:
    msg = _err(tmp_path, BASE + '\n[build]\ngraph_top_m = "eight"\n')
    assert msg.startswith("build.graph_top_m: expected int")


def test_unparsable_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not parse"):
        load_spec(_spec(tmp_path, "[corpus\nname="))
    with pytest.raises(SpecError, match="unsupported extension"):
        load_spec(_spec(tmp_path, BASE, "corpus.ini"))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers.budget import examples  # noqa: E402
from urna.forge.spec import parse_spec  # noqa: E402

_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                                 st.sampled_from(["", "x", "potion", "default", "jsonl", "id"])),
                       lambda inner: st.one_of(st.lists(inner, max_size=3),
                                               st.dictionaries(st.sampled_from(
                                                   ["name", "kind", "path", "preset", "text",
                                                    "order_by", "template", "query", "on"]),
                                                   inner, max_size=3)), max_leaves=8)
_docs = st.dictionaries(
    st.sampled_from(["corpus", "source", "models", "build", "output", "media", "embedding", "x"]),
    st.one_of(_values, st.dictionaries(st.sampled_from(
        ["name", "chunker_version", "kind", "path", "order_by", "text", "joins", "derive",
         "preset", "with_graph", "mode", "dir", "image", "dims"]), _values, max_size=4)),
    max_size=5)


@settings(max_examples=examples(400, 150), deadline=None)
@given(_docs)
def test_any_document_parses_or_raises_a_spec_error(doc: dict) -> None:
    try:
        validate(parse_spec(doc))
    except (SpecError, RegistryError) as e:
        assert ":" in str(e)  # every message starts with the offending key


@pytest.mark.parametrize("corpus,message", [
    (3, "corpus: must be a table"),
    ([], "corpus: must be a table"),
    ({"x": 1}, "corpus: unknown key 'x' (valid: chunker_version, name, reproducible, title, "
               "version)"),
    ({"name": 5}, "corpus.name: expected str, got int"),
])
def test_corpus_table_faults_are_named(corpus: object, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec({"corpus": corpus})
    assert str(exc.value) == message


def test_corpus_keys_lead_the_resolved_spec() -> None:
    # The build lock (to_dict) lists the [corpus] keys first, in this order, then the tables.
    spec = parse_spec({"corpus": {"reproducible": False, "version": "2", "title": "t",
                                  "chunker_version": "c/1", "name": "n"}})
    d = spec.to_dict()
    assert list(d) == ["name", "chunker_version", "title", "version", "reproducible", "source",
                       "models", "build", "output", "media", "embedding", "spec_path"]
    assert [d[k] for k in list(d)[:5]] == ["n", "c/1", "t", "2", False]
    assert parse_spec({}).to_dict()["version"] == "0.1.0"
