"""Decompression bombs are refused with the typed error before any large allocation
(02-encodings §5.2: cap = max(64 MiB, 128 x compressed length), checked against
``ZSTD_decompressBound`` first).

The frames are written by hand (RLE blocks of 128 KiB cost 4 bytes each) and placed in a real
file with ``replace_payload``; the expected texts are the ones the reference 0.5.1 wheel
printed for these very files. Memory is measured as the peak RSS of a fresh subprocess, so
allocations made by libzstd or cffi count too.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zstandard

import urna
from helpers import mutate as M
from urna.errors import MalformedSectionPayload
from urna.format.encodings.intpack import pack_u64s
from urna.format.reader import UrnaView

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BLOCK = 1 << 17
CAP = 64 << 20


def rle_blocks(n: int, byte: bytes = b"a") -> bytes:
    """``n`` RLE blocks of 128 KiB each (block header: size << 3 | type 1 << 1 | last)."""
    return b"".join(((BLOCK << 3) | 2 | (i == n - 1)).to_bytes(3, "little") + byte
                    for i in range(n))


def frame_streaming(n_blocks: int, byte: bytes = b"a") -> bytes:
    """A frame without content size (window 128 KiB) expanding to ``n_blocks`` x 128 KiB."""
    return ZSTD_MAGIC + b"\x00" + bytes([7 << 3]) + rle_blocks(n_blocks, byte)


def frame_declaring(size: int, body: bytes) -> bytes:
    """A single-segment frame that declares ``size`` bytes (8-byte field) over ``body``."""
    return ZSTD_MAGIC + b"\xe0" + struct.pack("<Q", size) + body


def raw_block(data: bytes) -> bytes:
    """One last raw block."""
    return ((len(data) << 3) | 1).to_bytes(3, "little") + data


def txt_streams(frames: list[bytes]) -> bytes:
    """A txt_streams (id 10) container over ready-made frames (02-encodings §6)."""
    off = [0]
    for f in frames:
        off.append(off[-1] + len(f))
    return b"\x00" + struct.pack("<Q", len(frames)) + pack_u64s(off) + b"".join(frames)


def _declares(n: int) -> str:
    return f"zstd frame declares {n} bytes, exceeds cap {CAP}"


HYBRID = "quickstart-hybrid.urna"  # 0x02, 0x03, 0x05, 0x06, 0x08 are zstd (encoding 1)
EXACT = "quickstart-exact.urna"
_SMALL = [zstandard.ZstdCompressor().compress(f"text {i}".encode()) for i in range(12)]

# name -> (source, section, payload, new encoding or None, section in error, reason)
BOMBS = {
    "declares_2^40": (HYBRID, 2, frame_declaring(1 << 40, raw_block(b"x")), None, 2,
                      _declares(1 << 40)),
    "rle_128MiB": (HYBRID, 2, frame_streaming(1024), None, 2, _declares(128 << 20)),
    "concatenated_66MiB": (HYBRID, 2, frame_streaming(16) * 33, None, 2, _declares(33 << 21)),
    "size_lie_small": (HYBRID, 2, frame_declaring(100, rle_blocks(1)), None, 2,
                       "zstd decompression failed: Destination buffer is too small"),
    "size_lie_large": (HYBRID, 2, frame_declaring(1 << 20, rle_blocks(1024)), None, 2,
                       "zstd decompression failed: Destination buffer is too small"),
    "chunk_ids_rle": (HYBRID, 1, frame_streaming(1024), 1, 1, _declares(128 << 20)),
    "spans_rle": (HYBRID, 3, frame_streaming(1024), None, 3, _declares(128 << 20)),
    "provenance_rle": (HYBRID, 5, frame_streaming(1024), None, 5, _declares(128 << 20)),
    "contract_rle": (HYBRID, 6, frame_streaming(1024), None, 6, _declares(128 << 20)),
    "txt_streams_slice_rle": (EXACT, 2, txt_streams(_SMALL[:11] + [frame_streaming(1024)]), 10,
                              2, _declares(128 << 20)),
}


def bomb_bytes(name: str) -> bytes:
    """The file carrying bomb ``name``."""
    src, sid, payload, enc, _, _ = BOMBS[name]
    return bytes(M.replace_payload(M.source_bytes(src), sid, payload, encoding=enc))


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_refused_with_the_reference_text(name: str, tmp_path: Path) -> None:
    data = bomb_bytes(name)
    _, _, _, _, sid, reason = BOMBS[name]
    with pytest.raises(MalformedSectionPayload) as info:
        UrnaView.from_bytes(data).content_hash()
    assert (info.value.section_id, info.value.reason) == (sid, reason)
    path = tmp_path / "bomb.urna"
    path.write_bytes(data)
    with pytest.raises(MalformedSectionPayload) as info:
        urna.open(str(path))
    assert str(info.value) == f"malformed section payload: section={sid} reason={reason}"


def test_bm25_bomb_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "bm25.urna"
    path.write_bytes(bytes(M.replace_payload(M.source_bytes(HYBRID), 8, frame_streaming(1024))))
    with pytest.raises(MalformedSectionPayload) as info:
        urna.open(str(path))
    assert (info.value.section_id, info.value.reason) == (8, _declares(128 << 20))


_RSS_SCRIPT = textwrap.dedent("""
    import json, sys
    import urna

    def status(key):
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith(key + ":"))

    def reset_peak():
        # "5" resets VmHWM to the current RSS (Linux >= 4.0), so each case's peak is its own
        # and not hidden under an earlier high-water mark (ru_maxrss cannot be reset).
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return status("VmRSS")

    with urna.open(sys.argv[1]) as f:   # warm every import and code path on a good file
        f.inspect()
    out = {}
    for p in sys.argv[2:]:
        base = reset_peak()
        try:
            urna.open(p)
            verdict = "ok"
        except urna.errors.UrnaError as e:
            verdict = type(e).__name__
        out[p] = [verdict, status("VmHWM") - base]
    print(json.dumps(out))
