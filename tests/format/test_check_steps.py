"""``UrnaView.check_steps``: the open's checks one by one, failing exactly where the open fails.

The oracle is the reference itself: for each of the 1008 labelled corruptions of
``tests/data/mutations-0.5.1.json``, when a step fails it carries the reference's error class and
message, ``UrnaView.from_bytes`` raises that same error, and no step follows it; on every good
reference file every step passes and the per-section steps follow the table as it is written.
"""

from __future__ import annotations

import struct

import pytest

from helpers.mutate import apply_case, load_cases
from helpers.vectors import REF
from urna.errors import UrnaError
from urna.format.reader import CheckSteps, UrnaView

CASES = load_cases()
REF_FILES = sorted(REF.glob("*.urna"))

# The §10.1 steps that come after the per-section ones, in order (when every check passes).
TAIL = ["manifest bounds", "manifest JSON", "manifest fields", "footer hash",
        "manifest agrees with header", "required sections", "embeddings layout", "space bands",
        "contract agrees with manifest"]
HEAD = ["file length", "magic", "version", "header checksum", "file size",
        "section table bounds"]


def table(data: bytes) -> list[tuple[int, int]]:
    """(section_id, size) of each table entry, read straight from the 01-container §3/§4 bytes."""
    offset, count = struct.unpack_from("<QQ", data, 40)
    out = []
    for i in range(count):
        section_id, _encoding, _offset, size = struct.unpack_from("<IIQQ", data, offset + 32 * i)
        out.append((section_id, size))
    return out


def open_error(data: bytes) -> tuple[type, str] | None:
    """The class and message ``UrnaView.from_bytes`` raises (the error itself is not kept)."""
    try:
        UrnaView.from_bytes(data)
    except UrnaError as exc:
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("key", sorted(CASES))
def test_first_failed_step_is_the_reference_error(key: str) -> None:
    case = CASES[key]
    data = apply_case(case)
    steps = UrnaView.check_steps(data)
    seen = list(steps)
    failed = [s for s in seen if not s.ok]
    raised = open_error(data)
    if not failed:
        assert raised is None and steps.view is not None, key
        return
    assert len(failed) == 1 and seen[-1] is failed[0], f"{key}: steps went on after a failure"
    error = failed[0].error
    assert raised is not None, f"{key}: {failed[0].name} failed but the open succeeded"
    assert (type(error), str(error)) == raised, key
    assert not case["ok"], f"{key}: the reference opens this file"
    assert (type(error).__name__, str(error)) == (case["variant"], case["message"]), key
    assert steps.view is None


def test_every_mutation_family_fails_somewhere_in_the_steps() -> None:
    # the cases exercise more than one step: the step form is not one big verdict again
    failed_steps = set()
    for case in CASES.values():
        for step in UrnaView.check_steps(apply_case(case)):
            if not step.ok:
                failed_steps.add(step.check)
    assert {"file length", "magic", "version", "header checksum", "file size",
            "section checksum", "footer hash"} <= failed_steps


@pytest.mark.parametrize("path", REF_FILES, ids=lambda p: p.name)
def test_good_reference_file_passes_every_step_in_table_order(path) -> None:
    data = path.read_bytes()
    steps = CheckSteps(data)
    seen = list(steps)
    assert all(s.ok for s in seen), [(s.name, s.error) for s in seen if not s.ok]
    entries = table(data)
    middle = []
    for section_id, size in entries:
        middle += [("section entry", section_id, size), ("section checksum", section_id, size)]
    assert [s.check for s in seen] == HEAD + [m[0] for m in middle] + TAIL
    assert [(s.check, s.section_id, s.nbytes) for s in seen[6:6 + len(middle)]] == middle
    assert seen[0].nbytes == len(data)
    assert seen[6 + len(middle) + 3].nbytes == len(data) - 40  # the footer digest's body
    assert steps.planned == len(seen)
    assert steps.checksum_bytes == sum(size for _, size in entries)
    assert steps.view is not None and steps.view.entries[0].section_id == entries[0][0]
    has_spaces = any(sid == 0x15 for sid, _ in entries)
    assert (seen[-2].note == "") == has_spaces
    assert seen[7].name == f"section checksum 0x{entries[0][0]:02x}"


def test_view_from_steps_answers_like_from_bytes() -> None:
    data = (REF / "quickstart-hybrid.urna").read_bytes()
    steps = UrnaView.check_steps(data)
    for _ in steps:
        pass
    opened = UrnaView.from_bytes(data)
    assert steps.view is not None
    assert steps.view.file_hash() == opened.file_hash()
    assert steps.view.content_hash() == opened.content_hash()
