"""A proof of the stored texts (0x02) is kept with the open verdict and trusted only for the
same bytes (``runtime.verdicts.TEXT_RECORDS``).

Claims: the first retrieve of an open file keeps the proof; the next open of the unchanged file
reads the texts without walking their UTF-8 again, with the same texts and answers; a kept
proof of other bytes is never used; the record structure is still checked under the proof.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import urna
from helpers.vectors import REF
from urna.errors import MalformedSectionPayload
from urna.format.layout import SECTION_CHUNKS_CANONICAL
from urna.format.sections.canonical import decode_texts, encode_strings
from urna.runtime import verdicts
from urna.runtime.lazy_tables import lazy_texts

NAME = "quickstart-hybrid.urna"


def _retrieved(f: urna.UrnaFile) -> list:
    q = np.random.default_rng(5).standard_normal(f.embedding_dim).astype(np.float32)
    return f.retrieve(q / np.linalg.norm(q), 4, query_text="offline search").to_dict()["hits"]


def test_a_retrieve_keeps_the_texts_proof_for_the_next_open(verdict_cache: Path) -> None:
    path = verdict_cache / NAME
    shutil.copyfile(REF / NAME, path)
    with urna.open(path) as f:  # the full open: its verdict names no texts proof yet
        assert not f._state.texts_proven
        assert verdicts.TEXT_RECORDS not in verdicts.lookup(str(path), os.stat(path)).checks
        want = _retrieved(f)
        eager = decode_texts(f._state.view.decoded(SECTION_CHUNKS_CANONICAL),
                             f._state.view.header.n_chunks)
    assert verdicts.TEXT_RECORDS in verdicts.lookup(str(path), os.stat(path)).checks
    with urna.open(path) as f:
        assert f._state.view.trusted and f._state.texts_proven
        assert _retrieved(f) == want
        assert list(f._state.texts) == eager
        assert f.texts() == eager


def test_a_texts_proof_of_other_bytes_is_never_used(verdict_cache: Path) -> None:
    path = verdict_cache / NAME
    shutil.copyfile(REF / NAME, path)
    verdicts.remember(str(path), os.stat(path), verdicts.Verdict(
        b"\0" * 32, "sha256:" + "0" * 64, verdicts.OPEN_CHECKS | {verdicts.TEXT_RECORDS}))
    with urna.open(path) as f:
        assert not f._state.view.trusted and not f._state.texts_proven
        want = _retrieved(f)
    kept = verdicts.lookup(str(path), os.stat(path))
    assert kept is not None and kept.body_digest == b"\0" * 32  # not taken for these bytes
    with urna.open(path) as f:
        assert not f._state.view.trusted and not f._state.texts_proven
        assert _retrieved(f) == want


def test_the_cite_records_proof_counts_too(verdict_cache: Path) -> None:
    path = verdict_cache / NAME
    shutil.copyfile(REF / NAME, path)
    with urna.open(path) as f:
        digest, content = f._state.view.body_digest(), f.content_hash
    verdicts.remember(str(path), os.stat(path), verdicts.Verdict(
        digest, content, verdicts.OPEN_CHECKS | {verdicts.CITE_RECORDS}))
    with urna.open(path) as f:
        assert f._state.texts_proven


@pytest.mark.parametrize("cut", [1, 3, 7])
def test_under_the_proof_the_record_structure_is_still_checked(cut: int) -> None:
    raw = encode_strings(["alpha", "béta", "gamma"])
    assert lazy_texts(raw[:-cut], 3, utf8_checked=True) is None  # a record runs out
    assert lazy_texts(raw + b"x", 3, utf8_checked=True) is None  # a trailing byte
    assert lazy_texts(raw, 4, utf8_checked=True) is None  # another count
    with pytest.raises(MalformedSectionPayload):
        decode_texts(raw[:-cut], 3)
    texts = lazy_texts(raw, 3, utf8_checked=True)
    assert texts is not None and list(texts) == ["alpha", "béta", "gamma"]
