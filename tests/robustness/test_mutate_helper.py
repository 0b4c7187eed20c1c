"""The corruption helpers agree with the bytes the reference's own mutation generator wrote.

``reseal`` is checked against reference-made data only: every vector is a fixed point, and
every case the reference labelled as resealed (``*_fixed``, header-field and manifest cases) is
reproduced byte for byte, checksums and footer included.
"""

from __future__ import annotations

import struct

import pytest

from helpers import mutate as M
from urna.format import layout as L

CASES = M.load_cases()
SOURCES = sorted(p.name for p in M.REF_DIR.glob("*.urna"))
# Cases the reference wrote with every checksum recomputed after the corruption.
RESEALED = sorted(
    k for k, c in CASES.items()
    if "_fixed" in c["mutation"] or c["mutation"].startswith(("manifest_", "n_chunks_header",
                                                               "n_embeddings_header",
                                                               "embedding_dim_header",
                                                               "header_flags_set",
                                                               "legacy_magic"))
    and c["mutation"] not in ("manifest_offset_past_end", "manifest_size_huge")  # header-only pokes
)
# Cases left unsealed on purpose: a flip inside a payload with nothing recomputed.
UNSEALED_FLIPS = sorted(k for k, c in CASES.items() if c["mutation"].endswith("_payload_flip"))


@pytest.mark.parametrize("name", SOURCES)
def test_reseal_keeps_every_reference_vector_unchanged(name: str) -> None:
    data = M.source_bytes(name)
    assert bytes(M.reseal(bytearray(data))) == data


def test_resealed_case_list_is_not_empty() -> None:
    assert len(RESEALED) > 300 and len(UNSEALED_FLIPS) >= 40


@pytest.mark.parametrize("key", RESEALED)
def test_reseal_reproduces_the_reference_resealed_cases(key: str) -> None:
    data = M.apply_case(CASES[key])
    assert bytes(M.reseal(bytearray(data))) == data


@pytest.mark.parametrize("key", UNSEALED_FLIPS)
def test_reseal_repairs_an_unsealed_payload_flip(key: str) -> None:
    data = M.apply_case(CASES[key])
    sealed = bytes(M.reseal(bytearray(data)))
    assert sealed != data
    # The same flip, resealed by the reference, differs from ours only if reseal is wrong.
    fixed = CASES.get(key + "_fixed")
    if fixed is not None and fixed["patch"][0] == CASES[key]["patch"][0]:
        assert sealed == M.apply_case(fixed)


def test_apply_case_extends_with_zeros_and_cuts() -> None:
    grown = CASES["quickstart-exact__appended_byte"]
    src = M.source_bytes("quickstart-exact.urna")
    out = M.apply_case(grown)
    assert len(out) == len(src) + 1 and out[:len(src)] == src and out[-1] == 0
    cut = CASES["quickstart-exact__truncate_100"]
    assert M.apply_case(cut) == src[:100]


def test_poke_header_then_reseal_matches_reference_header_case() -> None:
    case = CASES["quickstart-exact__embedding_dim_header"]
    want = M.apply_case(case)
    dim = struct.unpack_from("<I", want, L.HEADER_FIELD_OFFSETS["embedding_dim"])[0]
    buf = bytearray(M.source_bytes("quickstart-exact.urna"))
    M.poke_header(buf, "embedding_dim", dim)
    assert bytes(M.reseal(buf)) == want


def test_poke_entry_and_payload_write_inside_the_named_section() -> None:
    buf = bytearray(M.source_bytes("quickstart-exact.urna"))
    start, end = M.payload_range(buf, L.SECTION_EMBEDDINGS)
    M.poke_payload(buf, L.SECTION_EMBEDDINGS, 0, b"\xff\xff\xff\xff")
    assert buf[start:start + 4] == b"\xff\xff\xff\xff"
    with pytest.raises(ValueError):
        M.poke_payload(buf, L.SECTION_EMBEDDINGS, end - start - 2, b"abcd")
    M.poke_entry(buf, L.SECTION_EMBEDDINGS, "encoding", 99)
    assert M.find_entry(buf, L.SECTION_EMBEDDINGS)[2].encoding == 99
    M.poke_header(buf, "section_table_count", -1)
    assert M.header(buf).section_table_count == L.U64_MAX


def test_iter_entries_bounds_a_hostile_count() -> None:
    buf = bytearray(M.source_bytes("quickstart-exact.urna"))
    M.poke_header(buf, "section_table_count", 1 << 60)
    entries = list(M.iter_entries(buf))
    assert len(entries) <= len(buf) // L.URNA_SECTION_ENTRY_SIZE


def test_replace_payload_points_the_entry_at_new_aligned_bytes() -> None:
    buf = M.source_bytes("quickstart-exact.urna")
    out = M.replace_payload(buf, L.SECTION_PROVENANCE, b"{}")
    _, _, e = M.find_entry(out, L.SECTION_PROVENANCE)
    assert e.offset % L.SECTION_ALIGNMENT == 0 and e.size == 2
    assert bytes(out[e.offset:e.offset + 2]) == b"{}"
    assert M.header(out).file_size == len(out)
    assert bytes(M.reseal(bytearray(out))) == bytes(out)


def test_reseal_leaves_short_buffers_alone() -> None:
    short = bytearray(b"URNA" + bytes(100))
    assert M.reseal(short) == bytearray(b"URNA" + bytes(100))


def test_mutate_is_deterministic_per_seed() -> None:
    base = M.source_bytes("quickstart-exact.urna")
    a = [M.mutate(base, M.Rng(s)) for s in range(50)]
    b = [M.mutate(base, M.Rng(s)) for s in range(50)]
    assert a == b
    assert len({bytes(x) for x, _ in a}) > 45
    assert sum(bytes(x) != base for x, _ in a) >= 45
    kinds = {k for _, steps in a for k in steps}
    assert {"bitflip", "truncate", "insert"} <= kinds
