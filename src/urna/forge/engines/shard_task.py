"""What an engine is handed (a shard plan and its tasks) and the one way it writes a shard."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urna.forge.canonical import write_json
from urna.forge.emit import emit_file, spaces_of
from urna.forge.sources.item import Row
from urna.forge.spec import CorpusSpec


@dataclass
class ShardTask:
    """One shard to build: its rows (global ordinals kept) and the hash of its inputs."""

    index: int
    file: str
    rows: list[Row]
    input_hash: str
    inputs_key: str = ""


@dataclass
class ShardPlan:
    """Every non-empty shard of a build and what all of them share."""

    name: str
    n_shards: int
    out_dir: Path
    tasks: list[ShardTask]
    model_meta: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        """Where each finished shard's sidecar lives."""
        return self.out_dir / ".forge-state" / "shards"

    def sidecar(self, task: ShardTask) -> Path:
        """The sidecar of one shard."""
        return self.state_dir / f"{task.file}.json"


def emit_shard(spec: CorpusSpec, plan: ShardPlan, task: ShardTask,
               vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    """Write one shard atomically, open it back (full validation) and record its sidecar."""
    from urna.runtime import open_file

    out = emit_file(spec, plan.out_dir / task.file, task.rows, vectors, plan.model_meta,
                    task.input_hash, spaces=spaces_of(spec, vectors, plan.model_meta))
    with open_file(out["file"]) as f:
        entry = {"shard": task.index, "file": task.file, "file_hash": f.file_hash,
                 "content_hash": f.content_hash, "n_chunks": int(f.n_embeddings),
                 "model_hash": f.model_hash, "embedding_dim": int(f.embedding_dim),
                 "bytes": out["bytes"], "build_s": out["build_s"]}
    plan.state_dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.sidecar(task), {"inputs_key": task.inputs_key, "entry": entry})
    return entry
