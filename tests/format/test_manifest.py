"""The manifest (urna.format.manifest): typed read, validation, byte-exact serialisation.

Expected bytes are the manifests the reference wrote into tests/data; expected messages are
what the reference wheel (urna 0.5.1) said when the golden file was resealed around each
corrupted manifest and opened, or the mutation file's recorded messages. None is computed by
the code under test.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, load_cases
from urna.errors import (
    InvalidModelHash,
    Json,
    ManifestInvalid,
    UnsupportedDType,
    UnsupportedFormatVersion,
    UnsupportedIndexType,
    UnsupportedMetric,
    UnsupportedNormalize,
    UnsupportedRerankPolicy,
    UnsupportedSchemaVersion,
    UnsupportedScoreType,
    UrnaError,
)
from urna.format.layout import Header
from urna.format.manifest import Capabilities, CapabilitiesExt, Manifest

DATA = Path(__file__).resolve().parent.parent / "data"
VECTOR_FILES = sorted([*DATA.glob("golden*"), *(DATA / "ref-0.5.1").glob("*.urna"),
                       *(DATA / "ref-0.5.1-tokens").glob("*.urna")])
GOLDEN_JSON = (
    b'{"format_version":1,"schema_version":1,"embedding_model":"demo","embedding_dim":4,'
    b'"n_chunks":1,"dtype":"float32","metric":"ip","score_type":"cosine","normalize":"l2",'
    b'"index_type":"exact","rerank_policy":"none","model_hash":"sha256:'
    + b"0" * 64 + b'","chunker_version":"demo-chunker/1","capabilities":{"supports_exact":true,'
    b'"supports_ann":false,"supports_bm25":false,"supports_citations":true,'
    b'"supports_reproducible_build":true}}')
CAPS = (b'{"supports_exact":true,"supports_ann":false,"supports_bm25":false,'
        b'"supports_citations":true,"supports_reproducible_build":true}')
ZERO_HASH = "sha256:" + "0" * 64


def manifest_bytes(buf: bytes) -> bytes:
    h = Header.unpack(buf)
    return buf[h.manifest_offset:h.manifest_offset + h.manifest_size]


# ---------------------------------------------------------------- bytes of the reference

def test_golden_manifest_is_475_bytes_and_rebuilt_by_new() -> None:
    assert len(GOLDEN_JSON) == 475
    assert manifest_bytes((DATA / "golden_v1_minimal.urna").read_bytes()) == GOLDEN_JSON
    m = Manifest.new("demo", 4, 1, "demo-chunker/1", ZERO_HASH)
    m.validate()
    assert m.to_json_bytes() == GOLDEN_JSON
    m.created = "1970-01-01T00:00:00Z"
    assert m.to_json_bytes() == GOLDEN_JSON[:-1] + b',"created":"1970-01-01T00:00:00Z"}'
    assert len(m.to_json_bytes()) == 508


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_every_vector_manifest_round_trips_byte_for_byte(path: Path) -> None:
    raw = manifest_bytes(path.read_bytes())
    m = Manifest.from_json_bytes(raw)
    m.validate()
    assert m.to_json_bytes() == raw
    assert json.loads(raw) == m.to_dict()
    assert list(json.loads(raw)) == list(m.to_dict())


def test_provenance_vector_fields() -> None:
    raw = manifest_bytes((DATA / "ref-0.5.1" / "quickstart-provenance.urna").read_bytes())
    m = Manifest.from_json_bytes(raw)
    ref = json.loads(raw)
    for key in ("title", "version", "created", "description", "authors", "license"):
        assert getattr(m, key) == ref[key]
    mrl_raw = manifest_bytes((DATA / "ref-0.5.1" / "quickstart-mrl.urna").read_bytes())
    mrl = Manifest.from_json_bytes(mrl_raw)
    assert (mrl.mrl_dim, mrl.full_dim) == (mrl.embedding_dim, 2 * mrl.embedding_dim)
    graph_raw = manifest_bytes((DATA / "ref-0.5.1" / "quickstart-graph.urna").read_bytes())
    graph = Manifest.from_json_bytes(graph_raw)
    assert graph.capabilities_ext == CapabilitiesExt(graph_present=True)
    assert b'"capabilities_ext":{"graph_present":true}' in graph.to_json_bytes()


def test_optional_and_extra_keys() -> None:
    # Whitespace around the object, null optionals, unknown keys (top level kept, sorted on
    # write; inside capabilities dropped), a repeated unknown key keeps its last value.
    doc = (b'  \n'
           + GOLDEN_JSON[:-2].replace(b'"supports_ann":false', b'"supports_ann":false,"x":1')
           + b'},"title":null,"zz":[1,{"b":2,"a":1.5}],"mrl_dim":null,"aa":"\xc3\xa9","zz":true,'
           b'"capabilities_ext":{}} \t')
    m = Manifest.from_json_bytes(doc)
    assert m.title is None and m.mrl_dim is None
    assert m.capabilities == Capabilities()
    assert m.capabilities_ext == CapabilitiesExt()
    assert list(m.extra) == ["zz", "aa"] and m.extra["zz"] is True
    assert m.to_json_bytes() == (GOLDEN_JSON[:-1]
                                 + b',"capabilities_ext":{},"aa":"\xc3\xa9","zz":true}')
    m.authors = []
    assert b',"authors":[],' in m.to_json_bytes()


def test_capabilities_accepts_array_form() -> None:
    # serde derive accepts a struct as a sequence of its fields (reference: opens fine).
    m = Manifest.from_json_bytes(GOLDEN_JSON.replace(CAPS, b"[true,true,false,true,true]"))
    assert m.capabilities == Capabilities(supports_ann=True)


def test_unknown_capability_values_are_not_depth_limited() -> None:
    # serde's ignore_value has no depth limit; the reference opened this file.
    deep = b"[" * 300 + b"]" * 300
    doc = GOLDEN_JSON.replace(b'"supports_ann":false', b'"supports_ann":false,"zz":' + deep)
    assert Manifest.from_json_bytes(doc).capabilities == Capabilities()


# ---------------------------------------------------------------- serde messages

# (old, new, reference message) applied once to the golden manifest; None: the reference parsed it.
EDITS = [
    (b'"format_version":1', b'"format_version":"1"',
     'JSON error: invalid type: string "1", expected u32 at line 1 column 21'),
    (b'"format_version":1', b'"format_version":-1',
     'JSON error: invalid value: integer `-1`, expected u32 at line 1 column 20'),
    (b'"format_version":1', b'"format_version":-0',
     'JSON error: invalid type: floating point `-0.0`, expected u32 at line 1 column 20'),
    (b'"format_version":1', b'"format_version":1.0',
     'JSON error: invalid type: floating point `1.0`, expected u32 at line 1 column 21'),
    (b'"format_version":1', b'"format_version":4294967296',
     'JSON error: invalid value: integer `4294967296`, expected u32 at line 1 column 28'),
    (b'"format_version":1', b'"format_version":99999999999999999999',
     'JSON error: invalid type: floating point `1e+20`, expected u32 at line 1 column 38'),
    (b'"format_version":1', b'"format_version":null',
     'JSON error: invalid type: null, expected u32 at line 1 column 22'),
    (b'"format_version":1', b'"format_version":true',
     'JSON error: invalid type: boolean `true`, expected u32 at line 1 column 22'),
    (b'"format_version":1', b'"format_version":[1]',
     'JSON error: invalid type: sequence, expected u32 at line 1 column 18'),
    (b'"format_version":1', b'"format_version":{}',
     'JSON error: invalid type: map, expected u32 at line 1 column 18'),
    (b'"n_chunks":1', b'"n_chunks":18446744073709551615', None),
    (b'"n_chunks":1', b'"n_chunks":18446744073709551616',
     'JSON error: invalid type: floating point `1.8446744073709552e+19`, expected u64 '
     'at line 1 column 113'),
    (b'"n_chunks":1', b'"n_chunks":-9223372036854775808',
     'JSON error: invalid value: integer `-9223372036854775808`, expected u64 '
     'at line 1 column 113'),
    (b'"embedding_model":"demo"', b'"embedding_model":5',
     'JSON error: invalid type: integer `5`, expected a string at line 1 column 58'),
    (b'"embedding_model":"demo"', b'"embedding_model":null',
     'JSON error: invalid type: null, expected a string at line 1 column 61'),
    (b'"embedding_model":"demo"', b'"embedding_model":false',
     'JSON error: invalid type: boolean `false`, expected a string at line 1 column 62'),
    (b'"dtype":"float32"', b'"dtype":1.5e300',
     'JSON error: invalid type: floating point `1.5e+300`, expected a string at line 1 column 110'),
    (b'"dtype":"float32",', b'', 'JSON error: missing field `dtype` at line 1 column 457'),
    (b'"format_version":1,', b'',
     'JSON error: missing field `format_version` at line 1 column 456'),
    (b'"normalize":"l2",', b'', 'JSON error: missing field `normalize` at line 1 column 458'),
    (b'"format_version":1,"schema_version":1', b'"schema_version":1,"format_version":1', None),
    (b'"demo"', b'"a\\"b\\n\\u0001\\u00e9\\u0301\\u200bx"', None),
    (b'"supports_ann":false,', b'',
     'JSON error: missing field `supports_ann` at line 1 column 453'),
    (b'"supports_ann":false', b'"supports_ann":"no"',
     'JSON error: invalid type: string "no", expected a boolean at line 1 column 389'),
    (b'"supports_ann":false', b'"supports_ann":false,"supports_ann":true',
     'JSON error: duplicate field `supports_ann` at line 1 column 405'),
    (b'"supports_ann":false', b'"supports_ann":false,"zz":"\xff\\ud800"', None),
    (b'"supports_ann":false', b'"supports_ann":false,"zz":"\x01"',
     'JSON error: control character (\\u0000-\\u001F) found while parsing a string '
     'at line 1 column 397'),
    (b'"supports_ann":false', b'"supports_ann":false,"\xff":1',
     'JSON error: invalid unicode code point at line 1 column 394'),
    (b',"capabilities":@CAPS@', b'',
     'JSON error: missing field `capabilities` at line 1 column 332'),
    (b',"capabilities":@CAPS@', b',"capabilities":null',
     'JSON error: invalid type: null, expected struct Capabilities at line 1 column 351'),
    (b',"capabilities":@CAPS@', b',"capabilities":"x"',
     'JSON error: invalid type: string "x", expected struct Capabilities at line 1 column 350'),
    (b',"capabilities":@CAPS@', b',"capabilities":[true,false,false,true,true]', None),
    (b',"capabilities":@CAPS@', b',"capabilities":[true,false]',
     'JSON error: invalid length 2, expected struct Capabilities with 5 elements '
     'at line 1 column 359'),
    (b',"capabilities":@CAPS@', b',"capabilities":[true,false,false,true,true,1]',
     'JSON error: trailing characters at line 1 column 376'),
    (b',"capabilities":@CAPS@', b',"capabilities":[true,false,false,true,true,]',
     'JSON error: trailing comma at line 1 column 376'),
    (b',"capabilities":@CAPS@', b',"capabilities":[1]',
     'JSON error: invalid type: integer `1`, expected a boolean at line 1 column 349'),
    (b'@CAPS@}', b'@CAPS@,"title":null}', None),
    (b'@CAPS@}', b'@CAPS@,"title":1}',
     'JSON error: invalid type: integer `1`, expected a string at line 1 column 484'),
    (b'@CAPS@}', b'@CAPS@,"title":"a","title":"b"}',
     'JSON error: duplicate field `title` at line 1 column 494'),
    (b'@CAPS@}', b'@CAPS@,"title":null,"title":"b"}',
     'JSON error: duplicate field `title` at line 1 column 495'),
    (b'@CAPS@}', b'@CAPS@,"authors":"x"}',
     'JSON error: invalid type: string "x", expected a sequence at line 1 column 488'),
    (b'@CAPS@}', b'@CAPS@,"authors":[1]}',
     'JSON error: invalid type: integer `1`, expected a string at line 1 column 487'),
    (b'@CAPS@}', b'@CAPS@,"authors":["a",]}', 'JSON error: trailing comma at line 1 column 491'),
    (b'@CAPS@}', b'@CAPS@,"authors":["a" "b"]}',
     'JSON error: expected `,` or `]` at line 1 column 491'),
    (b'@CAPS@}', b'@CAPS@,"authors":[["a"]]}',
     'JSON error: invalid type: sequence, expected a string at line 1 column 486'),
    (b'@CAPS@}', b'@CAPS@,"mrl_dim":-4}',
     'JSON error: invalid value: integer `-4`, expected u32 at line 1 column 487'),
    (b'@CAPS@}', b'@CAPS@,"mrl_dim":4}', None),
    (b'@CAPS@}', b'@CAPS@,"capabilities_ext":[true]}',
     'JSON error: invalid length 1, expected struct CapabilitiesExt with 5 elements '
     'at line 1 column 500'),
    (b'@CAPS@}', b'@CAPS@,"capabilities_ext":[true,null,null,null,false,1]}',
     'JSON error: trailing characters at line 1 column 522'),
    (b'@CAPS@}', b'@CAPS@,"capabilities_ext":{"graph_present":1}}',
     'JSON error: invalid type: integer `1`, expected a boolean at line 1 column 512'),
    (b'@CAPS@}', b'@CAPS@,"capabilities_ext":{"graph_present":true,"graph_present":true}}',
     'JSON error: duplicate field `graph_present` at line 1 column 531'),
    (b'@CAPS@}', b'@CAPS@,"capabilities_ext":"x"}',
     'JSON error: invalid type: string "x", expected struct CapabilitiesExt at line 1 column 497'),
    (b'@CAPS@}', b'@CAPS@,"format_version":1}',
     'JSON error: duplicate field `format_version` at line 1 column 491'),
    (b'@CAPS@}', b'@CAPS@,"zz":1,"zz":"\xff"}',
     'JSON error: invalid unicode code point at line 1 column 490'),
    (b'@CAPS@}', b'@CAPS@,}', 'JSON error: trailing comma at line 1 column 476'),
    (b'@CAPS@}', b'@CAPS@} x', 'JSON error: trailing characters at line 1 column 477'),
    (b'@CAPS@}', b'@CAPS@}}', 'JSON error: trailing characters at line 1 column 476'),
    (b'@CAPS@}', b'@CAPS@', 'JSON error: EOF while parsing an object at line 1 column 474'),
    (b'{"format_version"', b'\n\n  {"format_version"', None),
    (b'"n_chunks":1', b'"n_chunks":\n  -1',
     'JSON error: invalid value: integer `-1`, expected u64 at line 2 column 4'),
    (b'{"format_version"', b'{"format_version\xc3',
     'JSON error: invalid unicode code point at line 1 column 21'),
]


@pytest.mark.parametrize("old,new,message", EDITS)
def test_serde_messages_match_reference(old: bytes, new: bytes, message: str | None) -> None:
    old, new = old.replace(b"@CAPS@", CAPS), new.replace(b"@CAPS@", CAPS)
    doc = GOLDEN_JSON.replace(old, new, 1)
    assert doc != GOLDEN_JSON
    if message is None:
        Manifest.from_json_bytes(doc)
        return
    with pytest.raises(Json) as exc:
        Manifest.from_json_bytes(doc)
    assert str(exc.value) == message


WHOLE = [
    (b'', 'JSON error: EOF while parsing a value at line 1 column 0'),
    (b'   ', 'JSON error: EOF while parsing a value at line 1 column 3'),
    (b'[]', 'JSON error: invalid type: sequence, expected struct Manifest at line 1 column 0'),
    (b'"x"', 'JSON error: invalid type: string "x", expected struct Manifest at line 1 column 3'),
    (b'null', 'JSON error: invalid type: null, expected struct Manifest at line 1 column 4'),
    (b'-1.5',
     'JSON error: invalid type: floating point `-1.5`, expected struct Manifest '
     'at line 1 column 4'),
    (b'{', 'JSON error: EOF while parsing an object at line 1 column 1'),
    (b'{}', 'JSON error: missing field `format_version` at line 1 column 2'),
    (b'{1:2}', 'JSON error: key must be a string at line 1 column 2'),
    (b'[1,2]', 'JSON error: invalid type: sequence, expected struct Manifest at line 1 column 0'),
    (b'true',
     'JSON error: invalid type: boolean `true`, expected struct Manifest at line 1 column 4'),
]


@pytest.mark.parametrize("doc,message", WHOLE)
def test_non_manifest_documents(doc: bytes, message: str) -> None:
    with pytest.raises(Json) as exc:
        Manifest.from_json_bytes(doc)
    assert str(exc.value) == message


def _manifest_json_cases() -> list[tuple[str, dict]]:
    cases = load_cases()
    return [(k, c) for k, c in sorted(cases.items())
            if c.get("variant") == "Json" and not c["mutation"].startswith("s06_")]


@pytest.mark.parametrize("name,case", _manifest_json_cases())
def test_mutation_file_manifest_messages(name: str, case: dict) -> None:
    with pytest.raises(Json) as exc:
        Manifest.from_json_bytes(manifest_bytes(apply_case(case)))
    assert str(exc.value) == case["message"]


# ---------------------------------------------------------------- validation (§7.5)

H = ZERO_HASH
# (old, new, error class, reference message) applied once to the golden manifest.
RULES = [
    ('"format_version":1', '"format_version":2', UnsupportedFormatVersion,
     "unsupported format_version: 2"),
    ('"schema_version":1', '"schema_version":7', UnsupportedSchemaVersion,
     "unsupported schema_version: 7"),
    ('"embedding_model":"demo"', '"embedding_model":""', ManifestInvalid,
     "manifest invalid: embedding_model must not be empty"),
    ('"embedding_dim":4', '"embedding_dim":0', ManifestInvalid,
     "manifest invalid: embedding_dim must be > 0"),
    ('"n_chunks":1', '"n_chunks":0', ManifestInvalid, "manifest invalid: n_chunks must be > 0"),
    ('"chunker_version":"demo-chunker/1"', '"chunker_version":""', ManifestInvalid,
     "manifest invalid: chunker_version must not be empty"),
    (H, "deadbeef", InvalidModelHash,
     "invalid model_hash: expected 'sha256:<hex>' prefix, got 'deadbeef'"),
    (H, H[:-1], InvalidModelHash,
     f"invalid model_hash: expected 64 hex chars after 'sha256:', got '{'0' * 63}'"),
    (H, H + "0", InvalidModelHash,
     f"invalid model_hash: expected 64 hex chars after 'sha256:', got '{'0' * 65}'"),
    (H, "sha256:" + "g" * 64, InvalidModelHash,
     f"invalid model_hash: expected 64 hex chars after 'sha256:', got '{'g' * 64}'"),
    (H, "sha256:" + "é" * 32, InvalidModelHash,
     f"invalid model_hash: expected 64 hex chars after 'sha256:', got '{'é' * 32}'"),
    ('"dtype":"float32"', '"dtype":"bfloat16"', UnsupportedDType, "unsupported dtype: bfloat16"),
    ('"metric":"ip"', '"metric":"l2"', UnsupportedMetric, "unsupported metric: l2"),
    ('"score_type":"cosine"', '"score_type":"dot"', UnsupportedScoreType,
     "unsupported score_type: dot"),
    ('"normalize":"l2"', '"normalize":"none"', UnsupportedNormalize, "unsupported normalize: none"),
    ('"index_type":"exact"', '"index_type":"ivf"', UnsupportedIndexType,
     "unsupported index_type: ivf"),
    ('"rerank_policy":"none"', '"rerank_policy":"maybe"', UnsupportedRerankPolicy,
     "unsupported rerank_policy: maybe"),
    ('"index_type":"exact"', '"index_type":"hnsw"', ManifestInvalid,
     'manifest invalid: index_type=hnsw requires rerank_policy="exact"'),
    ('"index_type":"exact","rerank_policy":"none"', '"index_type":"hybrid","rerank_policy":"exact"',
     ManifestInvalid,
     "manifest invalid: index_type=hybrid requires capabilities.supports_bm25=true"),
    ('"index_type":"exact","rerank_policy":"none"', '"index_type":"hnsw","rerank_policy":"exact"',
     ManifestInvalid, "manifest invalid: index_type=hnsw requires capabilities.supports_ann=true"),
    ('"supports_exact":true', '"supports_exact":false', ManifestInvalid,
     "manifest invalid: capabilities.supports_exact must be true (exact path is the ground truth)"),
    ('"supports_reproducible_build":true', '"supports_reproducible_build":false', ManifestInvalid,
     "manifest invalid: capabilities.supports_reproducible_build must be true"),
    ("true}}", 'true},"mrl_dim":0}', ManifestInvalid,
     "manifest invalid: mrl_dim must be > 0 when set"),
    ("true}}", 'true},"mrl_dim":0,"full_dim":8}', ManifestInvalid,
     "manifest invalid: mrl_dim must be > 0 when set"),
    ("true}}", 'true},"mrl_dim":4}', ManifestInvalid,
     "manifest invalid: mrl_dim requires full_dim (the source dim) to be set"),
    ("true}}", 'true},"full_dim":4}', ManifestInvalid,
     "manifest invalid: full_dim requires mrl_dim to be set"),
    ("true}}", 'true},"mrl_dim":8,"full_dim":4}', ManifestInvalid,
     "manifest invalid: mrl_dim (8) must be <= full_dim (4)"),
    ("true}}", 'true},"mrl_dim":2,"full_dim":8}', ManifestInvalid,
     "manifest invalid: mrl_dim (2) must equal embedding_dim (4); "
     "the runtime strides by embedding_dim"),
    # First failure wins.
    ('"format_version":1,"schema_version":1,"embedding_model":"demo"',
     '"format_version":3,"schema_version":3,"embedding_model":""', UnsupportedFormatVersion,
     "unsupported format_version: 3"),
]


@pytest.mark.parametrize("old,new,cls,message", RULES)
def test_validation_rules(old: str, new: str, cls: type, message: str) -> None:
    doc = GOLDEN_JSON.decode().replace(old, new, 1)
    assert doc != GOLDEN_JSON.decode()
    m = Manifest.from_json_bytes(doc.encode())
    with pytest.raises(cls) as exc:
        m.validate()
    assert str(exc.value) == message
    assert type(exc.value) is cls


@pytest.mark.parametrize("old,new", [
    ('"format_version":1', '"format_version":0'),
    (H, "sha256:" + "A" * 64),
    ('"supports_citations":true', '"supports_citations":false'),
    ('"score_type":"cosine"', '"score_type":"hybrid_rrf"'),
    ("true}}", 'true},"mrl_dim":4,"full_dim":8}'),
])
def test_accepted_by_validation(old: str, new: str) -> None:
    Manifest.from_json_bytes(GOLDEN_JSON.decode().replace(old, new, 1).encode()).validate()


def test_int4_mrl_rule_and_dtypes() -> None:
    m = Manifest.new("demo", 96, 1, "c/1", ZERO_HASH)
    m.dtype, m.mrl_dim, m.full_dim = "int4", 96, 384
    with pytest.raises(ManifestInvalid,
                       match=r"^manifest invalid: int4 requires mrl_dim divisible by 64, got 96$"):
        m.validate()
    m.embedding_dim = m.mrl_dim = 128
    m.validate()
    for dtype in ("float32", "float16", "int8", "int4"):
        Manifest(**{**Manifest.new("d", 4, 1, "c", ZERO_HASH).__dict__, "dtype": dtype}).validate()


def test_default_manifest_is_invalid() -> None:
    with pytest.raises(ManifestInvalid, match="embedding_model must not be empty"):
        Manifest().validate()


# ---------------------------------------------------------------- properties

_text = st.text(max_size=12)
_json_leaf = st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**64 - 1) | _text
_json = st.recursive(_json_leaf,
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                     max_leaves=8)
_opt_bool = st.none() | st.booleans()
_KNOWN = {"format_version", "schema_version", "embedding_model", "embedding_dim", "n_chunks",
          "dtype", "metric", "score_type", "normalize", "index_type", "rerank_policy", "model_hash",
          "chunker_version", "capabilities", "title", "version", "created", "description",
          "authors", "license", "mrl_dim", "full_dim", "capabilities_ext"}

manifests = st.builds(
    Manifest,
    format_version=st.integers(0, 2**32 - 1), schema_version=st.integers(0, 2**32 - 1),
    embedding_model=_text, embedding_dim=st.integers(0, 2**32 - 1),
    n_chunks=st.integers(0, 2**64 - 1),
    dtype=_text, metric=_text, score_type=_text, normalize=_text, index_type=_text,
    rerank_policy=_text, model_hash=_text, chunker_version=_text,
    capabilities=st.builds(Capabilities, st.booleans(), st.booleans(), st.booleans(),
                           st.booleans(), st.booleans()),
    title=st.none() | _text, version=st.none() | _text, created=st.none() | _text,
    description=st.none() | _text, authors=st.none() | st.lists(_text, max_size=3),
    license=st.none() | _text, mrl_dim=st.none() | st.integers(0, 2**32 - 1),
    full_dim=st.none() | st.integers(0, 2**32 - 1),
    capabilities_ext=st.none() | st.builds(CapabilitiesExt, _opt_bool, _opt_bool, _opt_bool,
                                           _opt_bool, _opt_bool),
    extra=st.dictionaries(_text.filter(lambda k: k not in _KNOWN), _json, max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(manifests)
def test_manifest_round_trip(m: Manifest) -> None:
    raw = m.to_json_bytes()
    assert m.to_json_bytes() == raw
    back = Manifest.from_json_bytes(raw)
    assert back == m
    assert back.to_json_bytes() == raw
    assert json.loads(raw) == m.to_dict()
    keys = list(json.loads(raw))
    assert keys[len(keys) - len(m.extra):] == sorted(m.extra)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60))
def test_garbage_raises_only_urna_errors(data: bytes) -> None:
    with contextlib.suppress(UrnaError):
        Manifest.from_json_bytes(GOLDEN_JSON[:200] + data).validate()


# Long runs (reference messages): the float serde_json computes shows in the invalid-type text.
LONG_NUMBERS = [
    (b"0." + b"0" * 100000 + b"1", "floating point `0.0`, expected u32 at line 1 column 100021"),
    (b"1" + b"0" * 100000, "number out of range at line 1 column 100019"),
    (b"1e" + b"0" * 100000 + b"5",
     "floating point `100000.0`, expected u32 at line 1 column 100021"),
    (b"0." + b"0" * 300 + b"123e305",
     "floating point `12300.0`, expected u32 at line 1 column 327"),
    (b"1." + b"7" * 100000,
     "floating point `1.777777777777778`, expected u32 at line 1 column 100020"),
    (b"0e" + b"9" * 100000, "floating point `0.0`, expected u32 at line 1 column 100020"),
    (b"1e-" + b"9" * 1000, "floating point `0.0`, expected u32 at line 1 column 1021"),
]


@pytest.mark.parametrize("number,message", LONG_NUMBERS, ids=range(len(LONG_NUMBERS)))
def test_long_numbers_match_reference(number: bytes, message: str) -> None:
    doc = GOLDEN_JSON.replace(b'"format_version":1', b'"format_version":' + number, 1)
    with pytest.raises(Json) as exc:
        Manifest.from_json_bytes(doc)
    prefix = "JSON error: " if message.startswith("number") else "JSON error: invalid type: "
    assert str(exc.value) == prefix + message


def test_positions_count_lines_and_bytes() -> None:
    # Reference: 100000 spaces, a newline inside the object, the bad value two lines down.
    doc = (b" " * 100000 + GOLDEN_JSON.replace(b'{"format_version"', b'{\n"format_version"', 1)
           .replace(b'"n_chunks":1', b'"n_chunks":\n\n   -7'))
    with pytest.raises(Json) as exc:
        Manifest.from_json_bytes(doc)
    assert str(exc.value) == ("JSON error: invalid value: integer `-7`, expected u64 "
                              "at line 4 column 5")


def test_to_dict_is_the_reference_inspect_manifest() -> None:
    files = json.loads((DATA / "ref-0.5.1" / "expected.json").read_text())["files"]
    for name, info in files.items():
        raw = manifest_bytes((DATA / "ref-0.5.1" / name).read_bytes())
        assert Manifest.from_json_bytes(raw).to_dict() == info["inspect"]["manifest"], name


def test_extra_keys_as_the_reference_inspects_them() -> None:
    # Reference inspect()["manifest"] of the golden file resealed around this manifest: top-level
    # extra keys sorted, a repeated one keeps its last value, a nested repeated key keeps its first
    # place and last value, floats carry serde_json's (not correctly rounded) value.
    doc = GOLDEN_JSON[:-1] + (b',"zz":{"b":1,"a":2,"b":3},"aa":1.50,"zz2":1,'
                              b'"aa":[0.1e1, 1E2, 123456789012345678901234]}')
    d = Manifest.from_json_bytes(doc).to_dict()
    assert list(d)[-4:] == ["capabilities", "aa", "zz", "zz2"]
    assert repr(d["aa"]) == "[1.0, 100.0, 1.2345678901234567e+23]"
    assert list(d["zz"].items()) == [("b", 3), ("a", 2)] and d["zz2"] == 1
