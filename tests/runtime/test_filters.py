"""``where=`` on every search path, and files built with ``metadata=`` (issue #16).

Expected answers come from brute force written here (numpy float64 cosines over the rows a
plain-Python predicate keeps), or from the same build without metadata, never from the filter
code under test.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna
from urna.errors import FilterError, FilterTypeError, InvalidInput, UnknownFilterField

MODEL_HASH = "sha256:" + "1" * 64
LANGS = ("en", "pt", "fr")
TAGS = ("a", "b", "c", "d")
FIXTURES = [HealthCheck.function_scoped_fixture]  # module fixtures: safe to share
WORDS = ("river", "stone", "cloud", "ember", "tide", "moss", "quartz", "lantern")


def corpus(n: int, dim: int, seed: int) -> tuple[np.ndarray, list[dict], list[dict | None]]:
    """Unit vectors, chunk dicts and metadata rows (every type, some null rows and keys)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    chunks = [{"canonical_text": " ".join(rng.choice(WORDS, size=4)) + f" item{i}",
               "source_uri": f"docs/{'guide' if i % 3 else 'api'}/{i % 5}.md",
               "byte_start": 0, "byte_end": 8, "embedding": X[i].tolist()} for i in range(n)]
    meta: list[dict | None] = []
    for i in range(n):
        if i % 9 == 8:
            meta.append(None)
            continue
        row: dict[str, Any] = {"lang": LANGS[int(rng.integers(3))],
                               "year": int(rng.integers(2000, 2030)),
                               "tags": sorted({TAGS[int(t)] for t in rng.integers(4, size=2)}),
                               "draft": bool(rng.integers(2)),
                               "updated": datetime(2024, 1 + i % 12, 1, tzinfo=UTC)}
        if i % 4 == 0:
            row["score"] = float(rng.normal())
        meta.append(row)
    return X, chunks, meta


def build_pair(tmp: Path, n: int = 240, dim: int = 16, seed: int = 0, **kw: Any):
    """The same corpus built with and without metadata (hybrid preset, with a graph)."""
    X, chunks, meta = corpus(n, dim, seed)
    opts = {"preset": "hybrid", "with_graph": True, "reproducible": True,
            "hnsw_ef_construction": 32, "hnsw_m": 8, **kw}
    with_meta = urna.build(tmp / "meta.urna", "demo", dim, "demo/1", MODEL_HASH, chunks,
                           metadata=meta, **opts)
    plain = urna.build(tmp / "plain.urna", "demo", dim, "demo/1", MODEL_HASH, chunks, **opts)
    return X, chunks, meta, with_meta, plain


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return build_pair(tmp_path_factory.mktemp("filters"))


@pytest.fixture(scope="module")
def opened(pair):
    X, chunks, meta, with_meta, _ = pair
    with urna.open(with_meta) as f:
        yield X, chunks, meta, f


# --- a plain-Python reading of the filters the tests generate -----------------------------


def holds(where: dict, row: dict | None, chunk: dict) -> bool:
    """Whether ``row`` (None = no metadata) of ``chunk`` passes ``where`` (test grammar only)."""
    values = dict(row or {}, source_uri=chunk["source_uri"])
    for key, spec in where.items():
        if key == "$or":
            ok = any(holds(w, row, chunk) for w in spec)
        elif key == "$not":
            ok = not holds(spec, row, chunk)
        else:
            ok = field_holds(values.get(key), spec)
        if not ok:
            return False
    return True


def field_holds(value: Any, spec: Any) -> bool:
    if not isinstance(spec, dict):
        spec = {"$eq": spec}
    (op, operand), = spec.items()
    if op == "$exists":
        return (value is not None) == operand
    if op == "$ne":
        return not field_holds(value, {"$eq": operand})
    if value is None:
        return False
    if op == "$eq":
        return operand in value if isinstance(value, list) else value == operand
    if op == "$in":
        return any(field_holds(value, {"$eq": o}) for o in operand)
    if op == "$contains":
        return operand in value
    if op == "$prefix":
        return value.startswith(operand)
    if isinstance(value, datetime):
        operand = datetime.fromisoformat(operand.replace("Z", "+00:00"))
    return {"$gt": value > operand, "$gte": value >= operand, "$lt": value < operand,
            "$lte": value <= operand}[op]


