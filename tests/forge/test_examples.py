"""examples/quickstart: the Python quickstart builds the reference's content."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import urna

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = json.loads((ROOT / "tests/data/ref-0.5.1/expected.json").read_text())["files"]


def _example():
    spec = importlib.util.spec_from_file_location("qs_example",
                                                  ROOT / "examples/quickstart/quickstart.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_jsonl_is_the_vector_corpus() -> None:
    assert (ROOT / "examples/quickstart/docs.jsonl").read_bytes() == (
        ROOT / "tests/data/quickstart-docs.jsonl").read_bytes()


def test_python_quickstart_builds_the_reference_content(tmp_path: Path) -> None:
    ref = EXPECTED["quickstart-exact.urna"]  # same inputs, preset exact, written by 0.5.1
    path = _example().build(tmp_path / "q.urna")
    with urna.open(path) as f:
        assert f.content_hash == ref["content_hash"]
        assert f.chunk_ids() == ref["chunk_ids"]
        q = ref["queries"][0]
        hits = f.search(__import__("numpy").asarray(q["vector"], dtype="float32"), 3)
        assert [h.chunk_id for h in hits] == [h["chunk_id"] for h in q["search"][:3]]
        assert [h.score for h in hits] == pytest.approx([h["score"] for h in q["search"][:3]],
                                                        abs=1e-6)


def test_forge_package_names_resolve_lazily() -> None:
    import urna.forge as forge

    assert all(callable(getattr(forge, name)) for name in forge.__all__)
    with pytest.raises(AttributeError):
        forge.nope  # noqa: B018
