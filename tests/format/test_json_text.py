"""serde_json-compatible JSON text (urna.format.json_text).

Every expected message and every expected output text below was produced by the reference
(urna 0.5.1 wheel: manifests resealed into the golden file and opened, provenance written by
``urna.build`` and read back from 0x05); none is computed by the code under test.

Rejections covered: bad numbers (leading zero, missing digits, out of range), NaN/Infinity,
bad literals, unterminated strings, bad escapes, lone or broken surrogate escapes, control
characters, invalid UTF-8, trailing commas, missing commas/colons, non-string keys, depth limit,
trailing characters.
"""

from __future__ import annotations

import json
import math
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.mutate import apply_case, find_entry, load_cases
from urna.errors import Json
from urna.format import layout as L
from urna.format.encodings import decode_section
from urna.format.json_text import (
    BOOL,
    STR,
    STR_SEQ,
    U32,
    U64,
    Opt,
    Struct,
    deserialize,
    dumps_compact,
    format_float,
    parse_json,
)

# (value text, reference message) with the value embedded as b'{"zz":' + value + b'}';
# None: the reference accepted the text.
EMBEDDED = [
    (b'1', None),
    (b'-0', None),
    (b'01', 'JSON error: invalid number at line 1 column 8'),
    (b'1.', 'JSON error: invalid number at line 1 column 9'),
    (b'1.e5', 'JSON error: invalid number at line 1 column 9'),
    (b'1e', 'JSON error: invalid number at line 1 column 9'),
    (b'1e+', 'JSON error: invalid number at line 1 column 10'),
    (b'-', 'JSON error: invalid number at line 1 column 8'),
    (b'-x', 'JSON error: invalid number at line 1 column 8'),
    (b'.5', 'JSON error: expected value at line 1 column 7'),
    (b'+1', 'JSON error: expected value at line 1 column 7'),
    (b'1e400', 'JSON error: number out of range at line 1 column 11'),
    (b'-1e400', 'JSON error: number out of range at line 1 column 12'),
    (b'1e-400', None),
    (b'1e999999999999', 'JSON error: number out of range at line 1 column 18'),
    (b'0e999999999999', None),
    (b'18446744073709551616', None),
    (b'NaN', 'JSON error: expected value at line 1 column 7'),
    (b'Infinity', 'JSON error: expected value at line 1 column 7'),
    (b'-Infinity', 'JSON error: invalid number at line 1 column 8'),
    (b'nul', 'JSON error: expected ident at line 1 column 10'),
    (b'tru', 'JSON error: expected ident at line 1 column 10'),
    (b'fals', 'JSON error: expected ident at line 1 column 11'),
    (b'nulx', 'JSON error: expected ident at line 1 column 10'),
    (b'"abc', 'JSON error: EOF while parsing a string at line 1 column 11'),
    (b'"a\\x"', 'JSON error: invalid escape at line 1 column 10'),
    (b'"\\u12"', 'JSON error: invalid escape at line 1 column 13'),
    (b'"\\u12', 'JSON error: EOF while parsing a string at line 1 column 12'),
    (b'"\\ud800"', 'JSON error: unexpected end of hex escape at line 1 column 14'),
    (b'"\\ud800x"', 'JSON error: unexpected end of hex escape at line 1 column 14'),
    (b'"\\ud800\\n"', 'JSON error: unexpected end of hex escape at line 1 column 15'),
    (b'"\\ud800\\u0041"', 'JSON error: lone leading surrogate in hex escape at line 1 column 19'),
    (b'"\\udc00"', 'JSON error: lone leading surrogate in hex escape at line 1 column 13'),
    (b'"\\ud83d\\ude00"', None),
    (b'"a\tb"',
     'JSON error: control character (\\u0000-\\u001F) found while parsing a string '
     'at line 1 column 9'),
    (b'"a\x00b"',
     'JSON error: control character (\\u0000-\\u001F) found while parsing a string '
     'at line 1 column 9'),
    (b'"\xff"', 'JSON error: invalid unicode code point at line 1 column 9'),
    (b'"\xc3"', 'JSON error: invalid unicode code point at line 1 column 9'),
    (b'"\xed\xa0\x80"', 'JSON error: invalid unicode code point at line 1 column 11'),
    (b'"\xf4\x90\x80\x80"', 'JSON error: invalid unicode code point at line 1 column 12'),
    (b'[1,]', 'JSON error: trailing comma at line 1 column 10'),
    (b'[1 2]', 'JSON error: expected `,` or `]` at line 1 column 10'),
    (b'[', 'JSON error: expected value at line 1 column 8'),
    (b'[1', 'JSON error: expected `,` or `]` at line 1 column 9'),
    (b'[1,', 'JSON error: expected value at line 1 column 10'),
    (b'[}', 'JSON error: expected value at line 1 column 8'),
    (b'{"a":1,}', 'JSON error: trailing comma at line 1 column 14'),
    (b'{"a" 1}', 'JSON error: expected `:` at line 1 column 12'),
    (b'{"a"', 'JSON error: expected `:` at line 1 column 11'),
    (b'{"a":', 'JSON error: expected value at line 1 column 12'),
    (b'{"a":1', 'JSON error: EOF while parsing an object at line 1 column 13'),
    (b'{,}', 'JSON error: key must be a string at line 1 column 8'),
    (b'{1:1}', 'JSON error: key must be a string at line 1 column 8'),
    (b'{"a":1 "b":2}', 'JSON error: expected `,` or `}` at line 1 column 14'),
    (b' \n [ 1 ,\n\t2 ]', None),
    (b'\n\n  x', 'JSON error: expected value at line 3 column 3'),
    (b'"\\/\\b\\f\\n\\r\\t\\"\\\\"', None),
    (b'{"a":1,"a":2}', None),
    (b'[1]x', 'JSON error: expected `,` or `}` at line 1 column 10'),
    (b'[1] ]', 'JSON error: expected `,` or `}` at line 1 column 11'),
]