leaf = st.one_of(
    st.sampled_from(LANGS).map(lambda v: {"lang": v}),
    st.lists(st.sampled_from(LANGS), min_size=1, max_size=2).map(lambda v: {"lang": {"$in": v}}),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), st.integers(1998, 2032))
    .map(lambda t: {"year": {t[0]: t[1]}}),
    st.sampled_from(TAGS).map(lambda v: {"tags": {"$contains": v}}),
    st.booleans().map(lambda v: {"draft": v}),
    st.booleans().map(lambda v: {"score": {"$exists": v}}),
    st.integers(1, 12).map(lambda m: {"updated": {"$gte": f"2024-{m:02d}-01T00:00:00Z"}}),
    st.sampled_from(["docs/api", "docs/guide", "docs/x"])
    .map(lambda p: {"source_uri": {"$prefix": p}}),
    st.sampled_from(LANGS).map(lambda v: {"lang": {"$ne": v}}),
)
filters = st.recursive(
    leaf, lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda ws: {"$or": ws}),
        inner.map(lambda w: {"$not": w}),
        st.tuples(inner, inner).map(lambda t: {**t[0], **t[1]} if not set(t[0]) & set(t[1])
                                    else t[0])),
    max_leaves=4)


def matching(where: dict, meta: list, chunks: list) -> np.ndarray:
    return np.array([holds(where, m, c) for m, c in zip(meta, chunks, strict=True)], dtype=bool)


def brute_top(X: np.ndarray, q: np.ndarray, rows: np.ndarray, k: int) -> tuple[list, np.ndarray]:
    """Rows by float64 cosine, best first; returns (ids, all scores)."""
    qn = q.astype(np.float64) / np.linalg.norm(q.astype(np.float64))
    scores = X.astype(np.float64) @ qn
    ranked = sorted(rows.tolist(), key=lambda r: (-scores[r], r))
    return ranked[:k], scores


def assert_exact_answer(res, X, q, mask, k) -> None:
    rows = np.flatnonzero(mask)
    want, scores = brute_top(X, q, rows, k)
    got = [ordinal_of(h) for h in res]
    assert len(got) == len(want) == min(k, rows.size)
    assert all(mask[g] for g in got)
    for h, g in zip(res, got, strict=True):  # every score is the real cosine of that row
        assert math.isclose(h.score, scores[g], abs_tol=1e-5)
    if want:  # the same top-k up to float32 ties: nothing better was left out
        assert min(scores[g] for g in got) >= scores[want[-1]] - 1e-5


_ORDINALS: dict[str, int] = {}


def ordinal_of(hit) -> int:
    return _ORDINALS[hit.chunk_id]


@pytest.fixture(scope="module", autouse=True)
def _ordinals(opened):
    _ORDINALS.update({cid: i for i, cid in enumerate(opened[3].chunk_ids())})


# --- build --------------------------------------------------------------------------------


def test_metadata_keeps_content_hash_and_every_answer(pair) -> None:
    X, _, _, with_meta, plain = pair
    with urna.open(with_meta) as a, urna.open(plain) as b:
        assert a.content_hash == b.content_hash and a.file_hash != b.file_hash
        assert a.chunk_ids() == b.chunk_ids()
        assert b.metadata_schema == {} and b.metadata(0) == {}
        for qi in range(5):
            q = X[qi * 7] + 0.1 * X[qi * 11]
            for run in (lambda f, q=q: f.search(q, 7), lambda f, q=q: f.search_ann(q, 7, 16),
                        lambda f, q=q: f.search_hybrid(q, "river stone", 7, 20),
                        lambda f, q=q: f.search_graph(q, 7, 2, 16),
                        lambda f, q=q: f.retrieve(q, 7),
                        lambda f: f.search_bm25("ember tide", 7),
                        lambda f, q=q: f.search_routed(q, 7, query_text="moss")):
                ra, rb = run(a), run(b)
                drop = {"metadata", "file_hash"}
                assert [{k: v for k, v in h.to_dict().items() if k not in drop} for h in ra] == \
                       [{k: v for k, v in h.to_dict().items() if k not in drop} for h in rb]
                assert all("metadata" not in h.to_dict() for h in rb)
                assert "filter" not in rb.to_dict()["explain"]


