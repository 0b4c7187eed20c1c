"""A living corpus made by ``urna build --spec ... --update``: a jsonl row source under the floor
model, the CLI's JSON answer, a fresh build of the same rows, the live texts of a catalog."""

from __future__ import annotations

import json
from pathlib import Path

import urna
from helpers.cli_runner import invoke
from helpers.specs import write_jsonl_spec
from urna.forge import pipeline
from urna.forge.spec import load_spec


def source_rows(n: int, changed: dict[int, str] | None = None) -> list[dict]:
    """``n`` rows of the source (``changed``: other texts for some)."""
    changed = changed or {}
    return [{"id": f"{i:04d}", "text": changed.get(i, f"row {i} about vectors and files {i % 7}")}
            for i in range(n)]


def run_json(*args: object) -> dict:
    """``urna ARGS...`` in this process, which must succeed; its JSON answer."""
    res = invoke([str(a) for a in args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def live_spec(root: Path, rows: list[dict]) -> Path:
    """The spec of the living corpus under test: ``rows`` as a jsonl source, floor model."""
    return write_jsonl_spec(root, rows, name="docs", model="floor", mode="single")


def fresh_build(root: Path, rows: list[dict]) -> urna.UrnaFile:
    """One file built afresh from ``rows`` by the same spec (the reference answer)."""
    spec = load_spec(live_spec(root, rows))
    out = pipeline.build(spec)
    return urna.open(next(iter(out["outputs"].values()))["file"])


def live_texts(catalog: Path) -> list[str]:
    """Every live chunk's text."""
    with urna.open_catalog(catalog) as cat:
        hits = cat.retrieve(cat.shards[0].vectors([0])[0], cat.n_embeddings)
        return sorted(cat.cite(h.citation_id).text for h in hits)
