"""File size of the synthetic vector corpus under each preset: ours next to the reference's.

The reference sizes are the ``bytes`` recorded in tests/data/ref-0.5.1/expected.json.
Run: .venv/bin/python benchmarks/sizes.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import urna  # noqa: E402
from helpers.vectors import build_kwargs, expected  # noqa: E402


def main() -> None:
    """Print a Markdown table of sizes per variant of the synthetic corpus."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(n for n in expected() if n.startswith("synthetic-")):
            args, opts = build_kwargs(name)
            out = Path(tmp) / name
            urna.build(out, *args, **opts)
            ours, ref = out.stat().st_size, expected()[name]["bytes"]
            rows.append((name.removeprefix("synthetic-").removesuffix(".urna"), ours, ref))
    print("| variant | ours (bytes) | reference (bytes) |")
    print("|---|---:|---:|")
    for variant, ours, ref in rows:
        print(f"| {variant} | {ours:,} | {ref:,} |")


if __name__ == "__main__":
    main()