def test_metadata_adds_only_section_0x18(pair) -> None:
    from urna.format.reader import UrnaView

    _, _, _, with_meta, plain = pair
    a = UrnaView.from_bytes(Path(with_meta).read_bytes())
    b = UrnaView.from_bytes(Path(plain).read_bytes())
    assert a.content_hash() == b.content_hash()
    assert [e.section_id for e in a.entries] == sorted([e.section_id for e in b.entries] + [0x18])


def test_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    _, chunks, meta = corpus(30, 8, 3)
    shuffled = [None if m is None else dict(reversed(list(m.items()))) for m in meta]
    a = urna.build(tmp_path / "a.urna", "m", 8, "c/1", MODEL_HASH, chunks, metadata=meta,
                   reproducible=True)
    b = urna.build(tmp_path / "b.urna", "m", 8, "c/1", MODEL_HASH, chunks, metadata=shuffled,
                   reproducible=True)
    assert Path(a).read_bytes() == Path(b).read_bytes()


@pytest.mark.parametrize("metadata, words", [
    ([{"a": 1}], "1 rows but the file has 30 chunks"),
    ([{"a": {"nested": 1}}] * 30, "unsupported value"),
    ([{"a": 1}] * 29 + [{"a": "x"}], "mixed value types"),
    ([{"source_uri": "x"}] * 30, "source_uri"),
])
def test_bad_metadata_is_a_typed_error_and_writes_nothing(tmp_path: Path, metadata,
                                                          words) -> None:
    _, chunks, _ = corpus(30, 8, 4)
    out = tmp_path / "x.urna"
    with pytest.raises(InvalidInput, match=words):
        urna.build(out, "m", 8, "c/1", MODEL_HASH, chunks, metadata=metadata)
    assert list(tmp_path.iterdir()) == []


def test_declared_types_and_reading_back(tmp_path: Path) -> None:
    _, chunks, _ = corpus(3, 8, 5)
    rows = [{"date": "2024-05-01"}, {"date": 0}, None]
    with urna.open(urna.build(tmp_path / "t.urna", "m", 8, "c/1", MODEL_HASH, chunks,
                              metadata=rows, metadata_types={"date": "timestamp"})) as f:
        assert f.metadata_schema == {"date": "timestamp"}
        assert f.metadata(0) == {"date": datetime(2024, 5, 1, tzinfo=UTC)}
        assert f.metadata(2) == {}
        hits = f.search(chunks[0]["embedding"], 3, where={"date": {"$gt": "2000-01-01"}})
        assert [h.metadata for h in hits] == [{"date": datetime(2024, 5, 1, tzinfo=UTC)}]
        assert hits[0].to_dict()["metadata"] == {"date": "2024-05-01T00:00:00Z"}


# --- every path, against brute force ------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES)
@given(where=filters, qi=st.integers(0, 239), k=st.integers(1, 30))
def test_filtered_exact_equals_brute_force(opened, where, qi, k) -> None:
    X, chunks, meta, f = opened
    mask = matching(where, meta, chunks)
    q = X[qi] + 0.3 * X[(qi * 7 + 3) % len(X)]
    res = f.search(q, k, where=where)
    assert_exact_answer(res, X, q, mask, k)
    assert res.explain.filter["matches"] == int(mask.sum())
    batch = f.search_batch([q, X[0]], k, where=where)
    assert [h.chunk_id for h in batch[0]] == [h.chunk_id for h in res]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(where=filters, qi=st.integers(0, 239), k=st.integers(1, 30))
