"""The 0x07 HNSW payload codec against the reference's bytes, its mutations and every rejection.

Paths and what they raise:
- header shorter than seven u32,    -> MalformedSectionPayload(7, "hnsw: unexpected EOF")
  or a v1 record cut short
- n_nodes != n                      -> MalformedSectionPayload(7, "node count N != n_embeddings M")
- version not 1 or 2                -> UnsupportedSectionVersion(7, version)
- v2 column length past the end     -> MalformedSectionPayload(7, "hnsw: truncated intpack column")
- broken intpack blob               -> MalformedSectionPayload(0, "intpack: ...")
- v2 column lengths                 -> "hnsw v2: level count mismatch" /
                                       "layer-count column mismatch" /
                                       "neighbour-id column mismatch"
- v2 caps / ids                     -> "hnsw: level exceeds cap 64" /
                                       "hnsw: degree exceeds cap 4096" /
                                       "hnsw v2: neighbour id out of range"
- v1 caps / ids                     -> "hnsw v1: level exceeds cap" /
                                       "hnsw v1: degree exceeds cap" /
                                       "hnsw v1: neighbour id out of range"
- scalars after the nodes           -> "hnsw: max_level exceeds cap" /
                                       "hnsw: entry_point out of range"
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, load_cases
from helpers.vectors import sections
from urna.errors import MalformedSectionPayload, UnsupportedSectionVersion
from urna.format.encodings.intpack import pack_u64s
from urna.format.layout import SECTION_HNSW_INDEX, Header
from urna.format.sections.hnsw import HnswPayload, decode_hnsw, encode_hnsw, payload_from_lists

DATA = Path(__file__).resolve().parent.parent / "data"
REF = DATA / "ref-0.5.1"
HNSW_FILES = sorted(p.name for p in REF.glob("*.urna")
                    if p.stem.split("-", 1)[1] in {"tiny", "nano", "hybrid", "f16_hnsw"})


def section_payload(buf: bytes, section_id: int = SECTION_HNSW_INDEX) -> tuple[bytes, int]:
    """(payload bytes of ``section_id``, header n_embeddings), read through the table."""
    return sections(buf)[section_id][1], Header.unpack(buf).n_embeddings


def as_lists(g: HnswPayload) -> list[list[list[int]]]:
    """The graph as per-node, per-layer Python lists (an independent view for comparisons)."""
    return [[g.neighbors(i, layer).tolist() for layer in range(int(g.levels[i]) + 1)]
            for i in range(g.n_nodes)]


def v1_bytes(head: tuple, lists: list[list[list[int]]]) -> bytes:
    """A version-1 payload written field by field, as the spec lays it out."""
    out = struct.pack("<7I", 1, *head[1:6], len(lists))
    for node in lists:
        out += struct.pack("<I", len(node) - 1)
        for layer in node:
            out += struct.pack(f"<I{len(layer)}I", len(layer), *layer)
    return out


def v2_bytes(head: tuple, levels, counts, ids, n_nodes: int | None = None) -> bytes:
    """A version-2 payload from explicit columns (which may disagree, for negative tests)."""
    version, m, m0, efc, ep, ml = head
    n = len(levels) if n_nodes is None else n_nodes
    out = struct.pack("<7I", version, m, m0, efc, ep, ml, n)
    for col in (levels, counts, ids):
        blob = pack_u64s(np.asarray(col, dtype=np.uint64))
        out += struct.pack("<I", len(blob)) + blob
    return out


HEAD = (2, 16, 32, 400, 0, 0)


# ------------------------------------------------------------------ the reference's payloads


@pytest.mark.parametrize("name", HNSW_FILES)
def test_reference_payload_round_trips_byte_for_byte(name: str) -> None:
    payload, n = section_payload((REF / name).read_bytes())
    g = decode_hnsw(payload, n)
    assert g.n_nodes == n and g.version == 2
    assert encode_hnsw(g) == payload


def test_reference_files_cover_every_hnsw_variant() -> None:
    assert len(HNSW_FILES) == 9


def test_decode_reads_header_fields() -> None:
    payload, n = section_payload((REF / "synthetic-f16_hnsw.urna").read_bytes())
    g = decode_hnsw(memoryview(payload), n)
    assert (g.m, g.m_max0, g.ef_construction) == (8, 16, 64)
    assert struct.unpack_from("<7I", payload) == (2, 8, 16, 64, g.entry_point, g.max_level, 400)
    # layer-0 lists respect m_max0, upper lists m; every id is another node
    for i in range(n):
        assert len(g.neighbors(i, 0)) <= 16
        for layer in range(1, int(g.levels[i]) + 1):
            assert len(g.neighbors(i, layer)) <= 8
        assert i not in g.neighbors(i, 0).tolist()


def test_v1_payload_decodes_to_the_same_graph_as_v2() -> None:
    payload, n = section_payload((REF / "synthetic-tiny.urna").read_bytes())
    g = decode_hnsw(payload, n)
    head = (1, g.m, g.m_max0, g.ef_construction, g.entry_point, g.max_level)
    g1 = decode_hnsw(v1_bytes(head, as_lists(g)), n)
    assert g1.version == 1
    assert as_lists(g1) == as_lists(g)
    assert encode_hnsw(g1) == payload  # the writer always emits v2


def test_neighbors_outside_the_graph_are_empty() -> None:
    g = payload_from_lists(16, 32, 400, 0, 1, [[[1], [1]], [[0], [0]]])
    assert g.neighbors(0, 1).tolist() == [1]
    assert g.neighbors(0, 2).size == 0
    assert g.neighbors(5, 0).size == 0
    assert g.neighbors(-1, 0).size == 0


# ------------------------------------------------------------------ properties


@st.composite
def graphs(draw):
    n = draw(st.integers(0, 24))
    lists = []
    for _ in range(n):
        level = draw(st.integers(0, 4))
        lists.append([draw(st.lists(st.integers(0, n - 1), max_size=12))
                      for _ in range(level + 1)])
    ml = max((len(x) - 1 for x in lists), default=0)
    ep = draw(st.integers(0, max(n - 1, 0)))
    m = draw(st.integers(0, 64))
    return payload_from_lists(m, 2 * m, draw(st.integers(0, 2**32 - 1)), ep, ml, lists)


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_decode_inverts_encode_and_encode_is_pure(g: HnswPayload) -> None:
    blob = encode_hnsw(g)
    assert encode_hnsw(g) == blob
    back = decode_hnsw(blob, g.n_nodes)
    assert as_lists(back) == as_lists(g)
    assert (back.m, back.m_max0, back.ef_construction, back.entry_point, back.max_level) == \
        (g.m, g.m_max0, g.ef_construction, g.entry_point, g.max_level)
    assert encode_hnsw(back) == blob


@settings(max_examples=60, deadline=None)
@given(graphs(), st.data())
def test_every_truncation_raises_a_typed_error(g: HnswPayload, data) -> None:
    blob = encode_hnsw(g)
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises((MalformedSectionPayload, UnsupportedSectionVersion)) as exc:
        decode_hnsw(blob[:cut], g.n_nodes)
    assert exc.value.section_id in (0, SECTION_HNSW_INDEX)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 8))
def test_random_bytes_never_escape_as_anything_but_typed_errors(blob: bytes, n: int) -> None:
    for payload in (blob, struct.pack("<7I", 2, 16, 32, 400, 0, 0, n) + blob):
        try:
            g = decode_hnsw(payload, n)
        except (MalformedSectionPayload, UnsupportedSectionVersion):
            continue
        assert g.n_nodes == n and (n == 0 or g.entry_point < n)
        assert g.ids.size == 0 or int(g.ids.max()) < n


# ------------------------------------------------------------------ rejections


def malformed(payload: bytes, n: int) -> MalformedSectionPayload:
    with pytest.raises(MalformedSectionPayload) as exc:
        decode_hnsw(payload, n)
    return exc.value


@pytest.mark.parametrize("cut", [0, 3, 4, 27])
def test_short_header_is_unexpected_eof(cut: int) -> None:
    e = malformed(v2_bytes(HEAD, [0], [0], [])[:cut], 1)
    assert (e.section_id, e.reason) == (7, "hnsw: unexpected EOF")


def test_node_count_must_equal_n_embeddings() -> None:
    e = malformed(v2_bytes(HEAD, [0, 0], [0, 0], []), 3)
    assert (e.section_id, e.reason) == (7, "node count 2 != n_embeddings 3")


def test_node_count_is_checked_before_the_version() -> None:
    payload = struct.pack("<7I", 9, 16, 32, 400, 0, 0, 5)
    assert malformed(payload, 4).reason == "node count 5 != n_embeddings 4"


@pytest.mark.parametrize("version", [0, 3, 0xFFFFFFFF])
def test_unknown_version(version: int) -> None:
    payload = struct.pack("<7I", version, 16, 32, 400, 0, 0, 1)
    with pytest.raises(UnsupportedSectionVersion) as exc:
        decode_hnsw(payload, 1)
    assert (exc.value.section_id, exc.value.version) == (7, version)


def test_column_length_past_the_end() -> None:
    payload = struct.pack("<7II", *HEAD, 1, 1000) + bytes(20)
    e = malformed(payload, 1)
    assert (e.section_id, e.reason) == (7, "hnsw: truncated intpack column")


def test_missing_columns_are_eof() -> None:
    payload = v2_bytes(HEAD, [0], [0], [])
    cut = len(payload) - len(pack_u64s([])) - 4  # drop the ids column entirely
    assert malformed(payload[:cut], 1).reason == "hnsw: unexpected EOF"


def test_intpack_errors_keep_section_zero() -> None:
    blob = bytearray(pack_u64s([0]))
    blob[4] = 7  # n_blocks inconsistent with count
    payload = struct.pack("<7I", *HEAD, 1) + struct.pack("<I", len(blob)) + bytes(blob)
    e = malformed(payload, 1)
    assert (e.section_id, e.reason) == (0, "intpack: block count inconsistent with count")


def test_hostile_column_count_allocates_nothing_and_reports_the_intpack_error() -> None:
    # count claims 2^32-1 values but the directory is absent: the intpack check fires first
    blob = struct.pack("<II", 0xFFFFFFFF, 0x2000000)
    payload = struct.pack("<7I", *HEAD, 1) + struct.pack("<I", len(blob)) + blob
    e = malformed(payload, 1)
    assert (e.section_id, e.reason) == (0, "intpack: truncated directory")


def test_column_count_mismatch_after_a_valid_blob() -> None:
    e = malformed(v2_bytes(HEAD, [0, 0, 0], [0, 0], [], n_nodes=2), 2)
    assert e.reason == "hnsw v2: level count mismatch"
    e = malformed(v2_bytes(HEAD, [0, 1], [0, 0], []), 2)
    assert e.reason == "hnsw v2: layer-count column mismatch"
    e = malformed(v2_bytes(HEAD, [0, 0], [1, 1], [1]), 2)
    assert e.reason == "hnsw v2: neighbour-id column mismatch"


def test_hostile_level_value() -> None:
    e = malformed(v2_bytes(HEAD, [2**64 - 1], [], []), 1)
    assert (e.section_id, e.reason) == (7, "hnsw: level exceeds cap 64")
    assert malformed(v2_bytes(HEAD, [65], [], []), 1).reason == "hnsw: level exceeds cap 64"


def test_level_64_is_accepted() -> None:
    g = decode_hnsw(v2_bytes(HEAD, [64], [0] * 65, []), 1)
    assert int(g.levels[0]) == 64 and g.counts().size == 65


def test_hostile_degree_value() -> None:
    e = malformed(v2_bytes(HEAD, [0], [2**64 - 1], []), 1)
    assert e.reason == "hnsw: degree exceeds cap 4096"
    assert malformed(v2_bytes(HEAD, [0], [4097], []), 1).reason == "hnsw: degree exceeds cap 4096"


def test_out_of_range_neighbour_v2() -> None:
    e = malformed(v2_bytes(HEAD, [0, 0], [1, 1], [5, 0]), 2)
    assert (e.section_id, e.reason) == (7, "hnsw v2: neighbour id out of range")
    assert malformed(v2_bytes(HEAD, [0, 0], [1, 1], [1, 2]), 2).reason == \
        "hnsw v2: neighbour id out of range"


def test_v1_rejections() -> None:
    h1 = (1, 16, 32, 400, 0, 0)
    assert malformed(v1_bytes(h1, [[[7]]]), 1).reason == "hnsw v1: neighbour id out of range"
    head = struct.pack("<7I", *h1, 1)
    assert malformed(head + struct.pack("<I", 65), 1).reason == "hnsw v1: level exceeds cap"
    assert malformed(head + struct.pack("<II", 0, 4097), 1).reason == "hnsw v1: degree exceeds cap"
    # three ids announced, two present: EOF; a bad id among the present ones wins
    assert malformed(head + struct.pack("<IIII", 0, 3, 0, 0), 1).reason == "hnsw: unexpected EOF"
    assert malformed(head + struct.pack("<IIII", 0, 3, 0, 9), 1).reason == \
        "hnsw v1: neighbour id out of range"
    # level 1 announces two layer records; only the first is present
    assert malformed(head + struct.pack("<II", 1, 0), 1).reason == "hnsw: unexpected EOF"


def test_scalar_checks_come_after_the_nodes() -> None:
    e = malformed(v2_bytes((2, 16, 32, 400, 0, 65), [0], [0], []), 1)
    assert e.reason == "hnsw: max_level exceeds cap"
    e = malformed(v2_bytes((2, 16, 32, 400, 9, 0), [0], [0], []), 1)
    assert e.reason == "hnsw: entry_point out of range"
    # with a broken node column the node error wins
    e = malformed(v2_bytes((2, 16, 32, 400, 9, 65), [0], [1], [4]), 1)
    assert e.reason == "hnsw v2: neighbour id out of range"


def test_empty_graph_accepts_any_entry_point_and_trailing_bytes() -> None:
    g = decode_hnsw(v2_bytes((2, 16, 32, 400, 77, 0), [], [], []) + b"junk", 0)
    assert g.n_nodes == 0 and g.entry_point == 77
    assert encode_hnsw(g) == v2_bytes((2, 16, 32, 400, 77, 0), [], [], [])


def test_unchecked_oddities_are_kept_as_stored() -> None:
    # self-loops, duplicates, over-long lists and a max_level above every node are accepted
    g = decode_hnsw(v2_bytes((2, 1, 2, 0, 1, 5), [0, 0], [3, 0], [0, 0, 1]), 2)
    assert g.neighbors(0, 0).tolist() == [0, 0, 1] and g.max_level == 5


# ------------------------------------------------------------------ the reference's mutations


def hnsw_mutation_cases() -> list:
    keep = []
    for name, case in sorted(load_cases().items()):
        msg = case.get("message") or ""
        fixed = "__s07_" in name and name.endswith("_fixed")
        if fixed or "reason=hnsw" in msg:
            keep.append(pytest.param(case, id=name))
    return keep


@pytest.mark.parametrize("case", hnsw_mutation_cases())
def test_reference_mutations_of_0x07(case: dict) -> None:
    payload, n = section_payload(apply_case(case))
    if case["ok"]:
        assert decode_hnsw(payload, n).n_nodes == n
        return
    with pytest.raises((MalformedSectionPayload, UnsupportedSectionVersion)) as exc:
        decode_hnsw(payload, n)
    assert type(exc.value).__name__ == case["variant"]
    assert str(exc.value) == case["message"]
