"""zstd (wire encoding 1) and the raw libzstd calls the text codecs share (02-encodings §5, §6.3).

Byte-exactness depends on the call sequence, not only the level: the reference compresses with a
streaming context (level 19, no pledged size), so a non-empty input yields a frame without a
content size while an empty input yields the single-segment 9-byte frame. One-shot calls pledge
the size and give other bytes. We therefore drive libzstd directly through python-zstandard's
cffi backend, which bundles libzstd 1.5.7 (the version the reference 0.5.1 was built with).

Decoding mirrors the reference's bulk path: a size cap of ``max(64 MiB, 128 x len)``, the frame
bound from ``ZSTD_decompressBound``, then one ``ZSTD_decompressDCtx`` (so concatenated frames
decode to their concatenation). Failures are ``MalformedSectionPayload`` with section id 0 and
libzstd's own error names; the dispatcher re-tags them with the real section.

Only the cffi extension (``zstandard._cffi``: ``ffi`` and ``lib`` over the bundled libzstd) is
used, so it is loaded by itself: the package's ``__init__`` would also load its C backend,
``platform`` and ``typing``, ~5 ms of every one-shot read verb (#20). ``_cffi_module`` falls
back to the ordinary import whenever the extension is not a plain file beside the package.
"""

from __future__ import annotations

import sys
import threading

from ...errors import InvalidInput, MalformedSectionPayload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

LEVEL = 19
MIN_DECOMPRESS_CAP = 64 * 1024 * 1024
MAX_DECOMPRESS_RATIO = 128
# libzstd version whose level-19 output the reference files carry (checked against them).
REFERENCE_ZSTD_VERSION = (1, 5, 7)
_CFFI_NAME = "zstandard._cffi"


def _cffi_module() -> ModuleType:
    """python-zstandard's cffi extension module (the one its own cffi backend imports),
    loaded without running the package ``__init__``."""
    loaded = sys.modules.get(_CFFI_NAME)
    if loaded is not None:
        return loaded
    from importlib.machinery import ExtensionFileLoader, PathFinder

    package = PathFinder.find_spec("zstandard")
    places = package.submodule_search_locations if package is not None else None
    spec = PathFinder.find_spec(_CFFI_NAME, places) if places else None
    if spec is not None and isinstance(spec.loader, ExtensionFileLoader):
        try:
            module = spec.loader.create_module(spec)
            spec.loader.exec_module(module)
        except ImportError:
            pass  # the ordinary import below raises its own error, or succeeds its own way
        else:
            module.__spec__, module.__loader__ = spec, spec.loader
            # Registered as the import system would: a later ``import zstandard`` reuses
            # this module (one libzstd state), as its backend imports it by this name.
            sys.modules.setdefault(_CFFI_NAME, module)
            return module
    from zstandard import backend_cffi  # an unusual install: the package's own import

    return backend_cffi  # it holds the same ffi and lib


def _version(number: int) -> tuple[int, int, int]:
    """A ``ZSTD_versionNumber`` (major * 10000 + minor * 100 + release) as a tuple."""
    return number // 10000, number // 100 % 100, number % 100


_cffi = _cffi_module()
lib: Any = _cffi.lib
ffi: Any = _cffi.ffi
# The libzstd these calls run, asked at run time (what zstandard.ZSTD_VERSION reports).
ZSTD_VERSION = _version(int(lib.ZSTD_versionNumber()))
# Output buffers are filled by libzstd; clearing them first would cost a memset per call.
_alloc = ffi.new_allocator(should_clear_after_alloc=False)
_CONTENTSIZE_ERROR = int(lib.ZSTD_CONTENTSIZE_ERROR)


def error_name(code: int) -> str:
    """libzstd's text for an error return code (e.g. ``Unknown frame descriptor``)."""
    return ffi.string(lib.ZSTD_getErrorName(code)).decode("utf-8", "replace")


def is_error(code: int) -> bool:
    """Whether a libzstd size_t return value is an error code."""
    return bool(lib.ZSTD_isError(code))


def decompress_cap(compressed_len: int) -> int:
    """The decoder's output ceiling for a payload of ``compressed_len`` bytes."""
    return max(MIN_DECOMPRESS_CAP, MAX_DECOMPRESS_RATIO * compressed_len)


def frame_bound(payload: bytes | memoryview) -> int | None:
    """Upper bound of the decompressed size of every frame in ``payload``, or None if unknown."""
    src = ffi.from_buffer(payload)
    bound = int(lib.ZSTD_decompressBound(src, len(payload)))
    return None if bound == _CONTENTSIZE_ERROR else bound


