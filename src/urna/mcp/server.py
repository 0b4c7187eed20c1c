"""The MCP tools and resources over :class:`urna.mcp.corpora.OpenCorpora`.

Tools return structured content (pydantic models, so the SDK publishes a JSON output
schema); searches run in a worker thread, off the server's event loop. A urna error becomes
an MCP tool error (``isError``) carrying its one-line message; the server keeps running.
"""

from __future__ import annotations

import os
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources import ResourceSecurity
from pydantic import BaseModel, Field

from ..errors import UrnaError
from ..forge.embed import EmbedderError
from ..forge.query import ask
from .corpora import OpenCorpora

K_MAX = 1000
"""Largest ``k`` a search may ask for (bounds the answer an agent must read)."""
CANDIDATES_MAX = 100_000
INSTRUCTIONS = ("Search the served .urna corpora with `search`; every hit carries a citation "
                "(urna://<content_hash>/<chunk_id>). Quote hits with their citation; `cite` (or "
                "reading the citation as a resource) returns the stored text and the hashes "
                "that verify it.")


class Hit(BaseModel):
    """One cited passage."""

    citation: str = Field(description="urna://<content_hash>/<chunk_id>; quote it with the text")
    text: str
    score: float = Field(description="Real cosine similarity to the question")
    score_type: str
    source: str = Field(description="The source document's URI")
    span: list[int] = Field(description="[start, end) in the source (bytes or rows)")
    chunk_id: str
    content_hash: str
    file_hash: str


class SearchResult(BaseModel):
    """The hits of a question, best first, as ``urna retrieve`` returns them."""

    corpus: str
    route: str = Field(description="exact | hnsw | hybrid: the index the question took")
    hits: list[Hit]


class Citation(BaseModel):
    """A citation resolved to its stored text, span, source and verifying hashes."""

    citation: str
    corpus: str
    text: str
    source: str
    span: list[int]
    chunk_id: str
    ordinal: int
    content_hash: str = Field(description="Hash of the file's chunks: the citation's identity")
    file_hash: str | None = Field(description="sha256 of the whole file (None for a catalog)")


class CorpusInfo(BaseModel):
    """One served corpus."""

    name: str
    path: str
    embedding_model: str
    embedding_dim: int
    n_embeddings: int
    model_hash: str
    content_hash: str | None
    file_hash: str | None
    ann: bool
    bm25: bool
    graph: bool


class CorpusList(BaseModel):
    """Every served corpus."""

    corpora: list[CorpusInfo]


def _hit(h: Any) -> Hit:
    return Hit(citation=h.citation_id, text=h.text, score=float(h.score), score_type=h.score_type,
               source=h.source_uri, span=[int(h.offset_start), int(h.offset_end)],
               chunk_id=h.chunk_id, content_hash=h.content_hash, file_hash=h.file_hash)


def _citation(name: str, f: Any, r: Any) -> Citation:
    return Citation(citation=r.citation_id, corpus=name, text=r.text, source=r.source_uri,
                    span=[int(r.byte_start), int(r.byte_end)], chunk_id=r.chunk_id,
                    ordinal=int(r.ordinal), content_hash=r.content_hash,
                    file_hash=getattr(f, "file_hash", None))


async def _off_loop(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a urna call in a worker thread; its errors become one-line tool errors."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except (UrnaError, EmbedderError) as e:
        raise ToolError(f"{type(e).__name__}: {e}") from None
    except TypeError as e:  # an option this urna's query does not take (rank=, where= ...)
        raise ToolError(f"unsupported search option: {e}") from None


def build_server(corpora: OpenCorpora) -> MCPServer:
    """An MCP server with the search / cite / inspect / list_corpora tools over ``corpora``."""
    mcp = MCPServer("urna", instructions=INSTRUCTIONS, log_level="WARNING")

    @mcp.tool()
    async def search(text: str, k: int = 10, corpus: str | None = None,
                     candidates: int | None = None, rank: str | None = None,
                     where: dict[str, Any] | None = None) -> SearchResult:
        """Search a corpus with a question in plain text; returns cited passages, best first.

        Answers exactly as `urna retrieve FILE TEXT -k K`. `corpus` is needed when several are
        served; `candidates`, `rank` and `where` pass through to urna's query.
        """
        if not 1 <= k <= K_MAX:
            raise ToolError(f"k must be between 1 and {K_MAX}, got {k}")
        if candidates is not None and not 1 <= candidates <= CANDIDATES_MAX:
            raise ToolError(f"candidates must be between 1 and {CANDIDATES_MAX}, got {candidates}")
        options = {key: v for key, v in (("candidates", candidates), ("rank", rank),
                                          ("where", where)) if v is not None}
        name, f = await _off_loop(corpora.get, corpus)
        res = await _off_loop(ask, f, text, k, reuse_embedder=True, **options)
        return SearchResult(corpus=name, route=res.route, hits=[_hit(h) for h in res.hits])

    @mcp.tool()
    async def cite(citation: str) -> Citation:
        """Resolve a citation (urna://<content_hash>/<chunk_id>) to its stored text, span,
        source and the hashes that verify it."""
        name, f, r = await _off_loop(corpora.resolve, citation)
        return _citation(name, f, r)

    @mcp.tool()
    async def inspect(corpus: str | None = None) -> dict[str, Any]:
        """The inspect document of a corpus: header, sections, manifest, hashes."""
        _, f = await _off_loop(corpora.get, corpus)
        return dict(await _off_loop(f.inspect))

    @mcp.tool()
    async def list_corpora() -> CorpusList:
        """The served corpora: names, models, sizes, hashes and indexes."""
        return CorpusList(corpora=[CorpusInfo(
            name=name, path=os.path.basename(corpora.paths[name]),
            embedding_model=str(f.embedding_model), embedding_dim=int(f.embedding_dim),
            n_embeddings=int(f.n_embeddings), model_hash=str(f.model_hash),
            content_hash=getattr(f, "content_hash", None), file_hash=getattr(f, "file_hash", None),
            ann=bool(f.has_ann), bm25=bool(f.has_bm25), graph=bool(f.has_graph))
            for name, f in corpora.by_name.items()])

    @mcp.resource("urna://{content_hash}/{chunk_id}", name="citation", mime_type="text/plain",
                  description="A cited chunk's stored text (the citation is the URI)",
                  security=ResourceSecurity(exempt_params={"content_hash", "chunk_id"}))
    async def citation_text(content_hash: str, chunk_id: str) -> str:
        """The stored text of ``urna://<content_hash>/<chunk_id>``."""
        try:
            _, _, r = await anyio.to_thread.run_sync(
                corpora.resolve, f"urna://{content_hash}/{chunk_id}")
        except UrnaError as e:
            raise ResourceNotFoundError(f"{type(e).__name__}: {e}") from None
        return str(r.text)

    return mcp
