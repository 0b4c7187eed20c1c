"""``urna validate`` loads the open's decoders beside the reader's checks (issue #20).

On a file whose section table lists a section only the open decodes (HNSW, BM25, a graph,
spaces, blobs), ``validate_bytes`` imports those decoders on a worker while the reader hashes,
so the steps run with numpy loaded. Claims: the verdict is the one the steps give without it,
on every reference file and on damaged copies of the files with indexes (the same error, class
and text); no import is left running when it returns or raises; a file without such sections
starts none at all (its validate stays numpy-free, ``format/test_light_path_imports``).
"""

from __future__ import annotations

import pytest

from helpers.vectors import REF
from urna.errors import UrnaError
from urna.format.reader import UrnaView
from urna.format.verify import check_view
from urna.runtime import validation
from urna.runtime.validation import (
    VALIDATE_STEPS,
    VERIFIED_WITHOUT_OPEN,
    listed_sections,
    validate_bytes,
)

FILES = sorted(p.name for p in REF.glob("*.urna"))


def _verdict(run):
    try:
        got = run()
        return "ok", got.file_hash, got.content_hash, got.n_sections, got.blobs_verified
    except UrnaError as exc:
        return type(exc).__name__, str(exc)


def _without_loading(data: bytes):
    return check_view(UrnaView.from_bytes(data), VALIDATE_STEPS)


@pytest.fixture(autouse=True)
def loaders(monkeypatch: pytest.MonkeyPatch) -> list:
    """The import jobs ``validate_bytes`` starts, to check each is over when it returns."""
    started: list = []
    real = validation._start_loading_open

    def spy(data):
        job = real(data)
        if job is not None:
            started.append(job)
        return job

    monkeypatch.setattr(validation, "_start_loading_open", spy)
    return started


def _all_over(jobs: list) -> bool:
    return all(job._done.is_set() for job in jobs)


@pytest.mark.parametrize("name", FILES)
def test_the_verdict_is_the_steps_own(name: str, loaders: list) -> None:
    data = (REF / name).read_bytes()
    needs = not listed_sections(data) <= VERIFIED_WITHOUT_OPEN
    got = _verdict(lambda: validate_bytes(data))
    assert len(loaders) == int(needs)
    assert got == _verdict(lambda: _without_loading(data))
    assert _all_over(loaders)


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "synthetic-graph.urna",
                                  "quickstart-spaces.urna", "synthetic-blobs.urna"])
@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.999])
def test_a_damaged_file_with_indexes_fails_as_the_steps_fail(name: str, cut: float,
                                                             loaders: list) -> None:
    data = bytearray((REF / name).read_bytes())
    at = int(len(data) * cut)
    data[at] ^= 0x40  # past the header: the table still lists the index sections
    damaged = bytes(data)
    want = _verdict(lambda: _without_loading(damaged))
    assert want[0] != "ok"
    assert _verdict(lambda: validate_bytes(damaged)) == want
    assert loaders and _all_over(loaders)
