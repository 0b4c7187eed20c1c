"""``urna serve`` fit to expose: bearer token, the page without one, CORS, time limit, caps and
the JSON access log, over a real uvicorn on loopback."""

from __future__ import annotations

import io
import json

import anyio
import httpx
import pytest
from serve_support import EXPECTED, REF, start_app

from urna.serve.app import create_app
from urna.serve.corpora import Corpora
from urna.serve.security import PUBLIC_PAGE, TimeLimit, protect

TOKEN = "correct horse battery staple"
ORIGIN = "https://app.example"
FILE = REF / "quickstart-exact.urna"


class Log(io.StringIO):
    """The access log's stream: the JSON lines written so far."""

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.getvalue().splitlines()]


@pytest.fixture(scope="module")
def guarded():
    corpora = Corpora([FILE])
    log = Log()
    app = protect(create_app(corpora), token=TOKEN, public=PUBLIC_PAGE,
                  cors_origins=[ORIGIN], time_limit=30.0, log_stream=log)
    server, thread, url = start_app(app)
    try:
        yield url, log
    finally:
        server.should_exit = True
        thread.join(10)
        corpora.close()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_no_token_and_a_wrong_token_are_401_the_right_one_200(guarded) -> None:
    url, _ = guarded
    with httpx.Client(base_url=url, timeout=30) as c:
        res = c.get("/api/corpora")
        assert res.status_code == 401
        assert res.json()["error"]["type"] == "Unauthorized"
        assert res.headers["www-authenticate"].startswith("Bearer")
        for wrong in ("nope", TOKEN + "x", TOKEN[:-1], "Bearer"):
            assert c.get("/api/corpora", headers=_auth(wrong)).status_code == 401
        assert c.get("/api/corpora", headers={"Authorization": TOKEN}).status_code == 401
        res = c.get("/api/corpora", headers=_auth(TOKEN))
        assert res.status_code == 200
        exp = EXPECTED["quickstart-exact.urna"]
        assert res.json()["corpora"][0]["file_hash"] == exp["file_hash"]
        assert c.post("/api/corpora/quickstart-exact/cite",
                      json={"citation": "urna://x/y"}).status_code == 401
        assert c.get("/openapi.json").status_code == 401  # it names the corpora


def test_the_page_loads_without_a_token_and_asks_for_it(guarded) -> None:
    url, _ = guarded
    with httpx.Client(base_url=url, timeout=30) as c:
        page = c.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        script = c.get("/static/app.js")
        assert script.status_code == 200
        assert "sessionStorage" in script.text and "authorization" in script.text


def test_cors_answers_only_the_given_origin(guarded) -> None:
    url, _ = guarded
    with httpx.Client(base_url=url, timeout=30) as c:
        pre = c.options("/api/corpora", headers={
            "Origin": ORIGIN, "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization"})
        assert pre.status_code == 200  # a preflight carries no token
        assert pre.headers["access-control-allow-origin"] == ORIGIN
        res = c.get("/api/corpora", headers={"Origin": ORIGIN, **_auth(TOKEN)})
        assert res.headers["access-control-allow-origin"] == ORIGIN
        res = c.get("/api/corpora", headers={"Origin": "https://evil.example", **_auth(TOKEN)})
        assert "access-control-allow-origin" not in res.headers


def test_cors_is_off_without_an_origin() -> None:
    corpora = Corpora([FILE])
    server, thread, url = start_app(protect(create_app(corpora), access_log=False))
    try:
        res = httpx.get(f"{url}/api/corpora", headers={"Origin": ORIGIN}, timeout=30)
        assert res.status_code == 200  # loopback without --token: open, as before
        assert "access-control-allow-origin" not in res.headers
    finally:
        server.should_exit = True
        thread.join(10)
        corpora.close()


def test_k_and_candidates_are_capped_with_a_typed_error(guarded) -> None:
    url, _ = guarded
    with httpx.Client(base_url=url, timeout=30, headers=_auth(TOKEN)) as c:
        vec = [1.0] + [0.0] * 255
        res = c.post("/api/corpora/quickstart-exact/search", json={"vector": vec, "k": 1001})
        assert res.status_code == 422 and res.json()["error"]["type"] == "OutOfRange"
        res = c.post("/api/corpora/quickstart-exact/search",
                     json={"vector": vec, "mode": "hybrid", "candidates": 10**9})
        assert res.status_code == 422 and res.json()["error"]["type"] == "OutOfRange"
        res = c.post("/api/corpora/quickstart-exact/search", content=b"x" * (2 << 20),
                     headers={"content-type": "application/json"})
        assert res.status_code == 413


def test_access_log_is_one_json_line_per_request_without_the_token(guarded) -> None:
    url, log = guarded
    with httpx.Client(base_url=url, timeout=30) as c:
        c.get("/api/corpora/quickstart-exact/inspect", headers=_auth(TOKEN))
        c.get("/api/corpora/quickstart-exact/inspect", headers=_auth("wrong-token"))
    records = log.records()
    assert all(set(r) == {"ts", "method", "path", "status", "ms", "corpus"} for r in records)
    mine = [r for r in records if r["path"] == "/api/corpora/quickstart-exact/inspect"][-2:]
    assert [(r["method"], r["status"], r["corpus"]) for r in mine] == [
        ("GET", 200, "quickstart-exact"), ("GET", 401, "quickstart-exact")]
    assert all(r["ms"] >= 0 for r in mine)
    assert TOKEN not in log.getvalue() and "wrong-token" not in log.getvalue()


def test_a_request_past_the_time_limit_is_a_503() -> None:
    async def stuck(scope, receive, send) -> None:
        if scope["type"] == "http":  # (uvicorn's lifespan scope comes through too)
            await anyio.sleep(60)

    server, thread, url = start_app(TimeLimit(stuck, 0.3))
    try:
        res = httpx.get(f"{url}/anything", timeout=30)
        assert res.status_code == 503
        assert res.json()["error"]["type"] == "Timeout"
    finally:
        server.should_exit = True
        thread.join(10)


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="empty token"):
        from urna.serve.security import BearerAuth

        BearerAuth(create_app, "")