def _drain(cctx: Any, inbuf: Any, outbuf: Any, out: Any, directive: int, parts: list[bytes]) -> int:
    outbuf.pos = 0
    rc = lib.ZSTD_compressStream2(cctx, outbuf, inbuf, directive)
    if is_error(rc):
        raise InvalidInput(f"zstd compression failed: {error_name(rc)}")
    if outbuf.pos:
        parts.append(ffi.buffer(out, outbuf.pos)[:])
    return int(rc)


# The level-19 streaming context not in use, shared by every thread: a context's first frame
# zeroes its ~90 MB of match tables (16-80 ms of page faults here) and a later frame reuses
# them, so a build whose sections compress on several workers in turn pays that once, not once
# a thread. One is kept (what a process held before, in its main thread's context); a second
# compression at once makes its own, freed after it.
_idle_cctx: list[Any] = []
_idle_lock = threading.Lock()


def _take_cctx() -> Any:
    """An idle level-19 streaming context, session reset (a new one when none is idle)."""
    with _idle_lock:
        cctx = _idle_cctx.pop() if _idle_cctx else None
    if cctx is None:
        cctx = ffi.gc(lib.ZSTD_createCCtx(), lib.ZSTD_freeCCtx)
        rc = lib.ZSTD_CCtx_setParameter(cctx, lib.ZSTD_c_compressionLevel, LEVEL)
        if is_error(rc):
            raise InvalidInput(f"zstd compression failed: {error_name(rc)}")
    # A session reset keeps the parameters and gives the same bytes as a fresh context.
    lib.ZSTD_CCtx_reset(cctx, lib.ZSTD_reset_session_only)
    return cctx


def zstd_compress(data: bytes | memoryview) -> bytes:
    """Compress ``data`` into one level-19 frame exactly as the reference writer does (§5.1)."""
    cctx = _take_cctx()
    out_size = int(lib.ZSTD_CStreamOutSize())
    out = _alloc("char[]", out_size)
    outbuf = ffi.new("ZSTD_outBuffer *")
    outbuf.dst, outbuf.size = out, out_size
    inbuf = ffi.new("ZSTD_inBuffer *")
    keep = ffi.from_buffer(data) if len(data) else ffi.NULL
    inbuf.src, inbuf.size, inbuf.pos = keep, len(data), 0
    parts: list[bytes] = []
    # Feeding with e_continue first is what makes libzstd write an unsized frame; an empty
    # input skips it, so libzstd sees the end at once and records content size 0.
    while inbuf.pos < inbuf.size:
        _drain(cctx, inbuf, outbuf, out, lib.ZSTD_e_continue, parts)
    empty = ffi.new("ZSTD_inBuffer *")
    empty.src, empty.size, empty.pos = ffi.NULL, 0, 0
    while _drain(cctx, empty, outbuf, out, lib.ZSTD_e_end, parts):
        pass
    with _idle_lock:  # only after a whole frame: a context a failure left mid-frame is dropped
        if not _idle_cctx:
            _idle_cctx.append(cctx)
    return b"".join(parts)


def decompress_into(dctx: Any, payload: bytes | memoryview, capacity: int) -> bytes:
    """One ``ZSTD_decompressDCtx`` into ``capacity`` bytes; bytes, or raises ``ZstdFailure``."""
    return decompressed_view(dctx, payload, capacity).tobytes()


def decompressed_view(dctx: Any, payload: bytes | memoryview, capacity: int) -> memoryview:
    """As :func:`decompress_into`, the output left in the decoder's own buffer (which the view
    keeps alive): no copy, and no second set of fresh pages to fault in (~1 ms a MB here)."""
    try:
        dst = _alloc("char[]", max(capacity, 1))
    except MemoryError:
        # Only reachable for a huge unbounded (already invalid) payload: stay a typed error.
        raise ZstdFailure("Allocation error : not enough memory") from None
    src = ffi.from_buffer(payload) if len(payload) else ffi.NULL
    rc = lib.ZSTD_decompressDCtx(dctx, dst, capacity, src, len(payload))
    if is_error(rc):
        raise ZstdFailure(error_name(rc))
    return memoryview(ffi.buffer(dst, rc))


class ZstdFailure(Exception):
    """Internal carrier of a libzstd error name, turned into a typed error by the caller."""


def new_dctx() -> Any:
    """A fresh decompression context, freed with its Python owner."""
    return ffi.gc(lib.ZSTD_createDCtx(), lib.ZSTD_freeDCtx)


def decompress_with(dctx: Any, payload: bytes | memoryview) -> bytes:
    """The §5.2 decoder on a caller-owned context (lets a container reuse one context)."""
    return _decoded_view(dctx, payload).tobytes()


