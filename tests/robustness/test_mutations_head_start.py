"""The CLI's head start (``runtime.mapping``) never changes what a call answers or refuses.

The command line maps its FILE and starts the body's SHA-256 on a worker as soon as the
arguments are parsed; the open then takes that map and that digest. The reference cases are
small, so by default they never get a head start: here its threshold is 0, every call of
``urna validate`` gets one, and each of the 1008 labelled corruption cases must still end
with the reference's class and message (and an unlabelled one as the bytes-only check does),
with no map or job left behind. A repeat call through a kept verdict takes the head start's
digest on the trusted path; a first ``urna.open`` takes it on the full path.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from _harness import check_outcome, time_cap, write_case

import urna
from helpers.cli_runner import invoke
from helpers.mutate import apply_case, load_cases
from helpers.vectors import REF
from urna.format import ahead, body_digest
from urna.format.layout import LEGACY_MAGIC, URNA_FOOTER_SIZE, URNA_HEADER_SIZE, URNA_MAGIC
from urna.format.reader import UrnaView
from urna.runtime import mapping
from urna.runtime.validation import validate_bytes

CASES = load_cases()


@pytest.fixture(autouse=True)
def head_start_on_every_file(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Head starts for files of any size; returns the paths a head start was started for."""
    monkeypatch.setattr(mapping, "INLINE_BYTES", 0)
    monkeypatch.setattr(mapping, "worker_count", lambda: 2)
    started: list[str] = []
    real = mapping.start_head_start

    def spy(path: str) -> None:
        real(path)
        if path in mapping._started:
            started.append(path)

    monkeypatch.setattr(mapping, "start_head_start", spy)
    return started


def _headed(data: bytes) -> bool:
    return (len(data) >= URNA_HEADER_SIZE + URNA_FOOTER_SIZE
            and data[:4] in (URNA_MAGIC, LEGACY_MAGIC))


def _ends_as(result, want: tuple[str, str] | None, key: str) -> None:
    """The call printed its answer (``want`` None) or failed with ``want``'s class and message."""
    if want is None:
        assert result.exit_code == 0, (key, result.output)
    else:
        assert result.exit_code == 1, (key, result.output)
        assert result.stderr.startswith(f"Error: {want[0]}: {want[1]}"), (key, result.stderr)


def _nothing_left() -> bool:
    return not ahead._OFFERED and not mapping._started


@pytest.mark.parametrize("src", sorted({case["src"] for case in CASES.values()}))
def test_validate_with_a_head_start_ends_as_the_reference(
        src: str, tmp_path: Path, head_start_on_every_file: list[str]) -> None:
    path = tmp_path / "case.urna"
    headed = 0
    for key, case in CASES.items():
        if case["src"] != src:
            continue
        data = apply_case(case)
        write_case(data, path)
        before = len(head_start_on_every_file)
        result = invoke(["validate", str(path)])
        if _headed(data):
            headed += 1
            assert len(head_start_on_every_file) == before + 1, key
        if case["ok"]:
            want = check_outcome(validate_bytes, data)
        else:
            want = (case["variant"], case["message"])
        _ends_as(result, want, key)
        assert _nothing_left(), key
    assert headed > 0


