"""A BM25 payload read per term answers exactly as the whole decode does (index.bm25_lazy).

Claims: on built corpora (terms whose postings span many intpack blocks) and on hostile
payloads (NaN, infinite, zero or negative scores; a doc repeated inside one term), the
per-term index gives the eager index's top-k (ids and f32 bits), per-row scores, stemmed
evidence, document frequencies, membership and postings, with or without a filter mask; its
whole arrays, when asked for, are the eager ones; a payload it cannot read per term
(version 1, a repeated term, damaged bytes) is declined, so the eager decoder judges it; a
repeat open of a reference file (BM25 read per term) answers ``retrieve`` as a full open.
"""

from __future__ import annotations

import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from helpers.budget import examples
from helpers.payloads import bm25_payload
from helpers.vectors import REF
from urna.errors import UrnaError
from urna.format.sections.bm25 import Bm25Payload, decode_bm25, encode_bm25
from urna.index.bm25 import Bm25Index
from urna.index.bm25_lazy import LazyBm25Index, lazy_index
from urna.index.stemmed_bm25 import stem_group, stemmed_evidence
from urna.index.stemming import porter_stem

_WORDS = ["copy", "copies", "copied", "file", "files", "a", "the", "run", "running", "zeta"]
_DOC = st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join)
_QUERY = st.lists(st.sampled_from([*_WORDS, "absent"]), max_size=5).map(" ".join)


def _bits(a: np.ndarray) -> bytes:
    return np.asarray(a, dtype=np.float32).tobytes()  # tells 0.0 from -0.0, NaN payloads


def _same_answers(eager: Bm25Index, lazy: Bm25Index, text: str, k: int,
                  mask: np.ndarray | None) -> None:
    assert list(lazy.terms) == eager.terms and lazy.offsets.tolist() == eager.offsets.tolist()
    assert lazy.doc_lens.tolist() == np.asarray(eager.doc_lens).tolist()
    ids_e, sc_e = eager.search_arrays(text, k, mask)
    ids_l, sc_l = lazy.search_arrays(text, k, mask)
    assert ids_l.tolist() == ids_e.tolist() and _bits(sc_l) == _bits(sc_e)
    rows = np.arange(-1, eager.n_docs + 2)
    assert _bits(lazy.scores_of(text, rows)) == _bits(eager.scores_of(text, rows))
    ev_e, ev_l = stemmed_evidence(eager, text, rows), stemmed_evidence(lazy, text, rows)
    assert ev_l.scores.tobytes() == ev_e.scores.tobytes()
    assert ev_l.coverage.tobytes() == ev_e.coverage.tobytes()
    for term in text.split():
        assert lazy.document_frequency(term) == eager.document_frequency(term)
        for doc in (0, eager.n_docs // 2, eager.n_docs - 1):
            assert lazy.doc_has_term(doc, term) == eager.doc_has_term(doc, term)
    for t in range(eager.n_terms):
        (d_l, f_l), (d_e, f_e) = lazy.term_postings(t), eager.term_postings(t)
        assert d_l.tolist() == d_e.tolist() and f_l.tolist() == f_e.tolist()


@settings(max_examples=80, deadline=None)
@given(docs=st.lists(_DOC, min_size=1, max_size=400), text=_QUERY, k=st.integers(1, 40),
       masked=st.booleans(), seed=st.integers(0, 2**16))
def test_per_term_index_answers_as_the_whole_decode(docs: list[str], text: str, k: int,
                                                    masked: bool, seed: int) -> None:
    data = Bm25Index.build(docs).to_bytes()
    eager = Bm25Index.from_bytes(data)
    lazy = lazy_index(data)
    assert isinstance(lazy, LazyBm25Index)
    mask = np.random.default_rng(seed).random(len(docs)) < 0.5 if masked else None
    _same_answers(eager, lazy, text, k, mask)


@settings(max_examples=examples(300, 100), deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(["a", "b\u00e9", "\u6771", "cc"]), max_size=4)
                     .map(" ".join), min_size=1, max_size=12),
       data=st.data())
def test_damaged_term_tables_are_read_as_the_eager_decoder_reads_them(docs: list[str],
                                                                      data) -> None:
    raw = bytearray(Bm25Index.build(docs).to_bytes())
    for _ in range(data.draw(st.integers(1, 3))):  # poke bytes of the term table's area
        pos = data.draw(st.integers(24, len(raw) - 1))
        raw[pos] = data.draw(st.sampled_from([0x00, 0x0A, 0x80, 0xC3, 0xFF, 0x61]))
    try:
        eager = Bm25Index.from_bytes(bytes(raw))
    except UrnaError:
        return  # the open's full decode refuses it: never a verified body
    lazy = lazy_index(bytes(raw))
    if lazy is not None:
        _same_answers(eager, lazy, "a cc b\u00e9", 3, None)