@pytest.mark.parametrize("value,message", EMBEDDED)
def test_parse_errors_match_serde_json(value: bytes, message: str | None) -> None:
    doc = b'{"zz":' + value + b'}'
    if message is None:
        assert list(parse_json(doc)) == ["zz"]
    else:
        with pytest.raises(Json) as exc:
            parse_json(doc)
        assert str(exc.value) == message


def test_depth_limit_is_serde_json_128() -> None:
    # Reference: inside the manifest object, 127 more brackets hit the limit at column 133.
    with pytest.raises(Json, match=r"^JSON error: recursion limit exceeded at line 1 column 133$"):
        parse_json(b'{"zz":' + b"[" * 127 + b"]" * 127 + b"}")
    assert parse_json(b"[" * 127 + b"]" * 127) is not None
    with pytest.raises(Json, match="recursion limit exceeded at line 1 column 128$"):
        parse_json(b"[" * 128 + b"]" * 128)


def test_values_and_types() -> None:
    doc = parse_json(b' {"b":1,"a":[-0,1.5,18446744073709551615,18446744073709551616,'
                     b'-9223372036854775808,'
                     b'-9223372036854775809,true,null,"\\u00e9\\ud83d\\ude00"],"b":2} \n')
    assert list(doc) == ["b", "a"] and doc["b"] == 2  # repeated key: first place, last value
    a = doc["a"]
    assert math.copysign(1.0, a[0]) < 0 and isinstance(a[0], float)
    assert a[2] == 2**64 - 1 and isinstance(a[2], int)
    assert isinstance(a[3], float) and isinstance(a[4], int) and isinstance(a[5], float)
    assert a[6:] == [True, None, "é😀"]
    assert parse_json("  \"x\"\t") == "x"  # str input, JSON whitespace around the value


