"""A JSON section's body is parsed before its trailing bytes are checked, as the reference does.

The cases of ``tests/data/json-sections-0.5.1.json`` (recorded from urna 0.5.1 by
``tools/record_json_section_cases.py``) replace the 0x06 search_contract or 0x05 provenance
payload of a reference file: bad JSON, a missing key or a wrong type with bytes after the
declared length must fail as the reference's ``Json`` error, a good body with bytes after it as
``MalformedSectionPayload``, and lengths past the end before any parse. The file and
``UrnaView.from_bytes`` must both end with the reference's message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _harness import conformance_outcome

from helpers.mutate import DATA_DIR, REF_DIR, replace_payload

RECORD = json.loads((DATA_DIR / "json-sections-0.5.1.json").read_text())
CASES = RECORD["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_section_fails_like_the_reference(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    data = replace_payload((REF_DIR / RECORD["source"]).read_bytes(), case["section"],
                           bytes.fromhex(case["payload"]))
    view, first = conformance_outcome(bytes(data), tmp_path / "case.urna")
    assert not first.foreign, (first.op, first.variant, first.message, first.trace)
    want = case["message"]
    if want is None:
        assert first.ok, (first.op, first.variant, first.message)
        return
    assert (first.op, first.message) == ("open", want)
    assert first.variant == ("Json" if want.startswith("JSON error") else
                             "UnsupportedSectionVersion" if want.startswith("unsupported")
                             else "MalformedSectionPayload")
    assert (view.variant, view.message) == (first.variant, want)
