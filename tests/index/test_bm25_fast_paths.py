"""The batched BM25 build and the narrowed top-k equal the plain definitions they replace.

* ``tokenize_corpus`` (batches of docs as one byte buffer, terms factorized by hashing)
  gives every doc exactly ``tokenize``'s tokens, and its terms in UTF-8 byte order, on random
  Unicode text, in batches of any size and with the hashing rounds cut short (the exact
  fallback) too.
* ``Bm25Index.build`` gives the payload a plain dict-of-Counters build gives, and its bytes
  are those of the per-term encoder written out below (also for unsorted decoded terms).
* ``search`` equals scoring every posting with f32 scalars in query order and sorting all
  matched docs, bit for bit (scores and tie order), on built indexes and on hostile payloads
  whose scores are NaN, infinite, zero or negative.
* A query on a mid-size index (a CLI's) does not import numba.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna.index.tokenize_corpus as tc
from helpers.budget import examples
from helpers.payloads import bm25_payload
from urna.format.encodings.intpack import pack_u64s
from urna.format.sections.bm25 import Bm25Payload, decode_bm25, encode_bm25
from urna.index.bm25 import Bm25Index
from urna.index.tokenize import tokenize

F = np.float32
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "src")

# text with every kind of character, plus words that are long in bytes (over 8 and 16)
_TEXT = st.lists(st.one_of(
    st.characters(),
    st.sampled_from(list("aZ9 _-.İıΣσǅ\u0301\U00010d50\U0001f600東京")),
    st.sampled_from(["abcdefghij", "ABCDEFGHIJKLMNOPQ", "é" * 9, "東京都" * 3, " ", "x1"]),
), max_size=40).map("".join)
_ASCII = st.lists(st.sampled_from(list("abAB01 ,.-") + ["abcdefghi", "ABCDEFGHIJKLMNOPQR"]),
                  max_size=60).map("".join)
_CORPUS = st.lists(st.one_of(_TEXT, _ASCII), max_size=12)


def _per_doc(corpus: tc.CorpusTokens) -> list[list[str]]:
    ends = np.cumsum(corpus.doc_lens).tolist()
    starts = ([0] + ends[:-1]) if ends else []
    return [[corpus.terms[t] for t in corpus.term_ids[a:b].tolist()]
            for a, b in zip(starts, ends, strict=True)]


@settings(max_examples=examples(300, 100), deadline=None)
@given(_CORPUS)
def test_corpus_tokens_equal_the_tokenizer(docs: list[str]) -> None:
    corpus = tc.tokenize_corpus(docs)
    assert _per_doc(corpus) == [tokenize(d) for d in docs]
    raw = [t.encode("utf-8") for t in corpus.terms]
    assert raw == sorted(set(raw))  # distinct, in UTF-8 byte order


@settings(max_examples=60, deadline=None)
@given(_CORPUS)
def test_corpus_tokens_in_small_batches_and_without_enough_hashing_rounds(
        docs: list[str]) -> None:
    want = tc.tokenize_corpus(docs)
    assert _per_doc(want) == [tokenize(d) for d in docs]
    # rounds 0: everything through the exact fallback; 1: the collisions; batches of one doc
    # and of a few docs share one vocabulary
    for rounds, batch in ((0, tc._BATCH_CHARS), (1, tc._BATCH_CHARS), (24, 1), (0, 1),
                          (24, 40)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tc, "_MAX_ROUNDS", rounds)
            mp.setattr(tc, "_BATCH_CHARS", batch)
            got = tc.tokenize_corpus(docs)
        assert got.terms == want.terms
        assert got.term_ids.tolist() == want.term_ids.tolist()
        assert got.doc_lens.tolist() == want.doc_lens.tolist()


def test_corpus_with_many_distinct_terms_and_colliding_slots() -> None:
    docs = [" ".join(f"t{i * 97 + j}x" for j in range(97)) for i in range(400)]
    docs += ["Σ" * 20 + " " + "abcdefghijklmnopqrstuvwxyz" * 2, "", "a"]
    assert _per_doc(tc.tokenize_corpus(docs)) == [tokenize(d) for d in docs]


def plain_payload(docs: list[str], k1: float = 1.5, b: float = 0.75) -> Bm25Payload:
    """§8.2 the obvious way: a Counter per doc, terms sorted, postings by doc id."""
    counts = [Counter(tokenize(d)) for d in docs]
    terms = sorted({t for c in counts for t in c})
    docs_of: dict[str, list[int]] = {t: [] for t in terms}
    for d, c in enumerate(counts):
        for t in c:
            docs_of[t].append(d)
    lens = [sum(c.values()) for c in counts]
    offsets = np.cumsum([0] + [len(docs_of[t]) for t in terms]).astype(np.int64)
    avgdl = float(F(sum(lens)) / F(len(docs))) if docs else 0.0
    return Bm25Payload(2, float(F(k1)), float(F(b)), avgdl, len(docs), len(terms),
                       np.asarray(lens, np.uint32), terms, offsets,
                       np.asarray([d for t in terms for d in docs_of[t]], np.uint32),
                       np.asarray([counts[d][t] for t in terms for d in docs_of[t]], np.uint32))


def per_term_encoding(p: Bm25Payload) -> bytes:
    """The version-2 payload written one term at a time (§8.3), terms in UTF-8 byte order."""
    def blob(values: list[int]) -> bytes:
        packed = pack_u64s(np.asarray(values, dtype=np.uint64))
        return struct.pack("<I", len(packed)) + packed

    out = struct.pack("<IfffII", 2, p.k1, p.b, p.avgdl, p.n_docs, p.n_terms)
    out += blob(p.doc_lens.tolist())
    gaps: list[int] = []
    tfs: list[int] = []
    for t in sorted(range(len(p.terms)), key=lambda i: p.terms[i].encode("utf-8")):
        lo, hi = int(p.post_offsets[t]), int(p.post_offsets[t + 1])
        raw = p.terms[t].encode("utf-8")
        out += struct.pack("<I", len(raw)) + raw + struct.pack("<I", hi - lo)
        prev = 0
        for d in p.post_docs[lo:hi].tolist():
            gaps.append((d - prev) & 0xFFFFFFFF)
            prev = d
        tfs += p.post_tfs[lo:hi].tolist()
    return out + blob(gaps) + blob(tfs)


@settings(max_examples=150, deadline=None)
@given(_CORPUS)
def test_build_equals_the_plain_build_and_encoding(docs: list[str]) -> None:
    idx = Bm25Index.build(docs)
    want = plain_payload(docs)
    assert idx.payload == want
    assert idx.to_bytes() == per_term_encoding(want)


@settings(max_examples=60, deadline=None)
@given(_CORPUS, st.randoms(use_true_random=False))
def test_encoding_sorts_unsorted_terms_like_the_per_term_encoder(docs: list[str], rnd) -> None:
    p = plain_payload(docs)
    perm = list(range(len(p.terms)))
    rnd.shuffle(perm)
    dfs = np.diff(p.post_offsets)
    idx = [np.arange(p.post_offsets[t], p.post_offsets[t + 1]) for t in perm]
    flat = np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, np.int64)
    shuffled = Bm25Payload(2, p.k1, p.b, p.avgdl, p.n_docs, p.n_terms, p.doc_lens,
                           [p.terms[t] for t in perm],
                           np.cumsum([0] + [int(dfs[t]) for t in perm]).astype(np.int64),
                           p.post_docs[flat], p.post_tfs[flat])
    assert encode_bm25(shuffled) == per_term_encoding(shuffled) == encode_bm25(p)


def plain_search(idx: Bm25Index, query: str, k: int) -> list[tuple[int, float]]:
    """Every posting scored with f32 scalars (§8.4) in query order, every match sorted."""
    p = idx.payload
    k1, b, avgdl = F(p.k1), F(p.b), F(p.avgdl)
    scores: dict[int, np.float32] = {}
    with np.errstate(all="ignore"):
        for tok in tokenize(query):
            if tok not in p.terms:
                continue
            t = p.terms.index(tok)
            lo, hi = int(p.post_offsets[t]), int(p.post_offsets[t + 1])
            idf = idx.idf(hi - lo)
            for d, tf in zip(p.post_docs[lo:hi].tolist(), p.post_tfs[lo:hi].tolist(),
                             strict=True):
                norm = (F(1.0) - b) + (b * F(p.doc_lens[d])) / max(avgdl, F(1.0))
                c = (idf * (F(tf) * (k1 + F(1.0)))) / (F(tf) + k1 * norm)
                scores[d] = scores.get(d, F(0.0)) + c
    kept = [(d, s) for d, s in scores.items() if math.isfinite(s)]
    kept.sort(key=lambda x: (-x[1], x[0]))
    return [(d, float(s)) for d, s in kept[:k]]


def _bits(hits: list[tuple[int, float]]) -> list[tuple[int, bytes]]:
    return [(d, struct.pack("<f", s)) for d, s in hits]  # tells 0.0 from -0.0


_WORDS = st.lists(st.sampled_from(["aa", "bb", "cc", "dd", "ee", "AA", "ff"]), max_size=8)


@settings(max_examples=examples(200, 75), deadline=None)
@given(st.lists(_WORDS.map(" ".join), min_size=1, max_size=60), _WORDS.map(" ".join),
       st.integers(1, 12))
def test_search_equals_the_plain_scorer(docs: list[str], query: str, k: int) -> None:
    idx = Bm25Index.build(docs)
    assert _bits(idx.search(query, k)) == _bits(plain_search(idx, query, k))


_HOSTILE_F32 = st.sampled_from([1.5, 0.75, 0.0, -1.0, -0.5, 1e-30, 3e38, 1.0])


@settings(max_examples=examples(300, 100), deadline=None)
@given(st.integers(1, 80), _HOSTILE_F32, _HOSTILE_F32, _HOSTILE_F32,
       st.lists(st.lists(st.tuples(st.integers(0, 79), st.integers(0, 3)), max_size=80),
                min_size=1, max_size=3),
       st.lists(st.integers(0, 2), min_size=1, max_size=5), st.integers(1, 6))
def test_search_equals_the_plain_scorer_on_hostile_payloads(n_docs, k1, b, avgdl, lists,
                                                           query, k) -> None:
    terms = ["aa", "bb", "cc"][:len(lists)]
    posts = [sorted({d % n_docs: tf for d, tf in pl}.items()) for pl in lists]
    p = bm25_payload(n_docs, k1, b, avgdl, posts)
    idx = Bm25Index.from_bytes(encode_bm25(p))
    text = " ".join(terms[q % len(terms)] for q in query)
    assert _bits(idx.search(text, k)) == _bits(plain_search(idx, text, k))


def test_infinite_scores_beside_finite_ones_are_dropped_not_ranked() -> None:
    # b = 0, k1 = 3e38: tf 2 overflows to +inf / finite = inf; tf 1 stays finite
    n = 200
    posts = [(d, 2 if d % 3 == 0 else 1) for d in range(n)]
    p = Bm25Payload(2, 3e38, 0.0, 1.0, n, 1, np.ones(n, np.uint32), ["aa"],
                    np.asarray([0, n], np.int64), np.asarray([d for d, _ in posts], np.uint32),
                    np.asarray([tf for _, tf in posts], np.uint32))
    idx = Bm25Index.from_bytes(encode_bm25(p))
    got = idx.search("aa aa", 5)
    assert _bits(got) == _bits(plain_search(idx, "aa aa", 5))
    assert [d for d, _ in got] == [1, 2, 4, 5, 7]  # the inf docs (multiples of 3) are gone


def test_decoded_payload_round_trips_through_the_fast_encoder() -> None:
    idx = Bm25Index.build(["red fox", "Blue sky", "red red sun", "東京 Ação"] * 30)
    assert decode_bm25(idx.to_bytes()) == idx.payload == plain_payload(
        ["red fox", "Blue sky", "red red sun", "東京 Ação"] * 30)


def test_one_infinite_score_is_no_witness_for_the_top_k() -> None:
    # five blocks of 40 docs: block 0 holds the one +inf doc, blocks 1-4 one short (high
    # scoring) doc each, every other doc is long (low); the fifth hit is a low one
    n = 200
    lens = [10] * n
    for d in (50, 90, 130, 170):
        lens[d] = 1
    tfs = [1] * n
    tfs[7] = 2  # 2 * (k1 + 1) overflows, the denominator does not: +inf
    p = Bm25Payload(2, 3e38, 0.5, 10.0, n, 1, np.asarray(lens, np.uint32), ["aa"],
                    np.asarray([0, n], np.int64), np.arange(n, dtype=np.uint32),
                    np.asarray(tfs, np.uint32))
    idx = Bm25Index.from_bytes(encode_bm25(p))
    got = idx.search("aa", 5)
    assert _bits(got) == _bits(plain_search(idx, "aa", 5))
    assert [d for d, _ in got] == [50, 90, 130, 170, 0]


def test_a_query_on_a_mid_size_index_does_not_import_numba() -> None:
    # 130,000 postings: past NUMBA_LOADED_MIN_POSTINGS, under NUMBA_MIN_POSTINGS; the answer
    # is the kernel's once numba is loaded
    code = ("import sys\nfrom urna.index import bm25\n"
            "docs = [' '.join(f'w{(d * 7 + j) % 3000}x' for j in range(65)) for d in range(2000)]\n"
            "idx = bm25.Bm25Index.build(docs)\n"
            "assert bm25.NUMBA_LOADED_MIN_POSTINGS <= len(idx.docs) < bm25.NUMBA_MIN_POSTINGS\n"
            "plain = idx.search('w5x w17x w17x w2999x', 10)\n"
            "loaded = 'numba' in sys.modules\n"
            "assert bm25._numba_kernel() is not None\n"
            "print(loaded, plain == idx.search('w5x w17x w17x w2999x', 10), len(plain))")
    env = dict(os.environ, PYTHONPATH=SRC)
    env.pop("URNA_FORCE_SCALAR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["False", "True", "10"]
