"""0x0C graph_adjacency codec: reference bytes, §18 item 7 CSR vector, every decoder rejection.

Paths and what they raise:
* version != 1                                  -> UnsupportedSectionVersion(12, v)
* any read past the payload                     -> Malformed(12, "graph_adjacency: unexpected EOF")
* offsets count != n_nodes + 1                  -> "... offsets length != n_nodes+1"
* offsets going down / degree > 2^20            -> "... offsets not monotone" / "degree exceeds cap"
* offsets[0] != 0                               -> "... final offset != edge count"
* destination / kind-1 type column length       -> "... dst column length mismatch" /
                                                   "edge-type run length mismatch"
* type column kind > 1 / type value > 255       -> "unknown edge-type kind k" / "edge-type > 255"
* rebuilt destination >= n_nodes                -> "... dst out of range"
* n_nodes != expected n                         -> Malformed(12,
                                                            "graph node count a != n_embeddings b")
* intpack blob faults                           -> Malformed(0, "intpack: ...") (section id 0)
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, section_cases
from helpers.vectors import section_payload
from urna.errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion, UrnaError
from urna.format import layout as L
from urna.format.encodings.intpack import pack_u64s
from urna.format.sections.graph import (
    EDGE_TYPE_NEXT_CHUNK,
    EDGE_TYPE_SEMANTIC,
    GRAPH_MAX_DEGREE,
    decode_graph,
    encode_graph,
)

DATA = Path(__file__).resolve().parents[1] / "data"
REF = DATA / "ref-0.5.1"

# Written by the reference wheel (urna 0.5.1): 5 chunks, dim 4, with_graph, graph_top_m 0 and 2.
REF_TOP_M0 = bytes.fromhex(
    "0100000005000000000000001800000006000000010000000c0000000000000000000000041053871700000008"
    "000000010000000c00000000000000000000000261ea0000")
REF_TOP_M2 = bytes.fromhex(
    "0100000005000000000000001900000006000000010000000c000000000000000000000005609cf5241a00000012"
    "000000010000000c000000000000000000000002156292d204011800000012000000010000000c00000000000000"
    "0000000001666603")


def lp_intpack(values) -> bytes:
    blob = pack_u64s(np.asarray(values, dtype=np.uint64))
    return struct.pack("<I", len(blob)) + blob


def raw_payload(n_nodes, offsets, gaps, types_col: bytes, version: int = 1) -> bytes:
    """Hand-assembled payload, so hostile values can be written that the encoder refuses."""
    return struct.pack("<IQ", version, n_nodes) + lp_intpack(offsets) + lp_intpack(gaps) + types_col


def malformed(payload, reason: str, n=None, section_id: int = L.SECTION_GRAPH_ADJACENCY):
    with pytest.raises(MalformedSectionPayload) as ei:
        decode_graph(payload, n)
    assert (ei.value.section_id, ei.value.reason) == (section_id, reason)


# ------------------------------------------------------------------ reference vectors


@pytest.mark.parametrize("name", ["quickstart-graph.urna", "synthetic-graph.urna"])
def test_reference_payload_decodes_and_reencodes_to_the_same_bytes(name):
    buf = (REF / name).read_bytes()
    payload = section_payload(buf, L.SECTION_GRAPH_ADJACENCY)
    n = L.Header.unpack(buf).n_embeddings
    csr = decode_graph(payload, n)
    assert csr.n_nodes == n
    edges = csr.edges()
    assert edges == sorted(edges)
    # NEXT_CHUNK both ways between reading-order neighbours, and at most top_m=4 SEMANTIC per node.
    nexts = {(s, d) for s, t, d in edges if t == EDGE_TYPE_NEXT_CHUNK}
    assert nexts == {(i, i + 1) for i in range(n - 1)} | {(i + 1, i) for i in range(n - 1)}
    per_node = np.bincount([s for s, t, _ in edges if t == EDGE_TYPE_SEMANTIC], minlength=n)
    assert per_node.max() <= 4 and all(s != d for s, t, d in edges)
    assert encode_graph(n, edges) == payload
    assert encode_graph(n, list(reversed(edges))) == payload


@pytest.mark.parametrize("payload", [REF_TOP_M0, REF_TOP_M2])
def test_reference_written_small_graphs_roundtrip(payload):
    csr = decode_graph(payload, 5)
    assert encode_graph(5, csr.edges()) == payload


def test_single_type_graph_uses_the_one_type_column():
    csr = decode_graph(REF_TOP_M0, 5)
    assert REF_TOP_M0.endswith(b"\x00\x00")
    assert csr.edge_types.tolist() == [EDGE_TYPE_NEXT_CHUNK] * 8
    assert csr.neighbors_of(2).tolist() == [1, 3]


# ------------------------------------------------------------------ §18 item 7


def test_csr_vector_from_the_reference_tests():
    edges = [(0, EDGE_TYPE_SEMANTIC, 2), (0, EDGE_TYPE_NEXT_CHUNK, 1),
             (1, EDGE_TYPE_NEXT_CHUNK, 2), (3, EDGE_TYPE_NEXT_CHUNK, 0)]
    csr = decode_graph(encode_graph(4, edges), 4)
    assert csr.n_nodes == 4
    assert csr.neighbors_of(0).tolist() == [1, 2]
    assert [csr.edge_type(0, i) for i in range(3)] == [EDGE_TYPE_NEXT_CHUNK, EDGE_TYPE_SEMANTIC,
                                                       None]
    assert csr.neighbors_of(1).tolist() == [2]
    assert csr.neighbors_of(2).tolist() == []
    assert csr.neighbors_of(3).tolist() == [0]
    assert csr.neighbors_of(99).tolist() == []
    assert csr.offsets.dtype == np.int64 and csr.neighbors.dtype == np.int64
    assert csr.edge_types.dtype == np.uint8


def test_node_count_mismatch_is_rejected():
    payload = encode_graph(2, [(0, EDGE_TYPE_NEXT_CHUNK, 1)])
    malformed(payload, "graph node count 2 != n_embeddings 3", n=3)


def test_empty_graph_parses():
    payload = encode_graph(0, [])
    assert payload[-2:] == b"\x00\x00"
    csr = decode_graph(payload, 0)
    assert csr.n_nodes == 0 and csr.edges() == [] and csr.neighbors_of(0).tolist() == []


def test_every_truncated_prefix_fails_with_a_typed_error():
    payload = encode_graph(3, [(0, 0, 1), (1, 1, 2), (2, 1, 0)])
    for cut in range(len(payload)):
        with pytest.raises(UrnaError):
            decode_graph(payload[:cut], 3)


def test_truncation_before_a_column_is_the_graph_eof():
    payload = encode_graph(3, [(0, 0, 1), (1, 1, 2), (2, 1, 0)])
    malformed(payload[:10], "graph_adjacency: unexpected EOF")
    malformed(payload[:-1], "graph_adjacency: unexpected EOF")  # inside the type column blob


# ------------------------------------------------------------------ encoder


def test_encoder_rejects_endpoints_past_n_nodes_with_the_reference_text():
    with pytest.raises(MalformedSectionPayload) as ei:
        encode_graph(3, [(0, 0, 3)])
    assert ei.value.reason == "edge (0,3) out of range for n_nodes 3"


@pytest.mark.parametrize("edge", [(0, 256, 1), (0, -1, 1), (-1, 0, 1), (0, 0, 1 << 32)])
def test_encoder_rejects_values_the_wire_cannot_hold(edge):
    with pytest.raises(InvalidInput):
        encode_graph(1 << 33, [edge])


def test_duplicate_edges_are_kept_as_zero_gaps():
    csr = decode_graph(encode_graph(3, [(0, 1, 2), (0, 1, 2), (0, 1, 1)]), 3)
    assert csr.neighbors_of(0).tolist() == [1, 2, 2]


edge_sets = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 255),
                                   st.integers(0, n - 1)), max_size=120)))


@settings(max_examples=150, deadline=None)
@given(edge_sets, st.randoms(use_true_random=False))
def test_roundtrip_is_the_sorted_edge_set_and_encoding_is_order_free(case, rnd):
    n, edges = case
    payload = encode_graph(n, edges)
    assert decode_graph(payload, n).edges() == sorted(edges)
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    assert encode_graph(n, shuffled) == payload == encode_graph(n, edges)


# ------------------------------------------------------------------ decoder rejections


def test_version_other_than_1_is_unsupported():
    payload = bytearray(encode_graph(2, [(0, 0, 1)]))
    payload[0:4] = struct.pack("<I", 2)
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_graph(bytes(payload))
    assert (ei.value.section_id, ei.value.version) == (12, 2)


def test_hostile_n_nodes_is_caught_by_the_offsets_length():
    malformed(raw_payload(2**64 - 1, [0], [], b"\x00\x00"),
              "graph_adjacency: offsets length != n_nodes+1")
    malformed(raw_payload(0, [], [], b"\x00\x00"), "graph_adjacency: offsets length != n_nodes+1")


def test_offsets_must_not_go_down():
    malformed(raw_payload(2, [0, 2, 1], [1, 0], b"\x00\x00"),
              "graph_adjacency: offsets not monotone")


def test_degree_past_the_cap_is_rejected_before_any_allocation():
    malformed(raw_payload(2, [0, GRAPH_MAX_DEGREE + 1, GRAPH_MAX_DEGREE + 1], [], b"\x00\x00"),
              "graph_adjacency: degree exceeds cap")


def test_degree_at_the_cap_passes_the_offsets_check():
    # Exactly the cap is allowed; the failure comes later, from the missing destinations.
    malformed(raw_payload(1, [0, GRAPH_MAX_DEGREE], [], b"\x00\x00"),
              "graph_adjacency: dst column length mismatch")


def test_first_offset_must_be_zero():
    malformed(raw_payload(1, [1, 2], [0], b"\x00\x00"),
              "graph_adjacency: final offset != edge count")


def test_type_column_faults():
    base = dict(n_nodes=2, offsets=[0, 2, 2], gaps=[0, 1])
    malformed(raw_payload(**base, types_col=b"\x02"), "graph_adjacency: unknown edge-type kind 2")
    malformed(raw_payload(**base, types_col=b"\x01" + lp_intpack([0])),
              "graph_adjacency: edge-type run length mismatch")
    malformed(raw_payload(**base, types_col=b"\x01" + lp_intpack([0, 256])),
              "graph_adjacency: edge-type > 255")
    malformed(raw_payload(**base, types_col=b"\x00"), "graph_adjacency: unexpected EOF")


def test_destination_out_of_range():
    malformed(raw_payload(2, [0, 2, 2], [1, 1], b"\x00\x00"), "graph_adjacency: dst out of range")


def test_destinations_wrap_to_u32_like_the_reference():
    # The reference keeps ids in u32: a gap of 2^32 + 1 after 0 lands on node 1.
    csr = decode_graph(raw_payload(2, [0, 2, 2], [0, 2**32 + 1], b"\x00\x00"), 2)
    assert csr.neighbors_of(0).tolist() == [0, 1]


def test_runs_restart_at_each_edge_type():
    # Node 0: type 0 -> 1, then type 1 -> 0 (absolute again, not 1 + 0).
    payload = raw_payload(2, [0, 2, 2], [1, 0], b"\x01" + lp_intpack([0, 1]))
    assert decode_graph(payload, 2).edges() == [(0, 0, 1), (0, 1, 0)]


def test_intpack_faults_keep_section_id_zero():
    payload = struct.pack("<IQ", 1, 1) + struct.pack("<I", 8) + struct.pack("<II", 5, 7)
    malformed(payload, "intpack: block count inconsistent with count", section_id=0)


def test_trailing_bytes_are_accepted_as_in_the_reference():
    payload = encode_graph(2, [(0, 0, 1)])
    assert decode_graph(payload + b"junk", 2).edges() == [(0, 0, 1)]


# ------------------------------------------------------------------ reference mutation cases


@pytest.mark.parametrize("case", section_cases(L.SECTION_GRAPH_ADJACENCY),
                         ids=lambda c: c["mutation"])
def test_reference_mutations_fail_with_the_reference_message(case):
    buf = apply_case(case)
    payload = section_payload(buf, L.SECTION_GRAPH_ADJACENCY)
    with pytest.raises(UrnaError) as ei:
        decode_graph(payload, L.Header.unpack(buf).n_embeddings)
    assert type(ei.value).__name__ == case["variant"]
    assert str(ei.value) == case["message"]


def test_both_sort_paths_give_the_canonical_order():
    # Graphs past 2^24 nodes cannot use the packed u64 sort key; both paths must agree.
    from urna.format.sections.graph import _canonical_order

    rng = np.random.default_rng(7)
    src, typ, dst = (rng.integers(0, 50, 500), rng.integers(0, 256, 500), rng.integers(0, 50, 500))
    expected = sorted(zip(src.tolist(), typ.tolist(), dst.tolist(), strict=False))
    for n_nodes in (50, (1 << 24) + 1):
        got = _canonical_order(src, typ, dst, n_nodes)
        assert list(zip(*(a.tolist() for a in got), strict=False)) == expected


def test_edges_may_be_given_as_an_array():
    edges = [(0, 1, 2), (2, 0, 0), (1, 0, 2)]
    assert encode_graph(3, np.array(edges)) == encode_graph(3, edges)
    with pytest.raises(InvalidInput):
        encode_graph(3, np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(InvalidInput):
        encode_graph(3, [(0, 0, 2**70)])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_payloads_fail_only_with_typed_errors(data):
    payload = bytearray(REF_TOP_M2)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(payload)))
    with contextlib.suppress(UrnaError):
        decode_graph(bytes(payload[:cut]), 5)