""")


def measured(script: str, good: Path, *paths: object) -> object:
    """Run an RSS ``script`` in a fresh interpreter (warmed on ``good``) over ``paths``; its
    JSON answer."""
    proc = subprocess.run([sys.executable, "-c", script, str(good), *map(str, paths)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_refused_bombs_do_not_grow_memory(tmp_path: Path) -> None:
    good = tmp_path / "good.urna"
    good.write_bytes(M.source_bytes(HYBRID))
    paths = []
    for name in sorted(BOMBS):
        p = tmp_path / f"{name}.urna"
        p.write_bytes(bomb_bytes(name))
        paths.append(str(p))
    res = measured(_RSS_SCRIPT, good, *paths)
    assert all(v[0] == "MalformedSectionPayload" for v in res.values()), res
    grown = max(v[1] for v in res.values())
    assert grown < 16 << 20, f"peak RSS grew {grown >> 20} MiB: {res}"


def test_expansion_under_the_cap_stays_proportional(tmp_path: Path) -> None:
    """48 MiB of zeros in 0x02 is legal for the codec (the reference opens it); our peak
    stays within a small multiple of the decoded size, and the bad text is a typed error."""
    path = tmp_path / "big.urna"
    path.write_bytes(bytes(M.replace_payload(M.source_bytes(HYBRID), 2,
                                             frame_streaming(384, b"\x00"))))
    good = tmp_path / "good.urna"
    good.write_bytes(M.source_bytes(HYBRID))
    status, grown = measured(_RSS_SCRIPT, good, path)[str(path)]
    assert status == "ok"  # as the reference: open hashes 0x02 but does not parse it
    assert grown < 3 * (48 << 20), f"{grown >> 20} MiB for 48 MiB of text"


def dedup_amplifier(n_blocks: int) -> bytes:
    """A 0x0B map of ``128 * n_blocks`` back-refs in ``5 * n_blocks`` bytes: every directory
    entry points at one width-0 block (legal: intpack does not require distinct offsets)."""
    head = struct.pack("<II", 128 * n_blocks, n_blocks)
    return b"\x00" + head + struct.pack("<I", 8 + 4 * n_blocks) * n_blocks + bytes(9)


# The reference opens the 262 KB version of this map with 3.5 GB RSS: it expands the dedup
# pool into a full 0x02 payload before hashing. We hash the expansion piece by piece, so the
# outcome is the reference's (the file opens) with bounded memory.
def test_dedup_map_amplification_is_bounded(tmp_path: Path) -> None:
    good = tmp_path / "good.urna"
    good.write_bytes(M.source_bytes("dedup-zstd_f32.urna"))
    amp = tmp_path / "amp.urna"  # 8 KB map -> 262,144 chunks of pool text
    amp.write_bytes(bytes(M.replace_payload(good.read_bytes(), 0x0B, dedup_amplifier(2048))))
    status, grown = measured(_RSS_SCRIPT, good, amp)[str(amp)]
    assert status == "ok"  # as the reference: open hashes the expanded 0x02, never parses it
    assert grown < 32 << 20, f"an 8 KB dedup map grew RSS by {grown >> 20} MiB"


def intpack_amplifier(n_blocks: int) -> bytes:
    """An intpack blob of ``128 * n_blocks`` zeros in ``4 * n_blocks + 17`` bytes."""
    head = struct.pack("<II", 128 * n_blocks, n_blocks)
    return head + struct.pack("<I", 8 + 4 * n_blocks) * n_blocks + bytes(9)


# The reference grows ~58 MB here: its spans repack (0x03, encoding 4) rebuilds the raw
# payload (one lp(uri) per span) before the count is compared with n. We read the columns, check
# them and the count first, so the outcome is the reference's SectionCountMismatch with bounded
# memory.
def test_spans_repack_amplification_is_bounded(tmp_path: Path) -> None:
    good = tmp_path / "good.urna"
    good.write_bytes(M.source_bytes(EXACT))
    col = intpack_amplifier(512)  # 65,536 spans claimed in a 7 KB payload
    uri = b"u" * 1000
    payload = b"\x01" + struct.pack("<II", 128 * 512, 1) + struct.pack("<I", len(uri)) + uri
    payload += (struct.pack("<I", len(col)) + col) * 3
    amp = tmp_path / "amp.urna"
    amp.write_bytes(bytes(M.replace_payload(good.read_bytes(), 3, payload, encoding=4)))
    status, grown = measured(_RSS_SCRIPT, good, amp)[str(amp)]
    assert status == "SectionCountMismatch"  # the reference's outcome
    assert grown < 32 << 20, f"a 7 KB spans payload grew RSS by {grown >> 20} MiB"


_VALIDATE_RSS_SCRIPT = textwrap.dedent("""
    import json, sys
    from urna.runtime.validation import validate_bytes

    def status(key):
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith(key + ":"))

    import numpy  # the repack's columns need it; the good file's validate does not import it
    validate_bytes(open(sys.argv[1], "rb").read())  # warm every import and code path
    data = open(sys.argv[2], "rb").read()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    base = status("VmRSS")
    result = validate_bytes(data)
    print(json.dumps([result.content_hash, status("VmHWM") - base]))
