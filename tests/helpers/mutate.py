"""Byte-level corruption helpers for negative and fuzz tests.

* ``reseal(buf)`` recomputes every in-bounds section checksum, the header checksum (after
  setting ``file_size`` to the real length) and the footer digest, so a corruption passes the
  integrity layer of 01-container §10.1 and reaches the manifest parser and the decoders.
  ``reseal_entry`` / ``reseal_header`` / ``reseal_footer`` do one of those steps.
* ``apply_case(case)`` builds the bytes of one ``mutations-0.5.1.json`` case (cut or
  zero-extend the source to ``length``, then ``write_patches``: each ``[offset, hex]`` patch);
  ``section_cases(section_id)`` picks the cases whose payload error names one section.
* ``poke_header`` / ``poke_entry`` / ``poke_prefix_count`` write one field through the offsets
  and struct formats of :mod:`urna.format.layout`; no offset is hard-coded here.
* ``Rng`` (seeded xorshift64*) and ``mutate`` (one to four libFuzzer-style steps) drive the
  seeded fuzzer; the same seed always gives the same bytes.

Everything works on ``bytearray`` in place and also returns it, and never raises on a
buffer too short or too broken to reseal: it leaves what it cannot reach as it is.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path

from urna.format import layout as L

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
REF_DIR = DATA_DIR / "ref-0.5.1"
MUTATIONS_JSON = DATA_DIR / "mutations-0.5.1.json"

# struct format of each header / entry field, keyed like layout's *_FIELD_OFFSETS.
_HEADER_FMT = {
    "magic": "4s", "version_major": "<H", "version_minor": "<H", "flags": "<I",
    "embedding_dim": "<I", "n_chunks": "<Q", "n_embeddings": "<Q", "file_size": "<Q",
    "section_table_offset": "<Q", "section_table_count": "<Q", "manifest_offset": "<Q",
    "manifest_size": "<Q", "header_checksum": "8s", "reserved": "48s",
}
_ENTRY_FMT = {"section_id": "<I", "encoding": "<I", "offset": "<Q", "size": "<Q",
              "checksum": "8s"}
_BODY_MIN = L.URNA_HEADER_SIZE + L.URNA_FOOTER_SIZE


# ---------------------------------------------------------------- reading the table


def header(buf: bytes | bytearray) -> L.Header:
    """The header of ``buf`` (which must hold at least 128 bytes)."""
    return L.Header.unpack(bytes(buf[:L.URNA_HEADER_SIZE]))


def iter_entries(buf: bytes | bytearray) -> Iterator[tuple[int, int, L.SectionEntry]]:
    """Yield ``(index, table_position, entry)`` for each table entry that lies in the body."""
    if len(buf) < _BODY_MIN:
        return
    h = header(buf)
    body_end = len(buf) - L.URNA_FOOTER_SIZE
    # A hostile count is bounded by the bytes present, never trusted.
    for i in range(min(h.section_table_count, body_end // L.URNA_SECTION_ENTRY_SIZE + 1)):
        at = h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE
        if at + L.URNA_SECTION_ENTRY_SIZE > body_end:
            return
        yield i, at, L.SectionEntry.unpack(bytes(buf), at)


def find_entry(buf: bytes | bytearray, section_id: int) -> tuple[int, int, L.SectionEntry]:
    """The first table entry of ``section_id`` as ``(index, table_position, entry)``."""
    for i, at, e in iter_entries(buf):
        if e.section_id == section_id:
            return i, at, e
    raise KeyError(f"section 0x{section_id:02x} not in the table")


def payload_range(buf: bytes | bytearray, section_id: int) -> tuple[int, int]:
    """``(start, end)`` file offsets of the first payload of ``section_id``."""
    _, _, e = find_entry(buf, section_id)
    return e.offset, e.offset + e.size


# ---------------------------------------------------------------- field pokes


def _put(buf: bytearray, pos: int, fmt: str, value) -> bytearray:
    if isinstance(value, (bytes, bytearray)):
        fmt = f"{len(value)}s"
    if fmt[-1] in "HIQ":
        value &= (1 << (8 * struct.calcsize(fmt))) - 1  # let callers write -1 for "max"
    struct.pack_into(fmt, buf, pos, value)
    return buf


def poke_header(buf: bytearray, field: str, value) -> bytearray:
    """Write header ``field`` (a name of ``layout.HEADER_FIELD_OFFSETS``); no reseal."""
    return _put(buf, L.HEADER_FIELD_OFFSETS[field], _HEADER_FMT[field], value)


def poke_entry(buf: bytearray, section_id: int, field: str, value) -> bytearray:
    """Write ``field`` of the first table entry of ``section_id``; no reseal."""
    _, at, _ = find_entry(buf, section_id)
    return _put(buf, at + L.ENTRY_FIELD_OFFSETS[field], _ENTRY_FMT[field], value)


def poke_payload(buf: bytearray, section_id: int, rel: int, data: bytes) -> bytearray:
    """Overwrite bytes at ``rel`` inside the payload of ``section_id``; no reseal."""
    start, end = payload_range(buf, section_id)
    if rel < 0 or start + rel + len(data) > end:
        raise ValueError("poke outside the payload")
    buf[start + rel:start + rel + len(data)] = data
    return buf


def poke_prefix_count(buf: bytearray, section_id: int, count: int) -> bytearray:
    """Set the u64 count of a raw payload's 12-byte ``(u32 version, u64 count)`` prefix."""
    return poke_payload(buf, section_id, 4, struct.pack("<Q", count & L.U64_MAX))


