"""A writer process for the crash tests: ``python writer_proc.py CATALOG OP URI``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import urna  # noqa: E402
from living.corpus import document  # noqa: E402


def main() -> None:
    """Run one write (add, remove, replace or compact) on the catalog."""
    path, op, uri = sys.argv[1:4]
    with urna.open_catalog(path) as cat:
        if op == "add":
            cat.add(document(uri))
        elif op == "remove":
            cat.remove(sources=[uri])
        elif op == "replace":
            cat.replace(uri, document(uri, 5))
        else:
            cat.compact()


if __name__ == "__main__":
    main()
