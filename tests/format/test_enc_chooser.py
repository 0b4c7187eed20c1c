"""The 0x02 chooser stops a candidate that provably cannot win, and still picks what §8 picks.

The expected choice is the reference's payload where we have it (``test_enc_reference``'s own
corpora, on which it picks fsst, the dedup pool or zstd), and otherwise computed the long way:
every candidate of 02-encodings §8 made in full with the plain encoders (each pinned to
reference bytes elsewhere), then the strictly smallest total, earliest on a tie. The chooser
must agree on any corpus, on one thread or several, with the bound looked at after every
frame so stopping happens as often as it can.
"""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_enc_reference import OWN_CORPORA, REFERENCE_OWN_CORPORA

from helpers.budget import examples
from urna.format.encodings import chooser
from urna.format.encodings.dedup import dedup, encode_map
from urna.format.encodings.fsst import encode_fsst
from urna.format.encodings.textcontainer import encode_txt_streams
from urna.format.encodings.zstd import zstd_compress
from urna.format.encodings.zstd_dict import encode_zstd_dict, train_dict
from urna.format.sections.canonical import encode_texts

ZSTD, ZSTD_DICT, FSST, TXT_STREAMS = 1, 5, 9, 10
DICTIONARY, DEDUP_MAP = 0x0A, 0x0B


def every_candidate(texts: list[str]) -> list[tuple[int, bytes, list[tuple[int, bytes]]]]:
    """§8's candidates, each in full, in the reference's order (absent ones left out)."""
    out = [(ZSTD, zstd_compress(encode_texts(texts)), []),
           (TXT_STREAMS, encode_txt_streams(texts), [])]
    dictionary = train_dict(texts)
    if dictionary is not None:
        out.append((ZSTD_DICT, encode_zstd_dict(texts, dictionary), [(DICTIONARY, dictionary)]))
    out.append((FSST, encode_fsst(texts), []))
    pool, refs = dedup(texts)
    if len(pool) < len(texts):
        out.append((ZSTD, zstd_compress(encode_texts(pool)), [(DEDUP_MAP, encode_map(refs))]))
    return out


def long_way(texts: list[str]) -> tuple[int, bytes, list[tuple[int, bytes]]]:
    """The strictly smallest candidate by payload + aux bytes, earliest on a tie."""
    best = None
    for cand in every_candidate(texts):
        total = len(cand[1]) + sum(len(b) for _, b in cand[2])
        if best is None or total < best[0]:
            best = (total, cand)
    assert best is not None
    return best[1]


def chosen(texts: list[str], threads: int) -> tuple[int, bytes, list[tuple[int, bytes]]]:
    """The chooser on ``threads`` threads, capped once by ``URNA_THREADS``, once by argument."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chooser, "BOUND_CHECK_EVERY", 1)
        mp.setenv("URNA_THREADS", str(threads))
        by_env = chooser.choose_chunks_canonical(texts)
        mp.setenv("URNA_THREADS", "4")
        assert chooser.choose_chunks_canonical(texts, threads) == by_env
        return by_env


def corpus(kind: str, n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    if kind == "repeats":  # a few texts many times over: the dedup pool wins
        base = [" ".join(rng.choice(words) for _ in range(200)) for _ in range(3)]
        return [base[i % 3] for i in range(n)]
    if kind == "boilerplate":  # short records sharing a frame: the dictionary's ground
        return [f"record {i}: the shared boilerplate of every chunk in this corpus, id {i * 7}"
                for i in range(n)]
    if kind == "noise":  # incompressible-ish bytes
        return ["".join(chr(rng.randrange(0x21, 0x7E)) for _ in range(rng.randint(1, 60)))
                for _ in range(n)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) for _ in range(n)]


@pytest.mark.parametrize("kind", ["repeats", "boilerplate", "noise", "prose"])
@pytest.mark.parametrize("threads", [1, 3])
def test_the_chooser_picks_what_every_candidate_in_full_picks(kind, threads):
    texts = corpus(kind, 600)
    assert chosen(texts, threads) == long_way(texts)


@pytest.mark.parametrize("name", sorted(OWN_CORPORA))
@pytest.mark.parametrize("threads", [1, 3])
def test_the_chooser_still_writes_the_reference_payload(name, threads):
    # These corpora make the reference pick fsst, the dedup pool and zstd (its own bytes).
    texts = OWN_CORPORA[name]()
    encoding, payload, _ = chosen(texts, threads)
    assert (encoding, len(payload), hashlib.sha256(payload).hexdigest()) == (
        REFERENCE_OWN_CORPORA[name][0x02])


def test_the_per_text_candidates_stop_once_the_whole_frame_is_smaller():
    # Seen from outside: the stopped candidates are absent from what the chooser compares.
    texts = corpus("prose", 2000)
    offered = [c[0] for c in chooser._candidates(texts, 1)]
    full = [c[0] for c in every_candidate(texts)]
    assert full == [ZSTD, TXT_STREAMS, ZSTD_DICT, FSST]
    assert offered == [ZSTD]
    assert chooser.choose_chunks_canonical(texts) == long_way(texts)


texts_strategy = st.lists(
    st.one_of(st.text(max_size=30), st.sampled_from(["", "a", "abab abab", "the same text"])),
    max_size=40)


@settings(max_examples=examples(60, 20), deadline=None)
@given(texts_strategy, st.sampled_from([1, 2, 4]))
def test_any_corpus_any_threads_same_choice(texts, threads):
    assert chosen(texts, threads) == long_way(texts)
