"""The embedder registry: a ``[[models]] preset`` or a file's ``embedding_model`` -> an embedder.

One module per embedder (``potion``: the offline default; ``floor``: the zero-dependency
lexical floor; ``sentence_transformer``: bring-your-own model directory, extra ``st``), the
protocol and hashing rules in ``base``, fingerprints reused across processes in
``fingerprints``, the content-addressed embed cache in ``cache``, what a build records about
each model in ``models``. sentence-transformers is imported only when an ``st`` model is used.
"""

from __future__ import annotations

from typing import Any

from urna.errors import EmbedderError
from urna.forge.embedders.base import PLACEHOLDER_HASH, Embedder
from urna.forge.embedders.floor import FLOOR_MODEL, FloorEmbedder
from urna.forge.embedders.potion import POTION_FOLDER, PotionEmbedder, potion_embedder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from urna.forge.embedders.potion import POTION_DIR as POTION_DIR

__all__ = ["PLACEHOLDER_HASH", "PRESETS", "Embedder", "EmbedderError", "FloorEmbedder",
           "PotionEmbedder", "create_embedder", "embedder_for_model", "potion_embedder"]

PRESETS = ("potion", "floor", "st")


def __getattr__(name: str) -> Any:
    """``POTION_DIR``, a ``Path`` made on first use (``embedders.potion`` says why)."""
    if name == "POTION_DIR":
        from urna.forge.embedders import potion

        return potion.POTION_DIR
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def create_embedder(preset: str, *, model_path: str = "", batch_size: int = 32,
                    device: str | None = None) -> Embedder:
    """Build the embedder a ``[[models]] preset`` names (``potion``, ``floor``, ``st``)."""
    if preset == "potion":
        return PotionEmbedder(model_path or POTION_FOLDER)
    if preset == "floor":
        return FloorEmbedder()
    if preset == "st":
        from urna.forge.embedders.sentence_transformer import SentenceTransformerEmbedder

        if not model_path:
            raise EmbedderError("preset 'st' needs model_path (a local sentence-transformers dir)")
        return SentenceTransformerEmbedder(model_path, batch_size=batch_size, device=device)
    raise EmbedderError(f"unknown preset '{preset}' (valid: {', '.join(PRESETS)})")


def embedder_for_model(embedding_model: str, *, model_path: str | None = None) -> Embedder:
    """Pick the query embedder for a file's manifest ``embedding_model`` (§2.6)."""
    if embedding_model.startswith("minishlab/potion"):
        return PotionEmbedder(model_path or POTION_FOLDER)
    if embedding_model == FLOOR_MODEL:
        return FloorEmbedder()
    if model_path:
        from urna.forge.embedders.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model_path, model_id=embedding_model)
    raise EmbedderError(
        f"no local embedder for model {embedding_model!r}; pass --model-path DIR "
        "(a sentence-transformers snapshot of that model)"
    )
