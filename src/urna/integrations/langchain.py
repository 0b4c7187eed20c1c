"""LangChain adapters (extra ``urna[langchain]``): a retriever and a read-only vector store.

``UrnaRetriever("quickstart.urna", k=4).invoke("can I use this offline")`` returns the hits of
``urna retrieve`` as ``Document``s whose metadata carry ``citation``, ``score``, ``source``,
``span`` and the hashes that verify them (see :func:`urna.integrations._hits.hit_metadata`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ..errors import InvalidInput
from ..forge.query import ask
from ..runtime.searcher import open_searcher
from ._hits import READ_ONLY, build_from_texts, hit_metadata

__all__ = ["UrnaRetriever", "UrnaVectorStore"]


def _documents(corpus: Any, query: str, k: int, options: dict[str, Any]) -> list[Document]:
    hits = ask(corpus, query, k, reuse_embedder=True, **options)
    return [Document(page_content=h.text, metadata=hit_metadata(h), id=h.citation_id)
            for h in hits]


class UrnaRetriever(BaseRetriever):
    """A LangChain retriever over a ``.urna`` file or shard catalog (``urna retrieve``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    path: str
    k: int = 10
    candidates: int | None = None
    options: dict[str, Any] = {}
    _corpus: Any = PrivateAttr(default=None)

    def __init__(self, path_or_catalog: str | os.PathLike | None = None, **kwargs: Any) -> None:
        if path_or_catalog is not None:
            kwargs["path"] = os.fspath(path_or_catalog)
        super().__init__(**kwargs)
        self._corpus = open_searcher(self.path)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        opts = dict(self.options)
        if self.candidates is not None:
            opts["candidates"] = self.candidates
        return _documents(self._corpus, query, self.k, opts)

    def close(self) -> None:
        """Release the file's map."""
        self._corpus.close()


class UrnaVectorStore(VectorStore):
    """A read-only LangChain vector store over a ``.urna`` file (searches as ``urna retrieve``)."""

    def __init__(self, path_or_catalog: str | os.PathLike, **options: Any) -> None:
        self.path = os.fspath(path_or_catalog)
        self.options = options
        self._corpus = open_searcher(self.path)

    @property
    def embeddings(self) -> Embeddings | None:
        """None: queries are embedded by the file's own model (its model_hash is checked)."""
        return None

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` best chunks for ``query``, each with its citation in the metadata."""
        return _documents(self._corpus, query, k, {**self.options, **kwargs})

    def similarity_search_with_score(self, query: str, k: int = 4,
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        """As :meth:`similarity_search`, paired with each hit's real cosine score."""
        docs = self.similarity_search(query, k, **kwargs)
        return [(d, float(d.metadata["score"])) for d in docs]

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score  # already a cosine similarity, higher is better

    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None,
                  **kwargs: Any) -> list[str]:
        """Refused: an UrnaVectorStore is read-only."""
        raise InvalidInput(f"UrnaVectorStore.add_texts: {READ_ONLY}")

    def close(self) -> None:
        """Release the file's map."""
        self._corpus.close()

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None,
                   metadatas: list[dict] | None = None, *, path: str | os.PathLike | None = None,
                   **kwargs: Any) -> UrnaVectorStore:
        """Build ``path`` from ``texts`` with the offline potion embedder, then open it.

        ``embedding`` must be None: the file embeds with its own recorded model, so queries
        pass its model_hash gate. A metadata's ``source`` becomes the chunk's source_uri.
        """
        if path is None:
            raise InvalidInput("from_texts needs path=... (where to write the .urna file)")
        if embedding is not None:
            raise InvalidInput("from_texts embeds with urna's offline potion model; pass "
                               "embedding=None (a LangChain Embeddings is not recorded in the "
                               "file, so its queries could not be checked)")
        build_from_texts(texts, path, metadatas)
        return cls(path, **kwargs)

    @classmethod
    def from_documents(cls, documents: list[Document], embedding: Embeddings | None = None,
                       **kwargs: Any) -> UrnaVectorStore:
        """Build from ``Document``s (page_content, metadata ``source``); ``path=`` required."""
        return cls.from_texts([d.page_content for d in documents], embedding,
                              [dict(d.metadata) for d in documents], **kwargs)
