"""``urna validate`` refuses every file the open refuses, with the open's first error.

The reference wheel's ``urna validate`` ends like its open on all 1008 labelled cases (checked
by running the wheel over every case when this was written): a resealed HNSW, BM25 or graph
payload, a blob span overlay or a space band fails it with the open's error. Ours must too:
each case the reference refuses raises the reference's class and message, and whenever our
open refuses a case, validate refuses it the same way. Validate may refuse more than the open
(the inlined blobs' SHA-256 and the record parses of the canonical tables, which the open
leaves to first use), never less.
"""

from __future__ import annotations

import pytest
from _harness import check_outcome

from helpers.mutate import apply_case, load_cases
from urna.format.verify import verify
from urna.runtime.opening import open_state
from urna.runtime.validation import validate_bytes

CASES = load_cases()




@pytest.mark.parametrize("src", sorted({case["src"] for case in CASES.values()}))
def test_validate_refuses_what_the_open_refuses(src: str) -> None:
    for key, case in CASES.items():
        if case["src"] != src:
            continue
        data = apply_case(case)
        got = check_outcome(validate_bytes, data)
        if not case["ok"]:
            assert got == (case["variant"], case["message"]), key
        opened = check_outcome(open_state, data)
        if opened is not None:
            assert got == opened, key
        else:  # what the open passes, the format-level full check judges
            assert got == check_outcome(verify, data), key


def test_a_resealed_hnsw_payload_fails_validate() -> None:
    case = CASES["quickstart-hybrid__s07_payload_zero_fixed"]
    data = apply_case(case)
    assert check_outcome(verify, data) is None  # the format-level check never reads 0x07
    assert check_outcome(validate_bytes, data) == (case["variant"], case["message"])
