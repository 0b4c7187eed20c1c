"""What ``urna stats`` reports about a file, read from its bytes alone (as the reference does).

The document is built by the reader (no search state is opened), so a file whose optional
index sections would fail to open still reports its sizes, contract and hashes. A space table
that cannot be decoded is left out (``spaces: None``), as the reference skips it.
"""

from __future__ import annotations

import os

from ..errors import UrnaError
from ..format.layout import SECTION_METADATA, SECTION_SPACE_TABLE, section_name
from ..format.reader import UrnaView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SECTION_ENCODING_LABELS = {0: "raw", 1: "zstd", 2: "float16", 3: "int8", 4: "intpack", 7: "int4"}
"""How stats and inspect label a section's encoding (the others print ``unknown``)."""


def display_section_name(section_id: int) -> str:
    """The name stats and inspect print: the reference's, ``metadata`` for our 0x18, else
    ``unknown``."""
    if section_id == SECTION_METADATA:
        return "metadata"
    return section_name(section_id) or "unknown"


def metadata_schema(view: UrnaView) -> dict[str, str] | None:
    """``{field: type}`` of section 0x18 (None when it cannot be decoded)."""
    from ..format.sections.metadata import read_metadata

    try:
        table = read_metadata(view)
    except UrnaError:
        return None
    return {} if table is None else table.schema


def stats_document(path: str | os.PathLike,
                   data: bytes | memoryview | None = None) -> dict[str, Any]:
    """Size, counts, dims, contract, sections, spaces and hashes of the file at ``path``
    (``data``: its bytes, when the caller has mapped them; else they are read here).

    The checks and the content hash go through the file's kept verdict, as ``inspect``'s do
    (``runtime.verdicts``): a file seen before costs one SHA-256 pass, not a decode of its
    canonical sections; this call's verdict is kept for the next.
    """
    from . import verdicts

    if data is None:
        with open(path, "rb") as fh:
            data = fh.read()
    view = verdicts.checked_view(os.fspath(path), data)
    doc = _document(path, view)
    verdicts.keep_view(os.fspath(path), data, view)
    return doc


def _document(path: str | os.PathLike, view: UrnaView) -> dict[str, Any]:
    from ..index.cpu import simd_backend

    m, h = view.manifest, view.header
    spaces = None
    if view.entry(SECTION_SPACE_TABLE) is not None:
        try:
            spaces = [{"name": s.name, "dim": s.dim, "dtype": s.dtype, "n_vectors": s.n_vectors,
                       "model_hash": s.model_hash} for s in view.space_entries()]
        except UrnaError:  # the reference skips a table it cannot decode
            spaces = None
    doc = {
        "file": os.fspath(path), "size": h.file_size, "chunks": h.n_chunks,
        "embeddings": h.n_embeddings, "dim": h.embedding_dim, "mrl_dim": m.mrl_dim,
        "full_dim": m.full_dim, "dtype": m.dtype, "metric": m.metric,
        "score_type": m.score_type, "normalize": m.normalize, "index_type": m.index_type,
        "rerank": m.rerank_policy, "model": m.embedding_model, "model_hash": m.model_hash,
        "chunker": m.chunker_version, "supports_ann": m.capabilities.supports_ann,
        "supports_bm25": m.capabilities.supports_bm25, "simd_backend": simd_backend(),
        "sections": [{"section_id": e.section_id, "name": display_section_name(e.section_id),
                      "encoding": SECTION_ENCODING_LABELS.get(e.encoding, "unknown"),
                      "size": e.size}
                     for e in view.entries],
        "spaces": spaces, "file_hash": view.file_hash(), "content_hash": view.content_hash(),
    }
    if view.entry(SECTION_METADATA) is not None:  # the key exists only with the section
        doc["metadata"] = metadata_schema(view)
    return doc
