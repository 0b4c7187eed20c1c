"""A zstd payload decoded from its start on demand (``zstd.DecodedPrefix``) = the bulk decoder's
bytes, cut where the reader stopped.

Claims: for any payload the bulk decoder accepts (one frame or several, empty ones, frames of
many blocks, input longer than one feeding step), every ``extend(n)`` leaves ``data`` a prefix
of ``zstd_decompress(payload)`` holding at least ``n`` bytes exactly when the whole decode
does, and the last byte asked for is the bulk decoder's; a payload the bulk decoder refuses
never raises here (``cite`` then decodes it whole, which raises its error).
"""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload
from urna.format.encodings import zstd
from urna.format.encodings.zstd import DecodedPrefix, zstd_compress, zstd_decompress


def _check_prefix(payload: bytes, asks: list[int]) -> None:
    whole = zstd_decompress(payload)
    prefix = DecodedPrefix(payload)
    for n in asks:
        assert prefix.extend(n) == (n <= len(whole))
        assert len(prefix.data) >= min(n, len(whole))
        assert bytes(prefix.data) == whole[:len(prefix.data)]
    assert prefix.extend(len(whole))
    assert bytes(prefix.data) == whole
    assert not prefix.extend(len(whole) + 1)


PIECES = st.lists(st.one_of(st.binary(max_size=600), st.sampled_from([b"", b"abc" * 5000])),
                  min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(PIECES, st.lists(st.integers(0, 20_000), max_size=6))
def test_every_prefix_is_the_bulk_decoders(pieces: list[bytes], asks: list[int]) -> None:
    _check_prefix(b"".join(zstd_compress(p) for p in pieces), asks)


def test_frames_of_many_blocks_fed_in_steps() -> None:
    # incompressible: the payload is several feeding steps long, each frame many blocks
    rng = random.Random(7)
    pieces = [rng.randbytes(300_000), b"z" * 700_000, rng.randbytes(90_000)]
    payload = b"".join(zstd_compress(p) for p in pieces)
    assert len(payload) > 4 * zstd._PREFIX_STEP
    whole = b"".join(pieces)
    _check_prefix(payload, [0, 1, 5, 131_072, 131_073, 300_000, 300_001, 999_999, len(whole) - 1])
    one = DecodedPrefix(payload)
    assert one.extend(10) and len(one.data) < len(whole)  # it stopped well before the end


def test_an_empty_payload_holds_nothing() -> None:
    prefix = DecodedPrefix(b"")
    assert prefix.extend(0) and not prefix.extend(1)
    assert bytes(prefix.data) == b""


@pytest.mark.parametrize("payload", [
    b"\x28\xb5\x2f\xfd\x08" + bytes(10),  # unsupported frame parameter
    b"\x28\xb5\x2f\xfd",  # truncated header
    b"abcdefgh",  # no frame
    zstd_compress(b"hello world" * 100)[:-3],  # truncated block
])
def test_a_payload_the_bulk_decoder_refuses_never_raises(payload: bytes) -> None:
    with pytest.raises(MalformedSectionPayload):
        zstd_decompress(payload)
    prefix = DecodedPrefix(payload)
    assert not prefix.extend(1 << 20)


@settings(max_examples=80, deadline=None)
@given(st.binary(min_size=1, max_size=2000), st.data())
def test_damaged_payloads_never_raise(data: bytes, draw: st.DataObject) -> None:
    frame = bytearray(zstd_compress(data))
    pos = draw.draw(st.integers(0, len(frame) - 1))
    frame[pos] ^= draw.draw(st.integers(1, 255))
    payload = bytes(frame[:draw.draw(st.integers(0, len(frame)))])
    prefix = DecodedPrefix(payload)
    prefix.extend(draw.draw(st.integers(0, 5000)))
    with contextlib.suppress(MalformedSectionPayload):
        whole = zstd_decompress(payload)
        assert bytes(prefix.data) == whole[:len(prefix.data)]
