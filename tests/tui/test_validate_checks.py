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
