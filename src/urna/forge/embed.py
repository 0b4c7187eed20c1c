"""Compatibility names: the embedders now live in ``urna.forge.embedders`` (one module each).

Kept so ``from urna.forge.embed import ...`` in existing code keeps working; new code imports
from ``urna.forge.embedders`` (registry, ``PLACEHOLDER_HASH``, ``Embedder``) or its modules.
"""

from __future__ import annotations

from typing import Any

from urna.errors import EmbedderError
from urna.forge.embedders import PRESETS, create_embedder, embedder_for_model
from urna.forge.embedders.base import (
    PLACEHOLDER_HASH,
    Embedder,
    files_hash,
    fingerprint_hash,
    l2_normalize_rows,
    sha256_file,
)
from urna.forge.embedders.floor import FLOOR_ID, FLOOR_MODEL, FLOOR_SEED, FloorEmbedder
from urna.forge.embedders.potion import (
    POTION_FILES,
    POTION_FOLDER,
    POTION_ID,
    POTION_MODEL,
    PotionEmbedder,
    check_potion_dir,
    potion_embedder,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from urna.forge.embedders.potion import POTION_DIR

__all__ = ["FLOOR_ID", "FLOOR_MODEL", "FLOOR_SEED", "PLACEHOLDER_HASH", "POTION_DIR",
           "POTION_FILES", "POTION_FOLDER", "POTION_ID", "POTION_MODEL", "PRESETS", "Embedder",
           "EmbedderError", "FloorEmbedder", "PotionEmbedder", "check_potion_dir",
           "create_embedder", "embedder_for_model", "files_hash", "fingerprint_hash",
           "l2_normalize_rows", "potion_embedder", "sha256_file"]


def __getattr__(name: str) -> Any:
    """``POTION_DIR``, a ``Path`` made on first use (``embedders.potion`` says why)."""
    if name == "POTION_DIR":
        from urna.forge.embedders import potion

        return potion.POTION_DIR
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
