"""Deterministic corruption cases for the mutation fuzzer.

:func:`generate` turns one valid file into a list of ``(case_id, bytes-thunk)``: one-byte flips
at every header, table and manifest offset and at sampled payload offsets (raw and resealed),
truncations at every section boundary and at seeded random points, splices of one section
over another, hostile counts (0, 2**60, u64 max) in the header and in payload prefixes, and
seeded random multi-step mutations. The same source and seed always give the same list, so a
failing ``case_id`` is all it takes to replay one case (``URNA_FUZZ_ONLY=<case_id>``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from helpers import mutate as M
from urna.format import layout as L

Case = tuple[str, Callable[[], bytes]]
HOSTILE = (0, 1 << 60, L.U64_MAX)


def _flip(base: bytes, pos: int, sealed: bool) -> bytes:
    b = bytearray(base)
    b[pos] ^= 1 << (pos % 8) if pos % 3 else 0xFF
    return bytes(M.reseal(b) if sealed else b)


def _cut(base: bytes, n: int, sealed: bool) -> bytes:
    b = bytearray(base[:max(n, 0)])
    return bytes(M.reseal(b) if sealed else b)


def _header_field(base: bytes, field: str, value: int) -> bytes:
    b = bytearray(base)
    M.poke_header(b, field, value)
    return bytes(M.reseal(b, fix_file_size=field != "file_size"))


def _entry_field(base: bytes, index: int, field: str, value: int) -> bytes:
    b = bytearray(base)
    at = M.header(b).section_table_offset + index * L.URNA_SECTION_ENTRY_SIZE
    fmt = {"section_id": "<I", "encoding": "<I", "offset": "<Q", "size": "<Q"}[field]
    value &= (1 << (8 * struct.calcsize(fmt))) - 1
    struct.pack_into(fmt, b, at + L.ENTRY_FIELD_OFFSETS[field], value)
    return bytes(M.reseal(b))


def _payload_u64(base: bytes, start: int, rel: int, value: int) -> bytes:
    b = bytearray(base)
    struct.pack_into("<Q", b, start + rel, value)
    return bytes(M.reseal(b))


def _payload_u32(base: bytes, start: int, rel: int, value: int) -> bytes:
    b = bytearray(base)
    struct.pack_into("<I", b, start + rel, value)
    return bytes(M.reseal(b))


def _splice(base: bytes, src: L.SectionEntry, dst: L.SectionEntry) -> bytes:
    b = bytearray(base)
    k = min(src.size, dst.size)
    b[dst.offset:dst.offset + k] = base[src.offset:src.offset + k]
    return bytes(M.reseal(b))


def _swap_payload(base: bytes, src: L.SectionEntry, dst_id: int) -> bytes:
    return bytes(M.replace_payload(base, dst_id, base[src.offset:src.offset + src.size]))


def _random(base: bytes, seed: int, sealed: bool) -> bytes:
    b, _ = M.mutate(base, M.Rng(seed ^ 0xA5A50000))
    return bytes(M.reseal(b) if sealed else b)


def _entries(base: bytes) -> list[L.SectionEntry]:
    return [e for _, _, e in M.iter_entries(base)]


def is_hostile(case_id: str) -> bool:
    """True for the deterministic cases that write 2**60 or u64-max into a count or size."""
    return (any(f"-{v}" in case_id for v in (1 << 60, L.U64_MAX))
            and not case_id.startswith("rand"))


def generate(base: bytes, random_iters: int, seed: int = 0) -> list[Case]:
    """Every deterministic case for ``base`` plus ``random_iters`` seeded random ones."""
    return list(_iter(base, random_iters, seed))


def _iter(base: bytes, random_iters: int, seed: int) -> Iterator[Case]:
    h = M.header(base)
    entries = _entries(base)
    table_end = h.section_table_offset + h.section_table_count * L.URNA_SECTION_ENTRY_SIZE
    man_end = h.manifest_offset + h.manifest_size
    rng = M.Rng(seed + 1)
    for pos in range(L.URNA_HEADER_SIZE):
        yield f"hdr-flip-{pos}-raw", lambda p=pos: _flip(base, p, False)
        if not L.HEADER_CHECKSUM_OFFSET <= pos < L.HEADER_CHECKSUM_END:
            yield f"hdr-flip-{pos}-sealed", lambda p=pos: _flip(base, p, True)
    for pos in range(h.section_table_offset, table_end):
        yield f"tbl-flip-{pos}-raw", lambda p=pos: _flip(base, p, False)
        if (pos - h.section_table_offset) % L.URNA_SECTION_ENTRY_SIZE < 24:
            yield f"tbl-flip-{pos}-sealed", lambda p=pos: _flip(base, p, True)
    for pos in range(h.manifest_offset, man_end):
        yield f"man-flip-{pos}-raw", lambda p=pos: _flip(base, p, False)
        yield f"man-flip-{pos}-sealed", lambda p=pos: _flip(base, p, True)
    for e in entries:
        picks = set(range(min(e.size, 24)))
        picks |= {e.size - 1 - i for i in range(min(e.size, 4))}
        picks |= {rng.below(max(e.size, 1)) for _ in range(24)}
        for rel in sorted(p for p in picks if 0 <= p < e.size):
            yield f"pay-flip-{e.section_id:02x}-{rel}-sealed", \
                lambda p=e.offset + rel: _flip(base, p, True)
        yield f"pay-flip-{e.section_id:02x}-0-raw", lambda p=e.offset: _flip(base, p, False)
    cuts = {0, 1, 40, 127, 128, 167, 168, table_end, man_end, len(base) - 41, len(base) - 1}
    for e in entries:
        cuts |= {e.offset, e.offset + 1, e.offset + e.size - 1, e.offset + e.size,
                 e.offset + e.size + L.URNA_FOOTER_SIZE}
    cuts |= {rng.below(len(base)) for _ in range(16)}
    for n in sorted(c for c in cuts if 0 <= c < len(base)):
        yield f"cut-{n}-raw", lambda n=n: _cut(base, n, False)
        yield f"cut-{n}-sealed", lambda n=n: _cut(base, n, True)
    for field in ("embedding_dim", "n_chunks", "n_embeddings", "section_table_count",
                  "section_table_offset", "manifest_offset", "manifest_size", "file_size"):
        for v in HOSTILE + (1 << 31,):
            if field == "embedding_dim":
                v &= L.U32_MAX
            yield f"hdr-{field}-{v}", lambda f=field, v=v: _header_field(base, f, v)
    for i, e in enumerate(entries):
        sid = f"{e.section_id:02x}"
        for field, values in (("size", HOSTILE + (e.size + 1, max(e.size - 1, 0))),
                              ("offset", HOSTILE + (e.offset + 64,)),
                              ("encoding", tuple(range(11)) + (99,)),
                              ("section_id", (0x09, 0x0A, 0x0B, 0x0D, 0x30, 0xFF))):
            for v in values:
                yield (f"ent-{i}-{sid}-{field}-{v}",
                       lambda i=i, f=field, v=v: _entry_field(base, i, f, v))
        for rel in (0, 4, 8, 12, 16, 20):  # prefix version/count and the first inner counts
            if rel + 8 <= e.size:
                for v in HOSTILE:
                    yield f"pay-u64-{sid}-{rel}-{v}", \
                        lambda s=e.offset, r=rel, v=v: _payload_u64(base, s, r, v)
            if rel + 4 <= e.size:
                for v in (0, 0x7FFFFFFF, L.U32_MAX):
                    yield f"pay-u32-{sid}-{rel}-{v}", \
                        lambda s=e.offset, r=rel, v=v: _payload_u32(base, s, r, v)
    for src in entries:
        for dst in entries:
            if src.section_id != dst.section_id:
                yield f"splice-{src.section_id:02x}-over-{dst.section_id:02x}", \
                    lambda s=src, d=dst: _splice(base, s, d)
                yield f"swap-{src.section_id:02x}-into-{dst.section_id:02x}", \
                    lambda s=src, d=dst.section_id: _swap_payload(base, s, d)
    for s in range(seed, seed + random_iters):
        yield f"rand-{s}-{'sealed' if s % 2 else 'raw'}", lambda s=s: _random(base, s, bool(s % 2))
