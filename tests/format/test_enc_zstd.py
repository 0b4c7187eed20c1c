"""zstd (encoding 1): the reference's frame bytes, its decoder cap and its libzstd error texts.

The frame bytes and error texts asserted here were checked against the reference: the examples of
02-encodings §5.1, and the reasons the reference reported when the same payloads were placed in a
zstd-encoded 0x05 section.
"""

from __future__ import annotations

import gc
import json
import os
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload
from urna.format.encodings.zstd import (
    REFERENCE_ZSTD_VERSION,
    ZSTD_VERSION,
    decompress_cap,
    zstd_compress,
    zstd_decompress,
    zstd_decompress_view,
)


def _reason(payload: bytes) -> str:
    with pytest.raises(MalformedSectionPayload) as info:
        zstd_decompress(payload)
    assert info.value.section_id == 0
    with pytest.raises(MalformedSectionPayload) as viewed:  # the no-copy decoder alike
        zstd_decompress_view(payload)
    assert (viewed.value.section_id, viewed.value.reason) == (0, info.value.reason)
    return info.value.reason


def test_bundled_libzstd_is_the_one_the_reference_used():
    assert ZSTD_VERSION == REFERENCE_ZSTD_VERSION == (1, 5, 7)
    assert ZSTD_VERSION == zstandard.ZSTD_VERSION  # the package reports the same library


SRC = str(Path(__file__).resolve().parents[2] / "src")
# Compresses b"hello" in a fresh interpreter; reports where libzstd came from and whether the
# zstandard package was imported for it (argv[1] "fallback": urna's own look-up of the
# extension's file finds nothing, as in an install whose modules are not plain files).
_LOADER_PROBE = r"""
import json, sys
from importlib.machinery import PathFinder
if sys.argv[1] == "fallback":
    real = PathFinder.find_spec.__func__

    def find_spec(cls, name, path=None, target=None):
        asker = sys._getframe(1).f_globals.get("__name__")
        if name == "zstandard._cffi" and asker == "urna.format.encodings.zstd":
            return None
        return real(cls, name, path, target)

    PathFinder.find_spec = classmethod(find_spec)
from urna.format.encodings import zstd
frame = zstd.zstd_compress(b"hello").hex()
package_imported = "zstandard" in sys.modules
import zstandard
import zstandard.backend_cffi as backend
print(json.dumps({"frame": frame, "package_imported": package_imported,
                  "version": list(zstd.ZSTD_VERSION),
                  "package_version": list(zstandard.ZSTD_VERSION),
                  "same_lib": zstd.lib is backend.lib and zstd.ffi is backend.ffi,
                  "file": sys.modules["zstandard._cffi"].__file__,
                  "package_dir": zstandard.__path__[0]}))
"""


def _probe_loader(mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, "-c", _LOADER_PROBE, mode], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


def test_libzstd_loads_without_the_zstandard_package():
    # #20: the package __init__ (its C backend, platform, typing) costs a read verb ~8 ms
    got = _probe_loader("direct")
    assert not got["package_imported"]
    # the very extension (file, ffi and lib objects) the package's cffi backend uses
    assert got["same_lib"]
    assert os.path.dirname(got["file"]) == got["package_dir"]
    assert got["version"] == got["package_version"] == list(REFERENCE_ZSTD_VERSION)
    assert got["frame"] == "28b52ffd006829000068656c6c6f"


def test_an_extension_not_found_by_path_falls_back_to_the_package_import():
    got = _probe_loader("fallback")
    assert got["package_imported"] and got["same_lib"]
    assert got["version"] == list(REFERENCE_ZSTD_VERSION)
    assert got["frame"] == "28b52ffd006829000068656c6c6f"


@pytest.mark.parametrize("data, frame", [
    (b"hello", "28b52ffd006829000068656c6c6f"),
    (b"x", "28b52ffd006809000078"),
    # Empty input: libzstd sees the end first and records content size 0 (single segment).
    (b"", "28b52ffd2000010000"),
])
def test_frames_match_the_reference_sequence(data, frame):
    assert zstd_compress(data).hex() == frame


def test_frames_record_no_content_size_for_non_empty_input():
    frame = zstd_compress(b"abc" * 1000)
    assert frame[4] == 0x00  # frame header descriptor: no size, windowed
    params = zstandard.get_frame_parameters(frame)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN


def test_one_shot_compression_would_differ():
    data = b"the file is the database " * 400
    assert zstd_compress(data) != zstandard.ZstdCompressor(level=19).compress(data)


