"""Access to the reference vectors shared by several test modules."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
REF = DATA / "ref-0.5.1"


@cache
def expected() -> dict:
    """The reference's answers for every file of ref-0.5.1 (expected.json ``files``)."""
    return json.loads((REF / "expected.json").read_text())["files"]


@cache
def corpus(name: str) -> dict:
    """Build inputs of one corpus (<name>.chunks.json): meta, chunks, queries."""
    return json.loads((REF / f"{name}.chunks.json").read_text())


def same_hits(got, want, path: str) -> None:
    """Assert reference hits: same chunk ids in order, scores within 1e-6, other fields equal."""
    assert [h.chunk_id for h in got] == [w["chunk_id"] for w in want], path
    for h, w in zip(got, want, strict=True):
        for key, value in w.items():
            if key == "score":
                assert abs(h.score - value) <= 1e-6, (path, key, h.score, value)
            else:
                assert getattr(h, key) == value, (path, key)


def same_answers(f, q: dict, path: str) -> None:
    """Assert every query path the reference answered for one expected.json query."""
    vec, text = q["vector"], q["text"]
    same_hits(f.search(vec, 5), q["search"], f"{path} search")
    same_hits(f.retrieve(vec, 5), q["retrieve"], f"{path} retrieve")
    if "search_ann_ef32" in q:
        same_hits(f.search_ann(vec, 5, 32), q["search_ann_ef32"], f"{path} ann")
    if "search_hybrid" in q:
        same_hits(f.search_hybrid(vec, text, 5, 50), q["search_hybrid"], f"{path} hybrid")
    if "search_graph" in q:
        same_hits(f.search_graph(vec, 5), q["search_graph"], f"{path} graph")
    for key, value in q.items():
        if key.startswith("search_space_"):
            same_hits(f.search_space(key[len("search_space_"):], value["vector"], 5),
                      value["hits"], f"{path} {key}")


def metadata_sample_rows(n: int) -> list[dict | None]:
    """Per-chunk metadata of every type, with null rows, for ``n`` chunks (0x18 checks)."""
    from datetime import UTC, datetime

    return [None if i % 5 == 4 else {
        "lang": ["pt", "en", "de"][i % 3], "year": 2018 + i % 7, "score": i / 4,
        "draft": i % 2 == 0, "tags": ["t" + str(j) for j in range(i % 3)],
        "seen": datetime(2024, 1, 1 + i % 28, tzinfo=UTC)} for i in range(n)]


def build_kwargs(file_name: str) -> tuple[list, dict]:
    """(positional args, keyword args) that rebuild ``file_name`` with urna.build."""
    info = expected()[file_name]
    data = corpus(info["corpus"])
    meta = data["meta"]
    opts = dict(info["build_options"])
    if opts.get("blob_data_paths") is not None:
        opts["blob_data_paths"] = [None if p is None else str(REF / p)
                                   for p in opts["blob_data_paths"]]
    args = [meta["embedding_model"], meta["embedding_dim"], meta["chunker_version"],
            meta["model_hash"], data["chunks"]]
    return args, opts


def section_payload(buf: bytes, section_id: int) -> bytes:
    """First payload of ``section_id``, found through the file's own section table."""
    from urna.format import layout as L

    h = L.Header.unpack(buf)
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        if e.section_id == section_id:
            return buf[e.offset:e.offset + e.size]
    raise KeyError(section_id)


def sections(buf: bytes) -> dict[int, tuple[int, bytes]]:
    """Every section of ``buf`` as ``{section_id: (encoding, payload)}`` (first entry per id)."""
    from urna.format import layout as L

    h = L.Header.unpack(buf)
    out: dict[int, tuple[int, bytes]] = {}
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        out.setdefault(e.section_id, (e.encoding, buf[e.offset:e.offset + e.size]))
    return out
