"""Random damage in any section of any reference file, resealed: validate ends as the open.

The reference wheel's ``urna validate`` is its open, and our open ends as the reference's on
its labelled cases; here the damage is drawn (hypothesis: which file, which section, which
bytes), the checksums and footer resealed so the damage reaches the section decoders. Claim:
whenever ``urna.open`` refuses the bytes, ``validate_bytes`` refuses them with the same error
class and text (it may refuse more: it is stricter on a few files the open accepts).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna
from helpers.budget import examples
from helpers.mutate import iter_entries, reseal, source_bytes
from helpers.vectors import expected
from urna.errors import UrnaError
from urna.runtime.validation import validate_bytes

NAMES = sorted(expected())


def _error(fn) -> tuple[str, str] | None:
    try:
        fn()
    except UrnaError as exc:
        return type(exc).__name__, str(exc)
    return None


@pytest.fixture
def every_check(monkeypatch) -> None:
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")  # no verdict: the open runs every step


@settings(max_examples=examples(400, 100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(NAMES), st.data())
def test_validate_refuses_what_the_open_refuses(every_check, tmp_path, name: str,
                                                data: st.DataObject) -> None:
    src = source_bytes(name)
    entries = [e for _, _, e in iter_entries(src) if e.size]
    entry = data.draw(st.sampled_from(entries))
    buf = bytearray(src)
    for _ in range(data.draw(st.integers(1, 4))):
        at = entry.offset + data.draw(st.integers(0, entry.size - 1))
        buf[at] = data.draw(st.integers(0, 255))
    damaged = bytes(reseal(buf))
    path = tmp_path / "damaged.urna"
    path.write_bytes(damaged)
    opened = _error(lambda: urna.open(path).close())
    if opened is not None:
        assert _error(lambda: validate_bytes(damaged)) == opened
