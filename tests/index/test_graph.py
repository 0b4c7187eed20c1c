"""Graph edges of the writer and search_graph's bounded BFS (03-runtime §10.3-10.4, §18 item 6).

The rebuild tests run the whole writer path (HNSW layer 0 -> edges -> 0x0C codec) on the
reference's build inputs and compare with the 0x0C payload of its graph files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.vectors import section_payload
from urna.errors import InvalidInput
from urna.format import layout as L
from urna.format.sections.graph import (
    EDGE_TYPE_NEXT_CHUNK as NEXT,
)
from urna.format.sections.graph import (
    EDGE_TYPE_SEMANTIC as SEM,
)
from urna.format.sections.graph import (
    decode_graph,
    encode_graph,
)
from urna.index.graph import bounded_bfs, graph_edges

REF = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1"


def line_csr(n: int):
    """Bidirectional line graph 0 - 1 - ... - n-1, as the reference's traversal tests use."""
    edges = [(i, NEXT, i + 1) for i in range(n - 1)] + [(i + 1, NEXT, i) for i in range(n - 1)]
    return decode_graph(encode_graph(n, edges), n)


# ------------------------------------------------------------------ §18 item 6: BFS


def test_one_hop_collects_the_immediate_neighbours():
    assert bounded_bfs(line_csr(10), [5], 1, 100) == [5, 4, 6]


def test_hops_bound_the_radius():
    assert bounded_bfs(line_csr(20), [10], 2, 100) == [10, 9, 11, 8, 12]


def test_max_frontier_caps_the_candidates():
    got = bounded_bfs(line_csr(50), [25], 10, 5)
    assert got == [25, 24, 26, 23, 27]


def test_cap_also_applies_to_the_seeds():
    assert bounded_bfs(line_csr(10), [1, 2, 3, 4], 3, 2) == [1, 2]


def test_seeds_are_deduped_and_come_first():
    got = bounded_bfs(line_csr(10), [3, 3, 4], 1, 100)
    assert got[:2] == [3, 4]
    assert len(set(got)) == len(got) and set(got) == {2, 3, 4, 5}


def test_zero_hops_returns_exactly_the_seeds():
    assert bounded_bfs(line_csr(10), [2, 5], 0, 100) == [2, 5]


def test_out_of_range_seeds_are_ignored():
    assert bounded_bfs(line_csr(5), [99, -1, 2], 1, 100) == [2, 1, 3]


def test_successive_calls_do_not_share_marks():
    csr = line_csr(10)
    assert bounded_bfs(csr, [1], 1, 100) == [1, 0, 2]
    assert bounded_bfs(csr, [8], 1, 100) == [8, 7, 9]
    assert bounded_bfs(csr, [1], 1, 100) == [1, 0, 2]


def test_neighbours_are_walked_in_csr_order_and_types_are_all_followed():
    # Node 0: NEXT -> 1, SEMANTIC -> 3 and 2 (stored as 2, 3 after the canonical sort).
    csr = decode_graph(encode_graph(5, [(0, SEM, 3), (0, NEXT, 1), (0, SEM, 2), (2, SEM, 4)]), 5)
    assert bounded_bfs(csr, [0], 1, 100) == [0, 1, 2, 3]
    assert bounded_bfs(csr, [0], 2, 100) == [0, 1, 2, 3, 4]


def test_empty_graph_and_no_seeds():
    empty = decode_graph(encode_graph(0, []), 0)
    assert bounded_bfs(empty, [0, 1], 3, 10) == []
    assert bounded_bfs(line_csr(4), [], 3, 10) == []


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 2), st.integers(0, n - 1)),
             max_size=80),
    st.lists(st.integers(-2, n + 2), max_size=8), st.integers(0, 4), st.integers(0, 40))))
def test_bfs_matches_a_plain_level_by_level_walk(case):
    n, edges, seeds, hops, cap = case
    csr = decode_graph(encode_graph(n, edges), n)
    adj = {v: [d for s, _, d in sorted(edges) if s == v] for v in range(n)}
    out: list[int] = []
    for s in seeds:  # the rule of §10.4 written out the slow way
        if len(out) < cap and 0 <= s < n and s not in out:
            out.append(s)
    frontier = list(out)
    for _ in range(hops):
        nxt = []
        for v in frontier:
            for w in adj[v]:
                if len(out) < cap and w not in out:
                    out.append(w)
                    nxt.append(w)
        frontier = nxt
    assert bounded_bfs(csr, seeds, hops, cap) == out


# ------------------------------------------------------------------ §10.3: which edges


def test_edges_are_next_chunk_both_ways_then_top_m_semantic_in_stored_order():
    level0 = [np.array([0, 2, 1, 3]), np.array([1]), np.array([3, 0, 1, 2]),
              np.array([], dtype=np.int64)]
    assert graph_edges(4, level0, 2) == [
        (0, NEXT, 1), (1, NEXT, 0), (1, NEXT, 2), (2, NEXT, 1), (2, NEXT, 3), (3, NEXT, 2),
        (0, SEM, 2), (0, SEM, 1),  # self loop 0 skipped, not counted
        (2, SEM, 3), (2, SEM, 0),
    ]


def test_top_m_zero_gives_next_chunk_edges_only():
    assert graph_edges(3, [np.array([1, 2]), np.array([0]), np.array([1])], 0) == [
        (0, NEXT, 1), (1, NEXT, 0), (1, NEXT, 2), (2, NEXT, 1)]


def test_single_chunk_has_no_edges():
    assert graph_edges(1, [np.array([0])], 8) == []


def test_edges_need_one_neighbour_list_per_chunk():
    with pytest.raises(InvalidInput):
        graph_edges(3, [np.array([1])], 4)
    with pytest.raises(InvalidInput):
        graph_edges(1, [np.array([])], -1)


@pytest.mark.parametrize("corpus", ["quickstart", "synthetic"])
def test_rebuilt_graph_section_equals_the_reference(corpus):
    from urna.index.hnsw import build_hnsw, level0_neighbors

    chunks = json.loads((REF / f"{corpus}.chunks.json").read_text())["chunks"]
    vectors = np.asarray([c["embedding"] for c in chunks], dtype=np.float32)
    hnsw = build_hnsw(vectors, 16, 400, 42)  # reference defaults
    n = len(chunks)
    edges = graph_edges(n, [level0_neighbors(hnsw, i) for i in range(n)], 4)  # graph_top_m 4
    reference = section_payload((REF / f"{corpus}-graph.urna").read_bytes(),
                                L.SECTION_GRAPH_ADJACENCY)
    assert encode_graph(n, edges) == reference
