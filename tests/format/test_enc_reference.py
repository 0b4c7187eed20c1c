"""Encodings against bytes the reference (urna 0.5.1) wrote.

Two sources: the conformance files in tests/data/ref-0.5.1 (every section decodes to the
reference's content_hash; re-encoding the build inputs gives the stored payload bytes, aux 0x0B
included), and small corpora of our own that the reference built with the ``compressed`` preset
(reproducible, source ``doc{i%3}.txt``, span ``i*10 .. i*10+len``, embedding ``[1,0,0,0]``): the
size and SHA-256 of each payload it wrote are recorded below. ``fsst200`` is a corpus on which
the reference's chooser picks fsst (id 9), ``runs_dedup`` one on which it picks dedup (0x0B).
Payload bytes of zstd sections depend on libzstd; the reference carried 1.5.7.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from helpers.vectors import sections as _sections
from urna.format import encodings as enc
from urna.format.identity import chunk_id
from urna.format.layout import CANONICAL_SECTIONS

DATA = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1"
EXPECTED = json.loads((DATA / "expected.json").read_text())["files"]
FILES = sorted(EXPECTED)

REFERENCE_OWN_CORPORA = {
    "fsst200": {
        0x01: (4, 25605, "bea5703054dfe3fa8fe9c605e0c99134c5673b672f121635277abcf09ea38ba6"),
        0x02: (9, 11448, "0019a2c545f5108f37d6c27b376e35c69ec724133d5b12d95c9c609214eaa81e"),
        0x03: (4, 1646, "12d7a3565620b08a09aa6926ab856cc47d4e5c23a973779b6540ab420cbd61c9"),
        0x04: (2, 6400, "dd3b830741adc0bd270a1ca11a25f954b547dbd8640353b8ac12d45f37a9c892"),
    },
    "runs_dedup": {
        0x01: (4, 1605, "c86b1c8d9b7bffe76771be79faf3475918977bc5a3174773a1c7d3108b9dc8fc"),
        0x02: (1, 50, "235429231c51c1150284d638f73ed68ed1261096452d9398a2b7a1360a66ddfa"),
        0x03: (1, 193, "890869474d3e0f40153cf77360f1bc4eb0b8a8b750488e9057484624b3397f3a"),
        0x04: (2, 400, "d48142499e698fa7c42290f604571abc7f8b18151bae6c3998ee9542a82ad074"),
        0x0B: (0, 41, "03ce62e712f6840bf27aced6713333e4d8fe6979b887638bc428e01da07e9b3c"),
    },
    "runs_zstd": {
        0x01: (4, 1605, "8e84d40d64a2df614dd81232b3e3b87128ff9c7820e268b51f0382d5e842c53b"),
        0x02: (1, 189, "1fbe474375eab5ecd44b33117ab7f268e6817033b9cdb0b0530b377196f47b9a"),
        0x03: (1, 196, "c1bba64eefcc7a0e9ee1c16067b52f3d44e5004bf2dafab2ff920beb11b0e061"),
        0x04: (2, 400, "d48142499e698fa7c42290f604571abc7f8b18151bae6c3998ee9542a82ad074"),
    },
    "few_unique": {
        0x01: (4, 421, "6b70008ffff44a88da446690ea3a468db9cb641c8cd4e44201640725e59b648d"),
        0x02: (1, 56, "f6358b9272204e76ca2d1a4f56f7fdc3726c09c1722b02b1eb8d888252cedb62"),
        0x03: (1, 94, "ba01e24b543e5254841981f579ce9ff88567aef7741deb378d4fcac85d0e6a0e"),
        0x04: (2, 104, "1ba7c6c8938e5855cc96f83e56709180cf0136e487cf4eafab3eb2b0fb6f79a8"),
    },
    "one": {
        0x01: (4, 37, "e8a6bcb2863ba5a6e607f34de4abd17a476a439cd3dc36f122005ee45a0a42d1"),
        0x02: (1, 26, "42202c0ffa49037b76bdebd3049592bc091567a37fed34da7bb4b4ef896103de"),
        0x03: (1, 40, "d6029d54b5e261a8a2b23e2761514d7075ee7509b08789aefe8fe2f4efa2e608"),
        0x04: (2, 8, "2311bebbf3428c643abfdb67ffc21197cb0f8f4b8e98fbf61a43fef6e0789b6a"),
    },
    "nine_distinct": {
        0x01: (4, 293, "3dd53ae5bce4b2ee2ac20f9a70535d074f20695f5c9ec29260b49b310e5a8d1c"),
        0x02: (1, 83, "8cccec540376a32ee4acb766f8a1131cedaf1affcc98210ab4e6457e5b874076"),
        0x03: (1, 84, "98b78ba721cf5ac6f910497100f0b1ef418c7c7b7590735d9baf5fd099df802f"),
        0x04: (2, 72, "60977647df920b39cf3911090af6b1366605a71c5be83d504580f752f6586819"),
    },
    "unicode": {
        0x01: (4, 997, "c76cdbacd952cb19680b35fa86d895ad75b90ac73a6511280daa7fed1f7b531c"),
        0x02: (1, 104, "46e15fb383e1646a3c9c4a9e4f6ee2b703402b651c97586fca63fa35d23db37f"),
        0x03: (1, 148, "54de4008bd9182fa7a2b8db22a3da98274b8fed238389bdb3528fe8d8e1aadc6"),
        0x04: (2, 248, "243578711695171a91217a05e820ee4a8cbdfaca4cfb0bfd6c128f11c4d11e2b"),
    },
}


def _decoded(sections: dict[int, tuple[int, bytes]]) -> dict[int, bytes]:
    out = {}
    for sid, _ in CANONICAL_SECTIONS:
        encoding, payload = sections[sid]
        if sid == 0x02:
            out[sid] = enc.decode_chunks_canonical_section(
                encoding, payload, sections.get(0x0A, (0, None))[1],
                sections.get(0x0B, (0, None))[1])
        else:
            out[sid] = bytes(enc.decode_section(sid, encoding, payload))
    return out


def _content_hash(decoded: dict[int, bytes]) -> str:
    h = hashlib.sha256()
    for sid, name in CANONICAL_SECTIONS:
        body = decoded[sid]
        h.update(struct.pack("<I", len(name)) + name.encode() + struct.pack("<Q", len(body)) + body)
    return "sha256:" + h.hexdigest()


def _corpus(name: str) -> dict:
    return json.loads((DATA / f"{name.split('-')[0]}.chunks.json").read_text())


def _mrl(matrix: np.ndarray, m: int) -> np.ndarray:
    """Cut to m components and re-L2-normalise in f32 with a sequential sum (01-container §6.6)."""
    out = matrix[:, :m].astype(np.float32).copy()
    for row in out:
        acc = np.float32(0.0)
        for v in row:
            acc = np.float32(acc + np.float32(v * v))
        norm = np.float32(np.sqrt(acc))
        if norm > 0 and np.isfinite(norm):
            row[:] = row / norm
    return out


@pytest.mark.parametrize("name", FILES)
def test_decoded_sections_give_the_reference_content_hash(name):
    sections = _sections((DATA / name).read_bytes())
    assert _content_hash(_decoded(sections)) == EXPECTED[name]["content_hash"]


@pytest.mark.parametrize("name", FILES)
def test_embeddings_reencode_to_reference_bytes(name):
    sections = _sections((DATA / name).read_bytes())
    info = EXPECTED[name]
    matrix = np.array([c["embedding"] for c in _corpus(name)["chunks"]], dtype=np.float32)
    if info["build_options"].get("mrl_dim"):
        matrix = _mrl(matrix, info["build_options"]["mrl_dim"])
    dtype = info["inspect"]["manifest"]["dtype"]
    assert enc.encode_embeddings(matrix, dtype) == sections[0x04]


ZSTD_FILES = [n for n in FILES if _sections((DATA / n).read_bytes())[0x02][0] != 0]


@pytest.mark.parametrize("name", ZSTD_FILES)
def test_zstd_text_sections_reencode_to_reference_bytes(name):
    sections = _sections((DATA / name).read_bytes())
    decoded = _decoded(sections)
    chunks = _corpus(name)["chunks"]
    texts = [c["canonical_text"] for c in chunks]
    spans = [(c["source_uri"], c["byte_start"], c["byte_end"]) for c in chunks]
    encoding, payload, aux = enc.choose_chunks_canonical(texts)
    assert (encoding, payload) == sections[0x02]
    assert {sid for sid, _ in aux} == {sid for sid in sections if sid in (0x0A, 0x0B)}
    for sid, body in aux:
        assert sections[sid] == (0, body)
    assert enc.choose_chunk_ids(decoded[0x01], EXPECTED[name]["chunk_ids"]) == sections[0x01]
    assert enc.choose_spans(decoded[0x03], spans) == sections[0x03]
    for sid in (0x05, 0x06):
        assert sections[sid] == (1, enc.zstd_compress(decoded[sid]))
    if 0x08 in sections and sections[0x08][0] == 1:
        raw_bm25 = enc.decode_section(0x08, 1, sections[0x08][1])
        assert enc.zstd_compress(raw_bm25) == sections[0x08][1]


def test_dedup_files_carry_and_use_a_dedup_map():
    sections = _sections((DATA / "dedup-zstd_f32.urna").read_bytes())
    texts = [c["canonical_text"] for c in _corpus("dedup")["chunks"]]
    assert 0x0B in sections
    # The stored pool alone is 40 texts; the map expands it to all 1500 chunks.
    pool = enc.decode_section(0x02, 1, sections[0x02][1])
    assert struct.unpack_from("<Q", pool, 4)[0] == len(set(texts))
    full = enc.decode_chunks_canonical_section(1, sections[0x02][1], None, sections[0x0B][1])
    assert struct.unpack_from("<Q", full, 4)[0] == len(texts) == 1500


# --- corpora of our own, built by the reference ---------------------------------------------

_ALPHA = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _h(i: int) -> int:
    return int.from_bytes(hashlib.sha256(b"%d" % i).digest()[:4], "little")


def _fsst_corpus(ntok: int, reps: int = 40, per: int = 10) -> list[str]:
    """Random 8-letter tokens, each used exactly ``reps`` times: fsst codes each in one byte."""
    toks = ["".join(_ALPHA[b % 62] for b in hashlib.sha256(b"tok%d" % i).digest()[:8])
            for i in range(ntok)]
    order = sorted(range(ntok * reps), key=lambda i: hashlib.sha256(b"ord%d" % i).digest())
    words = [toks[i % ntok] for i in order]
    return ["".join(words[i:i + per]) for i in range(0, len(words), per)]


OWN_CORPORA = {
    "fsst200": lambda: _fsst_corpus(200),
    "runs_dedup": lambda: ["a" * (1 + _h(i) % 8) for i in range(50)],
    "runs_zstd": lambda: ["a" * (1 + _h(i) % 64) for i in range(50)],
    "few_unique": lambda: ["same text", "other"] * 6 + ["third one"],
    "one": lambda: ["x"],
    "nine_distinct": lambda: [f"sentence number {i} about urna files" for i in range(9)],
    "unicode": lambda: [f"déjà vu ü {_h(i) % 5} 日本語 🚀" for i in range(30)] + [""],
}


def _digest(encoding: int, payload: bytes) -> tuple[int, int, str]:
    return encoding, len(payload), hashlib.sha256(payload).hexdigest()


@pytest.mark.parametrize("name", sorted(OWN_CORPORA))
def test_own_corpora_match_the_reference_build(name):
    texts = OWN_CORPORA[name]()
    want = REFERENCE_OWN_CORPORA[name]
    spans = [(f"doc{i % 3}.txt", i * 10, i * 10 + len(t.encode())) for i, t in enumerate(texts)]
    ids = [chunk_id(t, *s, "demo/1") for t, s in zip(texts, spans, strict=False)]
    encoding, payload, aux = enc.choose_chunks_canonical(texts)
    got = {0x02: _digest(encoding, payload)}
    got.update({sid: _digest(0, body) for sid, body in aux})
    got[0x01] = _digest(*enc.choose_chunk_ids(b"", ids))
    raw_spans = struct.pack("<IQ", 1, len(spans)) + b"".join(
        struct.pack("<I", len(u)) + u.encode() + struct.pack("<QQ", a, b) for u, a, b in spans)
    got[0x03] = _digest(*enc.choose_spans(raw_spans, spans))
    matrix = np.zeros((len(texts), 4), dtype=np.float32)
    matrix[:, 0] = 1.0
    got[0x04] = _digest(*enc.encode_embeddings(matrix, "float16"))
    assert got == want
