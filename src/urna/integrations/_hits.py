"""What every adapter puts in a hit's metadata, and writing a corpus from plain texts."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput

CHUNKER_VERSION = "texts/1"
"""The chunker_version of a corpus written by ``from_texts`` (one text = one chunk)."""
READ_ONLY = ("a .urna file is immutable (its hashes and citations name its exact bytes); "
             "build a new file with from_texts(..., path=...) instead of adding to this one")


def hit_metadata(hit: Any) -> dict[str, Any]:
    """The metadata of one retrieved hit: citation, score, source, span and the hashes."""
    return {"citation": hit.citation_id, "score": float(hit.score), "score_type": hit.score_type,
            "source": hit.source_uri, "span": [int(hit.offset_start), int(hit.offset_end)],
            "chunk_id": hit.chunk_id, "content_hash": hit.content_hash,
            "file_hash": hit.file_hash}


def build_from_texts(texts: Iterable[str], path: str | os.PathLike,
                     metadatas: Sequence[dict[str, Any]] | None = None, *,
                     preset: str = "potion") -> Path:
    """Build ``path`` (a ``.urna`` file) from texts with the forge, one text = one chunk.

    The same as ``urna build`` of a jsonl source with columns ``id`` (the zero-padded
    position), ``text`` and ``source_uri`` (a metadata's ``source``, else
    ``item://<stem>/<id>``), template ``{text}``, model preset ``potion`` (offline).
    """
    from ..forge import pipeline
    from ..forge.spec import parse_spec

    out = Path(path)
    if out.suffix != ".urna":
        raise InvalidInput(f"path must end in .urna, got {os.fspath(path)!r}")
    items = list(texts)
    if not items:
        raise InvalidInput("from_texts needs at least one text")
    if metadatas is not None and len(metadatas) != len(items):
        raise InvalidInput(f"{len(metadatas)} metadatas for {len(items)} texts")
    width = len(str(len(items) - 1))
    with tempfile.TemporaryDirectory(prefix="urna-texts-") as tmp:
        rows = Path(tmp) / "rows.jsonl"
        with rows.open("w", encoding="utf-8") as fh:
            for i, text in enumerate(items):
                row: dict[str, Any] = {"id": str(i).zfill(width), "text": text}
                source = (metadatas[i] if metadatas else {}).get("source")
                if source:
                    row["source_uri"] = str(source)
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        spec = parse_spec(spec_document(out.stem, rows, preset))
        pipeline.build(spec, out_dir=str(out.parent or "."), cache_dir=str(Path(tmp) / "cache"))
    return out


def spec_document(name: str, rows: Path, preset: str = "potion") -> dict[str, Any]:
    """The corpus spec ``from_texts`` builds (the TOML a user would write for the same texts)."""
    return {"corpus": {"name": name, "chunker_version": CHUNKER_VERSION},
            "source": {"kind": "jsonl", "path": str(rows), "order_by": ["id"],
                       "text": {"template": "{text}"}},
            "models": [{"preset": preset, "text": "default"}],
            "output": {"mode": "single"}}
