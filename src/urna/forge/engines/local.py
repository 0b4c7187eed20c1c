"""The in-process engine of a sharded build: the shards one after another."""

from __future__ import annotations

from typing import Any

from urna.forge.embedders.base import Embedder
from urna.forge.embedders.models import embed_all
from urna.forge.engines.shard_task import ShardPlan, ShardTask, emit_shard
from urna.forge.progress import Progress
from urna.forge.spec import CorpusSpec


def run_local(spec: CorpusSpec, plan: ShardPlan, pending: list[ShardTask],
              embedders: dict[str, Embedder], progress: Progress) -> list[dict[str, Any]]:
    """Embed and write each pending shard in this process; returns their catalog entries."""
    entries = []
    with progress.stage("shards", len(pending)) as advance:
        for task in pending:
            vectors = embed_all(embedders, [r.canonical_text for r in task.rows])
            entries.append(emit_shard(spec, plan, task, vectors))
            advance(1)
    return entries
