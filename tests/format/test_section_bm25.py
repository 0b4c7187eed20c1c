"""0x08 bm25_index codec: the reference's payloads, round trips, and every decoder rejection.

Rejection paths (class, reason), each checked below with the text the reference wheel 0.5.1
printed for the same payload spliced into a resealed file:

* fewer bytes than a field needs -> Malformed(8, "bm25: unexpected EOF (need n)")
* version not 1 or 2 (after the 24-byte head) -> UnsupportedSectionVersion(8, v)
* invalid UTF-8 term -> Malformed(8, "term utf-8: <Rust Utf8Error text>")
* v2 doc-length column count != n_docs -> Malformed(8, "bm25 v2: doc-length column mismatch")
* v2 gap / tf column count != sum(df) -> Malformed(8, "bm25 v2: posting column mismatch")
* broken intpack column -> Malformed(0, "intpack: ...") (section id 0, as the reference)
* non-finite k1 / b / avgdl -> Malformed(8, "bm25: non-finite k1 / b / avgdl")
* a surviving posting's doc >= n_docs -> Malformed(8, "bm25: posting doc id >= n_docs")
"""

from __future__ import annotations

import contextlib
import struct
import time

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, load_cases
from helpers.vectors import DATA
from urna.errors import MalformedSectionPayload, UnsupportedSectionVersion
from urna.format import layout as L
from urna.format.encodings.intpack import pack_u64s
from urna.format.sections.bm25 import Bm25Payload, decode_bm25, encode_bm25

BM25_FILES = [
    "ref-0.5.1/quickstart-int8_bm25.urna", "ref-0.5.1/quickstart-hybrid.urna",
    "ref-0.5.1/synthetic-int8_bm25.urna", "ref-0.5.1/synthetic-hybrid.urna",
    "ref-0.5.1/dedup-hybrid.urna", "ref-0.5.1-tokens/tokens-bm25.urna",
    "ref-0.5.1-tokens/tokens-hybrid.urna",
]


def section_08(buf: bytes) -> bytes:
    """The decompressed 0x08 payload of a whole file (found through the layout structs)."""
    h = L.Header.unpack(buf)
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        if e.section_id == L.SECTION_BM25_INDEX:
            raw = bytes(buf[e.offset:e.offset + e.size])
            if e.encoding == L.ENCODING_ZSTD:
                return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            assert e.encoding == L.ENCODING_RAW
            return raw
    raise AssertionError("no 0x08 section")


def U(*vals: int) -> bytes:
    return struct.pack(f"<{len(vals)}I", *vals)


def head(version: int, n_docs: int, n_terms: int, k1: float = 1.5, b: float = 0.75,
         avgdl: float = 2.0) -> bytes:
    return struct.pack("<IfffII", version, k1, b, avgdl, n_docs, n_terms)


def term(t: bytes) -> bytes:
    return U(len(t)) + t


def col(vals: list[int]) -> bytes:
    blob = pack_u64s(vals)
    return U(len(blob)) + blob


# ------------------------------------------------------------------ the reference's payloads


@pytest.mark.parametrize("name", BM25_FILES)
def test_reference_payload_decodes_and_reencodes_byte_for_byte(name: str) -> None:
    buf = (DATA / name).read_bytes()
    raw = section_08(buf)
    p = decode_bm25(raw)
    assert (p.version, p.k1, p.b) == (2, 1.5, 0.75)
    assert p.n_docs == L.Header.unpack(buf).n_chunks == len(p.doc_lens)
    assert p.n_terms == len(p.terms) and p.terms == sorted(p.terms)
    assert int(p.dfs.sum()) == len(p.post_docs) == len(p.post_tfs)
    # avgdl is the f32 mean of the stored doc lengths
    assert p.avgdl == float(np.float32(int(p.doc_lens.sum())) / np.float32(p.n_docs))
    assert encode_bm25(p) == raw


def test_tokens_payload_fields() -> None:
    p = decode_bm25(section_08((DATA / "ref-0.5.1-tokens/tokens-bm25.urna").read_bytes()))
    t = p.terms.index("repeat")
    lo, hi = p.post_offsets[t], p.post_offsets[t + 1]
    # chunk 28 is "repeat repeat repeat repeat": one posting, tf 4, doc length 4
    assert p.post_docs[lo:hi].tolist() == [28] and p.post_tfs[lo:hi].tolist() == [4]
    assert p.doc_lens[28] == 4 and p.doc_lens[16] == 0 and p.doc_lens[17] == 0


def test_mutation_vector_posting_doc_out_of_range() -> None:
    case = load_cases()["quickstart-hybrid__s08_payload_flip_fixed"]
    with pytest.raises(MalformedSectionPayload) as ei:
        decode_bm25(section_08(apply_case(case)))
    assert str(ei.value) == case["message"]
    assert ei.value.section_id == 8


# ------------------------------------------------------------------ version 1 and quirks