def replace_payload(buf: bytes | bytearray, section_id: int, new: bytes,
                    encoding: int | None = None) -> bytearray:
    """Rebuild the file with ``section_id``'s payload replaced by ``new`` (appended at the
    end of the body, 64-aligned, with its entry pointed at it), then reseal.

    The old payload stays in place as dead bytes; the reader allows that (§10.4).
    """
    out = bytearray(buf[:len(buf) - L.URNA_FOOTER_SIZE])
    out += bytes(L.align_up(len(out)) - len(out))
    off = len(out)
    out += new
    out += bytes(L.URNA_FOOTER_SIZE)
    poke_entry(out, section_id, "offset", off)
    poke_entry(out, section_id, "size", len(new))
    if encoding is not None:
        poke_entry(out, section_id, "encoding", encoding)
    return reseal(out)


# ---------------------------------------------------------------- resealing


def reseal_entry(buf: bytearray, section_id: int) -> bytearray:
    """Recompute the checksum of the first entry of ``section_id`` from its payload."""
    _, at, e = find_entry(buf, section_id)
    end = e.offset + e.size
    if end <= len(buf) - L.URNA_FOOTER_SIZE:
        buf[at + L.ENTRY_FIELD_OFFSETS["checksum"]:at + L.URNA_SECTION_ENTRY_SIZE] = (
            L.h8(bytes(buf[e.offset:end])))
    return buf


def reseal_header(buf: bytearray, *, fix_file_size: bool = True) -> bytearray:
    """Recompute the header checksum (after setting file_size to ``len(buf)`` by default)."""
    if len(buf) < L.URNA_HEADER_SIZE:
        return buf
    if fix_file_size:
        poke_header(buf, "file_size", len(buf))
    pos = L.HEADER_CHECKSUM_OFFSET
    buf[pos:L.HEADER_CHECKSUM_END] = L.header_checksum(bytes(buf[:L.URNA_HEADER_SIZE]))
    return buf


def reseal_footer(buf: bytearray) -> bytearray:
    """Recompute the footer digest over the body (footer_size left as it is)."""
    if len(buf) < _BODY_MIN:
        return buf
    body_end = len(buf) - L.URNA_FOOTER_SIZE
    buf[body_end + 8:] = hashlib.sha256(memoryview(buf)[:body_end]).digest()
    return buf


def reseal(buf: bytearray, *, fix_file_size: bool = True) -> bytearray:
    """Recompute every in-bounds section checksum, the header checksum and the footer.

    Entries whose payload lies outside the body keep their checksum (the reader rejects them
    on bounds first anyway). A buffer shorter than header + footer is left as it is.
    """
    if len(buf) < _BODY_MIN:
        return buf
    if fix_file_size:
        poke_header(buf, "file_size", len(buf))
    body_end = len(buf) - L.URNA_FOOTER_SIZE
    for _, at, e in iter_entries(buf):
        end = e.offset + e.size
        if end <= body_end:
            pos = at + L.ENTRY_FIELD_OFFSETS["checksum"]
            buf[pos:pos + 8] = L.h8(memoryview(buf)[e.offset:end])
    reseal_header(buf, fix_file_size=False)
    return reseal_footer(buf)


