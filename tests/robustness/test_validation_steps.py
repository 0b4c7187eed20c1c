"""``urna validate``'s one list of steps: each pass runs once, what an open proved is reused.

Claims: ``validate_bytes`` walks the 0x04 values once on a file with indexes (the open's steps
after its NaN walk run in the ``indexes`` step, never the walk again), and a NaN file with
indexes still fails with the reference's error; ``UrnaFile.validate(full=True)`` after this
object's full open runs no reader check and no NaN walk again, yet refuses what ``urna
validate`` refuses; after an open that trusted a kept verdict it runs every check itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _harness import check_outcome

import urna
from helpers.mutate import apply_case, load_cases
from helpers.vectors import REF
from urna.format import encodings
from urna.format import reader as format_reader
from urna.format.layout import SECTION_EMBEDDINGS
from urna.runtime.validation import validate_bytes

CASES = load_cases()
WITH_INDEXES = ["quickstart-hybrid.urna", "quickstart-graph.urna", "quickstart-spaces.urna",
                "quickstart-int8_bm25.urna", "synthetic-int4.urna"]
NAN_CASES = ["quickstart-hybrid__rand0011_u64max_fixed_6173",
             "synthetic-graph__rand0005_u64max_fixed_110471",
             "synthetic-spaces__rand0005_u64max_fixed_254959"]


class Counted:
    """How often the reader's checks and the 0x04 value walk run (the real ones, counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walks = self.readers = 0
        walk, steps = encodings.validate_embedding_values, format_reader.CheckSteps._run

        def counted_walk(section_id: int, *args: object, **kwargs: int | None) -> None:
            self.walks += section_id == SECTION_EMBEDDINGS
            walk(section_id, *args, **kwargs)

        def counted_steps(steps_self: format_reader.CheckSteps):  # type: ignore[no-untyped-def]
            self.readers += 1
            return steps(steps_self)

        monkeypatch.setattr(encodings, "validate_embedding_values", counted_walk)
        monkeypatch.setattr(format_reader.CheckSteps, "_run", counted_steps)


@pytest.mark.parametrize("name", WITH_INDEXES)
def test_validate_walks_the_values_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    result = validate_bytes((REF / name).read_bytes())
    assert (counted.walks, counted.readers) == (1, 1)
    with urna.open(REF / name) as f:
        assert (result.file_hash, result.content_hash) == (f.file_hash, f.content_hash)


@pytest.mark.parametrize("key", NAN_CASES)
def test_a_nan_file_with_indexes_fails_with_the_reference_error(key: str) -> None:
    case = CASES[key]
    assert (case["variant"], case["message"]) == ("InvalidEmbeddingValue",
                                                  "NaN or Inf detected in embeddings")
    assert check_outcome(validate_bytes, apply_case(case)) == (case["variant"], case["message"])


@pytest.mark.parametrize("name", WITH_INDEXES + ["quickstart-exact.urna",
                                                 "quickstart-blobs.urna"])
def test_full_validate_reuses_this_objects_open(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    with urna.open(REF / name) as f:
        assert not f._state.view.trusted
        counted = Counted(monkeypatch)
        assert f.validate(full=True) is True
        assert (counted.walks, counted.readers) == (0, 0)


@pytest.mark.parametrize("key", ["synthetic-graph__s02_count_huge_fixed",
                                 "quickstart-blobs__s17_payload_flip_fixed",
                                 "synthetic-spaces__rand0004_flip_fixed_59184"])
def test_full_validate_refuses_what_urna_validate_refuses(key: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    case = CASES[key]
    assert case["ok"]  # the reference's open and check pass it; urna validate's parses do not
    data = apply_case(case)
    path = tmp_path / "case.urna"
    path.write_bytes(data)
    want = check_outcome(validate_bytes, data)
    assert want is not None
    with urna.open(path) as f:
        assert check_outcome(lambda _: f.validate(full=True), data) == want


def test_full_validate_after_a_trusted_open_checks_everything(verdict_cache: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    path = verdict_cache / "h.urna"
    shutil.copyfile(REF / "quickstart-hybrid.urna", path)
    urna.open(path).close()  # keeps the verdict
    with urna.open(path) as f:
        assert f._state.view.trusted
        counted = Counted(monkeypatch)
        assert f.validate(full=True) is True
        assert (counted.walks, counted.readers) == (1, 1)