def test_v1_payload_decodes_to_flat_postings() -> None:
    raw = head(1, 3, 2) + U(1, 2, 3) + term(b"aa") + U(2, 0, 1, 2, 5) + term(b"bb") + U(1, 1, 1)
    p = decode_bm25(raw)
    assert (p.version, p.n_docs, p.n_terms, p.avgdl) == (1, 3, 2, 2.0)
    assert p.doc_lens.tolist() == [1, 2, 3] and p.terms == ["aa", "bb"]
    assert p.post_offsets.tolist() == [0, 2, 3]
    assert p.post_docs.tolist() == [0, 2, 1] and p.post_tfs.tolist() == [1, 5, 1]


def test_v1_reencodes_as_v2_with_same_postings() -> None:
    raw = head(1, 3, 2) + U(1, 2, 3) + term(b"bb") + U(1, 1, 1) + term(b"aa") + U(2, 0, 1, 2, 5)
    p = decode_bm25(raw)
    again = decode_bm25(encode_bm25(p))
    assert again.version == 2 and again.terms == ["aa", "bb"]  # written in byte order
    assert again.post_docs.tolist() == [0, 2, 1] and again.post_tfs.tolist() == [1, 5, 1]


def test_repeated_term_last_wins_and_only_survivors_are_range_checked() -> None:
    # reference: the earlier "aa" (doc 9 of 3) is replaced, so the file opens
    raw = head(1, 3, 2) + U(1, 2, 3) + term(b"aa") + U(1, 9, 1) + term(b"aa") + U(1, 0, 1)
    p = decode_bm25(raw)
    assert p.terms == ["aa"] and p.post_docs.tolist() == [0] and p.n_terms == 2
    flipped = head(1, 3, 2) + U(1, 2, 3) + term(b"aa") + U(1, 0, 1) + term(b"aa") + U(1, 9, 1)
    with pytest.raises(MalformedSectionPayload, match="posting doc id >= n_docs"):
        decode_bm25(flipped)


def test_v2_gaps_wrap_modulo_2_32() -> None:
    raw = head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(2) + col([2, 0xFFFFFFFF]) + col([1, 1])
    assert decode_bm25(raw).post_docs.tolist() == [2, 1]
    raw = head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(1) + col([(1 << 32) + 1]) + col([7])
    assert decode_bm25(raw).post_docs.tolist() == [1]


def test_trailing_bytes_and_empty_index_are_accepted() -> None:
    raw = section_08((DATA / "ref-0.5.1-tokens/tokens-bm25.urna").read_bytes())
    assert decode_bm25(raw + b"\x01\x02\x03") == decode_bm25(raw)
    empty = decode_bm25(head(2, 0, 0) + col([]) + col([]) + col([]))
    assert empty.n_docs == 0 and empty.terms == [] and len(empty.post_docs) == 0


# ------------------------------------------------------------------ rejections

REJECTIONS = [
    ("empty", b"", 8, "bm25: unexpected EOF (need 4)"),
    ("truncated head", head(2, 3, 0)[:10], 8, "bm25: unexpected EOF (need 4)"),
    ("v3 short", U(3), 8, "bm25: unexpected EOF (need 4)"),
    ("nan avgdl", head(2, 0, 0, avgdl=float("nan")) + col([]) + col([]) + col([]), 8,
     "bm25: non-finite k1 / b / avgdl"),
    ("inf k1", head(2, 0, 0, k1=float("inf")) + col([]) + col([]) + col([]), 8,
     "bm25: non-finite k1 / b / avgdl"),
    ("-inf b", head(1, 0, 0, b=float("-inf")), 8, "bm25: non-finite k1 / b / avgdl"),
    ("v1 hostile n_docs", head(1, 0xFFFFFFFF, 0), 8, "bm25: unexpected EOF (need 4)"),
    ("v1 hostile df", head(1, 0, 1) + term(b"a") + U(0xFFFFFFFF), 8,
     "bm25: unexpected EOF (need 4)"),
    ("term length 2^32-1", head(1, 0, 1) + U(0xFFFFFFFF), 8,
     "bm25: unexpected EOF (need 4294967295)"),
    ("v2 hostile n_terms", head(2, 0, 0xFFFFFFFF) + col([]), 8, "bm25: unexpected EOF (need 4)"),
    ("bad utf-8", head(1, 0, 1) + term(b"\xff") + U(0), 8,
     "term utf-8: invalid utf-8 sequence of 1 bytes from index 0"),
    ("incomplete utf-8", head(1, 0, 1) + term(b"a\xe2\x82") + U(0), 8,
     "term utf-8: incomplete utf-8 byte sequence from index 1"),
    ("v1 doc out of range", head(1, 3, 1) + U(1, 2, 3) + term(b"aa") + U(1, 3, 1), 8,
     "bm25: posting doc id >= n_docs"),
    ("non-finite wins over range", head(1, 3, 1, k1=float("nan")) + U(1, 2, 3) + term(b"aa")
     + U(1, 3, 1), 8, "bm25: non-finite k1 / b / avgdl"),
    ("v2 doc-length column", head(2, 3, 0) + col([1, 2]) + col([]) + col([]), 8,
     "bm25 v2: doc-length column mismatch"),
    ("v2 gap column", head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(2) + col([0]) + col([1]),
     8, "bm25 v2: posting column mismatch"),
    ("v2 tf column", head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(1) + col([0]) + col([1, 1]),
     8, "bm25 v2: posting column mismatch"),
    ("v2 hostile df", head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(0xFFFFFFFF) + col([0])
     + col([1]), 8, "bm25 v2: posting column mismatch"),
    ("v2 doc via gaps", head(2, 3, 1) + col([1, 2, 3]) + term(b"aa") + U(2) + col([1, 2])
     + col([1, 1]), 8, "bm25: posting doc id >= n_docs"),
    ("v2 missing term", head(2, 3, 2) + col([1, 2, 3]) + term(b"aa") + U(1), 8,
     "bm25: unexpected EOF (need 4)"),
    ("v2 column longer than payload", head(2, 3, 0) + U(1000) + b"\x00" * 8, 8,
     "bm25: unexpected EOF (need 1000)"),
    ("intpack truncated", head(2, 3, 0) + U(4) + U(3), 0, "intpack: truncated u32"),
    ("intpack block count", head(2, 3, 0) + U(8) + U(3, 2), 0,
     "intpack: block count inconsistent with count"),
    ("intpack hostile count", head(2, 3, 0) + U(8) + U(1_000_000, 7813), 0,
     "intpack: truncated directory"),
]


