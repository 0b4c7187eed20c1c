"""LlamaIndex adapter (extra ``urna[llama-index]``): a retriever of cited nodes.

``UrnaRetriever("quickstart.urna", k=4).retrieve("can I use this offline")`` returns the hits
of ``urna retrieve`` as ``NodeWithScore``s (score = real cosine) whose node metadata carry
``citation``, ``score``, ``source``, ``span`` and the verifying hashes.
"""

from __future__ import annotations

import os
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ..forge.query import ask
from ..runtime.searcher import open_searcher
from ._hits import hit_metadata

__all__ = ["UrnaRetriever"]


class UrnaRetriever(BaseRetriever):
    """A LlamaIndex retriever over a ``.urna`` file or shard catalog (``urna retrieve``)."""

    def __init__(self, path_or_catalog: str | os.PathLike, k: int = 10, *,
                 candidates: int | None = None, **options: Any) -> None:
        super().__init__()
        self.path = os.fspath(path_or_catalog)
        self.k = k
        self.options = dict(options)
        if candidates is not None:
            self.options["candidates"] = candidates
        self._corpus = open_searcher(self.path)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = ask(self._corpus, query_bundle.query_str, self.k, reuse_embedder=True,
                   **self.options)
        return [NodeWithScore(node=TextNode(id_=h.citation_id, text=h.text,
                                            metadata=hit_metadata(h)), score=float(h.score))
                for h in hits]

    def close(self) -> None:
        """Release the file's map."""
        self._corpus.close()
