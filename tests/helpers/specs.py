"""Writing a jsonl corpus and its corpus.toml, shared by forge/shard tests and the benchmarks."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


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
