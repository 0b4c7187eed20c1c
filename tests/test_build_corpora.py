"""urna.build on inputs the differential builds found us wrong on: the wheel's bytes or refusal.

Each ``tests/data/<set>-0.5.1.json`` was recorded from urna 0.5.1 by
``tools/differential_builds.py record <set>``: the build inputs (blob files inline, as hex)
and what the wheel did with them: the file's sha256 and content_hash (or the error its own
open raised), or the builtin exception class and message it refused with.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from functools import cache
from pathlib import Path

import pytest

import urna
from helpers.vectors import DATA

SETS = ("space-values", "media-errors")


@cache
def _cases(name: str) -> dict[str, dict]:
    data = json.loads((DATA / f"{name}-0.5.1.json").read_text())
    return {case["key"]: case for case in data["cases"]}


def _builtin(exc: BaseException) -> str:
    """The builtin class a caller catches (ours subclass the one the reference raises)."""
    return next(c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c)


def _inputs(case: dict, tmp_path: Path) -> tuple[list, dict]:
    kwargs = dict(case["kwargs"])
    for name, hexdata in case["blobs"].items():
        (tmp_path / name).write_bytes(bytes.fromhex(hexdata))
    if kwargs.get("blob_data_paths") is not None:
        kwargs["blob_data_paths"] = [
            str(tmp_path / p.removeprefix("@blob:")) if isinstance(p, str)
            and p.startswith("@blob:") else p for p in kwargs["blob_data_paths"]]
    return case["args"], kwargs


@pytest.mark.parametrize("name, key", [(n, k) for n in SETS for k in _cases(n)])
def test_build_matches_the_wheel(tmp_path, name, key):
    """Same bytes and content_hash as the wheel, or its refusal: same builtin class and text."""
    case = _cases(name)[key]
    want = case["reference"]
    args, kwargs = _inputs(case, tmp_path)
    out = tmp_path / "out.urna"
    if not want["ok"]:
        with pytest.raises(BaseException) as info:
            urna.build(out, *args, **kwargs)
        assert (_builtin(info.value), str(info.value)) == (want["cls"], want["msg"])
        assert not out.exists()
        return
    urna.build(out, *args, **kwargs)
    data = out.read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (want["bytes"], want["sha256"])
    if "open_error" in want:  # the wheel writes what its own open then refuses
        with pytest.raises(ValueError) as opened:
            urna.open(out)
        assert f"{_builtin(opened.value)}: {opened.value}" == want["open_error"]
    else:
        with urna.open(out) as f:
            assert f.content_hash == want["content_hash"]
