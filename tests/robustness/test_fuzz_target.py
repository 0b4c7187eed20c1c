"""The atheris target in ``fuzz/`` keeps working without atheris: replaying its seeds and
seeded corruptions of them (both modes: whole file and single decoder) raises nothing but
``UrnaError``, which the target swallows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from helpers.mutate import Rng, mutate

TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_reader.py"


@pytest.fixture(scope="module")
def target():
    spec = importlib.util.spec_from_file_location("fuzz_reader", TARGET)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._imports()
    return module


def test_seeds_replay_cleanly(target) -> None:
    assert len(target.SEED_FILES) >= 10
    for f in target.SEED_FILES:
        target.one_input(b"\x00" + f.read_bytes())


def test_every_decoder_mode_takes_garbage(target) -> None:
    n = len(target._decoders(1, 64))
    rng = Rng(3)
    for which in range(n):
        for k in range(12):
            body = bytes(rng.u64() & 0xFF for _ in range(rng.below(96)))
            target.one_input(bytes([1, which, k, k]) + body)


def test_mutated_seeds_replay_cleanly(target) -> None:
    seeds = [f.read_bytes() for f in target.SEED_FILES[:4]]
    for s in range(120):
        data, _ = mutate(seeds[s % len(seeds)], Rng(s))
        target.one_input(bytes([2 * (s % 2)]) + bytes(data))  # raw and resealed modes
