"""The optional full-precision rerank slab 0x09 (03-runtime §1.1 step 6, §2.4).

No 0.5.1 writer emits 0x09, so the files are assembled here: an int8 reference file plus the
corpus's float32 rows as 0x09. Claims: every score then comes from 0x09 (the answers equal
the float32 file's, bit for bit) and retrieve reports full precision; the dtype is read from
the stride (a float16 slab reports stored precision); a stride that is neither 4 nor 2 bytes
and a NaN lane fail the open with the reference's errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import urna
from helpers.vectors import REF, expected
from urna.errors import InvalidEmbeddingValue, MalformedSectionPayload
from urna.format.reader import UrnaView
from urna.format.writer import EncodedSection, assemble


def _with_fp(tmp_path, payload: bytes):
    view = UrnaView.from_bytes((REF / "quickstart-int8_bm25.urna").read_bytes())
    sections = [EncodedSection(e.section_id, e.encoding, bytes(view.payload(e)))
                for e in view.entries] + [EncodedSection(0x09, 0, payload)]
    h = view.header
    data = assemble(view.manifest_bytes, h.embedding_dim, h.n_chunks, h.n_embeddings, sections)
    path = tmp_path / "fp.urna"
    path.write_bytes(data)
    return path


def _f32_rows() -> np.ndarray:
    view = UrnaView.from_bytes((REF / "quickstart-exact.urna").read_bytes())
    return np.frombuffer(view.payload(0x04), dtype="<f4").reshape(12, 256)


def test_scores_come_from_the_fp_slab(tmp_path) -> None:
    path = _with_fp(tmp_path, _f32_rows().tobytes())
    q = expected()["quickstart-exact.urna"]["queries"][1]["vector"]
    with urna.open(path) as f, urna.open(REF / "quickstart-exact.urna") as ref:
        assert f.dtype == "int8"  # the stored slab is unchanged
        assert f.content_hash == expected()["quickstart-int8_bm25.urna"]["content_hash"]
        got, want = f.search(q, 12), ref.search(q, 12)
        assert [(h.chunk_id, h.score) for h in got] == [(h.chunk_id, h.score) for h in want]
        hyb = f.search_hybrid(q, "offline", 5, 50)
        assert all(h.score == {w.chunk_id: w.score for w in want}[h.chunk_id] for h in hyb)
        assert {h.rerank_source for h in f.retrieve(q, 3)} == {"full_precision"}


def test_float16_fp_slab_is_stored_precision(tmp_path) -> None:
    path = _with_fp(tmp_path, _f32_rows().astype("<f2").tobytes())
    with urna.open(path) as f:
        assert {h.rerank_source for h in f.retrieve([1.0] * 256, 2)} == {"stored_precision"}


def test_bad_stride_fails_the_open(tmp_path) -> None:
    with pytest.raises(MalformedSectionPayload) as err:
        urna.open(_with_fp(tmp_path, bytes(12 * 256 * 3)))
    assert str(err.value) == ("malformed section payload: section=9 "
                              "reason=fp slab 9216 bytes is not f32/f16 for n=12 dim=256")


def test_nan_in_the_fp_slab_fails_the_open(tmp_path) -> None:
    rows = _f32_rows().copy()
    rows[3, 5] = np.nan
    with pytest.raises(InvalidEmbeddingValue):
        urna.open(_with_fp(tmp_path, rows.tobytes()))
