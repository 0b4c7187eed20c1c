"""intpack (02-encodings §3): the spec's worked examples, round trips, and checks in block order."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload
from urna.format.encodings.intpack import (
    _SPLIT_BLOCKS,
    IntpackReader,
    pack_u64s,
    packed_len,
    unpack_low_u32s,
    unpack_u64s,
)
from urna.format.encodings.intpack_scan import block_values, read_directory

EXAMPLES = [  # 02-encodings §3.4
    ([], "00000000 00000000"),
    ([0], "01000000 01000000 0c000000 0000000000000000 00"),
    ([7, 7, 7, 7], "04000000 01000000 0c000000 0700000000000000 00"),
    ([0, 1, 2, 3, 4, 5], "06000000 01000000 0c000000 0000000000000000 03 88c602"),
    ([5, 1, 9, 2, 30724, 0],
     "06000000 01000000 0c000000 0000000000000000 0f 058000400240004080070000"),
    ([1000000, 1000001, 1000005, 1000002], "04000000 01000000 0c000000 40420f0000000000 03 4805"),
    ([2**64 - 1, 0, (2**64 - 1) // 2],
     "03000000 01000000 0c000000 0000000000000000 40 "
     "ffffffffffffffff 0000000000000000 ffffffffffffff7f"),
]


@pytest.mark.parametrize("values, hexdump", EXAMPLES)
def test_worked_examples(values, hexdump):
    data = pack_u64s(values)
    assert data.hex() == hexdump.replace(" ", "")
    assert unpack_u64s(data).tolist() == values
    assert packed_len(values) == len(data)


def test_two_blocks_directory():
    data = pack_u64s(range(130))
    assert data[:16].hex() == "82000000020000001000000089000000"
    assert data[137:].hex() == "8000000000000000" + "01" + "02"


values_st = st.lists(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 300)), max_size=700)


@settings(max_examples=150, deadline=None)
@given(values_st)
def test_round_trip_full_decode_equals_per_value_access(values):
    data = pack_u64s(values)
    assert data == pack_u64s(values)
    reader = IntpackReader(data)
    assert reader.all().tolist() == values
    assert [reader.get(i) for i in range(len(values))] == values


def test_min_wraps_and_extra_width_is_accepted():
    # A tampered min must not fail (wrapping add); a wider-than-needed width decodes fine.
    data = bytearray(struct.pack("<III", 2, 1, 12) + struct.pack("<Q", 2**64 - 1)
                     + bytes([8, 1, 2]))
    assert unpack_u64s(bytes(data)).tolist() == [0, 1]  # (2**64 - 1) + 1 and + 2, wrapped


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d[:7], "intpack: truncated u32"),
    (lambda d: struct.pack("<II", 300, 2) + d[8:], "intpack: block count inconsistent with count"),
    (lambda d: struct.pack("<II", 10**6, 7813), "intpack: truncated directory"),
    (lambda d: d[:28] + bytes([65]) + d[29:], "intpack: block width out of range"),  # block 0 at 20
    (lambda d: d[:-1], "intpack: truncated block body"),
])
def test_rejections(mutate, reason):
    data = pack_u64s(np.arange(300) * 3)
    bad = bytes(mutate(data))
    with pytest.raises(MalformedSectionPayload) as info:
        IntpackReader(bad).all()
    assert (info.value.section_id, info.value.reason) == (0, reason)


def test_first_bad_block_in_order_is_reported():
    data = bytearray(pack_u64s(np.arange(384) * 1000))
    n_blocks = 3
    # Point block 2 past the end and give block 1 an impossible width: block 1 is reported.
    struct.pack_into("<I", data, 8 + 4 * 2, len(data) + 100)
    block1 = struct.unpack_from("<I", data, 8 + 4)[0]
    data[block1 + 8] = 99
    with pytest.raises(MalformedSectionPayload, match="block width out of range"):
        IntpackReader(bytes(data)).all()
    assert n_blocks == IntpackReader(bytes(data)).n_blocks


def _spec_encode(values: list[int]) -> bytes:
    """02-encodings §3 written out value by value and bit by bit (an independent encoder)."""
    blocks = []
    for at in range(0, len(values), 128):
        block = values[at:at + 128]
        lo = min(block)
        width = max(v - lo for v in block).bit_length()
        acc = 0
        for i, v in enumerate(block):
            acc |= (v - lo) << (i * width)
        blocks.append(struct.pack("<QB", lo, width) + acc.to_bytes((len(block) * width + 7) // 8,
                                                                   "little"))
    offsets, pos = [], 8 + 4 * len(blocks)
    for blk in blocks:
        offsets.append(pos)
        pos += len(blk)
    return struct.pack(f"<II{len(blocks)}I", len(values), len(blocks), *offsets) + b"".join(blocks)


EDGES = [2**k for k in range(64)] + [2**k - 1 for k in range(1, 65)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 3), st.integers(0, 2**20),
                          st.sampled_from(EDGES)), max_size=1300))
def test_encoder_equals_the_spec_written_bit_by_bit(values):
    # many full blocks of mixed widths (the vectorised path) plus a partial tail block
    assert pack_u64s(values) == _spec_encode(values)
    assert packed_len(values) == len(_spec_encode(values))


def test_many_blocks_of_one_width_batch_like_one():
    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**13, size=128 * 2500 + 5, dtype=np.uint64).tolist()
    assert pack_u64s(values) == _spec_encode(values)


def _scan_all(data: bytes) -> list[int]:
    count, n_blocks = read_directory(data)
    return [v for b in range(n_blocks) for v in block_values(data, count, b)]


@settings(max_examples=150, deadline=None)
@given(values_st)
def test_numpy_free_scan_reads_what_the_reader_reads(values):
    # the dedup map's decoder (cite / validate without numpy) against the worked layout
    assert _scan_all(pack_u64s(values)) == values


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300),
       st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 255)), max_size=4),
       st.integers(0, 64))
def test_numpy_free_scan_fails_like_the_reader(values, edits, cut):
    # Damaged blobs (bytes overwritten, the tail cut): both decoders give the same values or
    # the same first error, block by block.
    data = bytearray(pack_u64s(values))
    for pos, byte in edits:
        if pos < len(data):
            data[pos] = byte
    blob = bytes(data[:len(data) - cut])

    def outcome(decode):
        try:
            return decode()
        except MalformedSectionPayload as exc:
            return ("error", exc.section_id, exc.reason)

    def by_reader():
        reader = IntpackReader(blob)
        return [int(v) for b in range(reader.n_blocks) for v in reader.block(b)]

    assert outcome(lambda: _scan_all(blob)) == outcome(by_reader)


def _outcome(decode):
    try:
        return [int(v) for v in decode()]
    except MalformedSectionPayload as exc:
        return ("error", exc.section_id, exc.reason)


WIDE = st.integers(2**56, 2**64 - 1)  # blocks of width 57-64: fields straddle 9 bytes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 300), WIDE,
                          st.sampled_from(EDGES)), max_size=1300),
       st.lists(st.tuples(st.sampled_from(["byte", "width", "offset", "count"]),
                          st.integers(0, 10**5), st.integers(0, 2**32 - 1)), max_size=4),
       st.integers(0, 64))
def test_full_decode_equals_the_block_by_block_scan(values, edits, cut):
    # ``all`` decodes every full block in one vectorised pass; the numpy-free scan (the dedup
    # map's decoder) reads block by block with Python integers. On intact and damaged blobs
    # (bytes overwritten, a width or offset or count rewritten, the tail cut, down to empty)
    # both give the same values or the same first error.
    data = bytearray(pack_u64s(values))
    n_blocks = -(-len(values) // 128)
    for kind, at, value in edits:
        if kind == "byte" and at < len(data):
            data[at] = value & 0xFF
        elif kind == "width" and n_blocks:
            block = struct.unpack_from("<I", data, 8 + 4 * (at % n_blocks))[0]
            if block + 8 < len(data):
                data[block + 8] = value % 80
        elif kind == "offset" and n_blocks:
            struct.pack_into("<I", data, 8 + 4 * (at % n_blocks), value % (len(data) + 64))
        elif kind == "count":
            struct.pack_into("<I", data, 0, value)
    blob = bytes(data[:max(0, len(data) - cut)])
    assert _outcome(lambda: IntpackReader(blob).all()) == _outcome(lambda: _scan_all(blob))


@pytest.mark.parametrize("width", [0, 1, 7, 8, 9, 31, 32, 33, 55, 56, 57, 63, 64])
def test_full_blocks_of_every_width_class_decode_exactly(width):
    # many full blocks of one width, then the short tail block, against the spec's bits
    rng = np.random.default_rng(width)
    top = (1 << width) - 1
    values = [int(v) & top for v in rng.integers(0, 2**63, size=128 * 40 + 17, dtype=np.uint64)]
    values += [top] * 128  # one block that needs every bit of the width
    blob = _spec_encode(values)
    assert IntpackReader(blob).all().tolist() == values


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 2**33), WIDE),
                max_size=1300), st.integers(0, 40))
def test_low_u32_decode_is_each_value_cut_to_32_bits(values, cut):
    # BM25's columns are read as u32 (the reference's ``as u32``): the same values mod 2**32,
    # or the same first error on a cut blob
    blob = pack_u64s(values)[:max(0, len(pack_u64s(values)) - cut)]
    want = _outcome(lambda: _scan_all(blob))
    if isinstance(want, list):
        want = [v & 0xFFFFFFFF for v in want]
    got = _outcome(lambda: unpack_low_u32s(blob))
    assert got == want
    if isinstance(got, list):
        assert IntpackReader(blob).all(np.uint32).dtype == np.uint32


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_a_column_split_across_threads_decodes_as_the_block_scan(threads, monkeypatch):
    # past _SPLIT_BLOCKS full blocks the batches run on helper threads: every value, u64 and
    # u32 alike, must be the one the numpy-free scan reads, whatever the thread count
    monkeypatch.setenv("URNA_THREADS", threads)
    rng = np.random.default_rng(int(threads))
    n = 128 * (_SPLIT_BLOCKS * 2 + 3) + 41  # full blocks past two parts, then a short tail
    widths = rng.integers(0, 65, size=n // 128 + 1)
    values = [int(v) & ((1 << int(widths[i // 128])) - 1)
              for i, v in enumerate(rng.integers(0, 2**63, size=n, dtype=np.uint64))]
    blob = pack_u64s(values)
    want = _scan_all(blob)
    assert IntpackReader(blob).all().tolist() == want
    assert unpack_low_u32s(blob).tolist() == [v & 0xFFFFFFFF for v in want]
