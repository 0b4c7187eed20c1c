"""The orderings a search can ask for (``rank=``): the names and their check, import-light.

``cosine`` is the reference's order (score descending, row ascending); ``fused`` orders the
candidate pool by the fused cosine + BM25 score (``runtime.fused``). The CLI reads the names
at start-up, so this module imports nothing heavy.
"""

from __future__ import annotations

from ..errors import InvalidInput

COSINE, FUSED = "cosine", "fused"
RANKS = (COSINE, FUSED)


def check_rank(rank: str) -> str:
    """``rank`` itself when it is ``cosine`` or ``fused``; InvalidInput otherwise."""
    if rank not in RANKS:
        raise InvalidInput(f"rank must be one of {', '.join(RANKS)}, not {rank!r}")
    return rank
