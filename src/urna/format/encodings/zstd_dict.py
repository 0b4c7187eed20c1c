"""zstd_dict (wire encoding 5, container kind 1) and its trained dictionary, section 0x0A.

02-encodings §6.3. The dictionary is trained by libzstd's default ``ZDICT_trainFromBuffer`` over
the sorted, de-duplicated texts with a capacity of ``clamp(total // 10, 4 KiB, 112 KiB)``; each
text is then one ``ZSTD_compress2`` frame against a level-19 CDict (one-shot, so frames record
their size and the dictID). The same libzstd calls as the reference give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import InvalidInput
from ..cursor import decode_utf8
from ._canonical import build_canonical
from .textcontainer import KIND_ZSTD_DICT, malformed, parse_container, write_container
from .zstd import (
    LEVEL,
    ZstdFailure,
    decompress_into,
    error_name,
    ffi,
    frame_bound,
    is_error,
    lib,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MIN_SAMPLES = 8
MIN_DICT_BYTES = 4 * 1024
MAX_DICT_BYTES = 112 * 1024
STREAM_CAP = 64 * 1024 * 1024
DICT_MAGIC = b"\x37\xa4\x30\xec"


def train_dict(texts: list[str]) -> bytes | None:
    """Train the shared dictionary from ``texts`` (any order, repeats allowed), or None."""
    unique = sorted(set(texts))
    if len(unique) < MIN_SAMPLES:
        return None
    samples = [t.encode("utf-8") for t in unique]
    total = sum(len(s) for s in samples)
    if total == 0:
        return None
    cap = min(max(total // 10, MIN_DICT_BYTES), MAX_DICT_BYTES)
    data = b"".join(samples)
    sizes = ffi.new("size_t[]", [len(s) for s in samples])
    dst = ffi.new("char[]", cap)
    rc = lib.ZDICT_trainFromBuffer(dst, cap, ffi.from_buffer(data), sizes, len(samples))
    # A failed training (too little or too uniform material) is not an error: the candidate
    # is simply not offered.
    if lib.ZDICT_isError(rc):
        return None
    return ffi.buffer(dst, rc)[:]


def dict_frames(texts: list[str], dictionary: bytes) -> Iterator[bytes]:
    """The V2 frames one by one: each text one ``ZSTD_compress2`` frame against the CDict."""
    cdict = lib.ZSTD_createCDict(ffi.from_buffer(dictionary), len(dictionary), LEVEL)
    if cdict == ffi.NULL:
        raise InvalidInput("zstd_dict: compressor init: cannot load dictionary")
    cdict = ffi.gc(cdict, lib.ZSTD_freeCDict)  # a local: lives as long as this generator
    cctx = ffi.gc(lib.ZSTD_createCCtx(), lib.ZSTD_freeCCtx)
    rc = lib.ZSTD_CCtx_refCDict(cctx, cdict)
    if is_error(rc):
        raise InvalidInput(f"zstd_dict: compressor init: {error_name(rc)}")
    for text in texts:
        raw = text.encode("utf-8")
        cap = int(lib.ZSTD_compressBound(len(raw)))
        dst = ffi.new("char[]", cap)
        src = ffi.from_buffer(raw) if raw else ffi.NULL
        rc = lib.ZSTD_compress2(cctx, dst, cap, src, len(raw))
        if is_error(rc):
            raise InvalidInput(f"zstd_dict: compress: {error_name(rc)}")
        yield ffi.buffer(dst, rc)[:]


def encode_zstd_dict(texts: list[str], dictionary: bytes) -> bytes:
    """V2 payload: each text one ``ZSTD_compress2`` frame against the level-19 CDict."""
    return write_container(KIND_ZSTD_DICT, list(dict_frames(texts, dictionary)))


def _dctx_with(dictionary: bytes | memoryview) -> tuple[Any, Any]:
    ddict = lib.ZSTD_createDDict(ffi.from_buffer(dictionary) if len(dictionary) else ffi.NULL,
                                 len(dictionary))
    if ddict == ffi.NULL:
        # The reference panics here; a typed error is the only sane outcome for a reader.
        raise malformed("zstd_dict: decompress: Dictionary is corrupted")
    ddict = ffi.gc(ddict, lib.ZSTD_freeDDict)
    dctx = ffi.gc(lib.ZSTD_createDCtx(), lib.ZSTD_freeDCtx)
    lib.ZSTD_DCtx_refDDict(dctx, ddict)
    return dctx, ddict


def decode_zstd_dict(payload: bytes | memoryview, dictionary: bytes | memoryview) -> bytes:
    """Rebuild the raw chunks_canonical payload from a V2 payload and the 0x0A bytes."""
    box = parse_container(payload, KIND_ZSTD_DICT)
    dctx, _keep = _dctx_with(dictionary)
    bodies = []
    for i in range(box.count):
        frame = box.frame(i)
        bound = frame_bound(frame)
        capacity = STREAM_CAP if bound is None else min(bound, STREAM_CAP)
        try:
            body = decompress_into(dctx, frame, capacity)
        except ZstdFailure as exc:
            raise malformed(f"zstd_dict: decompress: {exc}") from None
        decode_utf8(body, 0x02, "zstd_dict: ")
        bodies.append(body)
    return build_canonical(bodies)

