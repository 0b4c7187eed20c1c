"""The OpenAPI 3.0 document of the serve API (``GET /openapi.json``).

Written by hand from the limits in :mod:`urna.serve.corpora`, so the document and the checks
share one set of numbers. Every operation lists its 4xx answers with the error schema.
"""

from __future__ import annotations

from typing import Any

from ..runtime.ranks import COSINE, RANKS
from .corpora import CANDIDATES_MAX, CITATION_MAX, EF_MAX, HOPS_MAX, K_MAX, MODES, TEXT_MAX

_ERROR = {"$ref": "#/components/schemas/Error"}
_WHERE = {"type": "object", "description": "Only chunks matching this metadata filter "
          "(README, Metadata and filters); a bad filter is a 422 naming the field or operator.",
          "example": {"lang": "en", "year": {"$gte": 2020}}}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "Malformed request (body not JSON, not an object, malformed citation)",
            404: "Unknown corpus, or a citation this corpus does not hold",
            413: "Request body too large",
            422: "A field is missing, of the wrong type or out of range, or the query is "
                 "refused by the runtime (wrong dimension, NaN, model mismatch)"}
    return {str(c): _json(_ERROR, text[c]) for c in codes}


def _body(ref: str, example: dict[str, Any]) -> dict[str, Any]:
    return {"required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"},
                                             "example": example}}}


def _k(default: int = 10) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": K_MAX, "default": default}


def _hit_schema(retrieve: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "chunk_id": {"type": "string"}, "score": {"type": "number"},
        "score_type": {"type": "string"}, "source_uri": {"type": "string"},
        "offset_start": {"type": "integer"}, "offset_end": {"type": "integer"},
        "file_hash": {"type": "string"}, "content_hash": {"type": "string"},
        "citation_id": {"type": "string"}}
    if retrieve:
        props.update(text={"type": "string"}, rerank_source={"type": "string"})
    else:
        props.update(embedding_model={"type": "string"}, index_type={"type": "string"},
                     reranked={"type": "boolean"})
    required = sorted(props)
    # a fused list (score_type "fused") also carries the evidence that ordered it
    props.update(lexical_score={"type": "number", "description": "BM25 score (rank fused)"},
                 fused_score={"type": "number", "description": "fused score (rank fused)"})
    return {"type": "object", "properties": props, "required": required}


def _rank_schema(default: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(RANKS), "default": default,
            "description": "fused: cosine + BM25; cosine: the reference's order"}


def document(names: list[str]) -> dict[str, Any]:
    """The OpenAPI document as a dict; ``names`` (the served corpora) enumerate ``{name}``."""
    from ..forge.query import DEFAULT_RANK

    _NAME = [{"name": "name", "in": "path", "required": True,
              "description": "Corpus name (the file's stem)",
              "schema": {"type": "string", "enum": list(names)},
              **({"example": names[0]} if names else {})}]
    hits = {"type": "array", "items": {"$ref": "#/components/schemas/SearchHit"}}
    rhits = {"type": "array", "items": {"$ref": "#/components/schemas/RetrieveHit"}}
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {
            "type": "object", "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}}}}},
        "SearchHit": _hit_schema(False),
        "RetrieveHit": _hit_schema(True),
        "SearchRequest": {
            "type": "object", "additionalProperties": False,
            "description": "A query vector (normalised server-side), or a text embedded with "
                           "the corpus's own model; hybrid also uses the text for BM25.",
            "properties": {
                "vector": {"type": "array", "items": {"type": "number"}},
                "text": {"type": "string", "maxLength": TEXT_MAX},
                "k": _k(), "mode": {"type": "string", "enum": list(MODES), "default": "exact"},
                "ef": {"type": "integer", "minimum": 1, "maximum": EF_MAX, "default": 100},
                "candidates": {"type": "integer", "minimum": 1, "maximum": CANDIDATES_MAX},
                "hops": {"type": "integer", "minimum": 0, "maximum": HOPS_MAX, "default": 1},
                "where": _WHERE, "rank": _rank_schema(COSINE)}},
        "RetrieveRequest": {
            "type": "object", "additionalProperties": False, "required": ["text"],
            "properties": {"text": {"type": "string", "minLength": 1, "maxLength": TEXT_MAX},
                           "k": _k(),
                           "candidates": {"type": "integer", "minimum": 1,
                                          "maximum": CANDIDATES_MAX},
                           "where": _WHERE, "rank": _rank_schema(DEFAULT_RANK)}},
        "CiteRequest": {
            "type": "object", "additionalProperties": False, "required": ["citation"],
            "properties": {"citation": {"type": "string", "maxLength": CITATION_MAX,
                                        "example": "urna://sha256:<content_hash>/sha256:<chunk_id>"}}},
    }
    paths: dict[str, Any] = {
        "/api/corpora": {"get": {
            "operationId": "listCorpora", "summary": "Every served corpus: hashes, dims, dtype, "
                                                     "capabilities",
            "responses": {"200": _json({"type": "object", "required": ["corpora"],
                                        "properties": {"corpora": {"type": "array"}}},
                                       "The served corpora")}}},
        "/api/corpora/{name}/search": {"post": {
            "operationId": "search", "summary": "Search by vector (or embedded text) in one mode",
            "parameters": _NAME,
            "requestBody": _body("SearchRequest", {"text": "can I use this offline", "k": 3,
                                                   "mode": "exact"}),
            "responses": {"200": _json({"type": "object", "required": ["hits"],
                                        "properties": {"hits": hits}}, "Ranked hits"),
                          **_errors(400, 404, 413, 422)}}},
        "/api/corpora/{name}/retrieve": {"post": {
            "operationId": "retrieve",
            "summary": "Text embedded with the corpus's model, gated and routed like urna retrieve",
            "parameters": _NAME, "requestBody": _body("RetrieveRequest",
                                  {"text": "can I use this offline", "k": 3}),
            "responses": {"200": _json({"type": "object", "required": ["hits"],
                                        "properties": {"hits": rhits}}, "Cited hits with text"),
                          **_errors(400, 404, 413, 422)}}},
        "/api/corpora/{name}/cite": {"post": {
            "operationId": "cite", "summary": "Resolve a citation to its text, span and source",
            "parameters": _NAME, "requestBody": _body("CiteRequest", {"citation": "urna://sha256:0/sha256:0"}),
            "responses": {"200": _json({"type": "object", "required": ["text", "span",
                                                                       "source_uri"]},
                                       "The cited chunk"),
                          **_errors(400, 404, 413, 422)}}},
        "/api/corpora/{name}/inspect": {"get": {
            "operationId": "inspect", "summary": "The inspect() document of the file",
            "parameters": _NAME,
            "responses": {"200": _json({"type": "object"}, "Header, sections, manifest, hashes"),
                          **_errors(404)}}},
    }
    return {"openapi": "3.0.3",
            "info": {"title": "urna serve", "version": "1",
                     "description": "Search, retrieve, cite and inspect .urna files. Errors are "
                                    "4xx with {\"error\": {\"type\", \"message\"}}."},
            "paths": paths, "components": {"schemas": schemas}}
