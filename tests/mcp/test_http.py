"""``urna mcp --http --token``: the SDK's client with the token works, without it is 401."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_support import URNA_MCP, child_env

from helpers.ports import free_port, wait_for_port
from helpers.quickstart import OFFLINE_QUESTION, cli_retrieve
from mcp import Client

TOKEN = "mcp-test-token"


@pytest.fixture(scope="module")
def mcp_url(quickstart: Path):
    port = free_port()
    proc = subprocess.Popen([*URNA_MCP, str(quickstart), "--http", "--port", str(port)],
                            env=child_env(URNA_TOKEN=TOKEN), stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc, 60, "urna mcp --http")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(20)


def test_without_or_with_a_wrong_token_is_401(mcp_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        res = httpx.post(mcp_url, json=body, headers=headers, timeout=30)
        assert res.status_code == 401
        assert res.json()["error"]["type"] == "Unauthorized"


def test_the_sdk_client_with_the_token_searches(quickstart: Path, mcp_url: str) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=2)

    async def session() -> tuple:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        async with http, Client(streamable_http_client(mcp_url, http_client=http)) as c:
            tools = [t.name for t in (await c.list_tools()).tools]
            return tools, await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": 2})

    tools, found = asyncio.run(session())
    assert "search" in tools and not found.is_error
    assert [h["citation"] for h in found.structured_content["hits"]] == \
        [w["citation_id"] for w in want]
