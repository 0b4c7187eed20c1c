"""BM25 index: rebuilt 0x08 payloads, lexical ranking and scores, RRF union (03-runtime §8).

* Rebuilding every BM25 vector file's 0x08 payload from its chunks.json gives the reference's
  bytes (decompressed where the file stores it as zstd).
* Lexical orders: the reference exposes no pure BM25 call, so its top-15 order was recovered
  through ``search_hybrid`` on a file built by the reference wheel 0.5.1 from ``zipf_corpus()``
  plus 15 empty chunks that win the vector path (candidates c = 1..15, k = 2c: each step
  reveals the c-th lexical hit). The empty chunks are part of the index (they change N and
  avgdl), so they are part of ours too.
* Scores are compared with an independent scalar f32 evaluation of the §8.4 formula.
"""

from __future__ import annotations

import json
import math
import struct
from collections import Counter

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.vectors import DATA
from urna.format import layout as L
from urna.format.sections.bm25 import Bm25Payload, decode_bm25, encode_bm25
from urna.index.bm25 import Bm25Index, rrf_union
from urna.index.tokenize import tokenize

F = np.float32

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "Straße", "café", "東京", "naïve", "x1", "42", "ΣΟΦΙΑ", "rock'n'roll"]


def zipf_corpus(n_docs: int = 240) -> list[str]:
    """A deterministic Zipf-ish corpus (64-bit LCG), with exact duplicates and empty docs."""
    state = 12345
    cum, acc = [], 0.0
    for i in range(len(WORDS)):
        acc += 1.0 / (i + 1)
        cum.append(acc)
    docs = []
    for _doc in range(n_docs):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        n = (state >> 33) % 30
        words = []
        for _ in range(n):
            state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
            u = (state >> 11) / 2**53 * acc
            words.append(WORDS[next(i for i, c in enumerate(cum) if u < c)])
        docs.append(" ".join(words))
    for d in range(0, n_docs, 37):  # duplicates: exact score ties, broken by doc id
        docs[d + 1] = docs[d]
    return docs


QUERIES = ["alpha", "beta gamma", "zeta zeta eta", "STRASSE straße", "Café NAÏVE 東京",
           "mu lambda kappa iota", "nothing here", "x1 42 alpha", "theta", "", "σοφια rock",
           "roll roll n", "ALPHA beta gamma delta epsilon zeta eta theta iota kappa"]

# The reference's BM25 top-15 for each query over zipf_corpus() + 15 empty chunks.
REF_ORDERS = [
    [87, 106, 210, 55, 162, 221, 39, 173, 84, 127, 151, 220, 194, 47, 100],
    [77, 15, 35, 185, 186, 218, 43, 160, 21, 118, 28, 167, 81, 42, 80],
    [29, 205, 79, 136, 84, 50, 163, 98, 231, 198, 101, 105, 180, 184, 100],
    [137, 93, 191, 72, 130, 188, 49, 117, 87, 91, 96, 142, 173, 148, 149],
    [215, 226, 197, 66, 65, 33, 157, 86, 19, 239, 216, 153, 20, 47, 206],
    [63, 184, 207, 176, 46, 6, 150, 160, 236, 167, 23, 235, 146, 64, 136],
    [],
    [107, 178, 209, 221, 65, 233, 101, 203, 175, 159, 56, 148, 149, 28, 207],
    [151, 161, 8, 225, 227, 29, 192, 73, 109, 70, 131, 182, 77, 177, 198],
    [],
    [47, 61, 120, 98, 104, 14, 143, 183, 79, 81, 8, 64, 102, 201, 175],
    [183, 47, 81, 8, 102, 201, 52, 193, 61, 116, 86, 13, 137, 152, 45],
    [192, 50, 160, 198, 184, 74, 75, 98, 235, 79, 148, 149, 62, 150, 180],
]
N_EMPTY = 15

BM25_FILES = [
    ("ref-0.5.1", "quickstart-int8_bm25.urna"), ("ref-0.5.1", "quickstart-hybrid.urna"),
    ("ref-0.5.1", "synthetic-int8_bm25.urna"), ("ref-0.5.1", "synthetic-hybrid.urna"),
    ("ref-0.5.1", "dedup-hybrid.urna"), ("ref-0.5.1-tokens", "tokens-bm25.urna"),
    ("ref-0.5.1-tokens", "tokens-hybrid.urna"),
]


