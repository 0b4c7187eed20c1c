"""The LlamaIndex retriever against real llama-index-core: answers equal ``urna retrieve``'s."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore

from helpers.quickstart import OFFLINE_QUESTION, OFFLINE_SOURCE, cli_retrieve
from urna.integrations.llama_index import UrnaRetriever


def test_retriever_returns_the_top_node_of_urna_retrieve(quickstart: Path) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=3)
    retriever = UrnaRetriever(quickstart, k=3)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(OFFLINE_QUESTION)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.metadata["citation"] for n in nodes] == [w["citation_id"] for w in want]
    top = nodes[0]
    assert top.node.get_content() == want[0]["text"]
    assert top.node.metadata["source"] == OFFLINE_SOURCE
    assert math.isclose(top.score, want[0]["score"], abs_tol=1e-6)
    assert top.node.metadata["span"] == [want[0]["offset_start"], want[0]["offset_end"]]
    again = asyncio.run(retriever.aretrieve(OFFLINE_QUESTION))
    assert [n.node.node_id for n in again] == [w["citation_id"] for w in want]
    retriever.close()
