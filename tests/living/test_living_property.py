"""Random add / remove / replace / compact sequences: every version answers like a fresh build.

After each sequence, every version is reopened; its exact searches (single and batched) equal
those of one file built from the documents live at that version (same ids, same scores), and
every citation handed out at any version still resolves: live, compacted-to, or removed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import urna
from urna.errors import CitationError

from .corpus import OPS, URIS, apply_op, document, fresh_file, new_catalog, queries, ranked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_every_version_equals_a_fresh_build(ops: list[tuple[str, str, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        live = {URIS[0]: document(URIS[0]), URIS[1]: document(URIS[1])}
        path = new_catalog(folder, [c for d in live.values() for c in d])
        states = [{u: list(cs) for u, cs in live.items()}]
        with urna.open_catalog(path) as cat:
            for op in ops:
                if apply_op(cat, live, op):
                    states.append({u: list(cs) for u, cs in live.items()})
        qs = queries(4)
        handed_out: list[str] = []
        for version, state in enumerate(states, start=1):
            chunks = [c for d in state.values() for c in d]
            fresh = fresh_file(folder / f"fresh-{version}.urna", chunks)
            with urna.open_catalog(path, version=version) as cat:
                assert cat.version == version
                assert cat.n_embeddings == len(chunks)
                assert sorted(cat.chunk_ids()) == sorted(fresh.chunk_ids())
                for k in (1, 3, len(chunks) + 2):
                    for q in qs:
                        assert ranked(cat.search(q, k)) == ranked(fresh.search(q, k))
                batch = cat.search_batch(qs, 3)
                assert [ranked(r) for r in batch] == [ranked(fresh.search(q, 3)) for q in qs]
                handed_out += [h.citation_id for h in cat.retrieve(qs[0], len(chunks))]
            fresh.close()
        with urna.open_catalog(path) as head:
            for cit in handed_out:
                ans = head.cite(cit)
                assert ans.status in ("live", "compacted", "removed")
                if ans.compacted_from is not None:  # moved by a compaction (maybe removed since)
                    assert ans.compacted_from == cit and ans.compacted_in is not None
                else:
                    assert ans.status != "compacted" and ans.citation_id == cit
                if ans.status == "removed":
                    assert ans.removed_in is not None and ans.removed_in >= 2


def test_unknown_citation_is_a_typed_error(tmp_path: Path) -> None:
    path = new_catalog(tmp_path, document("a.txt"))
    with urna.open_catalog(path) as cat, pytest.raises(CitationError, match="unknown to this"):
        cat.cite("urna://sha256:" + "0" * 64 + "/sha256:" + "1" * 64)