def section_08(buf: bytes) -> bytes:
    """The decompressed 0x08 payload of a whole file, located through the layout structs."""
    h = L.Header.unpack(buf)
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        if e.section_id == L.SECTION_BM25_INDEX:
            raw = buf[e.offset:e.offset + e.size]
            if e.encoding == L.ENCODING_ZSTD:
                return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            return raw
    raise AssertionError("no 0x08 section")


@pytest.mark.parametrize("folder,name", BM25_FILES)
def test_rebuilt_payload_equals_the_reference(folder: str, name: str) -> None:
    corpus = name.split("-")[0]
    chunks = json.loads((DATA / folder / f"{corpus}.chunks.json").read_text())["chunks"]
    built = Bm25Index.build([c["canonical_text"] for c in chunks])
    assert built.to_bytes() == section_08((DATA / folder / name).read_bytes())


@pytest.fixture(scope="module")
def zipf_index() -> Bm25Index:
    return Bm25Index.build(zipf_corpus() + [""] * N_EMPTY)


@pytest.mark.parametrize("i", range(len(QUERIES)), ids=QUERIES)
def test_lexical_order_equals_the_reference(zipf_index: Bm25Index, i: int) -> None:
    assert [d for d, _ in zipf_index.search(QUERIES[i], 15)] == REF_ORDERS[i]


# The same recovery over the vectors' own corpora (chunk texts + 15 empty chunks), per query
# text of <corpus>.chunks.json.
REF_VECTOR_ORDERS = {
    "synthetic": [
        [25, 155, 151, 286, 307, 15, 188, 214, 114, 199, 19, 390, 210, 144, 187],
        [191, 174, 177, 323, 328, 85, 90, 123, 370, 391, 396, 358, 395, 86, 390],
        [161, 168, 172, 104, 151, 180, 284, 112, 81, 361, 9, 255, 260, 23, 222],
    ],
    "quickstart": [[10, 8, 7], [0, 9], [0, 2, 9, 6, 1, 7, 3, 4, 8, 10, 5, 11]],
}


@pytest.mark.parametrize("corpus", sorted(REF_VECTOR_ORDERS))
def test_lexical_order_on_vector_corpora_equals_the_reference(corpus: str) -> None:
    data = json.loads((DATA / "ref-0.5.1" / f"{corpus}.chunks.json").read_text())
    idx = Bm25Index.build([c["canonical_text"] for c in data["chunks"]] + [""] * N_EMPTY)
    got = [[d for d, _ in idx.search(q[0], 15)] for q in data["queries"]]
    assert got == REF_VECTOR_ORDERS[corpus]


def oracle_scores(docs: list[str], query: str, k1: float = 1.5, b: float = 0.75) -> dict:
    """§8.4 evaluated one posting at a time with f32 scalars (independent of the index)."""
    toks = [tokenize(d) for d in docs]
    n = len(docs)
    avgdl = F(sum(len(t) for t in toks)) / F(n)
    k1, b = F(k1), F(b)
    tf = [Counter(t) for t in toks]
    scores: dict[int, np.float32] = {}
    for q in tokenize(query):
        df = sum(1 for c in tf if q in c)
        if df == 0:
            continue
        idf = F(math.log(F(F(F(n) - F(df) + F(0.5)) / F(F(df) + F(0.5))) + F(1.0)))
        for d, c in enumerate(tf):
            if q in c:
                t = F(c[q])
                norm = (F(1.0) - b) + (b * F(len(toks[d]))) / max(avgdl, F(1.0))
                scores[d] = scores.get(d, F(0.0)) + (idf * (t * (k1 + F(1.0)))) / (t + k1 * norm)
    return scores


@pytest.mark.parametrize("query", QUERIES)
def test_scores_follow_the_f32_formula(zipf_index: Bm25Index, query: str) -> None:
    docs = zipf_corpus() + [""] * N_EMPTY
    want = oracle_scores(docs, query)
    got = dict(zipf_index.search(query, len(docs)))
    assert got.keys() == want.keys()
    for d, s in got.items():
        assert s == pytest.approx(float(want[d]), rel=2e-7, abs=0)  # ln may differ by 1 ulp
    ranked = [d for d, _ in zipf_index.search(query, len(docs))]
    assert ranked == sorted(got, key=lambda d: (-got[d], d))


def test_small_example_by_hand() -> None:
    idx = Bm25Index.build(["red fox", "blue sky", "red red sun"])
    # N=3, avgdl=7/3; "red": df=2, idf=ln(1.5/2.5+1)=ln(1.6)
    idf = math.log(1.6)
    s0 = idf * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / (7 / 3)))
    s2 = idf * 5.0 / (2 + 1.5 * (0.25 + 0.75 * 3 / (7 / 3)))
    got = idx.search("RED", 10)
    assert [d for d, _ in got] == [2, 0]
    assert got[0][1] == pytest.approx(s2, rel=1e-6) and got[1][1] == pytest.approx(s0, rel=1e-6)


