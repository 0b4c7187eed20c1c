"""A repeat open of an unchanged file answers exactly as a full open does (runtime.verdicts).

Claims: the first open of a path keeps a verdict and the next one takes the trusted path
(body digest only; HNSW and BM25 decoded on first use); every hash and every search answer
equals a full open's on the reference vectors; a verdict never stands in for a check (a
changed stat, a stale digest or a corrupt entry means the full open); small files and
``URNA_OPEN_CACHE=0`` keep no verdict; the package's version is part of the entry.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import urna
from helpers.vectors import REF
from urna.format.reader import UrnaView
from urna.runtime import verdicts

FILES = ["quickstart-hybrid.urna", "quickstart-f16_hnsw.urna", "quickstart-int8_bm25.urna",
         "quickstart-compressed.urna", "quickstart-graph.urna", "quickstart-spaces.urna",
         "quickstart-blobs.urna", "dedup-hybrid.urna", "synthetic-int4.urna"]
TEXT = "offline search with citations"


def _answers(f: urna.UrnaFile) -> list:
    q = np.random.default_rng(3).standard_normal(f.embedding_dim).astype(np.float32)
    q /= np.linalg.norm(q)
    out: list = [f.file_hash, f.content_hash, f.has_ann, f.has_bm25, f.has_graph,
                 f.search(q, 5).to_dict()["hits"]]
    if f.has_ann:
        out.append(f.search_ann(q, 5, 16).to_dict()["hits"])
    if f.has_bm25:
        out.append(f.search_hybrid(q, TEXT, 5, 20).to_dict()["hits"])
        out.append(f.search_bm25(TEXT, 5).to_dict()["hits"])
    return out


def _full_open_answers(path: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    with monkeypatch.context() as m:
        m.setenv("URNA_OPEN_CACHE", "0")
        with urna.open(path) as f:
            assert not f._state.view.trusted
            return _answers(f)


@pytest.mark.parametrize("name", FILES)
def test_repeat_open_is_trusted_and_answers_alike(name: str, verdict_cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    want = _full_open_answers(path, monkeypatch)
    with urna.open(path) as f:  # the first open: full, keeps the verdict
        assert not f._state.view.trusted
        assert _answers(f) == want
    with urna.open(path) as f:
        assert f._state.view.trusted
        assert _answers(f) == want
        assert f.validate(full=True) is True  # validate still runs every check


def test_trusted_open_defers_the_indexes(verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    urna.open(path).close()
    with urna.open(path) as f:
        st = f._state
        assert type(st.bm25_index).__name__ == "Deferred"
        assert f.has_bm25 and f.has_ann  # answered without decoding
        assert type(st.bm25_index).__name__ == "Deferred"
        assert st.bm25 is not None and st.bm25 is st.bm25_index  # decoded once, then kept


def test_changed_stat_means_a_full_open(verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    urna.open(path).close()
    os.utime(path, ns=(0, 10**9))
    assert verdicts.lookup(str(path), os.stat(path)) is None
    with urna.open(path) as f:
        assert not f._state.view.trusted
    with urna.open(path) as f:  # and the new state is kept
        assert f._state.view.trusted


def test_stale_digest_means_every_check(verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    st = os.stat(path)
    verdicts.remember(str(path), st, verdicts.Verdict(b"\0" * 32, "sha256:" + "0" * 64))
    with urna.open(path) as f:
        assert not f._state.view.trusted
        assert f.content_hash != "sha256:" + "0" * 64


@pytest.mark.parametrize("text", ["", "{", "[]", '{"schema": 1}',
                                  '{"schema": 1, "body_sha256": 5}'])
def test_corrupt_entry_means_a_full_open(text: str, verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    urna.open(path).close()
    entries = list((verdict_cache / "cache" / "opened").glob("*.json"))
    assert len(entries) == 1
    entries[0].write_text(text, encoding="utf-8")
    with urna.open(path) as f:
        assert not f._state.view.trusted


def test_other_version_entry_is_ignored(verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    urna.open(path).close()
    entry = next((verdict_cache / "cache" / "opened").glob("*.json"))
    doc = json.loads(entry.read_text(encoding="utf-8"))
    entry.write_text(json.dumps({**doc, "urna": "0.0.0"}), encoding="utf-8")
    assert verdicts.lookup(str(path), os.stat(path)) is None


def test_no_verdict_when_off_or_small(verdict_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    urna.open(path).close()
    assert not (verdict_cache / "cache" / "opened").exists()
    monkeypatch.delenv("URNA_OPEN_CACHE")
    monkeypatch.setattr(verdicts, "MIN_BYTES", os.path.getsize(path) + 1)
    urna.open(path).close()
    assert not (verdict_cache / "cache" / "opened").exists()


def test_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    monkeypatch.setenv("URNA_CACHE_DIR", str(blocker))
    monkeypatch.setattr(verdicts, "MIN_BYTES", 0)
    path = tmp_path / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    for _ in range(2):
        with urna.open(path) as f:
            assert not f._state.view.trusted


def test_entries_are_bounded(verdict_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verdicts, "MAX_ENTRIES", 3)
    for i in range(6):
        path = verdict_cache / f"f{i}.urna"
        shutil.copyfile(REF / "quickstart-tiny.urna", path)
        urna.open(path).close()
    assert len(list((verdict_cache / "cache" / "opened").glob("*.json"))) <= 3


def test_cite_and_inspect_share_the_verdict(verdict_cache: Path) -> None:
    from urna.format.reader import UrnaView

    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    data = path.read_bytes()
    full = UrnaView.from_bytes(data)
    view = verdicts.checked_view(str(path), data)
    assert not view.trusted
    verdicts.keep_view(str(path), data, view)
    again = verdicts.checked_view(str(path), data)
    assert again.trusted
    assert (again.content_hash(), again.file_hash()) == (full.content_hash(), full.file_hash())


def test_a_cite_or_inspect_verdict_never_lets_an_open_skip_its_walks(verdict_cache: Path) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    data = path.read_bytes()
    view = verdicts.checked_view(str(path), data)
    verdicts.keep_view(str(path), data, view, frozenset({verdicts.CITE_RECORDS}))
    st = os.stat(path)
    assert verdicts.lookup(str(path), st) is None  # an open needs OPEN
    assert verdicts.lookup(str(path), st, verdicts.NO_CHECKS) is not None
    with urna.open(path) as f:
        assert not f._state.view.trusted  # a full open, which keeps its own verdict
    merged = verdicts.lookup(str(path), os.stat(path))
    assert merged is not None
    assert merged.checks == {verdicts.OPEN, verdicts.CITE_RECORDS}  # the two, merged
    again, known = verdicts.checked(str(path), data)
    assert again.trusted and known == merged.checks


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "quickstart-compressed.urna",
                                  "quickstart-spaces.urna", "dedup-hybrid.urna"])
def test_stats_reads_through_the_verdict_and_reports_alike(name: str, verdict_cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from urna.format import reader
    from urna.runtime.stats import stats_document

    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    with monkeypatch.context() as m:
        m.setenv("URNA_OPEN_CACHE", "0")
        full = stats_document(path)
    first = stats_document(path)  # a full check, whose verdict is kept
    assert verdicts.lookup(str(path), os.stat(path), verdicts.NO_CHECKS) is not None

    def no_decode(*_: object) -> str:
        raise AssertionError("a repeat stats decoded the canonical sections again")

    monkeypatch.setattr(reader, "_content_hash", no_decode)
    assert stats_document(path) == first == full
    assert stats_document(path, path.read_bytes()) == full  # the caller's bytes alike


def test_stats_of_a_changed_file_checks_it_again(verdict_cache: Path) -> None:
    from urna.errors import UrnaError
    from urna.format.reader import UrnaView
    from urna.runtime.stats import stats_document

    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    stats_document(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    st = os.stat(path)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: only the bytes
    with pytest.raises(UrnaError) as full:
        UrnaView.from_bytes(bytes(data))
    with pytest.raises(type(full.value)) as err:
        stats_document(path)
    assert str(err.value) == str(full.value)


def test_a_full_open_hashes_its_content_beside_the_index_decodes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # quickstart-hybrid's 0x02 is zstd and its 0x01 intpack: the content hash cannot start
    # with the checksums (it decodes), so the open starts it before its own decodes and
    # claims it after them; the hash is the reference's all the same.
    from urna.runtime import opening

    monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    started: list[bool] = []
    real = opening.open_steps

    def spy(view, *args, **kwargs):
        started.append(view._content_job is not None or view._content_hash is not None)
        return real(view, *args, **kwargs)

    monkeypatch.setattr(opening, "open_steps", spy)
    with urna.open(REF / "quickstart-hybrid.urna") as f:
        assert started == [True]
        assert f.content_hash == UrnaView.from_bytes(
            (REF / "quickstart-hybrid.urna").read_bytes()).content_hash()


def test_two_threads_asking_for_a_section_decode_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from urna.format import encodings

    data = (REF / "quickstart-compressed.urna").read_bytes()
    view = UrnaView.from_bytes(data)
    calls: list[int] = []
    real = encodings.decode_section
    gate = threading.Barrier(2)

    def slow(section_id, encoding, payload):
        calls.append(section_id)
        time.sleep(0.05)  # the other thread asks while this decode runs
        return real(section_id, encoding, payload)

    monkeypatch.setattr(encodings, "decode_section", slow)
    out: list = []

    def ask() -> None:
        gate.wait()
        out.append(bytes(view.decoded(0x01)))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [0x01] and out[0] == out[1] == bytes(UrnaView.from_bytes(data).decoded(0x01))
