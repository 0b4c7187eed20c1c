"""Open-time failures raise the reference's typed error with the reference's text.

Paths: every case of mutations-0.5.1.json (opened from disk, then searched the way the
reference was: exact, ANN and hybrid where present) ends as the reference ended: opened, or
the same error class and message; a NaN lane in 0x04, a chunk-count prefix that disagrees
with n_embeddings (SectionCountMismatch at step 7), a corrupt HNSW payload and a dangling
blob overlay index each fail the open; OS errors become Io with Rust's text.
"""

from __future__ import annotations

import struct

import pytest

import urna
from helpers.mutate import apply_case, find_entry, load_cases, reseal, source_bytes
from urna.errors import (
    InvalidEmbeddingValue,
    Io,
    MalformedSectionPayload,
    SectionCountMismatch,
    UrnaError,
)

CASES = load_cases()


def _outcome(path) -> tuple:
    try:
        with urna.open(path) as f:
            q = [1.0] * f.embedding_dim
            f.search(q, 5)
            if f.has_ann:
                f.search_ann(q, 5, 32)
            if f.has_bm25:
                f.search_hybrid(q, "alpha beta", 5, 50)
            f.validate()
            f.inspect()
    except UrnaError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", None, None)


@pytest.mark.parametrize("on_workers", [False, True], ids=["as-sized", "all-on-workers"])
def test_every_mutation_case_ends_as_in_the_reference(tmp_path, monkeypatch, on_workers) -> None:
    if on_workers:  # every pass of the open started ahead on the pool, as for a large file
        from urna.format import ahead

        monkeypatch.setattr(ahead, "INLINE_BYTES", 0)
    path = tmp_path / "case.urna"
    wrong = []
    for name, case in sorted(CASES.items()):
        path.write_bytes(apply_case(case))
        want = ("ok", None, None) if case["ok"] else ("error", case["variant"], case["message"])
        got = _outcome(path)
        if got != want:
            wrong.append((name, want, got))
    assert not wrong, f"{len(wrong)} cases differ, first: {wrong[:3]}"


def _write(tmp_path, data: bytes):
    path = tmp_path / "x.urna"
    path.write_bytes(data)
    return path


def test_nan_in_embeddings_fails_the_open(tmp_path) -> None:
    buf = bytearray(source_bytes("quickstart-exact.urna"))
    _, _, entry = find_entry(buf, 0x04)
    buf[entry.offset + 4 * 7:entry.offset + 4 * 8] = struct.pack("<f", float("nan"))
    with pytest.raises(InvalidEmbeddingValue) as err:
        urna.open(_write(tmp_path, bytes(reseal(buf))))
    assert str(err.value) == "NaN or Inf detected in embeddings"


def test_chunk_count_prefix_disagreeing_with_n_embeddings_fails(tmp_path) -> None:
    buf = bytearray(source_bytes("quickstart-exact.urna"))
    _, _, entry = find_entry(buf, 0x01)
    buf[entry.offset + 4:entry.offset + 12] = struct.pack("<Q", 11)  # 12 chunks in the file
    with pytest.raises(SectionCountMismatch) as err:
        urna.open(_write(tmp_path, bytes(reseal(buf))))
    assert (err.value.section_id, err.value.expected, err.value.got) == (1, 12, 11)


def test_corrupt_hnsw_payload_fails_the_open(tmp_path) -> None:
    buf = bytearray(source_bytes("quickstart-hybrid.urna"))
    _, _, entry = find_entry(buf, 0x07)
    buf[entry.offset + 24:entry.offset + 28] = struct.pack("<I", 13)  # n_nodes != n
    with pytest.raises(MalformedSectionPayload) as err:
        urna.open(_write(tmp_path, bytes(reseal(buf))))
    assert err.value.section_id == 0x07


def test_dangling_blob_overlay_index_fails_the_open(tmp_path) -> None:
    buf = bytearray(source_bytes("quickstart-blobs.urna"))
    _, _, entry = find_entry(buf, 0x16)
    buf[entry.offset + 12:entry.offset + 16] = struct.pack("<I", 7)  # entry 0 -> record 7
    with pytest.raises(MalformedSectionPayload) as err:
        urna.open(_write(tmp_path, bytes(reseal(buf))))
    assert str(err.value) == ("malformed section payload: section=22 "
                              "reason=overlay entry 0 references missing blob_ref 7")


def test_os_errors_are_io_with_the_reference_text(tmp_path) -> None:
    with pytest.raises(Io) as err:
        urna.open(tmp_path / "missing.urna")
    assert str(err.value) == "No such file or directory (os error 2)"
    with pytest.raises(Io) as err:
        urna.open(tmp_path)
    assert str(err.value) == "No such device (os error 19)"


def test_empty_file_is_truncated(tmp_path) -> None:
    with pytest.raises(UrnaError) as err:
        urna.open(_write(tmp_path, b""))
    assert str(err.value) == "file truncated"