def test_query_tokens_count_with_repetition() -> None:
    idx = Bm25Index.build(["red fox", "blue sky", "red red sun"])
    once = dict(idx.search("red", 5))
    twice = dict(idx.search("red red", 5))
    assert all(twice[d] == float(F(once[d]) + F(once[d])) for d in once)


@pytest.mark.parametrize("query,k", [("red", 0), ("", 5), ("a b c ! ?", 5), ("purple", 5)])
def test_empty_results(query: str, k: int) -> None:
    assert Bm25Index.build(["red fox", "blue sky"]).search(query, k) == []


def test_empty_index() -> None:
    idx = Bm25Index.build([])
    assert idx.search("anything", 10) == [] and idx.avgdl == 0.0 and idx.n_docs == 0
    assert decode_bm25(idx.to_bytes()) == idx.payload


def test_k_truncates_after_ordering_ties_by_doc_id() -> None:
    idx = Bm25Index.build(["same text", "other", "same text", "same text"])
    assert idx.search("same", 2) == idx.search("same", 10)[:2]
    assert [d for d, _ in idx.search("same", 10)] == [0, 2, 3]


def _payload(k1: float, b: float, avgdl: float, doc_lens: list[int],
             postings: dict[str, list[tuple[int, int]]]) -> Bm25Payload:
    terms = list(postings)
    offsets = np.cumsum([0] + [len(postings[t]) for t in terms]).astype(np.int64)
    flat = [p for t in terms for p in postings[t]]
    return Bm25Payload(2, k1, b, avgdl, len(doc_lens), len(terms),
                       np.asarray(doc_lens, np.uint32), terms, offsets,
                       np.asarray([d for d, _ in flat], np.uint32),
                       np.asarray([t for _, t in flat], np.uint32))


def test_non_finite_scores_are_dropped_and_zero_scores_kept() -> None:
    # k1 = -1, b = 0: tf * (k1 + 1) = 0 and denom = tf - 1, so doc 0 (tf 1) is 0/0 = NaN and
    # is dropped, doc 1 (tf 0) scores 0/-1 = -0.0 (+0.0 once added), doc 2 scores 0/1 = 0
    p = _payload(-1.0, 0.0, 1.0, [1, 1, 1], {"aa": [(0, 1), (1, 0), (2, 2)]})
    got = Bm25Index.from_payload(p).search("aa", 10)
    assert got == [(1, 0.0), (2, 0.0)]
    assert all(math.copysign(1.0, s) == 1.0 for _, s in got)


def test_decoded_v1_with_repeated_doc_in_one_term_accumulates_both() -> None:
    raw = struct.pack("<IfffII", 1, 1.5, 0.75, 2.0, 2, 1) + struct.pack("<2I", 2, 2)
    raw += struct.pack("<I", 2) + b"aa" + struct.pack("<5I", 2, 1, 1, 1, 1)
    idx = Bm25Index.from_bytes(raw)
    single = Bm25Index.from_payload(_payload(1.5, 0.75, 2.0, [2, 2], {"aa": [(1, 1)]}))
    # same doc twice: two identical contributions (idf uses df = 2 postings)
    contrib = idx.idf(2) * F(2.5) / (
        F(1.0) + F(1.5) * ((F(1.0) - F(0.75)) + F(0.75) * F(2.0) / F(2.0)))
    assert idx.search("aa", 5) == [(1, float(contrib + contrib))]
    assert single.search("aa", 5)[0][0] == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab cdΣσİ1_-", max_size=20), max_size=12))
def test_build_matches_token_counts_and_roundtrips(docs: list[str]) -> None:
    idx = Bm25Index.build(docs)
    p = decode_bm25(idx.to_bytes())
    assert p == idx.payload and encode_bm25(p) == idx.to_bytes()
    toks = [tokenize(d) for d in docs]
    assert p.doc_lens.tolist() == [len(t) for t in toks]
    rebuilt = [Counter() for _ in docs]
    for t, term in enumerate(p.terms):
        lo, hi = p.post_offsets[t], p.post_offsets[t + 1]
        ds = p.post_docs[lo:hi].tolist()
        assert ds == sorted(set(ds))
        for d, tf in zip(ds, p.post_tfs[lo:hi].tolist(), strict=True):
            rebuilt[d][term] = tf
    assert rebuilt == [Counter(t) for t in toks]


