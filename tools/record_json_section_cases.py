"""Record what the reference does with hand-made 0x05 / 0x06 payloads (tests/data).

Each case replaces one JSON section's payload of ``quickstart-exact.urna`` (helpers.mutate's
``replace_payload``, resealed), opens the file with the reference urna 0.5.1 and keeps its
message: the cases pin the order of the JSON parse and the trailing-byte check, which no
case of ``mutations-0.5.1.json`` separates. Not a test: the wheel is never a suite dependency.

    PYTHONPATH=src /work/main/.venv/bin/python tools/record_json_section_cases.py [REF_PYTHON]
"""

from __future__ import annotations

import json
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from reference_wheel import REF_PYTHON, ReferenceFailed, report_failure, run_reference  # noqa: E402

from helpers.mutate import REF_DIR, replace_payload  # noqa: E402

OUT = ROOT / "tests" / "data" / "json-sections-0.5.1.json"
SOURCE = "quickstart-exact.urna"
GOOD = (b'{"metric":"ip","score_type":"cosine","normalize":"l2","index_type":"exact",'
        b'"rerank_policy":"none"}')


def _payload(body: bytes, length: int | None = None, tail: bytes = b"", version: int = 1) -> bytes:
    return struct.pack("<IQ", version, len(body) if length is None else length) + body + tail


CASES: dict[str, tuple[int, bytes]] = {
    "contract_good_then_trailing": (6, _payload(GOOD, tail=b"x")),
    "contract_bad_json_then_trailing": (6, _payload(b"{nope", tail=b"xx")),
    "contract_missing_key_then_trailing": (6, _payload(b'{"metric":"ip"}', tail=b"z")),
    "contract_wrong_type_then_trailing": (6, _payload(GOOD.replace(b'"ip"', b"1"), tail=b"q")),
    "contract_unknown_metric_then_trailing": (6, _payload(GOOD.replace(b'"ip"', b'"xx"'),
                                                          tail=b"q")),
    "contract_length_one_short": (6, _payload(GOOD, length=len(GOOD) - 1)),
    "contract_length_one_of_bad_json": (6, _payload(b"{]]", length=1)),
    "contract_length_past_end": (6, _payload(GOOD, length=len(GOOD) + 5)),
    "contract_length_2_63": (6, _payload(GOOD, length=1 << 63)),
    "contract_whitespace_then_trailing": (6, _payload(GOOD + b"  ", tail=b"t")),
    "contract_junk_inside_length": (6, _payload(GOOD + b"junk")),
    "contract_junk_inside_then_trailing": (6, _payload(GOOD + b"junk", tail=b"t")),
    "contract_version_2_then_trailing": (6, _payload(b"{", tail=b"t", version=2)),
    "contract_shorter_than_prefix": (6, b"\x01\x00\x00"),
    "provenance_bad_json_then_trailing": (5, _payload(b"{nope", tail=b"x")),
}

# Runs inside the reference interpreter: argv[1] = JSON list of [name, path].
CHECK = r'''
import json, sys
import urna
out = {}
for name, path in json.load(open(sys.argv[1])):
    try:
        f = urna.open(path)
        f.validate()
        f.search([1.0] + [0.0] * (f.inspect()["embedding_dim"] - 1), 1)
        out[name] = None
    except Exception as e:
        out[name] = str(e)
print(json.dumps(out))
'''


def main(ref_python: str = REF_PYTHON) -> int:
    """Write every case, ask the reference, save ``{name: {section, payload, message}}``."""
    base = (REF_DIR / SOURCE).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        listed = []
        for name, (section, payload) in CASES.items():
            path = Path(tmp) / f"{name}.urna"
            path.write_bytes(replace_payload(base, section, payload))
            listed.append([name, str(path)])
        try:
            messages = run_reference(CHECK, listed, ref_python=ref_python)
        except ReferenceFailed as exc:
            return report_failure(exc)
    assert isinstance(messages, dict)
    record = {"source": SOURCE, "cases": {
        name: {"section": section, "payload": payload.hex(), "message": messages[name]}
        for name, (section, payload) in CASES.items()}}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    for name, message in messages.items():
        print(f"{name:40} {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
