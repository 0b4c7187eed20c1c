"""The JSON API over a real server on loopback: answers equal the reference's, errors are 4xx.

Expected hits come from ``tests/data/ref-0.5.1/expected.json`` (the reference's own answers for
the same vectors and texts), never from our runtime.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor

import pytest
from serve_support import EXPECTED, REF_SERVED, TOP_OFFLINE

import urna

SEARCH_KEYS = {"chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
               "embedding_model", "index_type", "reranked", "file_hash", "content_hash",
               "citation_id"}
RETRIEVE_KEYS = {"chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
                 "citation_id", "text", "file_hash", "content_hash", "rerank_source"}


def _same_hits(got: list[dict], want: list[dict]) -> None:
    assert [h["chunk_id"] for h in got] == [h["chunk_id"] for h in want]
    for g, w in zip(got, want, strict=True):
        assert set(g) == set(w)
        assert math.isclose(g["score"], w["score"], abs_tol=1e-6)
        assert {k: v for k, v in g.items() if k != "score"} == \
               {k: v for k, v in w.items() if k != "score"}


def _error(res, status: int, kind: str, *words: str) -> None:
    assert res.status_code == status, res.text
    err = res.json()["error"]
    assert err["type"] == kind
    for w in words:
        assert w in err["message"]


@pytest.fixture(scope="module")
def client(served):
    with served.client() as c:
        yield c


def test_corpora_lists_every_file_with_hashes_dims_and_capabilities(served, client) -> None:
    res = client.get("/api/corpora")
    assert res.status_code == 200
    listing = {c["name"]: c for c in res.json()["corpora"]}
    assert list(listing) == list(served.paths)
    for name in REF_SERVED:
        c, exp = listing[name], EXPECTED[f"{name}.urna"]
        assert (c["file_hash"], c["content_hash"]) == (exp["file_hash"], exp["content_hash"])
        assert c["embedding_dim"] == exp["inspect"]["embedding_dim"]
        assert c["n_embeddings"] == exp["inspect"]["n_embeddings"]
        assert c["dtype"] == exp["inspect"]["manifest"]["dtype"]
        assert c["model_hash"] == exp["inspect"]["manifest"]["model_hash"]
        names = {s["name"] for s in exp["inspect"]["sections"]}
        assert c["capabilities"]["ann"] == ("hnsw_index" in names)
        assert c["capabilities"]["bm25"] == ("bm25_index" in names)
        assert c["capabilities"]["graph"] == ("graph_adjacency" in names)
    assert res.json()["encoding_names"]["1"] == "zstd"


@pytest.mark.parametrize("name", REF_SERVED)
def test_search_modes_equal_the_reference(client, name: str) -> None:
    for q in EXPECTED[f"{name}.urna"]["queries"]:
        calls = {"search": {"mode": "exact"},
                 "search_ann_ef32": {"mode": "ann", "ef": 32},
                 "search_hybrid": {"mode": "hybrid", "text": q["text"], "candidates": 50},
                 "search_graph": {"mode": "graph"}}
        for key, extra in calls.items():
            if key not in q:
                continue
            res = client.post(f"/api/corpora/{name}/search",
                              json={"vector": q["vector"], "k": 5, **extra})
            assert res.status_code == 200, res.text
            assert all(set(h) == SEARCH_KEYS for h in res.json()["hits"])
            _same_hits(res.json()["hits"], q[key])


@pytest.mark.parametrize("name", ["quickstart-hybrid", "quickstart-exact"])
def test_retrieve_embeds_server_side_and_equals_the_reference(client, name: str) -> None:
    for q in EXPECTED[f"{name}.urna"]["queries"]:
        res = client.post(f"/api/corpora/{name}/retrieve",
                          json={"text": q["text"], "k": 5, "rank": "cosine"})
        assert res.status_code == 200, res.text
        body = res.json()
        assert all(set(h) == RETRIEVE_KEYS for h in body["hits"])
        _same_hits(body["hits"], q["retrieve"])
        assert body["route"] == ("hybrid" if name.endswith("hybrid") else "exact")


def test_quickstart_question_top_hit_and_citation_resolve(client) -> None:
    res = client.post("/api/corpora/quickstart/retrieve",
                      json={"text": "can I use this offline", "k": 3})
    top = res.json()["hits"][0]
    assert top["chunk_id"] == TOP_OFFLINE
    assert top["source_uri"] == "demo/04-offline-sovereignty.md"
    assert top["text"].startswith("to keep that promise for a brand-new user")
    assert (top["offset_start"], top["offset_end"]) == (10, 11)  # spec build: spans = ordinals
    cited = client.post("/api/corpora/quickstart/cite", json={"citation": top["citation_id"]})
    assert cited.status_code == 200
    assert cited.json() == {"citation_id": top["citation_id"], "chunk_id": TOP_OFFLINE,
                            "content_hash": top["content_hash"], "ordinal": 10,
                            "text": top["text"], "source_uri": "demo/04-offline-sovereignty.md",
                            "span": {"byte_start": 10, "byte_end": 11}}


def test_search_by_text_is_the_gated_embedding(client) -> None:
    q = EXPECTED["quickstart-exact.urna"]["queries"][0]
    res = client.post("/api/corpora/quickstart-exact/search", json={"text": q["text"], "k": 5})
    assert res.status_code == 200
    _same_hits(res.json()["hits"], q["search"])


@pytest.mark.parametrize("name", REF_SERVED)
def test_inspect_is_the_reference_inspect_dict(client, name: str) -> None:
    res = client.get(f"/api/corpora/{name}/inspect")
    assert res.status_code == 200
    got, want = res.json(), EXPECTED[f"{name}.urna"]["inspect"]
    assert {k: got[k] for k in want if k != "simd_backend"} == \
           {k: want[k] for k in want if k != "simd_backend"}


def test_files_are_opened_once_and_shared(served, client, monkeypatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(urna, "open", lambda p: opened.append(str(p)))
    q = EXPECTED["synthetic-hybrid.urna"]["queries"][0]
    body = {"vector": q["vector"], "k": 5, "mode": "ann", "ef": 32}

    def call(_: int) -> list[str]:
        with served.client() as c:
            return [h["chunk_id"] for h in
                    c.post("/api/corpora/synthetic-hybrid/search", json=body).json()["hits"]]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(call, range(32)))
    assert answers == [[h["chunk_id"] for h in q["search_ann_ef32"]]] * 32
    assert opened == []  # every request used the file opened at start


# ----------------------------------------------------------------------------- bad input


def _search(client, name="quickstart-exact", **body):
    return client.post(f"/api/corpora/{name}/search", json=body)


def test_unknown_corpus_is_404_naming_the_served_ones(client) -> None:
    for path in ("/api/corpora/nope/inspect",):
        _error(client.get(path), 404, "UnknownCorpus", "'nope'", "quickstart-exact")
    for verb in ("search", "retrieve", "cite"):
        _error(client.post(f"/api/corpora/nope/{verb}", json={}), 404, "UnknownCorpus")


def test_wrong_dimension_nan_and_non_numbers_are_422(client) -> None:
    _error(_search(client, vector=[0.1] * 255), 422, "DimensionMismatch", "expected 256, got 255")
    _error(_search(client, vector=[]), 422, "DimensionMismatch", "got 0")
    raw = "[" + ",".join(["0.1"] * 255 + ["NaN"]) + "]"
    res = client.post("/api/corpora/quickstart-exact/search",
                      content=f'{{"vector": {raw}}}', headers={"content-type": "application/json"})
    _error(res, 422, "InvalidQueryValue", "vector[255]")
    _error(_search(client, vector=[1e39] + [0.0] * 255), 422, "InvalidQueryValue", "vector[0]")
    _error(_search(client, vector=[10**400] + [0.0] * 255), 422, "InvalidQueryValue")
    _error(_search(client, vector=[True] + [0.0] * 255), 422, "InvalidField", "vector[0]")
    _error(_search(client, vector=["1"] * 256), 422, "InvalidField")
    _error(_search(client, vector={"a": 1}), 422, "InvalidField", "array")
    _error(_search(client, vector=[0.0] * 256), 422, "ZeroNormQuery")


@pytest.mark.parametrize("k", [0, -1, 1001, 2**70])
def test_k_out_of_range_is_422(client, k: int) -> None:
    _error(_search(client, vector=[0.1] * 256, k=k), 422, "OutOfRange", "k must be between 1")
    _error(client.post("/api/corpora/quickstart-exact/retrieve", json={"text": "x", "k": k}),
           422, "OutOfRange")


def test_field_types_and_unknown_fields_are_422(client) -> None:
    v = [0.1] * 256
    _error(_search(client, vector=v, k="5"), 422, "InvalidField", "k must be an integer")
    _error(_search(client, vector=v, k=2.0), 422, "InvalidField")
    _error(_search(client, vector=v, mode="fuzzy"), 422, "InvalidField", "exact, ann")
    _error(_search(client, vector=v, ef=0, mode="ann"), 422, "OutOfRange", "ef")
    _error(_search(client, vector=v, hops=99, mode="graph"), 422, "OutOfRange", "hops")
    _error(_search(client, vector=v, query=[1]), 422, "UnknownField", "'query'")
    _error(_search(client), 422, "MissingField", "vector")
    _error(_search(client, text="x" * 10_001), 422, "OutOfRange", "text")
    r = "/api/corpora/quickstart-exact/retrieve"
    _error(client.post(r, json={"k": 2}), 422, "MissingField", "text is required")
    _error(client.post(r, json={"text": 5}), 422, "InvalidField", "text must be a string")
    _error(client.post(r, json={"text": "   "}), 422, "InvalidInput", "empty query text")


def test_bodies_that_are_not_a_json_object_are_400(client) -> None:
    url = "/api/corpora/quickstart-exact/search"
    _error(client.post(url, content=b""), 400, "InvalidBody", "empty")
    _error(client.post(url, content=b"{not json"), 400, "InvalidJson")
    _error(client.post(url, content=b"\xff\xfe{}"), 400, "InvalidJson")
    _error(client.post(url, json=[1, 2]), 400, "InvalidBody", "JSON object")
    _error(client.post(url, content=b"[" * 100_000), 400, "InvalidJson")


def test_oversized_body_is_413_declared_or_streamed(client) -> None:
    url = "/api/corpora/quickstart-exact/search"
    big = json.dumps({"vector": [0.123456789] * 100_000}).encode()
    assert len(big) > 1 << 20
    _error(client.post(url, content=big), 413, "BodyTooLarge", str(1 << 20))

    def stream():  # no content-length: the server counts while reading
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536]

    _error(client.post(url, content=stream()), 413, "BodyTooLarge")


def test_citations_malformed_400_foreign_or_missing_404(client) -> None:
    url = "/api/corpora/quickstart-exact/cite"
    _error(client.post(url, json={"citation": "http://x/y"}), 400, "MalformedCitation",
           "must start with 'urna://'")
    _error(client.post(url, json={"citation": "urna://sha256:abc"}), 400, "MalformedCitation",
           "missing chunk_id")
    _error(client.post(url, json={"citation": 7}), 422, "InvalidField")
    _error(client.post(url, json={}), 422, "MissingField")
    other = EXPECTED["quickstart-hybrid.urna"]["queries"][0]["retrieve"][0]["citation_id"]
    _error(client.post(url, json={"citation": other}), 404, "CitationError",
           "content_hash mismatch")
    mine = EXPECTED["quickstart-exact.urna"]["content_hash"]
    _error(client.post(url, json={"citation": f"urna://{mine}/sha256:{'0' * 64}"}), 404,
           "CitationError", "not found")


def test_text_queries_refused_by_the_model_gate(client) -> None:
    res = client.post("/api/corpora/wrong-hash/retrieve", json={"text": "offline"})
    _error(res, 422, "ModelHashMismatch", "sha256:" + "ab" * 32)
    _error(client.post("/api/corpora/unknown-model/retrieve", json={"text": "offline"}), 422,
           "EmbedderUnavailable", "acme/unknown-model")
    # a vector query needs no embedder and still works on both
    v = EXPECTED["quickstart-exact.urna"]["queries"][0]["vector"]
    assert _search(client, "unknown-model", vector=v, k=2).status_code == 200


def test_unknown_routes_and_methods_are_json_4xx(client) -> None:
    _error(client.get("/api/nothing"), 404, "NotFound")
    _error(client.delete("/api/corpora"), 405, "MethodNotAllowed")
    _error(client.get("/api/corpora/quickstart/search"), 405, "MethodNotAllowed")


def test_openapi_document_lists_every_route(client) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {"/api/corpora", "/api/corpora/{name}/search",
                                 "/api/corpora/{name}/retrieve", "/api/corpora/{name}/cite",
                                 "/api/corpora/{name}/inspect"}
    search = doc["components"]["schemas"]["SearchRequest"]["properties"]
    assert search["k"]["maximum"] == 1000 and search["mode"]["enum"] == ["exact", "ann",
                                                                          "hybrid", "graph"]


def test_page_and_its_assets_are_served_without_external_urls(client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for asset in ("/static/app.js", "/static/style.css"):
        res = client.get(asset)
        assert res.status_code == 200
        assert "http://" not in res.text and "https://" not in res.text
    assert "https://" not in page.text and "http://" not in page.text


def test_warming_every_corpus_keeps_answers_and_tolerates_a_model_it_cannot_load(
        served, client) -> None:
    served.corpora.warm()  # hnsw, bm25, graph files and one with an unknown model
    q = EXPECTED["synthetic-graph.urna"]["queries"][1]
    res = client.post("/api/corpora/synthetic-graph/search",
                      json={"vector": q["vector"], "k": 5, "mode": "graph"})
    _same_hits(res.json()["hits"], q["search_graph"])
    _error(client.post("/api/corpora/unknown-model/retrieve", json={"text": "x"}), 422,
           "EmbedderUnavailable")