def test_filtered_ann_hybrid_graph_return_only_matching_rows(opened, where, qi, k) -> None:
    X, chunks, meta, f = opened
    mask = matching(where, meta, chunks)
    q = X[qi]
    _, scores = brute_top(X, q, np.flatnonzero(mask), k)
    for res in (f.search_ann(q, k, 16, where=where), f.retrieve(q, k, where=where)):
        got = [ordinal_of(h) for h in res]
        assert all(mask[g] for g in got)
        assert len(got) == min(k, int(mask.sum()))  # k matching rows always give k hits
    for res in (f.search_hybrid(q, "river", k, 20, where=where),
                f.search_graph(q, k, 1, 16, where=where)):
        got = [ordinal_of(h) for h in res]
        assert all(mask[g] for g in got) and len(got) <= k
        for h, g in zip(res, got, strict=True):
            assert math.isclose(h.score, scores[g], abs_tol=1e-5)
    graph = f.search_graph(q, k, 1, 16, where=where)
    unfiltered_union = {ordinal_of(h) for h in f.search_graph(q, 240, 1, 240)}
    assert {ordinal_of(h) for h in graph} <= unfiltered_union


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(where=filters, words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       k=st.integers(1, 20))
def test_filtered_bm25_is_bm25_restricted_to_matching_docs(opened, where, words, k) -> None:
    _, chunks, meta, f = opened
    mask = matching(where, meta, chunks)
    text = " ".join(words)
    everything = f.search_bm25(text, len(chunks))
    want = [(h.chunk_id, h.score) for h in everything if mask[ordinal_of(h)]][:k]
    got = [(h.chunk_id, h.score) for h in f.search_bm25(text, k, where=where)]
    assert got == want


def test_hnsw_filtered_and_the_exact_switch(tmp_path: Path) -> None:
    n = 3000
    X, chunks, _ = corpus(n, 16, 9)
    meta = [{"half": i % 2, "rare": i % 200 == 0} for i in range(n)]
    path = urna.build(tmp_path / "h.urna", "m", 16, "c/1", MODEL_HASH, chunks, metadata=meta,
                      with_hnsw=True, hnsw_ef_construction=16, hnsw_m=8)
    with urna.open(path) as f:
        for qi in range(0, 300, 30):
            q = X[qi]
            res = f.search_ann(q, 10, 16, where={"half": 1})
            assert res.explain.filter["path"] == "hnsw-filtered"
            ids = f.chunk_ids()
            got = [ids.index(h.chunk_id) for h in res]
            assert len(got) == 10 and all(g % 2 == 1 for g in got)
            rare = f.search_ann(q, 10, 16, where={"rare": True})
            assert rare.explain.filter == {"path": "exact-filtered", "selectivity": 15 / n,
                                           "matches": 15}
            assert len(rare) == 10


def test_no_filter_and_empty_filter_answer_as_before(opened) -> None:
    X, _, _, f = opened
    for where in (None, {}):
        a, b = f.search_ann(X[1], 5, 16, where=where), f.search_ann(X[1], 5, 16)
        assert a == b and a.explain.filter is None


def test_filter_errors_are_typed(opened) -> None:
    X, _, _, f = opened
    with pytest.raises(UnknownFilterField, match="nope"):
        f.search(X[0], 3, where={"nope": 1})
    with pytest.raises(FilterTypeError, match="year"):
        f.search_ann(X[0], 3, 16, where={"year": {"$gt": "soon"}})
    with pytest.raises(FilterError):
        f.search_bm25("river", 3, where=["lang"])  # type: ignore[arg-type]