def test_terms_spanning_many_blocks_answer_as_the_whole_decode() -> None:
    # 3,000 docs: common terms hold thousands of postings (dozens of intpack blocks, read as
    # one run), rare ones a few (read block by block)
    rng = np.random.default_rng(11)
    words = np.array(_WORDS + [f"w{i}" for i in range(300)])
    weights = 1.0 / np.arange(1, len(words) + 1)
    docs = [" ".join(rng.choice(words, size=int(rng.integers(0, 25)), p=weights / weights.sum()))
            for _ in range(3000)]
    data = Bm25Index.build(docs).to_bytes()
    eager, lazy = Bm25Index.from_bytes(data), lazy_index(data)
    assert lazy is not None
    assert max(np.diff(eager.offsets)) > 15 * 128
    for text in ("copy a file", "files w3 w250", "zeta zeta running", "w17", "absent"):
        _same_answers(eager, lazy, text, 10, None)
        _same_answers(eager, lazy, text, 10, rng.random(3000) < 0.3)


_HOSTILE_F32 = st.sampled_from([1.5, 0.75, 0.0, -1.0, -0.5, 1e-30, 3e38, 1.0])


@settings(max_examples=examples(200, 75), deadline=None)
@given(n_docs=st.integers(1, 300), k1=_HOSTILE_F32, b=_HOSTILE_F32, avgdl=_HOSTILE_F32,
       lists=st.lists(st.lists(st.tuples(st.integers(0, 299), st.integers(0, 3)),
                               max_size=300), min_size=1, max_size=3),
       repeat=st.booleans(), query=st.lists(st.integers(0, 2), min_size=1, max_size=5),
       k=st.integers(1, 6))
def test_per_term_index_on_hostile_payloads(n_docs, k1, b, avgdl, lists, repeat, query,
                                            k) -> None:
    terms = ["aa", "bb", "cc"][:len(lists)]
    if repeat:  # docs ascending but repeated inside a term: the unbuffered add
        posts = [sorted((d % n_docs, tf) for d, tf in pl) for pl in lists]
    else:
        posts = [sorted({d % n_docs: tf for d, tf in pl}.items()) for pl in lists]
    p = bm25_payload(n_docs, k1, b, avgdl, posts)
    data = encode_bm25(p)
    lazy = lazy_index(data)
    assert lazy is not None
    text = " ".join(terms[q % len(terms)] for q in query)
    _same_answers(Bm25Index.from_bytes(data), lazy, text, k, None)


def test_whole_arrays_when_asked_are_the_eager_ones() -> None:
    data = Bm25Index.build(["copy a file", "the files", "copied files a"] * 60).to_bytes()
    eager, lazy = Bm25Index.from_bytes(data), lazy_index(data)
    assert lazy is not None
    lazy.search("copy file", 3)  # some terms read per term first
    assert lazy.payload == eager.payload == decode_bm25(data)
    assert lazy.docs.tolist() == eager.docs.tolist()
    assert _bits(lazy._contrib) == _bits(eager._contrib)
    assert lazy.to_bytes() == data
    assert lazy.search("copy file", 3) == eager.search("copy file", 3)


def _v1(payload: Bm25Payload) -> bytes:
    out = [struct.pack("<IfffII", 1, payload.k1, payload.b, payload.avgdl, payload.n_docs,
                       payload.n_terms), np.asarray(payload.doc_lens, "<u4").tobytes()]
    for t, name in enumerate(payload.terms):
        lo, hi = int(payload.post_offsets[t]), int(payload.post_offsets[t + 1])
        raw = name.encode()
        pairs = np.stack([payload.post_docs[lo:hi], payload.post_tfs[lo:hi]], 1)
        out.append(struct.pack("<I", len(raw)) + raw + struct.pack("<I", hi - lo)
                   + pairs.astype("<u4").tobytes())
    return b"".join(out)


def test_payloads_it_cannot_read_per_term_are_declined() -> None:
    idx = Bm25Index.build(["red fox", "blue sky", "red sun"])
    data = idx.to_bytes()
    assert decode_bm25(_v1(idx.payload)) == Bm25Payload(1, *list(vars(idx.payload).values())[1:])
    assert lazy_index(_v1(idx.payload)) is None  # version 1
    p = idx.payload
    twice = Bm25Payload(2, p.k1, p.b, p.avgdl, p.n_docs, 2, p.doc_lens, ["red", "red"],
                        np.asarray([0, 1, 2], np.int64), np.asarray([0, 2], np.uint32),
                        np.asarray([1, 1], np.uint32))
    raw = encode_bm25(twice)
    assert lazy_index(raw) is None  # a repeated term: the last one wins, eagerly
    for cut in range(0, len(data) - 1, 7):
        lazy = lazy_index(data[:cut])
        assert lazy is None or lazy.n_terms == idx.n_terms  # short tails are never read


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "dedup-hybrid.urna",
                                  "quickstart-int8_bm25.urna", "synthetic-hybrid.urna"])
