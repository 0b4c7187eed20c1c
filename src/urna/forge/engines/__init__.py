"""The engines of a sharded build: each embeds the pending shards' rows and writes each shard.

``local`` runs in process; ``ray`` runs on Ray Data actors and tasks (importing it imports
Ray). Both receive a ``shard_task.ShardPlan`` and the pending ``ShardTask`` list from the
orchestrator (``urna.forge.shard``) and return the catalog entries of the shards they wrote;
both write a shard through ``shard_task.emit_shard``.
"""

from __future__ import annotations

ENGINES = ("local", "ray")
