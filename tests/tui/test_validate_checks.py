"""The corpus tab's check list ends as ``urna validate`` does, the optional indexes included."""

from __future__ import annotations

from pathlib import Path

from helpers.mutate import apply_case, load_cases
from helpers.vectors import REF
from urna.tui.backend import LATER_CHECKS, validate_checks


def test_a_resealed_hnsw_payload_fails_the_indexes_row(tmp_path: Path) -> None:
    case = load_cases()["quickstart-hybrid__s07_payload_zero_fixed"]
    bad = tmp_path / "bad.urna"
    bad.write_bytes(apply_case(case))
    rows = {v.name: v for v in validate_checks(bad)}
    assert rows["canonical texts"].status == "ok"
    assert rows["indexes"].status == "fail"
    assert rows["indexes"].detail == f"{case['variant']}: {case['message']}"
    assert [rows[n].status for n in LATER_CHECKS[LATER_CHECKS.index("indexes") + 1:]] == \
        ["skip", "skip"]


def test_the_indexes_row_names_what_the_open_decoded() -> None:
    rows = {v.name: v for v in validate_checks(REF / "quickstart-hybrid.urna")}
    assert {v.status for v in rows.values()} == {"ok"}
    assert rows["indexes"].detail == "decoded as the open does: hnsw_index, bm25_index"
    plain = {v.name: v for v in validate_checks(REF / "quickstart-exact.urna")}
    assert plain["indexes"].detail == "none to decode"


def test_the_rows_after_the_open_checks_are_the_one_lists_steps() -> None:
    from urna.runtime.validation import VALIDATE_STEPS

    for name in ("quickstart-hybrid.urna", "quickstart-exact.urna", "quickstart-blobs.urna"):
        rows = list(validate_checks(REF / name))
        names = [step.name for step in VALIDATE_STEPS]
        assert [r.name for r in rows[-len(names):]] == names == list(LATER_CHECKS)
        assert {r.status for r in rows} == {"ok"}
        assert rows[-len(names) - 1].name == "contract agrees with manifest"  # the reader's last


def test_a_text_record_fault_waits_for_the_open_steps(tmp_path: Path) -> None:
    # 0x02's record count and the graph are both damaged: the graph's (the open's) error wins,
    # as in the reference's urna validate; the rows show both
    from helpers.two_faults import damaged_twice

    bad = tmp_path / "bad.urna"
    bad.write_bytes(damaged_twice("synthetic-graph__s02_count_huge_fixed",
                                  "synthetic-graph__s0c_count_huge_fixed"))
    rows = {v.name: v for v in validate_checks(bad)}
    assert rows["canonical texts"].status == "fail"
    assert rows["canonical texts"].detail.startswith("SectionCountMismatch: ")
    assert rows["indexes"].status == "fail"
    assert rows["indexes"].detail == ("MalformedSectionPayload: malformed section payload: "
                                      "section=12 reason=graph_adjacency: offsets length != "
                                      "n_nodes+1")
    assert [rows[n].status for n in ("content hash", "inlined blobs")] == ["skip", "skip"]


def test_closing_the_rows_early_releases_the_file() -> None:
    rows = validate_checks(REF / "quickstart-hybrid.urna")
    for row in rows:
        if row.name == "embedding values":  # the 0x02 decode was started ahead
            break
    rows.close()  # no worker still reads the released view: no BufferError
    assert {v.status for v in validate_checks(REF / "quickstart-hybrid.urna")} == {"ok"}