def test_trailing_and_empty_input() -> None:
    for doc, msg in [(b"", "EOF while parsing a value at line 1 column 0"),
                     (b"1 2", "trailing characters at line 1 column 3"),
                     (b"{}\n\n  x", "trailing characters at line 3 column 3")]:
        with pytest.raises(Json) as exc:
            parse_json(doc)
        assert str(exc.value) == "JSON error: " + msg


# serde_json's parse_ident reads a literal byte by byte: the end of the input inside one is
# "EOF while parsing a value" at the end, a wrong byte "expected ident" just after that byte.
@pytest.mark.parametrize("doc,msg", [
    (b"nu", "EOF while parsing a value at line 1 column 2"),
    (b"t", "EOF while parsing a value at line 1 column 1"),
    (b"[true,nul", "EOF while parsing a value at line 1 column 9"),
    (b'{"a":f', "EOF while parsing a value at line 1 column 6"),
    (b"nul l", "expected ident at line 1 column 4"),
    (b"trUe", "expected ident at line 1 column 3"),
])
def test_a_broken_literal_is_placed_as_serde_does(doc: bytes, msg: str) -> None:
    with pytest.raises(Json) as exc:
        parse_json(doc)
    assert str(exc.value) == "JSON error: " + msg


# Reference output of urna.build(provenance={"v": [float(t) for t in texts]}) read back from 0x05.
FLOAT_INPUT = ["0.1", "0.3", "0.3333333333333333", "1e+21", "1e+22", "1e+23",
               "1.7976931348623157e+308", "2.2250738585072014e-308", "9007199254740992.0",
               "1.8446744073709552e+19", "1.23e-18", "1e-30", "1e-24", "9.999999999999999e-28",
               "1.2345678901234567e-14", "0.000123", "1.5e-05", "9500000000000000.0",
               "12345678.5", "-2.5e-07", "4.35", "1e15", "1e16", "1.5e16", "1e-5", "1e-6", "1.0",
               "100.0", "-0.0", "123456789.125", "5e-324"]
FLOAT_REF = ('{"v":[0.1,0.3,0.3333333333333333,1e+21,1e+22,1e+23,1.7976931348623157e+308,'
             '2.2250738585072014e-308,9007199254740992.0,1.8446744073709552e+19,1.23e-18,'
             '9.999999999999999e-31,1.0000000000000001e-24,1e-27,1.2345678901234568e-14,0.000123,'
             '0.000015,9500000000000000.0,12345678.5,-2.5e-7,4.35,1000000000000000.0,1e+16,'
             '1.5e+16,0.00001,1e-6,1.0,100.0,-0.0,123456789.125,5e-324]}')


def test_provenance_float_text_matches_reference() -> None:
    # The reference passes provenance through json.dumps, serde_json's (not always correctly
    # rounded) float parser and its zmij writer: 1e-30 comes back as 9.999999999999999e-31.
    value = {"v": [float(t) for t in FLOAT_INPUT]}
    assert dumps_compact(parse_json(json.dumps(value))) == FLOAT_REF


def test_string_escapes_and_integers_match_reference() -> None:
    value = {"s": '\x7f\u2028/\x00\x1f\x08\x0c\n\r\t"\\ é😀',
             "n": [None, True, False, 0, -1, 2**64 - 1, -2**63]}
    assert dumps_compact(value) == ('{"s":"\x7f\u2028/\\u0000\\u001f\\b\\f\\n\\r\\t\\"\\\\ é😀",'
                                    '"n":[null,true,false,0,-1,18446744073709551615,'
                                    '-9223372036854775808]}')
    # Reference: ints beyond i64/u64 and non-string keys, as urna.build writes them.
    assert dumps_compact({1: 2, "b": (1, 2), "c": 2**70, "d": -2**64}) == \
        '{"1":2,"b":[1,2],"c":1.1805916207174113e+21,"d":-1.8446744073709552e+19}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1, 2}, b"ab"])