def test_concatenated_frames_decode_to_the_concatenation():
    frames = zstd_compress(b"ab") + zstd_compress(b"") + zstd_compress(b"cd")
    assert zstd_decompress(frames) == b"abcd"


def test_empty_payload_decodes_to_nothing():
    assert zstd_decompress(b"") == b""


def _sized_frame(size: int) -> bytes:
    """A single-segment frame declaring ``size`` bytes, with one RLE block of one byte."""
    block = (1 | (1 << 1) | (1 << 3)).to_bytes(3, "little")
    return b"\x28\xb5\x2f\xfd\xe0" + struct.pack("<Q", size) + block + b"\x00"


def test_declared_size_over_the_cap_is_refused_before_decoding():
    assert decompress_cap(0) == 64 * 1024 * 1024
    assert decompress_cap(1 << 20) == 128 << 20
    payload = _sized_frame(64 * 1024 * 1024 + 1)
    assert _reason(payload) == "zstd frame declares 67108865 bytes, exceeds cap 67108864"


@pytest.mark.parametrize("payload, name", [
    (b"\x28\xb5\x2f\xfd\x08" + bytes(10), "Unsupported frame parameter"),
    (b"\x28\xb5\x2f\xfd", "Src size is incorrect"),
    (b"abcdefgh", "Src size is incorrect"),
    (_sized_frame(2), "Data corruption detected"),
])
def test_libzstd_error_names_are_the_reason(payload, name):
    assert _reason(payload) == f"zstd decompression failed: {name}"


def test_truncated_frame_and_trailing_junk_fail():
    frame = zstd_compress(b"\x01\x00\x00\x00\x02" + bytes(7) + b"{}")
    assert _reason(frame[:-1]) == "zstd decompression failed: Src size is incorrect"
    assert _reason(frame + b"x") == "zstd decompression failed: Src size is incorrect"


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000))
def test_roundtrip_and_determinism(data):
    frame = zstd_compress(data)
    assert zstd_decompress(frame) == data
    assert zstd_compress(data) == frame
    view = zstd_decompress_view(frame)
    gc.collect()  # the view alone keeps the decoder's buffer alive
    assert isinstance(view, memoryview) and view.tobytes() == data


def test_frames_are_the_same_whichever_thread_or_context_compresses():
    # Threads share idle level-19 contexts: compressions at once and in turn, on inputs of
    # every size, give the frames one thread gives (a fresh process's first context).
    inputs = [bytes(range(256)) * k + b"tail %d" % k for k in (0, 1, 3, 40, 400)] + [b""]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    fresh = subprocess.run(
        [sys.executable, "-c", "import json, sys; from urna.format.encodings.zstd import "
         "zstd_compress; sys.stdout.write(','.join(zstd_compress(bytes.fromhex(x)).hex() "
         "for x in json.load(sys.stdin)))"],
        input=json.dumps([x.hex() for x in inputs]), env=env, check=True, capture_output=True,
        text=True).stdout.split(",")
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(zstd_compress, inputs * 4))
            assert [f.hex() for f in got] == fresh * 4


@settings(max_examples=80, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.data())
def test_corruption_raises_only_typed_errors(data, draw):
    frame = bytearray(zstd_compress(data))
    pos = draw.draw(st.integers(0, len(frame) - 1))
    frame[pos] ^= draw.draw(st.integers(1, 255))
    cut = draw.draw(st.integers(0, len(frame)))
    outcomes = []
    for decode in (zstd_decompress, zstd_decompress_view):
        try:
            outcomes.append(bytes(decode(bytes(frame[:cut]))))
        except MalformedSectionPayload as exc:
            outcomes.append(exc.reason)
    assert outcomes[0] == outcomes[1]


def test_encode_smallest_keeps_the_earliest_on_ties():
    from urna.errors import InvalidInput, UnsupportedSectionEncoding
    from urna.format.encodings import encode_smallest
    assert encode_smallest([0, 1], b"x") == (0, b"x")
    repetitive = b"abcdefgh" * 96
    assert encode_smallest([0, 1], repetitive) == (1, zstd_compress(repetitive))
    with pytest.raises(UnsupportedSectionEncoding):
        encode_smallest([0, 2], b"x")
    with pytest.raises(InvalidInput) as info:
        encode_smallest([], b"x")
    assert str(info.value) == "invalid input: encode_smallest: no candidate encodings"
