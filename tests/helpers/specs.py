"""Corpus specs shared by the forge/shard/living tests and the benchmarks: jsonl and documents."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from urna.forge.spec import CorpusSpec


def write_jsonl_spec(root: Path, rows: Iterable[dict], *, name: str, model: str = "potion",
                     preset: str | None = "exact", with_graph: bool | None = False,
                     cache_dir: Path | None = None, mode: str | None = None) -> Path:
    """Write ``root/rows.jsonl`` (rows with ``id`` and ``text``) and a spec over it; its path.

    ``None`` for ``preset`` / ``with_graph`` / ``mode`` leaves the forge default in force.
    """
    root.mkdir(parents=True, exist_ok=True)
    data = root / "rows.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    build = [f'preset = "{preset}"'] if preset is not None else []
    if with_graph is not None:
        build.append(f"with_graph = {str(with_graph).lower()}")
    output = [f'dir = "{(root / "out").as_posix()}"']
    if mode is not None:
        output.append(f'mode = "{mode}"')
    if cache_dir is not None:
        output.append(f'cache_dir = "{Path(cache_dir).as_posix()}"')
    spec = root / "corpus.toml"
    spec.write_text("\n".join([
        "[corpus]", f'name = "{name}"', f'chunker_version = "{name}/1"',
        "[source]", 'kind = "jsonl"', f'path = "{data.as_posix()}"', 'order_by = ["id"]',
        "[source.text]", 'template = "{text}"',
        "[[models]]", f'preset = "{model}"', 'text = "default"',
        *(["[build]", *build] if build else []),
        "[output]", *output, ""]), encoding="utf-8")
    return spec


def documents_spec(path: str, **source: object) -> CorpusSpec:
    """A validated documents spec over ``path`` (potion model), with extra ``source`` keys."""
    from urna.forge.spec import parse_spec, validate

    spec = parse_spec({"corpus": {"name": "docs", "chunker_version": "docs/1"},
                       "source": {"kind": "documents", "path": path, **source},
                       "models": [{"preset": "potion", "text": "default"}]})
    validate(spec)
    return spec


def write_documents_spec(spec: Path, docs: Path, root: Path, *, model: str,
                         source: str = "") -> Path:
    """Write a documents corpus.toml over ``docs`` (output and cache under ``root``); its path.

    ``source`` holds extra ``[source]`` lines (``max_chars = 120``).
    """
    spec.write_text(f"""
[corpus]
name = "docs"
chunker_version = "docs/1"
[source]
kind = "documents"
path = "{docs}"
{source}
[[models]]
preset = "{model}"
text = "default"
[output]
dir = "{root / 'out'}"
cache_dir = "{root / 'cache'}"
""")
    return spec
