"""The server's search and retrieve bodies take ``where``; a bad filter is a 422 naming it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from serve_support import REF, start_server

from helpers.vectors import expected
from urna.format.append import with_section
from urna.format.layout import SECTION_METADATA
from urna.format.sections.metadata import encode_metadata
from urna.serve.corpora import Corpora

NAME = "quickstart-hybrid"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    n = expected()[f"{NAME}.urna"]["inspect"]["n_chunks"]
    rows = [{"part": i % 3} for i in range(n)]
    path = tmp_path_factory.mktemp("where") / f"{NAME}.urna"
    path.write_bytes(with_section((REF / f"{NAME}.urna").read_bytes(), SECTION_METADATA,
                                  encode_metadata(rows, n)))
    corpora = Corpora([path, Path(REF / "quickstart-exact.urna")])
    server, thread, base = start_server(corpora)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)
        corpora.close()


def _post(url: str, verb: str, name: str = NAME, **body):
    return httpx.post(f"{url}/api/corpora/{name}/{verb}", json=body, timeout=60)


def test_search_and_retrieve_filter(url: str) -> None:
    vec = expected()[f"{NAME}.urna"]["queries"][0]["vector"]
    for mode in ("exact", "ann", "hybrid", "graph"):
        res = _post(url, "search", vector=vec, k=3, mode=mode, text="offline",
                    where={"part": {"$in": [0, 2]}})
        assert res.status_code == 200, res.text
        doc = res.json()
        assert doc["filter"]["matches"] == 8
        assert doc["hits"] and all(h["metadata"]["part"] in (0, 2) for h in doc["hits"])
    res = _post(url, "retrieve", text="can I use this offline", k=2, where={"part": 1})
    assert res.status_code == 200, res.text
    assert [h["metadata"] for h in res.json()["hits"]] == [{"part": 1}, {"part": 1}]


def test_without_where_the_bodies_are_unchanged(url: str) -> None:
    vec = expected()["quickstart-exact.urna"]["queries"][0]["vector"]
    doc = _post(url, "search", "quickstart-exact", vector=vec, k=2).json()
    assert "filter" not in doc and all("metadata" not in h for h in doc["hits"])


@pytest.mark.parametrize("where, kind, word", [
    ({"nope": 1}, "UnknownFilterField", "nope"),
    ({"part": {"$near": 1}}, "UnknownFilterOperator", "$near"),
    ({"part": "x"}, "FilterTypeError", "part"),
    ([1], "InvalidField", "where"),
])
def test_a_bad_filter_is_422_naming_it(url: str, where, kind: str, word: str) -> None:
    vec = expected()[f"{NAME}.urna"]["queries"][0]["vector"]
    for res in (_post(url, "search", vector=vec, where=where),
                _post(url, "retrieve", text="offline", where=where)):
        assert res.status_code == 422, res.text
        err = res.json()["error"]
        assert err["type"] == kind and word in err["message"]