def test_a_repeated_filter_reuses_its_mask(opened) -> None:
    from urna.runtime.filtering import row_mask

    st_ = opened[3]._state
    a = row_mask(st_, {"lang": "pt", "year": {"$gte": 2010}})
    b = row_mask(st_, {"year": {"$gte": 2010}, "lang": "pt"})
    assert a is b


def test_builtin_fields_work_without_metadata(pair) -> None:
    X, chunks, _, _, plain = pair
    with urna.open(plain) as f:
        res = f.search(X[0], 50, where={"source_uri": {"$glob": "docs/api/*.md"}})
        assert len(res) == 50 or len(res) == sum(c["source_uri"].startswith("docs/api/")
                                                 for c in chunks)
        assert all(h.source_uri.startswith("docs/api/") for h in res)
        assert all(h.metadata is None for h in res)


# --- catalogs -----------------------------------------------------------------------------


def test_catalog_filters_per_shard_schema(tmp_path: Path) -> None:
    from urna.runtime.catalog import open_catalog
    from urna.runtime.catalog.document import catalog_document, write_catalog

    X, chunks, meta = corpus(60, 8, 11)
    a = urna.build(tmp_path / "a.urna", "m", 8, "c/1", MODEL_HASH, chunks[:30],
                   metadata=meta[:30])
    b = urna.build(tmp_path / "b.urna", "m", 8, "c/1", MODEL_HASH, chunks[30:])
    entries = []
    for p in (a, b):
        with urna.open(p) as f:
            entries.append({"file": Path(p).name, "file_hash": f.file_hash,
                            "content_hash": f.content_hash, "n_chunks": f.n_embeddings,
                            "model_hash": f.model_hash, "embedding_dim": f.embedding_dim})
    cat = write_catalog(tmp_path / "c.catalog.json", catalog_document("c", 2, entries))
    with open_catalog(cat) as c:
        res = c.search(X[40], 10, where={"lang": "en"})
        want = [i for i in range(30) if meta[i] is not None and meta[i]["lang"] == "en"]
        assert len(res) == min(10, len(want))
        assert all(h.content_hash == entries[0]["content_hash"] for h in res)
        both = c.search(X[40], 10, where={"source_uri": {"$prefix": "docs/"}})
        assert len(both) == 10
        with pytest.raises(UnknownFilterField, match="nope"):
            c.search_ann(X[0], 3, 16, where={"nope": 1})


def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## Metadata and filters"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "{'lang': 'string', 'tags': 'string_list', 'year': 'int'}"
    assert lines[1] == "['notes/1.md'] {'lang': 'en', 'year': 2024}"
    assert lines[2] == "{'path': 'exact-filtered', 'selectivity': 0.3333333333333333, 'matches': 1}"


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """3000 rows, a small beam: broad filters take the filtered HNSW beam."""
    X, chunks, meta = corpus(3000, 16, 21)
    path = urna.build(tmp_path_factory.mktemp("large") / "l.urna", "m", 16, "c/1", MODEL_HASH,
                      chunks, metadata=meta, with_hnsw=True, hnsw_ef_construction=16, hnsw_m=8)
    with urna.open(path) as f:
        yield X, chunks, meta, f, {cid: i for i, cid in enumerate(f.chunk_ids())}


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(where=filters, qi=st.integers(0, 2999), k=st.integers(1, 40))
def test_filtered_hnsw_beam_returns_min_k_matches_matching_rows(large, where, qi, k) -> None:
    X, chunks, meta, f, ordinal = large
    mask = matching(where, meta, chunks)
    res = f.search_ann(X[qi], k, 16, where=where)
    got = [ordinal[h.chunk_id] for h in res]
    assert all(mask[g] for g in got)
    assert len(got) == min(k, int(mask.sum()))
    if mask.mean() < 0.05 or mask.sum() < 32 * 16:  # selective: the matching rows, exactly
        assert res.explain.filter["path"] == "exact-filtered"
    else:  # the beam (or its fallback when it found fewer than min(k, matches))
        assert res.explain.filter["path"] in ("hnsw-filtered", "exact-filtered")
