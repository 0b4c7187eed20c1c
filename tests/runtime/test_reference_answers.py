"""Every file and query of tests/data/ref-0.5.1/expected.json: our answers equal the reference's.

Same chunk ids in the same order, scores within 1e-6, every other hit field equal; inspect()
equals the reference dict except simd_backend; hashes and chunk ids equal.
"""

from __future__ import annotations

import pytest

import urna
from helpers.vectors import REF, expected, same_answers
from helpers.vectors import same_hits as _same_hits

EXPECTED = expected()

FILES = sorted(EXPECTED)


@pytest.fixture(scope="module", params=FILES)
def opened(request):
    with urna.open(REF / request.param) as f:
        yield request.param, f


def test_identity_matches(opened) -> None:
    name, f = opened
    exp = EXPECTED[name]
    assert f.file_hash == exp["file_hash"]
    assert f.content_hash == exp["content_hash"]
    assert f.chunk_ids() == exp["chunk_ids"]


def test_inspect_matches(opened) -> None:
    name, f = opened
    got = dict(f.inspect())
    want = dict(EXPECTED[name]["inspect"])
    assert got.pop("simd_backend") in ("scalar", "avx2", "neon")
    want.pop("simd_backend")
    assert got == want
    # expected.json stores keys sorted; the reference's own order is the one of §14.1
    assert list(got) == ["magic", "version_major", "version_minor", "format_version",
                         "schema_version", "embedding_dim", "n_chunks", "n_embeddings",
                         "file_size", "manifest", "sections", "blobs", "spaces", "file_hash",
                         "content_hash"]


def test_every_query_path_matches(opened) -> None:
    name, f = opened
    for qi, q in enumerate(EXPECTED[name]["queries"]):
        same_answers(f, q, f"{name}#{qi}")


def test_compiled_kernels_give_the_same_answers(monkeypatch) -> None:
    """The vectors are small, so they take the numpy path; force the compiled kernels too."""
    from urna.index import exact

    monkeypatch.setattr(exact, "NUMBA_MIN_VALUES", 0)
    for name in FILES:
        with urna.open(REF / name) as f:
            for qi, q in enumerate(EXPECTED[name]["queries"]):
                _same_hits(f.search(q["vector"], 5), q["search"], f"{name}#{qi} search")
                _same_hits(f.retrieve(q["vector"], 5), q["retrieve"], f"{name}#{qi} retrieve")
                if "search_hybrid" in q:
                    _same_hits(f.search_hybrid(q["vector"], q["text"], 5, 50), q["search_hybrid"],
                               f"{name}#{qi} hybrid")