""")


# A legal spans repack may name one long URI in every record: its raw form, which the content
# hash covers, is then n times the URI (the reference builds it whole: 2 GB of RSS for a 26 MB
# file of 20,000 records). Both the open and validate hash it as it is rebuilt, and the spans
# are read from the columns.
def test_a_legal_spans_repack_far_larger_than_its_file_opens_in_bounded_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_OPEN_CACHE", "0")  # every open hashes
    good = tmp_path / "good.urna"
    good.write_bytes(M.source_bytes(EXACT))
    n = UrnaView.from_bytes(good.read_bytes()).header.n_embeddings
    uri = b"u" * (4 << 20)  # 4 MiB of URI in the file, n x 4 MiB in the raw 0x03
    cols = [pack_u64s([0] * n), pack_u64s(range(n)), pack_u64s([5] * n)]
    payload = b"\x01" + struct.pack("<II", n, 1) + struct.pack("<I", len(uri)) + uri
    payload += b"".join(struct.pack("<I", len(col)) + col for col in cols)
    big = tmp_path / "big.urna"
    big.write_bytes(bytes(M.replace_payload(good.read_bytes(), 3, payload, encoding=4)))

    status, grown = measured(_RSS_SCRIPT, good, big)[str(big)]
    assert status == "ok"
    # a few copies of the one URI (the mapped page, its pooled head, one piece, its text),
    # never the n-fold raw form (a whole rebuild grew 28 x the URI here)
    assert grown < 8 * len(uri), f"{grown >> 20} MiB to open a 0x03 of {n} x 4 MiB"

    content_hash, grown = measured(_VALIDATE_RSS_SCRIPT, good, big)
    assert grown < 8 * len(uri), f"validate grew {grown >> 20} MiB"
    # the hash is the one of the whole raw payload, built the plain way
    whole = UrnaView.from_bytes(big.read_bytes())
    whole.decoded(0x03)
    assert content_hash == whole.content_hash()
    with urna.open(big) as f:
        assert f.content_hash == content_hash
        assert [h.source_uri for h in f.search(f.vectors([0])[0], k=2)] == [uri.decode()] * 2
