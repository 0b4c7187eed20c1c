"""The LangChain adapters against real langchain-core: answers equal ``urna retrieve``'s."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

import urna
from helpers.quickstart import OFFLINE_QUESTION, OFFLINE_SOURCE, ROOT, cli_retrieve
from urna.integrations.langchain import UrnaRetriever, UrnaVectorStore

TEXTS = ["urna files carry their own citations", "a static embedder works offline",
         "bananas are yellow and sweet", "the hnsw graph speeds up search"]


def test_retriever_returns_the_top_document_of_urna_retrieve(quickstart: Path) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=3)
    retriever = UrnaRetriever(quickstart, k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(OFFLINE_QUESTION)
    retriever.close()
    assert [d.metadata["citation"] for d in docs] == [w["citation_id"] for w in want]
    top = docs[0]
    assert isinstance(top, Document)
    assert top.page_content == want[0]["text"]
    assert top.metadata["source"] == OFFLINE_SOURCE
    assert math.isclose(top.metadata["score"], want[0]["score"], abs_tol=1e-6)
    assert top.metadata["span"] == [want[0]["offset_start"], want[0]["offset_end"]]
    assert top.metadata["content_hash"] == want[0]["content_hash"]
    with urna.open(quickstart) as f:  # the citation resolves to the quoted text
        assert f.cite(top.metadata["citation"]).text == top.page_content


def test_vector_store_searches_and_scores(quickstart: Path) -> None:
    want = cli_retrieve(quickstart, OFFLINE_QUESTION, k=2)
    store = UrnaVectorStore(quickstart)
    assert isinstance(store, VectorStore)
    pairs = store.similarity_search_with_score(OFFLINE_QUESTION, k=2)
    assert [d.metadata["citation"] for d, _ in pairs] == [w["citation_id"] for w in want]
    assert [round(s, 6) for _, s in pairs] == [round(w["score"], 6) for w in want]
    docs = store.as_retriever(search_kwargs={"k": 1}).invoke(OFFLINE_QUESTION)
    assert [d.metadata["citation"] for d in docs] == [want[0]["citation_id"]]
    with pytest.raises(urna.errors.InvalidInput, match="read-only|immutable"):
        store.add_texts(["more"])
    store.close()


def test_from_texts_answers_like_urna_build_of_the_same_texts(tmp_path: Path) -> None:
    # The same texts through the CLI: a jsonl source and the spec a user would write.
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                            for i, t in enumerate(TEXTS)))
    (tmp_path / "cli.toml").write_text(
        '[corpus]\nname = "cli"\nchunker_version = "texts/1"\n'
        f'[source]\nkind = "jsonl"\npath = "{rows}"\norder_by = ["id"]\n'
        '[source.text]\ntemplate = "{text}"\n'
        '[[models]]\npreset = "potion"\ntext = "default"\n'
        f'[output]\nmode = "single"\ndir = "{tmp_path / "cli-out"}"\n')
    subprocess.run([sys.executable, "-c", "from urna.cli import main; main()", "build",
                    "--spec", str(tmp_path / "cli.toml"), "--cache-dir", str(tmp_path / "c")],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    built = tmp_path / "cli-out" / "cli.urna"
    store = UrnaVectorStore.from_texts(TEXTS, path=tmp_path / "store.urna")
    question = "which embedder works offline"
    want = cli_retrieve(built, question, k=4)
    got = store.similarity_search_with_score(question, k=4)
    assert [d.page_content for d, _ in got] == [w["text"] for w in want]
    assert [round(s, 6) for _, s in got] == [round(w["score"], 6) for w in want]
    assert got[0][0].page_content == "a static embedder works offline"
    store.close()


def test_from_documents_keeps_the_source_and_needs_a_path(tmp_path: Path) -> None:
    docs = [Document(page_content=t, metadata={"source": f"notes/{i}.md"})
            for i, t in enumerate(TEXTS)]
    with pytest.raises(urna.errors.InvalidInput, match="path="):
        UrnaVectorStore.from_documents(docs)
    store = UrnaVectorStore.from_documents(docs, path=tmp_path / "docs.urna")
    top = store.similarity_search("yellow fruit", k=1)[0]
    assert (top.page_content, top.metadata["source"]) == (TEXTS[2], "notes/2.md")
    store.close()