@pytest.mark.parametrize("raw,section,reason", [r[1:] for r in REJECTIONS],
                         ids=[r[0] for r in REJECTIONS])
def test_rejections_raise_the_reference_error(raw: bytes, section: int, reason: str) -> None:
    with pytest.raises(MalformedSectionPayload) as ei:
        decode_bm25(raw)
    assert (ei.value.section_id, ei.value.reason) == (section, reason)
    assert str(ei.value) == f"malformed section payload: section={section} reason={reason}"


@pytest.mark.parametrize("version", [0, 3, 0xFFFFFFFF])
def test_unknown_version(version: int) -> None:
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_bm25(U(version) + head(2, 0, 0)[4:] + col([]) + col([]) + col([]))
    assert (ei.value.section_id, ei.value.version) == (8, version)


def test_every_truncation_of_a_real_payload_raises_typed_error() -> None:
    raw = section_08((DATA / "ref-0.5.1-tokens/tokens-bm25.urna").read_bytes())
    for cut in range(len(raw)):
        with pytest.raises(MalformedSectionPayload):
            decode_bm25(raw[:cut])


def test_hostile_counts_fail_fast_without_allocating() -> None:
    start = time.perf_counter()
    for raw in (head(1, 0xFFFFFFFF, 0xFFFFFFFF), head(2, 0xFFFFFFFF, 0xFFFFFFFF) + col([]),
                head(1, 0, 1) + term(b"ab") + U(0xFFFFFFFF) + b"\x00" * 64):
        with pytest.raises(MalformedSectionPayload):
            decode_bm25(raw)
    assert time.perf_counter() - start < 1.0


# ------------------------------------------------------------------ properties

_terms = st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=12)


@st.composite
def payloads(draw) -> Bm25Payload:
    terms = sorted(draw(_terms))
    n_docs = draw(st.integers(0, 40))
    postings = []
    for _ in terms:
        docs = sorted(draw(st.sets(st.integers(0, n_docs - 1), max_size=n_docs))) if n_docs else []
        postings.append([(d, draw(st.integers(0, 2**32 - 1))) for d in docs])
    offsets = np.cumsum([0] + [len(x) for x in postings]).astype(np.int64)
    flat = [pair for x in postings for pair in x]
    f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return Bm25Payload(
        2, draw(f32), draw(f32), draw(f32), n_docs, len(terms),
        np.asarray(draw(st.lists(st.integers(0, 2**32 - 1), min_size=n_docs,
                                 max_size=n_docs)), dtype=np.uint32),
        terms, offsets, np.asarray([d for d, _ in flat], dtype=np.uint32),
        np.asarray([t for _, t in flat], dtype=np.uint32),
    )


@settings(max_examples=150, deadline=None)
@given(payloads())
def test_roundtrip_and_deterministic(p: Bm25Payload) -> None:
    raw = encode_bm25(p)
    assert decode_bm25(raw) == p
    assert encode_bm25(p) == raw


@settings(max_examples=150, deadline=None)
@given(payloads(), st.data())
def test_random_corruption_only_raises_typed_errors(p: Bm25Payload, data) -> None:
    raw = bytearray(encode_bm25(p))
    for _ in range(data.draw(st.integers(1, 4))):
        if not raw:
            break
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(MalformedSectionPayload, UnsupportedSectionVersion):
        decode_bm25(bytes(raw))
