"""How long the randomised tests search: moderate by default, the long settings on request.

``make test`` (CI) runs every property test, fuzz budget and coverage-guided run at the
default size; ``URNA_LONG_TESTS=1`` (``make test-long``) gives each the long size it was
written with. Both sizes check the same properties; the long one tries more inputs.
"""

from __future__ import annotations

import os

LONG = os.environ.get("URNA_LONG_TESTS") == "1"


def examples(long: int, default: int) -> int:
    """Hypothesis ``max_examples``: ``long`` under URNA_LONG_TESTS=1, else ``default``."""
    return long if LONG else default


def seconds(long: float, default: float) -> float:
    """A fuzz time budget in seconds: ``long`` under URNA_LONG_TESTS=1, else ``default``."""
    return long if LONG else default
