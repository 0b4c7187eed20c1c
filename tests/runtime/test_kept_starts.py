"""Record starts of a verified body's 0x02 / 0x03 kept between calls (``verdicts.kept_starts``).

A repeat ``retrieve`` / ``ask`` reads its hits' texts and spans at once from the starts a
first call's walk kept, instead of walking ~18,000 length fields per table. Claims: the
first read of a large enough proven table walks it whole and keeps its starts; the next
reads take them (no walk) and give the eager decoder's rows, in any order; a kept file that
is torn, cut, of another count, another body or off (``URNA_OPEN_CACHE=0``) is no starts,
and the rows are walked (the same rows); starts that are not these bytes' records never
crash a read; a repeat retrieve answers alike with the starts kept and then taken.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from helpers.vectors import REF
from urna.format.encodings.zstd import DecodedPrefix, zstd_compress
from urna.format.sections.canonical import (
    _NO_WALK,
    decode_spans,
    encode_spans,
    encode_texts,
)
from urna.runtime import verdicts
from urna.runtime.lazy_tables import WalkedSpans, WalkedTexts

DIGEST = bytes(range(32))
ROWS = [f"row {i} " + "é" * (i % 5) for i in range(40)]
SPANS = [(f"doc{i % 3}.txt", i, i + 7) for i in range(40)]


@pytest.fixture
def small_tables(verdict_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(verdicts, "STARTS_MIN_RECORDS", 8)  # the vectors are small
    return verdict_cache


def _texts(raw: bytes, digest: bytes = DIGEST) -> WalkedTexts:
    return WalkedTexts(lambda: raw, len(ROWS), None, (digest, 2))


def test_a_second_read_takes_the_kept_starts(small_tables: Path) -> None:
    raw = encode_texts(ROWS)
    first = _texts(raw)
    assert first[3] == ROWS[3]
    assert len(first._rows.walk().starts) == len(ROWS)  # walked whole once, and kept
    again = _texts(raw)
    walk = again._rows.walk()
    assert walk.end == _NO_WALK  # taken, not walked
    assert [again[i] for i in (39, 0, 17, 39, 5)] == [ROWS[i] for i in (39, 0, 17, 39, 5)]
    assert list(again) == ROWS


def test_spans_read_through_a_prefix_take_them_too(small_tables: Path) -> None:
    frame = zstd_compress(encode_spans(SPANS))
    key = (DIGEST, 3)
    first = WalkedSpans(lambda: DecodedPrefix(frame), len(SPANS), None, key)
    assert first[0] == SPANS[0]
    again = WalkedSpans(lambda: DecodedPrefix(frame), len(SPANS), None, key)
    assert again[21] == SPANS[21] and again._rows.walk().end == _NO_WALK
    assert list(again) == decode_spans(encode_spans(SPANS), len(SPANS))


def _kept_file(folder: Path) -> Path:
    (found,) = (folder / "cache" / "opened" / "starts").glob("*.bin")
    return found


@pytest.mark.parametrize("harm", ["torn", "flipped", "grown", "count", "off", "other body"])
def test_a_kept_file_not_of_these_bytes_is_no_starts(harm: str, small_tables: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    raw = encode_texts(ROWS)
    _texts(raw)[0]
    kept = _kept_file(small_tables)
    blob = kept.read_bytes()
    digest = DIGEST
    if harm == "torn":
        kept.write_bytes(blob[:-5])
    elif harm == "flipped":
        kept.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    elif harm == "grown":
        kept.write_bytes(blob + bytes(8))
    elif harm == "count":
        assert verdicts.kept_starts(DIGEST, 2, len(ROWS) - 1) is None
    elif harm == "off":
        monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    else:
        digest = bytes(32)
    if harm != "count":
        assert verdicts.kept_starts(digest, 2, len(ROWS)) is None
    again = _texts(raw, digest)
    assert list(again) == ROWS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 4000), min_size=len(ROWS), max_size=len(ROWS)),
       st.lists(st.integers(0, len(ROWS) - 1), min_size=1, max_size=10))
def test_starts_not_of_these_records_never_crash_a_read(starts: list[int],
                                                        order: list[int]) -> None:
    # a kept file is checked whole (its SHA-256), so such starts never come from the cache;
    # a read over them still ends in a row or the eager decoder's answer, never a crash
    raw = encode_texts(ROWS)
    texts = WalkedTexts(lambda: raw, len(ROWS))
    texts._rows.walk().adopt(sorted(starts))
    for i in order:
        assert isinstance(texts[i], str)


def test_a_repeat_retrieve_reads_the_kept_starts(verdict_cache: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    monkeypatch.setattr(verdicts, "STARTS_MIN_RECORDS", 8)
    path = verdict_cache / "synthetic-compressed.urna"
    shutil.copyfile(REF / path.name, path)
    q = np.random.default_rng(4).standard_normal(16).astype(np.float32)
    answers = []
    for _ in range(4):  # full open; proof kept; starts kept; starts taken
        with urna.open(path) as f:
            q = np.resize(q, f.embedding_dim)
            answers.append(f.retrieve(q, 5, query_text="alpha").to_dict()["hits"])
    assert all(a == answers[0] for a in answers)
    assert len(list((verdict_cache / "cache" / "opened" / "starts").glob("*.bin"))) == 2