def _decoded_view(dctx: Any, payload: bytes | memoryview) -> memoryview:
    cap = decompress_cap(len(payload))
    bound = frame_bound(payload)
    if bound is not None and bound > cap:
        raise MalformedSectionPayload(0, f"zstd frame declares {bound} bytes, exceeds cap {cap}")
    try:
        return decompressed_view(dctx, payload, cap if bound is None else bound)
    except ZstdFailure as exc:
        raise MalformedSectionPayload(0, f"zstd decompression failed: {exc}") from None


def zstd_decompress(payload: bytes | memoryview) -> bytes:
    """Decode one or more concatenated zstd frames under the reference's size cap (§5.2)."""
    return decompress_with(new_dctx(), payload)


def zstd_decompress_view(payload: bytes | memoryview) -> memoryview:
    """:func:`zstd_decompress`'s bytes as a view of the decoder's buffer (no copy): for a
    reader that only reads them, e.g. the content hash's pass over a zstd 0x02."""
    return _decoded_view(new_dctx(), payload)


# Compressed bytes fed to libzstd by a ``DecodedPrefix``'s first step (about one decoded block
# of text); each later step feeds twice the one before, up to ``_PREFIX_STEP_MAX``.
_PREFIX_STEP = 1 << 14
_PREFIX_STEP_MAX = 1 << 18


class DecodedPrefix:
    """The decoded bytes of a zstd payload from its start, decoded only as far as asked.

    For a payload whose whole decode is known to succeed (a section of a verified body): a
    reader of one record early in the payload stops there instead of decoding all of it.
    ``data`` holds the bytes decoded so far, the first ``len(data)`` bytes of what
    ``zstd_decompress`` returns (frames in turn, as the bulk decoder concatenates them), in
    one buffer sized by the frame bound: no copy, and pages past ``data`` are never touched.
    Anything the bulk decoder might refuse (an unknown bound, one past its cap, a libzstd
    error) ends the prefix where it stands: ``extend`` is False and the caller decodes the
    payload whole, which raises its error.
    """

    __slots__ = ("_dctx", "_dst", "_inbuf", "_outbuf", "_payload", "_src", "_step", "data",
                 "done")

    def __init__(self, payload: bytes | memoryview) -> None:
        self.data: memoryview = memoryview(b"")
        self.done = True  # until the decode is set up
        self._step = _PREFIX_STEP
        self._payload: bytes | memoryview | None = payload
        self._src = self._dctx = self._inbuf = self._outbuf = None
        bound = frame_bound(payload) if len(payload) else None
        if bound is None or bound > decompress_cap(len(payload)):
            return
        dctx = new_dctx()
        # A stable output buffer: libzstd decodes straight into it, no window copy of its own.
        if is_error(lib.ZSTD_DCtx_setParameter(dctx, lib.ZSTD_d_stableOutBuffer, 1)):
            return
        self._dctx, self._dst = dctx, _alloc("char[]", max(bound, 1))
        self._src = ffi.from_buffer(payload)
        self._inbuf = ffi.new("ZSTD_inBuffer *")
        self._inbuf.src, self._inbuf.size, self._inbuf.pos = self._src, 0, 0
        self._outbuf = ffi.new("ZSTD_outBuffer *")
        self._outbuf.dst, self._outbuf.size, self._outbuf.pos = self._dst, max(bound, 1), 0
        self.done = False

    def extend(self, n: int) -> bool:
        """Decode until ``data`` holds at least ``n`` bytes; False when the payload ends
        before (a libzstd error voids the prefix: ``data`` is then empty)."""
        if len(self.data) >= n or self.done:
            return len(self.data) >= n
        inbuf, outbuf = self._inbuf, self._outbuf
        assert self._payload is not None and inbuf is not None and outbuf is not None
        total = len(self._payload)
        while len(self.data) < n and not self.done:
            inbuf.size = min(total, inbuf.size + self._step)
            self._step = min(2 * self._step, _PREFIX_STEP_MAX)
            before = (inbuf.pos, outbuf.pos)
            rc = lib.ZSTD_decompressStream(self._dctx, outbuf, inbuf)
            if is_error(rc):
                self.data = memoryview(b"")
                self._finish()
                return False
            self.data = memoryview(ffi.buffer(self._dst, outbuf.pos))
            # All input in: the frames ended (0), or nothing moves (a truncated frame).
            if inbuf.pos == total and (rc == 0 or (inbuf.pos, outbuf.pos) == before):
                self._finish()
        return len(self.data) >= n

    def _finish(self) -> None:
        """Stop decoding: the payload (a view of the file's map) and the context are let go."""
        self.done = True
        self._payload = self._src = self._dctx = self._inbuf = self._outbuf = None
