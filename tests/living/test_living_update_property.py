"""Random edits of a row source through ``urna build --update``: the live texts always are the
source's, and every citation handed out stays answerable.

Rows are inserted before, between and after the others (a row source's span is its ordinal, so
insertions and deletions shift every row after them), edited, deleted and put back; each step
is one update of the living catalog, some followed by a squash of its log. After each, the
catalog's live chunks hold exactly the source's texts, each once, and every citation any earlier
version handed out resolves: live, or removed in a named version (or in one a squash folded
away).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import urna
from helpers.budget import examples
from urna.forge.spec import load_spec
from urna.forge.update import update

KEYS = [f"k{i:02d}" for i in range(0, 16, 2)]  # room for a key between any two
TAGS = ["red", "green", "blue"]
STEP = st.lists(st.tuples(st.sampled_from(["edit", "delete", "insert", "retag", "squash"]),
                          st.integers(0, 15), st.integers(0, 3)), min_size=1, max_size=4)


def _apply(rows: dict[str, dict], step: list[tuple[str, int, int]]) -> None:
    for kind, at, word in step:
        key = f"k{at:02d}"
        if kind == "delete" and len(rows) > 1:
            rows.pop(key, None)
        elif kind == "edit" and key in rows:
            rows[key]["text"] += f" edited {word}"
        elif kind == "retag" and key in rows:  # a metadata column alone changes
            rows[key]["tag"] = TAGS[word % 3]
        elif kind == "insert":
            rows.setdefault(key, {"text": f"row {key} about topic {word}", "tag": TAGS[word % 3]})


def _tagged_spec(root: Path, rows: dict[str, dict]) -> Path:
    """A jsonl spec over ``rows`` storing the ``tag`` column as metadata (floor model)."""
    data = root / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": k, **v}) + "\n" for k, v in sorted(rows.items())),
                    encoding="utf-8")
    spec = root / "corpus.toml"
    spec.write_text("\n".join([
        "[corpus]", 'name = "tags"', 'chunker_version = "tags/1"',
        "[source]", 'kind = "jsonl"', f'path = "{data.as_posix()}"', 'order_by = ["id"]',
        'metadata = ["tag"]', "[source.text]", 'template = "{text}"',
        "[[models]]", 'preset = "floor"', 'text = "default"',
        "[output]", f'dir = "{(root / "out").as_posix()}"', 'mode = "single"', ""]),
        encoding="utf-8")
    return spec


@settings(max_examples=examples(300, 60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=4))
# a row's new segment has the content hash of the one it replaces (0x18 is not hashed)
@example(steps=[[("edit", 0, 0)], [("retag", 0, 1)]])
def test_the_live_texts_are_the_source_after_every_update(steps: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = {k: {"text": f"row {k} about topic {i % 3}", "tag": TAGS[i % 3]}
                for i, k in enumerate(KEYS)}
        handed_out: list[str] = []
        squashed = False
        for step in [[], *steps]:
            _apply(rows, step)
            catalog = Path(update(load_spec(_tagged_spec(root, rows)))["catalog"])
            for kind, at, _ in step:
                if kind == "squash":  # the next update reads its sources from the squash
                    with urna.open_catalog(catalog) as cat:
                        squashed = cat.squash(1 + at % 3) is not None or squashed
            with urna.open_catalog(catalog) as cat:
                assert cat.n_embeddings == len(rows)
                q = cat.shards[0].vectors([0])[0]
                hits = cat.retrieve(q, len(rows))
                assert sorted(h.text for h in hits) == sorted(r["text"] for r in rows.values())
                for tag in TAGS:  # the metadata is the source's too
                    got = cat.search(q, len(rows), where={"tag": tag})
                    assert sorted(cat.cite(h.citation_id).text for h in got) == \
                        sorted(r["text"] for r in rows.values() if r["tag"] == tag)
                handed_out += [h.citation_id for h in hits]
                for c in handed_out:
                    ans = cat.cite(c)
                    # (a version a squash folded away is not named)
                    assert ans.status == "live" or (ans.status == "removed" and (
                        ans.removed_in or (squashed and ans.removed_in is None)))


PARAGRAPHS = [f"Paragraph {w} about {t} and the files that hold it."
              for w in ("one", "two", "three", "four", "five", "six")
              for t in ("search", "citations")]
DOC_STEP = st.lists(st.tuples(st.sampled_from(["edit", "delete", "insert"]),
                              st.sampled_from(["a.md", "b.md"]), st.integers(0, 5),
                              st.sampled_from(PARAGRAPHS)), min_size=1, max_size=3)


@settings(max_examples=examples(100, 20), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DOC_STEP, min_size=1, max_size=3))
def test_documents_updated_equal_a_fresh_build_and_cite_their_bytes(steps: list) -> None:
    from helpers.specs import write_documents_spec
    from urna.forge import pipeline

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        docs = root / "docs"
        docs.mkdir()
        files = {"a.md": PARAGRAPHS[:3], "b.md": PARAGRAPHS[3:5]}
        for n, step in enumerate([[], *steps]):
            for kind, name, at, text in step:
                paras = files[name]
                if kind == "insert":
                    paras.insert(at % (len(paras) + 1), text)
                elif kind == "edit" and paras:
                    paras[at % len(paras)] = text + " Edited."
                elif kind == "delete" and len(paras) > 1:
                    paras.pop(at % len(paras))
            for name, paras in files.items():
                (docs / name).write_text("\n\n".join(paras) + "\n", encoding="utf-8")
            spec = write_documents_spec(root / "live.toml", docs, root / "live", model="floor",
                                        source="max_chars = 80")
            catalog = Path(update(load_spec(spec))["catalog"])
            fresh_spec = write_documents_spec(root / f"fresh{n}.toml", docs, root / f"fresh{n}",
                                              model="floor", source="max_chars = 80")
            built = pipeline.build(load_spec(fresh_spec))
            with urna.open(next(iter(built["outputs"].values()))["file"]) as fresh, \
                    urna.open_catalog(catalog) as cat:
                assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())
                for h in cat.retrieve(fresh.vectors([0])[0], cat.n_embeddings):
                    cited = cat.cite(h.citation_id)
                    raw = (docs / Path(cited.source_uri).name).read_bytes()
                    assert raw[cited.byte_start:cited.byte_end].decode("utf-8") == cited.text
