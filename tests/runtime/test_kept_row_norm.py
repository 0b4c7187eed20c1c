"""The exact screen's row-norm bound kept between calls (``verdicts.RowNormMemo``).

The screen of an exact search needs a bound on every row's norm, and measuring it reads every
row: as much as the screen itself. A repeat open of a verified body takes the bound the first
one measured. Claims: the first exact search of a verified body measures the bound and keeps
it; a repeat open's searches take it without measuring and answer exactly alike; a kept file
that is torn, flipped, NaN, negative, of another body or turned off (``URNA_OPEN_CACHE=0``) is
no bound, so the pass runs and the answers stay the same; a file too small for verdicts keeps
none.
"""

from __future__ import annotations

import math
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import urna
from helpers.vectors import REF
from urna.index import exact
from urna.runtime import verdicts

# float32, a rerank slab (mrl), float16, int8 and int4 rows, all past the screen's minimum
FILES = ["synthetic-exact.urna", "synthetic-mrl.urna", "synthetic-compressed.urna",
         "synthetic-int8_bm25.urna", "synthetic-int4.urna", "dedup-exact.urna"]


def _answers(f: urna.UrnaFile) -> list:
    rng = np.random.default_rng(11)
    out = []
    for k in (1, 5, 30):
        q = rng.standard_normal(f.embedding_dim).astype(np.float32)
        q /= np.linalg.norm(q)
        out.append([(h.chunk_id, h.score) for h in f.search(q, k).hits])
    return out


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every bound ``exact.row_norm_bound`` measures in this test, in order."""
    got: list[float] = []
    real = exact.row_norm_bound

    def counting(slab: exact.Slab) -> float:
        got.append(real(slab))
        return got[-1]

    monkeypatch.setattr(exact, "row_norm_bound", counting)
    return got


def _kept(folder: Path) -> list[Path]:
    return sorted((folder / "cache" / "opened" / "norms").glob("*.bin"))


@pytest.mark.parametrize("name", FILES)
def test_a_repeat_open_takes_the_kept_bound(name: str, verdict_cache: Path,
                                            measured: list[float]) -> None:
    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    with urna.open(path) as f:  # the first open: full; its first search measures
        first = _answers(f)
        bound = f._state.scoring.max_row_norm()
    assert measured == [bound] and len(_kept(verdict_cache)) == 1
    with urna.open(path) as f:  # a repeat open: trusted, takes the kept bound
        assert f._state.view.trusted
        assert _answers(f) == first
        assert f._state.scoring.max_row_norm() == bound
    assert measured == [bound]


def _harm(kept: Path, harm: str) -> None:
    blob = kept.read_bytes()
    if harm == "torn":
        kept.write_bytes(blob[:20])
    elif harm == "flipped":
        kept.write_bytes(blob[:10] + bytes([blob[10] ^ 1]) + blob[11:])
    elif harm == "grown":
        kept.write_bytes(blob + b"\0")
    else:  # a well-formed record of a value no bound has
        value = {"nan": math.nan, "negative": -1.0}[harm]
        kept.write_bytes(verdicts._norm_record(value))


@pytest.mark.parametrize("harm", ["torn", "flipped", "grown", "nan", "negative"])
def test_a_kept_file_not_of_a_bound_is_no_bound(harm: str, verdict_cache: Path,
                                                measured: list[float]) -> None:
    path = verdict_cache / "synthetic-int8_bm25.urna"
    shutil.copyfile(REF / path.name, path)
    with urna.open(path) as f:
        first = _answers(f)
    (kept,) = _kept(verdict_cache)
    _harm(kept, harm)
    with urna.open(path) as f:
        assert f._state.view.trusted
        assert _answers(f) == first
    assert len(measured) == 2 and measured[0] == measured[1]  # measured again, alike
    assert verdicts.RowNormMemo(bytes.fromhex(kept.stem)).get() == measured[0]  # kept anew


def test_another_body_keeps_its_own_bound(verdict_cache: Path, measured: list[float]) -> None:
    for name in ("synthetic-exact.urna", "synthetic-int4.urna"):
        path = verdict_cache / name
        shutil.copyfile(REF / name, path)
        with urna.open(path) as f:
            _answers(f)
    assert len(measured) == 2 and len(_kept(verdict_cache)) == 2
    # the int4 file's rows in place of the float32 file's: another body, so not its bound
    shutil.copyfile(REF / "synthetic-int4.urna", verdict_cache / "synthetic-exact.urna")
    with urna.open(verdict_cache / "synthetic-exact.urna") as f:
        assert not f._state.view.trusted  # its stat changed: a full open
        _answers(f)
        assert f._state.scoring.max_row_norm() == measured[1]  # the int4 body's, kept before
    assert len(measured) == 2


def test_no_bound_is_kept_when_verdicts_are_off(verdict_cache: Path, measured: list[float],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = verdict_cache / "synthetic-exact.urna"
    shutil.copyfile(REF / path.name, path)
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")
    for _ in range(2):
        with urna.open(path) as f:
            assert f._state.scoring.norm_memo is None
            _answers(f)
    assert len(measured) == 2 and not _kept(verdict_cache)


def test_a_small_file_keeps_no_bound(verdict_cache: Path, measured: list[float],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = verdict_cache / "synthetic-exact.urna"
    shutil.copyfile(REF / path.name, path)
    monkeypatch.setattr(verdicts, "MIN_BYTES", path.stat().st_size + 1)
    with urna.open(path) as f:
        assert f._state.scoring.norm_memo is None
        _answers(f)
    assert len(measured) == 1 and not _kept(verdict_cache)


def test_the_record_holds_the_bound_bit_for_bit(verdict_cache: Path) -> None:
    memo = verdicts.RowNormMemo(bytes(range(32)))
    assert memo.get() is None
    for bound in (0.0, 1.0000156759079246, 3.5e300, math.inf):
        memo.put(bound)
        assert memo.get() == bound
    memo.put(math.nan)  # never kept: the last bound stays
    assert memo.get() == math.inf
    assert struct.unpack_from("<d", verdicts._norm_record(2.5), 8)[0] == 2.5
