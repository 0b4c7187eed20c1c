"""The served corpora and the request semantics of the HTTP API, with no web framework.

A :class:`Corpora` opens every file once at start and shares each ``UrnaFile`` with all
requests (the map is read-only and searches are thread-safe). Each handler takes the decoded
JSON body, checks every field (type, range, size) before touching the file, and either returns
a JSON-ready dict or raises :class:`ApiError` with a 4xx status, a stable ``type`` and a
message naming the problem. Typed runtime errors (``DimensionMismatch``, ``InvalidQueryValue``,
``ModelHashMismatch`` ...) keep their class name as ``type`` and their reference text.
Handlers only check and format: a vector search runs the named path through
``runtime.searcher.search_by_mode``; a text question goes to ``urna.forge.query.ask`` (embed
with the file's own model, model_hash gate, the runtime's route and candidates), as
``urna retrieve`` does. Neither routes nor counts candidates here. Both take an optional
``where`` filter object (``urna.index.filter``); a bad filter is a 422 naming the problem.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..errors import CitationError, UrnaError
from ..format.identity import parse_citation
from ..format.layout import ENCODING_NAMES
from ..runtime import UrnaFile
from ..runtime.ranks import COSINE, RANKS
from ..runtime.resident import warm_queries
from ..runtime.searcher import SEARCH_MODES, search_by_mode

T = TypeVar("T")

K_MAX = 1000
"""Largest ``k`` a request may ask for (bounds the response size)."""
TEXT_MAX = 10_000
"""Longest query text, in characters."""
CANDIDATES_MAX = 100_000
EF_MAX = 100_000
HOPS_MAX = 8
CITATION_MAX = 1_000
MODES = SEARCH_MODES
_F32_MAX = 3.4028234663852886e38


class ApiError(Exception):
    """A request the API refuses: HTTP status, error type and a message naming the problem."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message

    def to_dict(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": {"type": ..., "message": ...}}``."""
        return {"error": {"type": self.kind, "message": self.message}}


def _from_urna(e: UrnaError) -> ApiError:
    return ApiError(422, type(e).__name__, str(e))


# ---------------------------------------------------------------------------- field checks


def _fields(body: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidBody", "the request body must be a JSON object")
    extra = sorted(set(body) - set(allowed))
    if extra:
        raise ApiError(422, "UnknownField",
                       f"unknown field {extra[0]!r} (allowed: {', '.join(allowed)})")
    return body


def _int(body: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = _opt_int(body, key, lo, hi)
    return default if value is None else value


def _opt_int(body: dict[str, Any], key: str, lo: int, hi: int) -> int | None:
    value = body.get(key)
    if value is None:  # absent or JSON null
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(422, "InvalidField", f"{key} must be an integer")
    if not lo <= value <= hi:
        raise ApiError(422, "OutOfRange", f"{key} must be between {lo} and {hi}, got {value}")
    return value


def _text(body: dict[str, Any], key: str, *, required: bool, limit: int = TEXT_MAX) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise ApiError(422, "MissingField", f"{key} is required")
        return None
    if not isinstance(value, str):
        raise ApiError(422, "InvalidField", f"{key} must be a string")
    if len(value) > limit:
        raise ApiError(422, "OutOfRange", f"{key} is longer than {limit} characters")
    return value


def _vector(body: dict[str, Any], dim: int) -> np.ndarray | None:
    value = body.get("vector")
    if value is None:
        return None
    if not isinstance(value, list):
        raise ApiError(422, "InvalidField", "vector must be an array of numbers")
    # The dimension check comes first so a huge array is refused before it is converted.
    if len(value) != dim:
        raise ApiError(422, "DimensionMismatch",
                       f"dimension mismatch: expected {dim}, got {len(value)}")
    if not {type(x) for x in value} <= {int, float}:  # bool is not a number here
        i = next(i for i, x in enumerate(value) if type(x) not in (int, float))
        raise ApiError(422, "InvalidField", f"vector[{i}] must be a number")
    try:
        arr = np.array(value, dtype=np.float64)
    except OverflowError:  # an integer beyond float64
        arr = np.array([x if isinstance(x, float) or abs(x) <= _F32_MAX else math.inf
                        for x in value], dtype=np.float64)
    bad = ~(np.abs(arr) <= _F32_MAX)  # NaN, infinities and values float32 cannot hold
    if bad.any():
        raise ApiError(422, "InvalidQueryValue", f"vector[{int(np.argmax(bad))}] is not a "
                       "finite float32 (NaN, infinity or too large)")
    return arr.astype(np.float32)


def _where(body: dict[str, Any]) -> dict[str, Any] | None:
    value = body.get("where")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError(422, "InvalidField", "where must be a JSON object (a filter)")
    return value


def _hit_dicts(hits: list[Any]) -> list[dict[str, Any]]:
    """Hits as plain dicts in field order (a fused hit adds lexical_score and fused_score, a
    file with a metadata section adds each row's JSON-ready metadata)."""
    return [h.to_dict() for h in hits]


def _with_filter(doc: dict[str, Any], res: Any) -> dict[str, Any]:
    """``doc`` plus ``filter`` (path, selectivity, matches) when the request had a where."""
    if res.explain.filter is not None:
        doc["filter"] = res.explain.filter
    return doc


def _rank(body: dict[str, Any], default: str) -> str:
    rank = body.get("rank", default)
    if rank not in RANKS:
        raise ApiError(422, "InvalidField", f"rank must be one of {', '.join(RANKS)}")
    return str(rank)


# ---------------------------------------------------------------------------------- corpus


@dataclass
class Corpus:
    """One served file: its name (the file's stem), the open UrnaFile and its query embedder."""

    name: str
    path: str
    file: UrnaFile
    _embedder: Any = None
    _embedder_error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def embedder(self) -> Any:
        """The file's own query embedder, made once (its model_hash hashes the model once)."""
        with self._lock:
            if self._embedder is None and self._embedder_error is None:
                from ..forge.embed import EmbedderError, embedder_for_model

                try:
                    emb = embedder_for_model(str(self.file.embedding_model))
                    emb.model_hash()  # pay the hashing once, not inside a request
                    self._embedder = emb
                except (EmbedderError, OSError) as e:
                    self._embedder_error = str(e)
            if self._embedder is None:
                raise ApiError(422, "EmbedderUnavailable",
                               f"corpus {self.name!r} cannot embed text: {self._embedder_error}")
            return self._embedder

    def summary(self) -> dict[str, Any]:
        """Name, hashes, dims, dtype and capabilities (the ``GET /api/corpora`` entry)."""
        f = self.file
        return {
            "name": self.name, "file": os.path.basename(self.path),
            "file_hash": f.file_hash, "content_hash": f.content_hash,
            "model_hash": f.model_hash, "embedding_model": f.embedding_model,
            "embedding_dim": f.embedding_dim, "n_embeddings": f.n_embeddings,
            "dtype": f.dtype, "index_type": f.index_type,
            "capabilities": {"exact": True, "ann": f.has_ann, "bm25": f.has_bm25,
                             "graph": f.has_graph, "spaces": f.has_spaces, "blobs": f.has_blobs},
            "space_names": f.space_names,
        }

    def warm(self) -> None:
        """Load the embedder and run one query per index present, so the first request is fast.

        These run the numba-free paths: the compiled kernels are prepared on a background
        thread (``runtime.resident``). A corpus whose model cannot embed text is still warmed
        for vector queries.
        """
        warm_queries(self.file)
        with contextlib.suppress(ApiError):  # reported per request: vector queries still work
            self.embedder()

    # -- handlers --------------------------------------------------------------------------

    def batchable(self) -> bool:
        """Whether an exact scan of this file is long enough to share (see BATCH_MIN_VALUES)."""
        return int(self.file.n_embeddings) * int(self.file.embedding_dim) >= BATCH_MIN_VALUES

    def answer_batch(self, queries: list[ExactQuery]) -> list[dict[str, Any] | ApiError]:
        """Answers of same-key exact queries (one scan for several, each as it would be alone).

        One query, or a batch whose shared call fails (a file replaced under the map, a bad
        filter), is answered query by query, so each gets the exact answer or error it would
        get alone.
        """
        if len(queries) > 1:
            try:
                results = self._shared_scan(queries)
            except UrnaError:
                pass
            else:
                return [q.render(r) for q, r in zip(queries, results, strict=True)]
        out: list[dict[str, Any] | ApiError] = []
        for q in queries:
            try:
                out.append(q.render(q.alone()))
            except UrnaError as e:
                out.append(_from_urna(e))
        return out

    def _shared_scan(self, queries: list[ExactQuery]) -> list[Any]:
        q0, f = queries[0], self.file
        vectors = np.stack([q.vector for q in queries])
        if q0.kind == "search":
            return list(f.search_batch(vectors, q0.k, where=q0.where))
        return f.retrieve_batch(vectors, q0.k, q0.candidates,
                                expected_model_hash=q0.model_hash,
                                query_texts=[q.text for q in queries], where=q0.where,
                                rank=q0.rank)

    def search(self, body: Any) -> dict[str, Any]:
        """``POST search``: a vector (or text embedded with the file's model) by one mode."""
        return _unbatched(self, self.plan_search(body))

    def plan_search(self, body: Any) -> dict[str, Any] | ExactQuery:
        """``POST search`` checked: the answer, or the exact query a shared scan answers."""
        b = _fields(body, ("vector", "text", "k", "mode", "ef", "candidates", "hops", "where",
                           "rank"))
        k = _int(b, "k", 10, 1, K_MAX)
        mode = b.get("mode", "exact")
        if mode not in MODES:
            raise ApiError(422, "InvalidField", f"mode must be one of {', '.join(MODES)}")
        text = _text(b, "text", required=False)
        ef = _int(b, "ef", 100, 1, EF_MAX)
        candidates = _opt_int(b, "candidates", 1, CANDIDATES_MAX)
        hops = _int(b, "hops", 1, 0, HOPS_MAX)
        where = _where(b)
        rank = _rank(b, COSINE)  # a mode search is the Python API's: cosine unless asked
        vector: Any = _vector(b, int(self.file.embedding_dim))
        if vector is None and text is None:
            raise ApiError(422, "MissingField", "give a vector, or a text to embed")
        f = self.file
        try:
            if vector is None:
                from ..forge.query import embed_query, manifest_of

                vector, _ = embed_query(manifest_of(f), text or "", embedder=self.embedder())
            if mode == "exact" and self.batchable():
                return ExactQuery(self, "search", vector, k, where, rank, candidates, text)
            res = search_by_mode(f, mode, vector, k, text=text or "", ef=ef,
                                 candidates=candidates, hops=hops, where=where, rank=rank)
        except UrnaError as e:
            raise _from_urna(e) from None
        return self._search_doc(mode, k, res)

    def _search_doc(self, mode: str, k: int, res: Any) -> dict[str, Any]:
        return _with_filter({"corpus": self.name, "mode": mode, "index_type": res.index_type,
                             "k_requested": k, "k_returned": res.k_returned,
                             "query_time_ms": res.query_time_ms}, res) | {
            "hits": _hit_dicts(res.hits)}

    def retrieve(self, body: Any) -> dict[str, Any]:
        """``POST retrieve``: text embedded server-side, gated and routed like ``urna retrieve``."""
        return _unbatched(self, self.plan_retrieve(body))

    def plan_retrieve(self, body: Any) -> dict[str, Any] | ExactQuery:
        """``POST retrieve`` checked: the answer, or the exact query a shared scan answers."""
        from ..forge.embed import EmbedderError
        from ..forge.query import DEFAULT_RANK, ask, embed_query, manifest_of
        from ..runtime.routing import EXACT, choose_route

        b = _fields(body, ("text", "k", "candidates", "where", "rank"))
        text = _text(b, "text", required=True) or ""
        k = _int(b, "k", 10, 1, K_MAX)
        candidates = _opt_int(b, "candidates", 1, CANDIDATES_MAX)
        where = _where(b)
        rank = _rank(b, DEFAULT_RANK)  # a text question: the best measured ranking
        emb = self.embedder()
        f = self.file
        try:
            if self.batchable() and choose_route(f.index_type, f.has_bm25, f.has_ann, k,
                                                 candidates, text).path == EXACT:
                # ask() is this embedding then retrieve(); the retrieve part is shared
                vector, emb = embed_query(manifest_of(f), text, embedder=emb)
                return ExactQuery(self, "retrieve", vector, k, where, rank, candidates, text,
                                  emb.model_hash())
            res = ask(f, text, k, candidates=candidates, embedder=emb, where=where, rank=rank)
        except UrnaError as e:
            raise _from_urna(e) from None
        except EmbedderError as e:
            raise ApiError(422, "EmbedderError", str(e)) from None
        return self._retrieve_doc(res)

    def _retrieve_doc(self, res: Any) -> dict[str, Any]:
        return _with_filter({"corpus": self.name, "route": res.route,
                             "candidates": res.candidate_budget,
                             "fusion": res.explain.fusion_mode, "rerank_source": res.disclosure,
                             "query_time_ms": res.query_time_ms}, res) | {
            "hits": _hit_dicts(res.hits)}

    def cite(self, body: Any) -> dict[str, Any]:
        """``POST cite``: a citation resolved to its stored text, span and source."""
        b = _fields(body, ("citation",))
        citation = _text(b, "citation", required=True, limit=CITATION_MAX) or ""
        try:
            parse_citation(citation)  # a malformed citation is a bad request ...
        except CitationError as e:
            raise ApiError(400, "MalformedCitation", str(e)) from None
        try:
            r = self.file.cite(citation)
        except CitationError as e:  # ... a well-formed one this file does not hold is not found
            raise ApiError(404, "CitationError", str(e)) from None
        return {"citation_id": r.citation_id, "chunk_id": r.chunk_id,
                "content_hash": r.content_hash, "ordinal": r.ordinal, "text": r.text,
                "source_uri": r.source_uri,
                "span": {"byte_start": r.byte_start, "byte_end": r.byte_end}}

    def inspect(self) -> dict[str, Any]:
        """``GET inspect``: the ``UrnaFile.inspect()`` dict."""
        return self.file.inspect()


# ------------------------------------------------------------------------ shared exact scans

BATCH_MIN_VALUES = 1 << 20
"""Stored values (rows x dim) from which exact queries are batched: below ~4 MB of float32 a
scan takes less than the batching window, so a small file answers each query alone."""


@dataclass(eq=False)
class ExactQuery:
    """The exact vector part of a checked request, which one scan may share with others.

    ``key`` is everything besides the vector that changes the answer: the corpus object (a
    reloaded file is another one), the handler, k, the filter, the rank and the candidates.
    """

    corpus: Corpus
    kind: str  # "search" or "retrieve"
    vector: np.ndarray
    k: int
    where: dict[str, Any] | None
    rank: str
    candidates: int | None
    text: str | None
    model_hash: str | None = None  # retrieve's gate: the embedder's

    @property
    def key(self) -> tuple[Any, ...]:
        """Queries with equal keys can share one scan."""
        where = None if self.where is None else json.dumps(self.where, sort_keys=True)
        return (id(self.corpus), self.kind, self.k, where, self.rank, self.candidates,
                self.model_hash)

    def alone(self) -> Any:
        """This query's result as the unbatched handler computes it."""
        f = self.corpus.file
        if self.kind == "search":
            return f.search(self.vector, self.k, where=self.where)
        return f.retrieve(self.vector, self.k, candidates=self.candidates or None,
                          expected_model_hash=self.model_hash, query_text=self.text,
                          where=self.where, rank=self.rank)

    def render(self, res: Any) -> dict[str, Any]:
        """The response document of this query's result."""
        if self.kind == "search":
            return self.corpus._search_doc("exact", self.k, res)
        return self.corpus._retrieve_doc(res)


def _unbatched(corpus: Corpus, plan: dict[str, Any] | ExactQuery) -> dict[str, Any]:
    """A plan answered on its own (the handlers called directly, ``--batch-max 1``)."""
    if isinstance(plan, dict):
        return plan
    (out,) = corpus.answer_batch([plan])
    if isinstance(out, ApiError):
        raise out
    return out


# --------------------------------------------------------------------------------- corpora


class Corpora:
    """Every served file, opened once; looked up by name."""

    def __init__(self, paths: list[str | os.PathLike]) -> None:
        from urna.runtime import open_file
        from urna.runtime.corpora import open_named

        self._by_name: dict[str, Corpus] = open_named(
            paths, lambda name, path: Corpus(name, path, open_file(path)), lambda c: c.file.close())

    def names(self) -> list[str]:
        """Corpus names in the order the files were given."""
        return list(self._by_name)

    def get(self, name: str) -> Corpus:
        """The corpus called ``name``; ApiError 404 naming the served ones otherwise."""
        c = self._by_name.get(name)
        if c is None:
            raise ApiError(404, "UnknownCorpus",
                           f"no corpus named {name!r} (served: {', '.join(self._by_name)})")
        return c

    def call(self, name: str, action: Callable[[Corpus], T]) -> T:
        """``action(corpus)`` on the corpus called ``name`` (a worker-thread call)."""
        return action(self.get(name))

    def lease(self, name: str) -> contextlib.AbstractContextManager[Corpus]:
        """The corpus ``name``, kept open until the block ends (files here are never swapped)."""
        return contextlib.nullcontext(self.get(name))

    def listing(self) -> dict[str, Any]:
        """The ``GET /api/corpora`` document."""
        return {"corpora": [c.summary() for c in self._by_name.values()],
                "encoding_names": {str(k): v for k, v in ENCODING_NAMES.items()}}

    def files(self) -> list[UrnaFile]:
        """The served files, in the order given."""
        return [c.file for c in self._by_name.values()]

    def warm(self) -> None:
        """Warm every corpus (see :meth:`Corpus.warm`)."""
        for c in self._by_name.values():
            c.warm()

    def close(self) -> None:
        """Close every file (idempotent)."""
        for c in self._by_name.values():
            c.file.close()
