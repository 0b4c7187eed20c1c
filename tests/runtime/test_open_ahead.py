"""The open's passes started ahead on worker threads end as the in-order open ends.

``format.reader.CheckSteps`` starts the body digest, every section checksum and, when it reads
only bytes of the file (canonical sections raw, no dedup map), the content hash at once on the
pool (``format.ahead``); the caller claims each in the reference's order. Claims, with every job
on a worker (``INLINE_BYTES`` 0, as for a large file): each reference file opens with the
reference's content hash, and after a failed open the map is free (no pass still reads it: the
file's mapping closes). Every mutation case ends as in the reference with every job on a worker
too (tests/runtime/test_open_errors.py).
"""

from __future__ import annotations

import json
import mmap
import os

import pytest

import urna
from urna.errors import UrnaError
from urna.format import ahead
from urna.format.reader import UrnaView

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "ref-0.5.1")
with open(os.path.join(DATA, "expected.json"), encoding="utf-8") as fh:
    EXPECTED = json.load(fh)["files"]


@pytest.fixture
def on_workers(monkeypatch):
    """Every job of the open on a worker thread, however small."""
    monkeypatch.setattr(ahead, "INLINE_BYTES", 0)
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reference_files_open_with_the_reference_content_hash(name, on_workers) -> None:
    with urna.open(os.path.join(DATA, name)) as f:
        assert f.content_hash == EXPECTED[name]["content_hash"]
    with open(os.path.join(DATA, name), "rb") as fh:
        data = fh.read()
    with ahead.Lane() as lane:
        view = UrnaView.from_bytes(data, lane=lane)
    assert view.content_hash() == EXPECTED[name]["content_hash"]


def test_a_failed_open_leaves_no_pass_reading_the_map(tmp_path, on_workers) -> None:
    with open(os.path.join(DATA, "synthetic-exact.urna"), "rb") as fh:
        data = bytearray(fh.read())
    data[-1] ^= 0xFF  # the footer digest no longer matches: a late step fails
    data[200] ^= 0x01  # and a byte in the table region or a payload: an early one may
    path = tmp_path / "bad.urna"
    path.write_bytes(bytes(data))
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)
    with pytest.raises(UrnaError), ahead.Lane() as lane:
        UrnaView.from_bytes(view, lane=lane)
    view.release()
    mapped.close()  # BufferError if a job still held a slice of it
    assert mapped.closed
