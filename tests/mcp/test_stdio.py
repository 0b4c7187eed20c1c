"""``urna mcp FILE`` over stdio, driven by the MCP SDK's own client in a subprocess.

Expected answers: ``urna retrieve`` (the CLI, another subprocess) and facts of the corpus.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from mcp_support import URNA_MCP, child_env

import urna
from helpers.quickstart import OFFLINE_QUESTION, OFFLINE_SOURCE, cli_retrieve
from mcp import Client, StdioServerParameters


def _params(*files: Path) -> StdioServerParameters:
    return StdioServerParameters(command=URNA_MCP[0], args=[*URNA_MCP[1:], *map(str, files)],
                                 env=child_env())


def test_tools_search_cite_and_a_citation_resource(quickstart: Path) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=3)

    async def session() -> dict:
        async with Client(_params(quickstart)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            found = await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": 3})
            top = found.structured_content["hits"][0]["citation"]
            cited = await c.call_tool("cite", {"citation": top})
            read = await c.read_resource(top)
            templates = (await c.list_resource_templates()).resource_templates
            listed = await c.call_tool("list_corpora", {})
            inspected = await c.call_tool("inspect", {})
            return {"tools": tools, "found": found, "cited": cited, "read": read,
                    "templates": templates, "listed": listed, "inspected": inspected}

    got = asyncio.run(session())
    assert set(got["tools"]) == {"search", "cite", "inspect", "list_corpora"}
    schema = got["tools"]["search"].output_schema
    assert schema is not None and "hits" in schema["properties"]
    found = got["found"]
    assert not found.is_error
    hits = found.structured_content["hits"]
    assert [h["citation"] for h in hits] == [w["citation_id"] for w in want]
    assert all(math.isclose(h["score"], w["score"], abs_tol=1e-6)
               for h, w in zip(hits, want, strict=True))
    assert hits[0]["source"] == OFFLINE_SOURCE and hits[0]["text"] == want[0]["text"]
    cited = got["cited"].structured_content
    with urna.open(quickstart) as f:
        assert (cited["content_hash"], cited["file_hash"]) == (f.content_hash, f.file_hash)
    assert cited["text"] == want[0]["text"] and cited["source"] == OFFLINE_SOURCE
    assert cited["span"] == [want[0]["offset_start"], want[0]["offset_end"]]
    assert got["read"].contents[0].text == want[0]["text"]
    assert [t.uri_template for t in got["templates"]] == ["urna://{content_hash}/{chunk_id}"]
    corpora = got["listed"].structured_content["corpora"]
    assert [(c["name"], c["n_embeddings"]) for c in corpora] == [("quickstart", 12)]
    assert got["inspected"].structured_content["manifest"]["embedding_model"] == \
        "minishlab/potion-base-8M/v1"


def test_bad_arguments_are_tool_errors_and_the_server_keeps_answering(quickstart: Path) -> None:
    async def session() -> list:
        async with Client(_params(quickstart)) as c:
            return [await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": 0}),
                    await c.call_tool("search", {"text": "   "}),
                    await c.call_tool("search", {"text": OFFLINE_QUESTION, "corpus": "nope"}),
                    await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": "many"}),
                    await c.call_tool("cite", {"citation": "not-a-citation"}),
                    await c.call_tool("cite", {"citation": "urna://sha256:" + "0" * 64 + "/x"}),
                    await c.call_tool("search", {"text": OFFLINE_QUESTION, "candidates": 10**9}),
                    await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": 1})]

    *bad, good = asyncio.run(session())
    assert all(r.is_error for r in bad)
    messages = [r.content[0].text for r in bad]
    assert "k must be between 1 and 1000" in messages[0]
    assert "InvalidInput" in messages[1] and "empty query text" in messages[1]
    assert "no corpus named 'nope'" in messages[2]
    assert "k" in messages[3]
    assert "CitationError" in messages[4] and "urna://" in messages[4]
    assert "CitationError" in messages[5]
    assert "candidates must be between 1 and 100000" in messages[6]
    assert all("\n" not in m for m in messages[:3] + messages[4:])
    assert not good.is_error and len(good.structured_content["hits"]) == 1


def test_several_corpora_need_a_name(quickstart: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.urna"
    other.write_bytes(quickstart.read_bytes())

    async def session() -> tuple:
        async with Client(_params(quickstart, other)) as c:
            return (await c.call_tool("search", {"text": OFFLINE_QUESTION}),
                    await c.call_tool("search", {"text": OFFLINE_QUESTION, "k": 1,
                                                 "corpus": "other"}))

    unnamed, named = asyncio.run(session())
    assert unnamed.is_error and "pass corpus=<name>" in unnamed.content[0].text
    assert named.structured_content["corpus"] == "other"