def test_unwritable_values_raise(bad: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        dumps_compact({"x": bad})


# ---------------------------------------------------------------- typed reads (serde derive)

CONTRACT = Struct("SearchContract", tuple((k, STR) for k in
                  ("metric", "score_type", "normalize", "index_type", "rerank_policy")))


def _contract_cases() -> list[tuple[str, dict]]:
    cases = load_cases()
    return [(k, c) for k, c in sorted(cases.items())
            if c.get("variant") == "Json" and c["mutation"].startswith("s06_")]


@pytest.mark.parametrize("name,case", _contract_cases())
def test_contract_mutations_reproduce_reference_text(name: str, case: dict) -> None:
    buf = apply_case(case)
    _, _, entry = find_entry(buf, L.SECTION_SEARCH_CONTRACT)
    stored_payload = buf[entry.offset:entry.offset + entry.size]
    raw = decode_section(entry.section_id, entry.encoding, stored_payload)
    version, n = struct.unpack_from("<IQ", raw, 0)
    with pytest.raises(Json) as exc:
        deserialize(raw[12:12 + n], CONTRACT)
    assert str(exc.value) == case["message"]


def test_deserialize_struct_shapes() -> None:
    spec = Struct("T", (("a", U32), ("b", Opt(U64)), ("c", STR_SEQ), ("d", Opt(BOOL))),
                  flatten=True)
    vals = deserialize(b'{"z":[1],"c":["x"],"a":7,"y":{"k":1.5},"d":null}', spec)
    assert vals == {"a": 7, "b": None, "c": ["x"], "d": None,
                    "\0extra": [("z", [1]), ("y", {"k": 1.5})]}
    inner = Struct("P", (("x", BOOL), ("y", Opt(BOOL))))
    assert deserialize(b"[true,null]", inner) == {"x": True, "y": None}
    with pytest.raises(Json, match=r"^JSON error: invalid length 1, expected struct P "
                                   r"with 2 elements at line 1 column 6$"):
        deserialize(b"[true]", inner)
    with pytest.raises(Json, match=r"^JSON error: invalid type: sequence, expected struct T "
                                   r"at line 1 column 0$"):
        deserialize(b"[]", spec)


# ---------------------------------------------------------------- properties

_json_scalars = (st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**64 - 1)
                 | st.text())
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (st.lists(inner, max_size=4)
                   | st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_roundtrip_without_floats(value: object) -> None:
    text = dumps_compact(value)
    assert dumps_compact(value) == text
    assert parse_json(text) == value
    assert parse_json(text.encode("utf-8")) == value
    assert json.loads(text) == value  # standard JSON, compact, raw UTF-8
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_SHAPE = re.compile(r"^-?(\d+\.\d+|\d(\.\d+)?e[+-]\d+)$")


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips(x: float) -> None:
    text = format_float(x)
    assert _SHAPE.match(text), text
    assert float(text) == x and math.copysign(1.0, float(text)) == math.copysign(1.0, x)
    assert len(text.replace("-", "").replace(".", "").split("e")[0].strip("0")) <= 17


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**15), st.integers(min_value=-22, max_value=22))
def test_exactly_representable_decimals_parse_exactly(sig: int, exp: int) -> None:
    # significand < 2**53 and an exact power of ten: serde's one-step conversion is exact.
    text = f"{sig}e{exp}"
    assert parse_json(text) == float(text)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_raise_only_json(data: bytes) -> None:
    try:
        parse_json(data)
    except Json as exc:
        assert re.search(r" at line \d+ column \d+$", str(exc))


CONTRACT_JSON = (b'{"metric":"ip","score_type":"cosine","normalize":"l2","index_type":"exact",'
                 b'"rerank_policy":"none"}')