# ---------------------------------------------------------------- mutations-0.5.1.json


def load_cases(path: Path = MUTATIONS_JSON) -> dict[str, dict]:
    """The reference-labelled corruption cases, keyed by name."""
    return json.loads(path.read_text())


_SOURCES: dict[str, bytes] = {}


def source_bytes(name: str) -> bytes:
    """The bytes of a vector of ``tests/data/ref-0.5.1`` (cached)."""
    if name not in _SOURCES:
        _SOURCES[name] = (REF_DIR / name).read_bytes()
    return _SOURCES[name]


def write_patches(buf: bytearray, patches: list) -> bytearray:
    """Write each ``[offset, hex]`` patch of a case into ``buf`` (in place; also returned)."""
    for offset, hexdata in patches:
        data = bytes.fromhex(hexdata)
        buf[offset:offset + len(data)] = data
    return buf


def apply_case(case: dict, base: bytes | None = None) -> bytes:
    """The bytes of one case: source cut (or zero-extended) to ``length``, then patched."""
    src = source_bytes(case["src"]) if base is None else base
    n = case["length"]
    out = bytearray(src[:n])
    out += bytes(n - len(out))
    return bytes(write_patches(out, case["patch"]))


def section_cases(section_id: int) -> list[dict]:
    """The cases whose recorded payload error (malformed or unsupported version) names a section."""
    return [c for c in load_cases().values()
            if f"section={section_id} " in (c.get("message") or "")
            and c["variant"] in ("MalformedSectionPayload", "UnsupportedSectionVersion")]


# ---------------------------------------------------------------- seeded mutation


class Rng:
    """xorshift64*: tiny, seeded, identical on every platform."""

    def __init__(self, seed: int) -> None:
        self.state = ((seed * 0x9E3779B97F4A7C15) | 1) & L.U64_MAX

    def u64(self) -> int:
        """Next 64-bit value."""
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & L.U64_MAX
        x ^= x >> 27
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & L.U64_MAX

    def below(self, n: int) -> int:
        """Uniform-ish integer in ``[0, n)`` (0 when ``n == 0``)."""
        return self.u64() % n if n > 0 else 0


SPECIAL_U32 = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
SPECIAL_U64 = (0, 1, 1 << 60, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFE,
               L.U64_MAX)


def mutate_step(b: bytearray, rng: Rng) -> str:
    """Apply one random corruption to ``b`` in place and name it."""
    if not b:
        b.append(rng.u64() & 0xFF)
        return "grow"
    op = rng.below(9)
    n = len(b)
    if op == 0:
        b[rng.below(n)] ^= 1 << rng.below(8)
        return "bitflip"
    if op == 1:
        b[rng.below(n)] = rng.u64() & 0xFF
        return "byte"
    if op in (2, 3):
        i = rng.below(n)
        run = min(1 + rng.below(64), n - i)
        b[i:i + run] = (b"\x00" if op == 2 else b"\xff") * run
        return "zeros" if op == 2 else "ones"
    if op == 4 and n >= 4:
        i = rng.below(n // 4) * 4
        b[i:i + 4] = struct.pack("<I", SPECIAL_U32[rng.below(len(SPECIAL_U32))])
        return "u32special"
    if op == 5 and n >= 8:
        i = rng.below(n // 8) * 8
        v = SPECIAL_U64[rng.below(len(SPECIAL_U64))] if rng.below(2) else n + rng.below(3) - 1
        b[i:i + 8] = struct.pack("<Q", v & L.U64_MAX)
        return "u64special"
    if op == 6:
        del b[n - (1 + rng.below(max(n, 2) // 2)):]
        return "truncate"
    if op == 7 and n >= 16:
        k = 1 + rng.below(n // 4)
        src, dst = rng.below(n - k), rng.below(n - k)
        b[dst:dst + k] = b[src:src + k]
        return "splice"
    i = rng.below(n + 1)
    b[i:i] = bytes(rng.u64() & 0xFF for _ in range(1 + rng.below(32)))
    return "insert"


def mutate(base: bytes, rng: Rng) -> tuple[bytearray, list[str]]:
    """One to four corruption steps over a copy of ``base``; returns the bytes and step names."""
    b = bytearray(base)
    steps = [mutate_step(b, rng) for _ in range(1 + rng.below(4))]
    return b, steps
