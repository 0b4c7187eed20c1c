"""Files damaged in two places: two reference mutation cases of one source joined, resealed.

``pair_keys()`` lists every pair of same-length resealed cases (``*_fixed``) of one source,
bar two of the same section; ``damaged_twice`` builds one; ``DATA`` holds the reference
wheel's ``urna validate`` message on each pair it refuses (``tests/robustness/make_two_faults.py``).
"""

from __future__ import annotations

import itertools

from helpers.mutate import DATA_DIR, REF_DIR, load_cases, reseal, source_bytes, write_patches

DATA = DATA_DIR / "two-faults-0.5.1.json"
CASES = load_cases()


def pair_keys() -> list[tuple[str, str]]:
    """Every pair of same-length resealed cases of one source, two sections apart or random."""
    by_src: dict[str, list[str]] = {}
    for key, case in CASES.items():
        if "fixed" in case["mutation"] and \
                case["length"] == (REF_DIR / case["src"]).stat().st_size:
            by_src.setdefault(case["src"], []).append(key)
    pairs = []
    for src in sorted(by_src):
        for first, second in itertools.combinations(sorted(by_src[src]), 2):
            a, b = CASES[first]["mutation"][:3], CASES[second]["mutation"][:3]
            if not (a == b and a.startswith("s")):
                pairs.append((first, second))
    return pairs


def damaged_twice(first: str, second: str) -> bytes:
    """The source of both cases with the patches of both, resealed."""
    buf = bytearray(source_bytes(CASES[first]["src"]))
    for key in (first, second):
        write_patches(buf, CASES[key]["patch"])
    return bytes(reseal(buf))
