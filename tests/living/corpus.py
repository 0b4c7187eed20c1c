"""A small living corpus for the tests: documents of a few chunks, a deterministic toy embedder.

A chunk's vector is drawn from a generator seeded by the SHA-256 of its text, so the same
text always has the same vector and a fresh single-file build sees exactly what a segment saw.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

import urna
from urna.build_options import BuildOptions
from urna.runtime.catalog.document import catalog_hash
from urna.runtime.catalog.living import SegmentFormat, create
from urna.runtime.catalog.versions import rechained

DIM = 8
MODEL, CHUNKER, MODEL_HASH = "toy", "toy-chunker/1", "sha256:" + "ab" * 32
FORMAT = SegmentFormat(MODEL, DIM, CHUNKER, MODEL_HASH, BuildOptions(reproducible=True))


def embed(text: str) -> list[float]:
    """The toy embedder: a unit vector seeded by the text's hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


def document(uri: str, revision: int = 0, n_chunks: int = 3) -> list[dict[str, Any]]:
    """The chunks of one source document (``revision`` changes its text)."""
    out, start = [], 0
    for j in range(n_chunks):
        text = f"{uri} part {j} revision {revision}"
        end = start + len(text.encode("utf-8"))
        out.append({"canonical_text": text, "source_uri": uri, "byte_start": start,
                    "byte_end": end, "embedding": embed(text)})
        start = end + 1
    return out


def new_catalog(folder: Path, chunks: list[dict[str, Any]], name: str = "live") -> Path:
    """A living catalog ``<folder>/<name>.catalog.json`` whose version 1 holds ``chunks``."""
    path = folder / f"{name}.catalog.json"
    create(path, FORMAT, chunks)
    return path


WHOLE = Path(__file__).resolve().parents[1] / "data" / "living-whole-tombstones"
"""A catalog written in the earlier whole-set record form (by commit 95ce72b's code)."""


def cid(chunk: dict[str, Any]) -> str:
    """A chunk's id under the toy chunker."""
    return urna.chunk_id(chunk["canonical_text"], chunk["source_uri"], chunk["byte_start"],
                         chunk["byte_end"], CHUNKER)


def fresh_file(path: Path, chunks: list[dict[str, Any]]) -> urna.UrnaFile:
    """One file built from ``chunks`` with the catalog's format (the reference answer)."""
    urna.build(path, MODEL, DIM, CHUNKER, MODEL_HASH, chunks, reproducible=True)
    return urna.open(path)


def queries(n: int, seed: int = 7) -> np.ndarray:
    """``n`` unit query vectors."""
    q = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def ranked(result: Any) -> list[tuple[str, float]]:
    """(chunk_id, score) of each hit."""
    return [(h.chunk_id, h.score) for h in result]


def tamper(path: Path, version: int, change: dict[str, Any]) -> None:
    """Change one record and re-hash the chain and the catalog, as a careful forger would."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    versions = doc["living"]["versions"]
    at = [r["version"] for r in versions].index(version)  # a squashed log starts past 1
    versions[at].update(change)
    versions[at:] = rechained(versions[at - 1]["version_hash"] if at else None, versions[at:])
    doc["catalog_hash"] = catalog_hash(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


# random op sequences of the property tests: adds, removals, replacements, compactions
URIS = [f"doc{i}.txt" for i in range(6)]
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(URIS), st.integers(0, 3)),
    st.tuples(st.just("remove"), st.sampled_from(URIS), st.integers(0, 0)),
    st.tuples(st.just("remove_chunk"), st.sampled_from(URIS), st.integers(0, 2)),
    st.tuples(st.just("replace"), st.sampled_from(URIS), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.just(""), st.integers(0, 0))), min_size=1, max_size=7)


def apply_op(cat: Any, live: dict[str, list[dict]], op: tuple[str, str, int]) -> bool:
    """Apply one generated op to the catalog and to ``live`` (uri -> chunks); whether it wrote
    a version."""
    kind, uri, arg = op
    if kind == "add":
        if uri in live:
            return False  # one document per uri: adding it again is a replace
        live[uri] = document(uri, arg)
        cat.add(live[uri])
    elif kind == "remove":
        if uri not in live or len(live) == 1:
            return False
        cat.remove(sources=[uri])
        del live[uri]
    elif kind == "remove_chunk":
        if uri not in live or len(live[uri]) <= 1:
            return False
        gone = live[uri].pop(arg % len(live[uri]))
        cat.remove(chunk_ids=[cid(gone)])
    elif kind == "replace":
        live[uri] = document(uri, arg + 10)
        cat.replace(uri, live[uri])
    else:
        return cat.compact() is not None
    return True