# ------------------------------------------------------------------ RRF union


def test_rrf_union_orders_by_fused_score() -> None:
    # 1: 1/61 + 1/62, 3: 1/63 + 1/61, 2: 1/62
    assert rrf_union([1, 2, 3], [3, 1]) == [1, 3, 2]


def test_rrf_union_ties_by_id_and_empty_lists() -> None:
    assert rrf_union([5], [4]) == [4, 5]
    assert rrf_union([], []) == []
    assert rrf_union([9, 8, 7], []) == [9, 8, 7]
    assert rrf_union([], [7, 9, 8]) == [7, 9, 8]


@given(st.lists(st.integers(0, 50), unique=True, max_size=30),
       st.lists(st.integers(0, 50), unique=True, max_size=30))
def test_rrf_union_is_the_union(a: list[int], b: list[int]) -> None:
    out = rrf_union(a, b)
    assert sorted(out) == sorted(set(a) | set(b))


def _rrf_oracle(a: list[int], b: list[int]) -> list[int]:
    """§8.5 step 4 written out: f32 ``1 / (60 + r + 1)`` added per occurrence, list a first."""
    fused: dict[int, np.float32] = {}
    for ids in (a, b):
        for r, i in enumerate(ids):
            c = np.float32(1.0) / (np.float32(60.0) + np.float32(r) + np.float32(1.0))
            fused[i] = fused.get(i, np.float32(0.0)) + c
    return sorted(fused, key=lambda i: (-float(fused[i]), i))


_RRF_LISTS = st.one_of(st.lists(st.integers(0, 3000), unique=True, max_size=300),
                       st.lists(st.integers(0, 3000), max_size=300))


@settings(max_examples=examples(2000, 300), deadline=None)
@given(_RRF_LISTS, _RRF_LISTS)
def test_rrf_union_orders_as_the_f32_sum_in_turn(a: list[int], b: list[int]) -> None:
    # repeated ids too (a list that repeats one is summed in turn); ties by id
    assert rrf_union(a, b) == _rrf_oracle(a, b)
    assert rrf_union(np.asarray(a, dtype=np.int64), b) == _rrf_oracle(a, b)


def test_rrf_union_ties_across_lists_at_rank_depth() -> None:
    # ids at rank r in one list and rank r in the other tie exactly; deep ranks stay exact
    a = list(range(5000))
    b = list(range(4999, -1, -1))
    assert rrf_union(a, b) == _rrf_oracle(a, b)


# ------------------------------------------------------------------ numba and numpy paths


def _both_paths(monkeypatch, idx: Bm25Index, query: str, k: int):
    import urna.index.bm25 as mod

    if mod._numba_kernel() is None:
        pytest.fail("numba is a dev dependency; the compiled path must be tested")
    monkeypatch.setattr(mod, "NUMBA_MIN_POSTINGS", 0)
    fast = idx.search(query, k)
    monkeypatch.setattr(mod, "_numba_kernel", lambda: None)
    plain = idx.search(query, k)
    monkeypatch.undo()
    return fast, plain


@pytest.mark.parametrize("k", [1, 3, 15, 1000])
@pytest.mark.parametrize("query", QUERIES)
def test_compiled_and_numpy_paths_agree(monkeypatch, zipf_index: Bm25Index, query: str,
                                        k: int) -> None:
    fast, plain = _both_paths(monkeypatch, zipf_index, query, k)
    assert fast == plain


def test_compiled_and_numpy_paths_agree_on_hostile_payloads(monkeypatch) -> None:
    p = _payload(-1.0, 0.0, 1.0, [1, 1, 1], {"aa": [(0, 1), (1, 0), (2, 2)], "bb": [(0, 3)]})
    fast, plain = _both_paths(monkeypatch, Bm25Index.from_payload(p), "aa bb aa", 10)
    assert fast == plain == [(1, 0.0), (2, 0.0)]
    raw = struct.pack("<IfffII", 1, 1.5, 0.75, 2.0, 3, 1) + struct.pack("<3I", 2, 2, 1)
    raw += struct.pack("<I", 2) + b"aa" + struct.pack("<7I", 3, 1, 1, 1, 1, 0, 2)
    fast, plain = _both_paths(monkeypatch, Bm25Index.from_bytes(raw), "aa aa", 10)
    assert fast == plain and [d for d, _ in fast] == [1, 0]