@pytest.mark.parametrize("src", sorted({case["src"] for case in CASES.values()}))
def test_stats_with_a_head_start_ends_as_the_bytes_alone(
        src: str, tmp_path: Path, head_start_on_every_file: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``urna stats`` reads the head start's map through the verdicts; what it prints or
    # refuses is what the bytes alone give (no map, no verdict cache).
    from urna.runtime.stats import stats_document

    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "case.urna"
    for key, case in CASES.items():
        if case["src"] != src:
            continue
        data = apply_case(case)
        write_case(data, path)
        with monkeypatch.context() as m:
            m.setenv("URNA_OPEN_CACHE", "0")
            want = check_outcome(lambda d: stats_document(path, d), data)
        result = invoke(["stats", str(path), "--json"])
        _ends_as(result, want, key)
        assert _nothing_left(), key


@pytest.mark.parametrize("verb", ["inspect", "stats", "cite", "validate"])
def test_every_light_verb_takes_the_head_starts_digest(
        verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(REF / "quickstart-hybrid.urna")
    taken: list[bool] = []

    def spy(owner: object, key: object):
        job = ahead.claim_offered(owner, key)
        taken.append(job is not None)
        return job

    monkeypatch.setattr(body_digest, "claim_offered", spy)
    args = [path]
    if verb == "cite":
        with urna.open(path) as f:
            args.append(f.search(np.ones(f.embedding_dim, dtype=np.float32), 1)[0].citation_id)
    first = invoke([verb, *args])  # a first call: the full checks take the digest
    assert first.exit_code == 0, first.output
    again = invoke([verb, *args])  # a repeat through the kept verdict: the trusted path does
    assert again.output == first.output
    assert taken[-2:] == [True, True]
    assert _nothing_left()


def test_an_open_takes_the_map_and_the_digest(tmp_path: Path) -> None:
    src = REF / "quickstart-hybrid.urna"
    mapping.start_head_start(str(src))
    started = mapping._started[str(src)]
    assert id(started.mm) in ahead._OFFERED
    with urna.open(str(src)) as f:
        assert _nothing_left()  # the open took the map, its checks the digest
        q = np.ones(f.embedding_dim, dtype=np.float32)
        got = [(h.chunk_id, h.score) for h in f.search(q, 5)]
    with urna.open(str(src)) as f:  # no head start: the same answers
        assert got == [(h.chunk_id, h.score) for h in f.search(q, 5)]
    assert started.mm.closed


def test_the_digest_taken_is_the_bodys() -> None:
    src = REF / "quickstart-hybrid.urna"
    data = src.read_bytes()
    mapping.start_head_start(str(src))
    mm, _, _ = mapping.map_file(str(src))
    assert mm is not None
    copy = UrnaView.from_bytes(bytes(mm))  # other bytes object: the offer is not its own
    assert id(mm) in ahead._OFFERED
    view = UrnaView.from_bytes(mm)  # the footer check compared the head start's digest
    assert _nothing_left()
    assert view.file_hash() == copy.file_hash() == "sha256:" + hashlib.sha256(data).hexdigest()
    view.release()
    copy.release()
    mm.close()


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "not urna", "short"])
def test_no_head_start_for_what_is_not_a_urna_file(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "x.urna"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "not urna":
        path.write_bytes(b"not a urna file at all\n" * 100)
    elif kind == "short":
        path.write_bytes(URNA_MAGIC + bytes(100))
    mapping.start_head_start(str(path))
    assert _nothing_left()
    if kind != "missing":  # and the verb still refuses it as it did without a head start
        result = invoke(["validate", str(path)])
        assert result.exit_code == 1 and result.stderr.startswith("Error: ")
        assert _nothing_left()


def test_a_head_start_never_taken_is_dropped(tmp_path: Path) -> None:
    src = REF / "quickstart-hybrid.urna"
    mapping.start_head_start(str(src))
    started = mapping._started[str(src)]
    mapping.drop_head_starts()
    assert started.mm.closed and _nothing_left()


@pytest.mark.parametrize("verb", ["validate", "inspect"])
def test_a_fifo_is_read_as_a_stream_not_held_by_a_head_start(verb: str, tmp_path: Path) -> None:
    src = REF / "quickstart-hybrid.urna"
    want = invoke([verb, str(src)])
    fifo = tmp_path / "corpus.urna"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as fh:  # waits for the verb to open its end
            fh.write(src.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with time_cap(30):  # a head start that opened the FIFO would leave the verb waiting
        got = invoke([verb, str(fifo)])
    writer.join(5)
    assert got.exit_code == want.exit_code == 0, got.output
    assert got.stdout.replace(str(fifo), str(src)) == want.stdout
    assert _nothing_left()
