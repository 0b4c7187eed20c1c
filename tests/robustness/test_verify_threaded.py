"""``urna validate``'s full check ends the same whether its passes run inline or on workers.

``format.verify.verify`` starts the SHA-256 passes, the 0x02 decode and the content hash on
workers and claims every outcome in the reference's order. The reference corruption cases
are small, so by default every pass runs inline; with the inline threshold at 0 each one is a
thread job. Each case must end alike both ways, and whenever the full check refuses a case
the reference refuses, it must say what the reference says (its first error). (Seventeen
refused cases damage only sections the full check does not read: the HNSW / BM25 / graph
indexes, the blob overlay and the space bands; they pass it, threaded or not.)
"""

from __future__ import annotations

import pytest
from _harness import check_outcome

from helpers.mutate import apply_case, load_cases
from urna.format import ahead
from urna.format.verify import verify

CASES = load_cases()


def outcome(buf: bytes) -> tuple[str, str] | None:
    return check_outcome(verify, buf)


@pytest.mark.parametrize("src", sorted({case["src"] for case in CASES.values()}))
def test_threaded_full_check_ends_like_the_inline_one(src: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cases = {key: case for key, case in CASES.items() if case["src"] == src}
    inline = {key: outcome(apply_case(case)) for key, case in cases.items()}
    monkeypatch.setattr(ahead, "INLINE_BYTES", 0)
    monkeypatch.setattr(ahead, "worker_count", lambda: 2)
    for key, case in cases.items():
        got = outcome(apply_case(case))
        assert got == inline[key], key
        if got is not None and not case["ok"]:
            assert got == (case["variant"], case["message"]), key