# Reference messages: the golden file resealed around each 0x06 body and opened.
CONTRACT_CASES = [
    (CONTRACT_JSON.replace(b'"ip"', b"1"),
     "invalid type: integer `1`, expected a string at line 1 column 11"),
    (CONTRACT_JSON.replace(b'"ip"', b"null"),
     "invalid type: null, expected a string at line 1 column 14"),
    (b"[]", "invalid length 0, expected struct SearchContract with 5 elements at line 1 column 2"),
    (b"[1]", "invalid type: integer `1`, expected a string at line 1 column 2"),
    (b'["ip","cosine","l2","exact","none"]', None),
    (CONTRACT_JSON.replace(b'"metric":"ip",', b""), "missing field `metric` at line 1 column 84"),
    (CONTRACT_JSON[:-1] + b',"metric":"ip"}', "duplicate field `metric` at line 1 column 106"),
    (CONTRACT_JSON[:-1] + b',"x":"\xff"}', None),  # unknown keys are skipped without UTF-8 checks
    (b" " + CONTRACT_JSON + b" ", None),
]


@pytest.mark.parametrize("body,message", CONTRACT_CASES, ids=range(len(CONTRACT_CASES)))
def test_contract_struct_matches_reference(body: bytes, message: str | None) -> None:
    if message is None:
        vals = deserialize(body, CONTRACT)
        assert vals["metric"] == "ip" and vals["rerank_policy"] == "none"
        return
    with pytest.raises(Json) as exc:
        deserialize(body, CONTRACT)
    assert str(exc.value) == "JSON error: " + message


# ---------------------------------------------------------------- fast path == exact parser

_number_text = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,4})?\Z")
_string_text = st.sampled_from(['"a"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\udc00x"', '"\\\\ud800"',
                                '"é\\n"', '"\\u0000"', '"x\\ud800\\u0041"'])
_ws = st.sampled_from(["", " ", "\n", "\t ", "\r\n"])


@st.composite
def _json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 5 if depth < 4 else 2))
    if kind == 0:
        return draw(_number_text)
    if kind == 1:
        return draw(_string_text)
    if kind == 2:
        return draw(st.sampled_from(["true", "false", "null", "NaN", "-Infinity"]))
    if kind == 3:
        n = draw(st.integers(1, 140))  # around serde's depth limit
        return "[" * n + draw(_number_text) + "]" * n
    items = draw(st.lists(_json_texts(depth + 1), max_size=4))
    w = draw(_ws)
    if kind == 4:
        return "[" + w + ("," + w).join(items) + "]"
    keys = draw(st.lists(st.sampled_from(['"k"', '"j"', '"\\ud800"', '"é"']), min_size=len(items),
                         max_size=len(items)))
    return "{" + ",".join(f"{k}{w}:{v}" for k, v in zip(keys, items, strict=False)) + "}"


def _outcome(parse: object, text: str) -> str:
    try:
        return "value " + repr(parse(text))  # repr keeps -0.0, int/float and key order apart
    except Json as exc:
        return "error " + str(exc)


@settings(max_examples=examples(400, 150), deadline=None)
@given(_json_texts(), _ws, _ws)
def test_fast_path_agrees_with_exact_parser(text: str, lead: str, trail: str) -> None:
    from urna.format.json_text import parse_exact as _parse_slow
    doc = lead + text + trail
    assert _outcome(parse_json, doc) == _outcome(lambda t: _parse_slow(t.encode("utf-8")), doc)


@pytest.mark.parametrize("doc", [
    '{"k":0,"k":"\\ud800","k":0}',                        # a dropped value still had to parse
    '{"k":' + "[" * 127 + "]" * 127 + ',"k":0}',         # a dropped value still hit the limit
    '{"k":"\\\\ud800"}',                                   # escaped backslash, not an escape
    '["\\ud83d\\ude00","\\ud83d" , "\\ude00"]',
])
def test_fast_path_edge_cases(doc: str) -> None:
    from urna.format.json_text import parse_exact as _parse_slow
    assert _outcome(parse_json, doc) == _outcome(lambda t: _parse_slow(t.encode("utf-8")), doc)
