"""``urna validate`` proves 0x01 and 0x03 once (issue #20).

Its own ``chunk ids`` and ``spans`` steps parse those sections before the open's steps run;
the open's steps (``runtime.opening.open_steps``) take the records those parses proved instead
of proving the same bytes again. Claims: an open handed the proofs holds the same chunk ids and
spans as one that proves them itself, on every reference file; a validate whose 0x03 parse
fails hands no spans over, and fails as the reference does; a run of the steps handed a
``loading`` job (validate's import of the open's decoders) runs its first step only once that
job is over, with the outcome of a run without it.
"""

from __future__ import annotations

import threading

import pytest

from helpers.mutate import replace_payload
from helpers.outcomes import verdict
from helpers.vectors import REF
from urna.format.ahead import Job, submit
from urna.format.layout import ENCODING_RAW, SECTION_CHUNK_IDS, SECTION_CHUNKS_ORIGINAL_SPANS
from urna.format.reader import UrnaView
from urna.format.sections.canonical import span_records, string_records
from urna.format.verify import Checking, Checks, Step, check_view
from urna.runtime.opening import open_steps
from urna.runtime.validation import INDEXES, VALIDATE_STEPS, validate_bytes

FILES = sorted(p.name for p in REF.glob("*.urna"))


def _with_spy(name: str, spy) -> list[Step]:
    """``VALIDATE_STEPS`` with step ``name`` calling ``spy(checking)`` before its own run."""
    steps = []
    for step in VALIDATE_STEPS:
        if step.name == name:
            run = step.run

            def spied(c: Checking, run=run) -> str:
                spy(c)
                return run(c)

            step = Step(step.name, spied, opens=step.opens, repeats=step.repeats,
                        applies=step.applies, ahead=step.ahead, early=step.early)
        steps.append(step)
    return steps


@pytest.mark.parametrize("name", FILES)
def test_an_open_handed_the_proofs_holds_the_same_rows(name: str) -> None:
    data = (REF / name).read_bytes()
    view = UrnaView.from_bytes(data)
    n = view.header.n_embeddings
    ids = string_records(view.decoded(SECTION_CHUNK_IDS), n, SECTION_CHUNK_IDS)
    spans = span_records(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), n)
    handed = open_steps(UrnaView.from_bytes(data), proven_ids=ids, proven_spans=spans)
    proved = open_steps(UrnaView.from_bytes(data))
    assert list(handed.chunk_ids) == list(proved.chunk_ids)
    assert list(handed.spans) == list(proved.spans)  # the blob overlay applied alike


def _kept(data: bytes) -> tuple:
    """The proofs a validate run over ``data`` handed to the open's steps, and its verdict."""
    seen: list[Checking] = []
    steps = _with_spy(INDEXES, seen.append)
    ended = verdict(lambda: check_view(UrnaView.from_bytes(data), steps))
    return (seen[0].proven_ids, seen[0].proven_spans, ended) if seen else (None, None, ended)


def test_a_passed_validate_kept_both_proofs() -> None:
    ids, spans, ended = _kept((REF / "quickstart-hybrid.urna").read_bytes())
    assert ended == ("ok",) and ids is not None and spans is not None
    assert len(ids) == len(spans) == 12  # quickstart's 12 chunks


def test_a_failed_spans_parse_hands_no_spans_over() -> None:
    data = (REF / "quickstart-hybrid.urna").read_bytes()
    raw = bytearray(UrnaView.from_bytes(data).decoded(SECTION_CHUNKS_ORIGINAL_SPANS))
    raw[4:12] = (13).to_bytes(8, "little")  # quickstart has 12 chunks: one record claimed more
    damaged = bytes(replace_payload(data, SECTION_CHUNKS_ORIGINAL_SPANS, bytes(raw),
                                    ENCODING_RAW))
    ids, spans, ended = _kept(damaged)
    assert ids is not None and spans is None
    # the reference wheel's words for this file (urna 0.5.1 validate)
    want = ("SectionCountMismatch", "section count mismatch: section=3 expected=12 got=13")
    assert ended == want
    assert verdict(lambda: validate_bytes(damaged)) == want


@pytest.mark.parametrize("name", ["synthetic-hybrid.urna", "quickstart-exact.urna"])
def test_the_steps_run_once_the_loading_job_is_over(name: str) -> None:
    data = (REF / name).read_bytes()
    release, over = threading.Event(), []

    def load() -> None:
        release.wait()
        over.append(True)

    loading = Job(load)
    submit(loading)
    saw: list[list[bool]] = []
    checks = Checks(UrnaView.from_bytes(data), _with_spy(VALIDATE_STEPS[0].name,
                                                             lambda _: saw.append(list(over))),
                    loading=loading)
    releaser = threading.Thread(target=release.set)
    rows = iter(checks)
    releaser.start()
    names = [row.name for row in rows]
    releaser.join()
    assert saw == [[True]]
    assert names == [s.name for s in VALIDATE_STEPS]
    assert checks.verification == check_view(UrnaView.from_bytes(data), VALIDATE_STEPS)
