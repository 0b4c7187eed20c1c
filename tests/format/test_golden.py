"""The reference's golden file and legacy fixture (01-container §13.1).

If a rebuild stops matching, the writer changed behaviour: the golden bytes come from the
reference (tests/data/golden_v1_minimal.urna), never regenerate them from our code.
"""

from __future__ import annotations

import hashlib

import pytest

import urna
from helpers.vectors import DATA
from urna.format.identity import chunk_id
from urna.format.layout import LEGACY_CHUNK_ID_DOMAIN
from urna.format.reader import UrnaView
from urna.format.sections.canonical import decode_chunk_ids

GOLDEN = DATA / "golden_v1_minimal.urna"
LEGACY = DATA / "golden_v1_minimal_legacy.nest"
GOLDEN_LEN = 1366
GOLDEN_FILE_HASH = "sha256:2c8dad39b1b9bc440d6a8d48f9b5e6d071bc2c66076be719c20bc6de1d502390"
GOLDEN_CONTENT_HASH = "sha256:982e986094ae9c3f14ccdb19faf0d27d8f9155bfc53b025b37b0624fab78a378"
GOLDEN_CHUNK_ID = "sha256:186d842224fbbee05b4ae5d2851ef966c7da8a54372517c450c2a5d35dd213c3"
LEGACY_FILE_HASH = "sha256:7fe82b9d2ee5b8f7b5535cb3b9b4736a66a11051d44a1894c160a7cf9bd4a799"
LEGACY_CONTENT_HASH = "sha256:8d9904cf3689ffc9a0e0f9b387dd0ec41d0c0e4dc3c511b31ef909651000e1b8"
LEGACY_CHUNK_ID = "sha256:dc6d19faaa082c6ca2f2301bac941cc7c44d7a574424d09a6fb5e11c23d9badc"
ZERO_HASH = "sha256:" + "0" * 64
GOLDEN_CHUNKS = [{"canonical_text": "hi", "source_uri": "doc.txt", "byte_start": 0,
                  "byte_end": 2, "embedding": [1.0, 0.0, 0.0, 0.0]}]


def golden_build(path, **kw):
    return urna.build(path, "demo", 4, "demo-chunker/1", ZERO_HASH, GOLDEN_CHUNKS, **kw)


def test_golden_parses_with_its_published_identity():
    data = GOLDEN.read_bytes()
    assert len(data) == GOLDEN_LEN
    assert "sha256:" + hashlib.sha256(data).hexdigest() == GOLDEN_FILE_HASH
    view = UrnaView.from_bytes(data)
    assert view.content_hash() == GOLDEN_CONTENT_HASH
    assert view.file_hash() == GOLDEN_FILE_HASH  # body digest of the footer check + footer
    assert decode_chunk_ids(view.decoded(1), 1) == [GOLDEN_CHUNK_ID]
    assert len(view.entries) == 6
    assert all(e.encoding == 0 and e.offset % 64 == 0 for e in view.entries)
    assert view.entry(4).size == 16 and view.header.n_embeddings == 1


def test_chunk_id_of_the_golden_chunk():
    assert chunk_id("hi", "doc.txt", 0, 2, "demo-chunker/1") == GOLDEN_CHUNK_ID


def test_golden_rebuilt_byte_for_byte(tmp_path):
    out = golden_build(tmp_path / "g.urna")
    assert (tmp_path / "g.urna").read_bytes() == GOLDEN.read_bytes(), (
        "writer no longer reproduces the reference golden file")
    assert out == str(tmp_path / "g.urna")


def test_legacy_nest_file_opens_with_its_hashes():
    data = LEGACY.read_bytes()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == LEGACY_FILE_HASH
    view = UrnaView.from_bytes(data)
    assert view.magic == "NEST" and view.is_legacy
    assert view.content_hash() == LEGACY_CONTENT_HASH
    assert decode_chunk_ids(view.decoded(1), 1) == [LEGACY_CHUNK_ID]
    assert chunk_id("hi", "doc.txt", 0, 2, "demo-chunker/1",
                    domain=LEGACY_CHUNK_ID_DOMAIN) == LEGACY_CHUNK_ID


def test_writer_emits_urna_magic_for_legacy_inputs(tmp_path):
    golden_build(tmp_path / "g.urna")
    assert (tmp_path / "g.urna").read_bytes()[:4] == b"URNA"


@pytest.mark.parametrize("created", [None, "2024-01-01", "yesterday"])
def test_reproducible_builds_are_identical_whatever_created_says(tmp_path, created):
    golden_build(tmp_path / "r.urna", reproducible=True, created=created)
    data = (tmp_path / "r.urna").read_bytes()
    view = UrnaView.from_bytes(data)
    assert view.manifest.created == "1970-01-01T00:00:00Z"
    assert view.content_hash() == GOLDEN_CONTENT_HASH
    # 01-container §13.2: golden + reproducible.
    assert "sha256:" + hashlib.sha256(data).hexdigest() == (
        "sha256:4d05fc01511c541bcaf1dcb66f1d3daf525a81108789d125465ec676d8a95b58")