def test_repeat_open_reads_bm25_per_term_and_answers_alike(name: str, verdict_cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    path = verdict_cache / name
    shutil.copyfile(REF / name, path)

    def answers(f: urna.UrnaFile) -> list:
        q = f.vectors([1])[0]
        return [f.retrieve(q, 5, query_text=text, rank=rank).to_dict()
                for text in ("offline search with citations", "the file", "zzz")
                for rank in ("cosine", "fused")] + [f.search_bm25("the file", 7).to_dict()]

    with urna.open(path) as f:  # a full open: decodes 0x08 whole, keeps the verdict
        want = answers(f)
    with urna.open(path) as f:
        assert f._state.view.trusted
        got = answers(f)
        assert isinstance(f._state.bm25, LazyBm25Index)
    for a, b in zip(got, want, strict=True):
        a.pop("query_time_ms", None), b.pop("query_time_ms", None)
    assert got == want


def test_concurrent_first_queries_on_a_repeat_open_answer_alike(verdict_cache: Path) -> None:
    # the per-term postings, the walked spans and the texts read on a worker thread are all
    # first touched by racing threads here
    path = verdict_cache / "quickstart-hybrid.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    texts = ["offline search with citations", "the file", "how do citations work", "zzz"]
    with urna.open(path) as f:
        q = f.vectors([2])[0]
        want = [f.retrieve(q, 4, query_text=t, rank="fused").to_dict()["hits"] for t in texts]
    for _ in range(3):
        with urna.open(path) as f:
            assert f._state.view.trusted
            with ThreadPoolExecutor(8) as pool:
                got = list(pool.map(
                    lambda i: f.retrieve(q, 4, query_text=texts[i % 4],
                                         rank="fused").to_dict()["hits"], range(16)))
        assert got == [want[i % 4] for i in range(16)]


def test_stem_groups_and_prefixes_of_the_per_term_index_are_the_eager_ones() -> None:
    rng = np.random.default_rng(3)
    stems = ["copi", "file", "run", "do", "be", "i", "sort", "size", "list"]
    ends = ["", "s", "ed", "ing", "y", "ies", "e", "er"]
    words = sorted({s + e for s in stems for e in ends} | {"\u00e9t\u00e9", "zz"})
    docs = [" ".join(rng.choice(words, size=int(rng.integers(1, 12)))) for _ in range(400)]
    data = Bm25Index.build(docs).to_bytes()
    eager, lazy = Bm25Index.from_bytes(data), lazy_index(data)
    assert lazy is not None
    for word in [*words, "absent", ""]:
        for prefix in (word, word[:1], word[:-1]):
            assert lazy.prefixed_terms(prefix) == eager.prefixed_terms(prefix)
        stem = porter_stem(word)
        assert stem_group(lazy, stem).tolist() == stem_group(eager, stem).tolist()
        assert lazy.term_id(word) == eager.term_id(word)


def test_a_per_term_index_builds_the_kernels_arrays_only_after_many_queries() -> None:
    # numba loaded (a server, the warm command line) and an index past
    # NUMBA_LOADED_MIN_POSTINGS: the first KERNEL_AFTER_QUERIES queries read their terms
    # alone, as a process that opens the file for each query needs; then the whole arrays
    # are built once and the kernel answers, with the same ids and score bits throughout
    import numba  # noqa: F401 - what a resident process has loaded

    from urna.index import bm25

    rng = np.random.default_rng(5)
    words = np.array([f"w{i}" for i in range(2000)])
    docs = [" ".join(rng.choice(words, size=40)) for _ in range(2500)]
    data = Bm25Index.build(docs).to_bytes()
    eager, lazy = Bm25Index.from_bytes(data), lazy_index(data)
    assert lazy is not None and bm25._numba_kernel() is not None
    assert bm25.NUMBA_LOADED_MIN_POSTINGS <= int(eager.offsets[-1]) < bm25.NUMBA_MIN_POSTINGS
    queries = [" ".join(rng.choice(words, size=3)) for _ in range(bm25.KERNEL_AFTER_QUERIES + 4)]
    for i, text in enumerate(queries):
        ids_l, sc_l = lazy.search_arrays(text, 10)
        ids_e, sc_e = eager.search_arrays(text, 10)
        assert ids_l.tolist() == ids_e.tolist() and _bits(sc_l) == _bits(sc_e)
        built = "_contrib" in lazy.__dict__
        assert built == (i >= bm25.KERNEL_AFTER_QUERIES), i
