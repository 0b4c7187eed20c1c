"""One test per reader check of 01-container §10.1, each breaking exactly that property.

Every case asserts the error class the reference raises (and its fields / text where the
reference fixes them). Corruptions are resealed where needed so that earlier checks pass.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from helpers.mutate import (
    find_entry,
    poke_entry,
    poke_header,
    poke_prefix_count,
    replace_payload,
    reseal,
    reseal_footer,
    reseal_header,
)
from helpers.vectors import DATA, REF
from urna import errors as E
from urna.format import layout as L
from urna.format.reader import UrnaView
from urna.format.sections.canonical import decode_chunk_ids, encode_contract
from urna.format.writer import EncodedSection, assemble

GOLDEN = (DATA / "golden_v1_minimal.urna").read_bytes()


def golden() -> bytearray:
    return bytearray(GOLDEN)


def raises(buf, cls):
    with pytest.raises(cls) as info:
        UrnaView.from_bytes(bytes(buf))
    assert type(info.value) is cls
    return info.value


def golden_sections() -> list[EncodedSection]:
    view = UrnaView.from_bytes(GOLDEN)
    return [EncodedSection(e.section_id, e.encoding, bytes(view.payload(e))) for e in view.entries]


def with_manifest(text: str, sections=None) -> bytes:
    """A golden-shaped file whose manifest bytes are exactly ``text``."""
    return assemble(text.encode(), 4, 1, 1, sections or golden_sections())


def golden_manifest() -> dict:
    return json.loads(UrnaView.from_bytes(GOLDEN).manifest_bytes)


def manifest_with(**changes) -> str:
    m = golden_manifest()
    m.update(changes)
    return json.dumps(m, separators=(",", ":"))


def test_step1_too_short_is_truncated():
    raises(GOLDEN[:167], E.FileTruncated)
    raises(bytes(32), E.FileTruncated)


def test_step2_bad_magic():
    err = raises(b"BAD!" + GOLDEN[4:], E.MagicMismatch)
    assert err.got == b"BAD!"
    assert str(err) == "magic mismatch: expected [85, 82, 78, 65], got [66, 65, 68, 33]"
    raises(bytes(168), E.MagicMismatch)


@pytest.mark.parametrize("field, value, text", [
    ("version_minor", 1, "unsupported version: 1.1"),
    ("version_major", 2, "unsupported version: 2.0"),
])
def test_step3_version(field, value, text):
    buf = reseal_header(poke_header(golden(), field, value))
    assert str(raises(buf, E.UnsupportedVersion)) == text


def test_step3_runs_before_the_checksum():
    # byte 6 = version_minor low byte, not resealed: the version check comes first.
    buf = golden()
    buf[6] = 255
    err = raises(buf, E.UnsupportedVersion)
    assert (err.major, err.minor) == (1, 255)


def test_step4_flipped_header_byte():
    buf = golden()
    buf[100] ^= 0xFF  # reserved: only the checksum covers it
    raises(buf, E.InvalidHeaderChecksum)


def test_step5_wrong_file_size():
    buf = reseal_header(poke_header(golden(), "file_size", len(GOLDEN) + 1), fix_file_size=False)
    err = raises(buf, E.FileSizeMismatch)
    assert (err.expected, err.got) == (len(GOLDEN) + 1, len(GOLDEN))


def test_step6_table_count_overflow():
    buf = reseal_header(poke_header(golden(), "section_table_count", L.U64_MAX))
    err = raises(buf, E.SectionOffsetOutOfBounds)
    assert (err.section_id, err.offset) == (0, 0)


def test_step6b_table_past_the_end():
    buf = reseal_header(poke_header(golden(), "section_table_count", 1000))
    raises(buf, E.FileTruncated)


@pytest.mark.parametrize("section_id, encoding", [(4, 1), (2, 99), (1, 6), (5, 8), (3, 2)])
def test_step7_encoding_illegal_for_section_class(section_id, encoding):
    buf = reseal_footer(poke_entry(golden(), section_id, "encoding", encoding))
    err = raises(buf, E.UnsupportedSectionEncoding)
    assert (err.section_id, err.encoding) == (section_id, encoding)


def test_step8_misaligned_offset():
    _, _, entry = find_entry(GOLDEN, 2)
    buf = poke_entry(golden(), 2, "offset", entry.offset + 1)
    err = raises(buf, E.SectionMisaligned)
    assert (err.section_id, err.offset, err.alignment) == (2, entry.offset + 1, 64)


def test_step9_payload_past_the_end():
    buf = poke_entry(golden(), 6, "size", 10_000)
    err = raises(buf, E.SectionOffsetOutOfBounds)
    assert err.section_id == 6


def test_step9_size_overflow():
    buf = poke_entry(golden(), 3, "size", L.U64_MAX)
    assert raises(buf, E.SectionOffsetOutOfBounds).section_id == 3


def test_step10_flipped_payload_byte():
    _, _, entry = find_entry(GOLDEN, 2)
    buf = golden()
    buf[entry.offset + 13] ^= 1
    assert raises(buf, E.SectionChecksumMismatch).section_id == 2


def test_entries_are_checked_one_after_another():
    # Entry 1 has a bad checksum, entry 2 a bad encoding: the first entry's error wins.
    _, _, entry = find_entry(GOLDEN, 1)
    buf = golden()
    buf[entry.offset + 20] ^= 1
    poke_entry(buf, 2, "encoding", 99)
    raises(buf, E.SectionChecksumMismatch)


def test_step11_manifest_out_of_range():
    buf = reseal_header(poke_header(golden(), "manifest_size", 1 << 40))
    raises(buf, E.FileTruncated)


@pytest.mark.parametrize("text, detail", [
    ("[1]", "invalid type: sequence, expected struct Manifest at line 1 column 0"),
    ("{", None),
    ('{"format_version":1}', None),
])
def test_step12_invalid_json(text, detail):
    err = raises(with_manifest(text), E.Json)
    if detail is not None:
        assert err.detail == detail


def test_step12_whitespace_around_the_manifest_is_fine():
    UrnaView.from_bytes(with_manifest("  " + manifest_with() + "\n "))


@pytest.mark.parametrize("changes, cls, text", [
    ({"format_version": 2}, E.UnsupportedFormatVersion, "unsupported format_version: 2"),
    ({"schema_version": 9}, E.UnsupportedSchemaVersion, "unsupported schema_version: 9"),
    ({"embedding_model": ""}, E.ManifestInvalid,
     "manifest invalid: embedding_model must not be empty"),
    ({"chunker_version": ""}, E.ManifestInvalid,
     "manifest invalid: chunker_version must not be empty"),
    ({"model_hash": "md5:00"}, E.InvalidModelHash,
     "invalid model_hash: expected 'sha256:<hex>' prefix, got 'md5:00'"),
    ({"model_hash": "sha256:abc"}, E.InvalidModelHash,
     "invalid model_hash: expected 64 hex chars after 'sha256:', got 'abc'"),
    ({"dtype": "bfloat16"}, E.UnsupportedDType, "unsupported dtype: bfloat16"),
    ({"metric": "l2"}, E.UnsupportedMetric, "unsupported metric: l2"),
    ({"score_type": "dot"}, E.UnsupportedScoreType, "unsupported score_type: dot"),
    ({"normalize": "none"}, E.UnsupportedNormalize, "unsupported normalize: none"),
    ({"index_type": "ivf"}, E.UnsupportedIndexType, "unsupported index_type: ivf"),
    ({"rerank_policy": "always"}, E.UnsupportedRerankPolicy, "unsupported rerank_policy: always"),
    ({"index_type": "hnsw"}, E.ManifestInvalid,
     'manifest invalid: index_type=hnsw requires rerank_policy="exact"'),
    ({"index_type": "hnsw", "rerank_policy": "exact"}, E.ManifestInvalid,
     "manifest invalid: index_type=hnsw requires capabilities.supports_ann=true"),
    ({"mrl_dim": 4}, E.ManifestInvalid,
     "manifest invalid: mrl_dim requires full_dim (the source dim) to be set"),
    ({"full_dim": 8}, E.ManifestInvalid, "manifest invalid: full_dim requires mrl_dim to be set"),
    ({"mrl_dim": 0, "full_dim": 8}, E.ManifestInvalid,
     "manifest invalid: mrl_dim must be > 0 when set"),
    ({"mrl_dim": 9, "full_dim": 8}, E.ManifestInvalid,
     "manifest invalid: mrl_dim (9) must be <= full_dim (8)"),
    ({"mrl_dim": 2, "full_dim": 8}, E.ManifestInvalid,
     "manifest invalid: mrl_dim (2) must equal embedding_dim (4); "
     "the runtime strides by embedding_dim"),
])
def test_step13_manifest_rules(changes, cls, text):
    assert str(raises(with_manifest(manifest_with(**changes)), cls)) == text


@pytest.mark.parametrize("cap, text", [
    ("supports_exact", "capabilities.supports_exact must be true (exact path is the ground truth)"),
    ("supports_reproducible_build", "capabilities.supports_reproducible_build must be true"),
])
def test_step13_capability_rules(cap, text):
    m = golden_manifest()
    m["capabilities"][cap] = False
    err = raises(with_manifest(json.dumps(m, separators=(",", ":"))), E.ManifestInvalid)
    assert err.detail == text


def test_step14_flipped_padding_byte():
    view = UrnaView.from_bytes(GOLDEN)
    end = view.header.manifest_offset + view.header.manifest_size
    buf = golden()
    buf[end] ^= 1  # padding after the manifest: only the footer covers it
    raises(buf, E.FooterHashMismatch)


def test_step14_footer_field_is_not_checked_but_digest_is():
    buf = golden()
    buf[len(buf) - 40] = 41  # footer_size
    UrnaView.from_bytes(bytes(buf))
    buf[len(buf) - 40 + 8] ^= 1
    raises(buf, E.FooterHashMismatch)


@pytest.mark.parametrize("field, text", [
    ("embedding_dim", "manifest invalid: manifest embedding_dim disagrees with header"),
    ("n_chunks", "manifest invalid: manifest n_chunks disagrees with header"),
])
def test_step15_header_manifest_disagreement(field, text):
    buf = reseal(poke_header(golden(), field, 5))
    assert str(raises(buf, E.ManifestInvalid)) == text


@pytest.mark.parametrize("section_id, name",
                         [(1, "chunk_ids"), (5, "provenance"), (6, "search_contract")])
def test_step16_required_section_missing(section_id, name):
    buf = reseal(poke_entry(golden(), section_id, "section_id", 0x0D))
    assert raises(buf, E.MissingRequiredSection).name == name


def test_step17_embeddings_size_wrong():
    buf = reseal(poke_entry(golden(), 4, "size", 12))
    err = raises(buf, E.EmbeddingSizeMismatch)
    assert (err.expected, err.got) == (16, 12)


def test_step17_dtype_encoding_pairing():
    buf = reseal(poke_entry(golden(), 4, "encoding", 2))
    assert str(raises(buf, E.ManifestInvalid)) == (
        "manifest invalid: embeddings section encoding=2 does not match dtype=float32")


def test_step17_hostile_n_embeddings_is_refused_quickly():
    buf = reseal(poke_header(golden(), "n_embeddings", (1 << 62) + 1))
    poke_header(buf, "embedding_dim", 16)
    reseal(buf)
    # embedding_dim now disagrees with the manifest: step 15 answers first, without allocating.
    raises(buf, E.ManifestInvalid)
    buf = reseal(poke_header(golden(), "n_embeddings", L.U64_MAX))
    err = raises(buf, E.UnsupportedDType)
    assert "overflows" in str(err)


def test_step18_space_band_size_wrong():
    data = bytearray((REF / "quickstart-spaces.urna").read_bytes())
    UrnaView.from_bytes(bytes(data))
    _, _, band = find_entry(data, 0x21)
    buf = reseal(poke_entry(data, 0x21, "size", band.size - 4))
    err = raises(buf, E.EmbeddingSizeMismatch)
    assert err.got == band.size - 4


def test_step18_space_band_missing():
    data = bytearray((REF / "quickstart-spaces.urna").read_bytes())
    buf = reseal(poke_entry(data, 0x22, "section_id", 0x2E))
    assert str(raises(buf, E.ManifestInvalid)) == (
        "manifest invalid: space audio lists band 0x22 but the section is missing")


@pytest.mark.parametrize("field, value, cls", [
    ("metric", "l2", E.UnsupportedMetric),
    ("score_type", "hybrid_rrf", E.UnsupportedScoreType),
    ("index_type", "hnsw", E.UnsupportedIndexType),
    ("rerank_policy", "exact", E.UnsupportedRerankPolicy),
])
def test_step19_contract_disagrees_with_manifest(field, value, cls):
    contract = {"metric": "ip", "score_type": "cosine", "normalize": "l2", "index_type": "exact",
                "rerank_policy": "none"}
    declared = contract[field]
    contract[field] = value
    buf = replace_payload(GOLDEN, 6, encode_contract(contract))
    assert str(raises(buf, cls)).endswith(f"section says {value} but manifest says {declared}")


def test_hostile_prefix_count_fails_fast_with_bounded_memory():
    buf = reseal(poke_prefix_count(golden(), 1, L.U64_MAX))
    view = UrnaView.from_bytes(bytes(buf))  # 0x01 is decoded on demand, not by the reader
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(E.SectionCountMismatch):
        decode_chunk_ids(view.decoded(1), 1)
    with pytest.raises(E.MalformedSectionPayload):
        decode_chunk_ids(view.decoded(1), None)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - t0 < 1.0 and peak < 1 << 20


def test_reader_accepts_what_it_deliberately_does_not_enforce():
    # Reserved and unknown ids, duplicate ids, flags and reserved bytes (§10.4).
    extra = golden_sections() + [EncodedSection(0x0D, 0, b"x"), EncodedSection(0x99, 1, b"junk"),
                                 EncodedSection(0x05, 0, b"dup")]
    data = assemble(UrnaView.from_bytes(GOLDEN).manifest_bytes, 4, 1, 1, extra)
    view = UrnaView.from_bytes(data)
    assert view.content_hash() == UrnaView.from_bytes(GOLDEN).content_hash()
    buf = reseal(poke_header(bytearray(data), "flags", 7))
    UrnaView.from_bytes(bytes(buf))


def test_contract_is_read_as_serde_reads_the_struct():
    # Array form accepted and a repeated key refused, as the reference (messages pinned in
    # tests/format/test_json_text.py CONTRACT_CASES).
    from urna.format.layout import pack_prefix
    from urna.format.sections.canonical import decode_contract

    body = b'["ip","cosine","l2","exact","none"]'
    assert decode_contract(pack_prefix(len(body)) + body)["index_type"] == "exact"
    body = (b'{"metric":"ip","score_type":"cosine","normalize":"l2","index_type":"exact",'
            b'"rerank_policy":"none","metric":"ip"}')
    with pytest.raises(E.Json, match="duplicate field `metric` at line 1 column 106"):
        decode_contract(pack_prefix(len(body)) + body)


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "synthetic-tiny.urna",
                                  "dedup-zstd_f32.urna", "quickstart-exact.urna"])
def test_spans_from_columns_equal_the_raw_path(name):
    from urna.format.sections.canonical import decode_spans

    view = UrnaView.from_bytes((REF / name).read_bytes())
    n = view.header.n_embeddings
    fast = view.spans(n)
    assert fast == decode_spans(UrnaView.from_bytes((REF / name).read_bytes()).decoded(3), n)
    with pytest.raises(E.SectionCountMismatch) as info:
        UrnaView.from_bytes((REF / name).read_bytes()).spans(n + 1)
    assert (info.value.section_id, info.value.expected, info.value.got) == (3, n + 1, n)
