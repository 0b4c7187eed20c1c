"""The numpy-free checks of a vector payload: its exact size, its prefix, no NaN or infinity.

02-encodings §10.5. ``validate_embedding_values`` is what ``urna validate`` and the open run over
0x04 and the space bands. It must not cost numpy's import (~90 ms, many times the walk itself),
so it reads each block's top bytes with one strided slice (a C loop over a cached block) and
asks the exact question on them:

* binary32 is non-finite iff its top byte's low seven bits are all ones and byte 2's high bit
  is set. A block whose top bytes hold no 0x7F / 0xFF has no such word (the common case, one
  ``in`` scan); otherwise both conditions are marked per word and AND-ed as two big integers.
* binary16 is non-finite iff ``(high byte & 0x7C) == 0x7C``: the marked high bytes.

A process that has numpy loaded already (the runtime's open) takes numpy's vectorised walk
instead, which reads at memory speed (~4x the strided scan); both give the same answer.
"""

from __future__ import annotations

import struct
import sys

from ...errors import (
    EmbeddingSizeMismatch,
    InvalidEmbeddingValue,
    MalformedSectionPayload,
    UnsupportedSectionEncoding,
    UnsupportedSectionVersion,
)
from ..dtypes import INT4_BLOCK, QUANTISED_PREFIX_SIZE, DType
from ..layout import ENCODING_FLOAT16, ENCODING_FLOAT32, ENCODING_INT4, ENCODING_INT8

PAYLOAD_VERSION = 1
INT8_SCALE_KIND = 0
INT4_SCALE_KIND = 1
PREFIX_SIZE = QUANTISED_PREFIX_SIZE
_U64_MAX = (1 << 64) - 1
_HEAD = struct.Struct("<II")

_BLOCK = 1 << 16  # bytes per step: each block and its slices stay in cache
_EXP_F32 = bytes(1 if b & 0x7F == 0x7F else 0 for b in range(256))  # top byte: exponent high 7
_EXP_LOW_F32 = bytes(b >> 7 for b in range(256))  # byte 2: the exponent's lowest bit
_EXP_F16 = bytes(1 if b & 0x7C == 0x7C else 0 for b in range(256))  # high byte: the exponent
_NUMPY_BLOCK = 1 << 16  # values per step of the numpy walk: its temporaries stay in cache


def expected_embeddings_size(dtype: str, n: int, dim: int) -> int | None:
    """Exact slab size for ``n`` vectors of ``dim`` (None: unknown dtype, int4 dim, or overflow)."""
    parsed = DType.parse(dtype)
    return None if parsed is None else parsed.payload_size(n, dim)


def check_size(payload: bytes | memoryview, dtype: DType, n: int, dim: int) -> int:
    """The payload's exact size for ``n`` x ``dim`` in ``dtype``, or the reference's mismatch."""
    want = dtype.payload_size(n, dim)
    if want is None:
        want = _U64_MAX  # the reference reports usize::MAX when the size is unknown
    if len(payload) != want:
        raise EmbeddingSizeMismatch(want, len(payload))
    return want


def check_head(payload: bytes | memoryview, section_id: int, kind: int, name: str) -> None:
    """The quantised prefix: payload version 1 and the dtype's scale kind."""
    version, got_kind = _HEAD.unpack_from(payload, 0)
    if version != PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(section_id, version)
    if got_kind != kind:
        raise MalformedSectionPayload(section_id, f"{name} scale_kind {got_kind} not supported")


def check_int4_dim(dim: int, section_id: int) -> None:
    """int4 rows are whole 64-value scale groups."""
    if dim == 0 or dim % INT4_BLOCK:
        raise MalformedSectionPayload(section_id,
                                      f"int4 dim={dim} must be a nonzero multiple of 64")


def numpy_all_finite(words: memoryview, width: int) -> bool:
    """Whether every ``width``-byte IEEE word (4: binary32, 2: binary16) is finite, by numpy."""
    import numpy as np

    values = np.frombuffer(words, dtype="<f4" if width == 4 else "<f2")
    flags = np.empty(min(len(values), _NUMPY_BLOCK), dtype=bool)
    for lo in range(0, len(values), _NUMPY_BLOCK):
        part = values[lo:lo + _NUMPY_BLOCK]
        out = flags[:len(part)]
        np.isfinite(part, out=out)
        if not out.all():
            return False
    return True


def strided_all_finite(words: memoryview, width: int) -> bool:
    """``numpy_all_finite`` from the words' top bytes, without numpy (see the module docstring)."""
    for lo in range(0, len(words), _BLOCK):
        block = words[lo:lo + _BLOCK].tobytes()
        if width == 2:
            if 1 in block[1::2].translate(_EXP_F16):
                return False
            continue
        top = block[3::4]
        if b"\x7f" not in top and b"\xff" not in top:
            continue  # no exponent reaches 0xFE: every word of the block is finite
        high = int.from_bytes(top.translate(_EXP_F32), "little")
        low = int.from_bytes(block[2::4].translate(_EXP_LOW_F32), "little")
        if high & low:  # one word with all eight exponent bits set
            return False
    return True


def all_finite(payload: bytes | memoryview, width: int, start: int = 0,
               count: int | None = None) -> bool:
    """Whether ``count`` IEEE words of ``width`` bytes from byte ``start`` (default: every whole
    word) are all finite; numpy's walk when numpy is loaded already, else the strided one."""
    view = memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if count is None:
        count = (len(view) - start) // width
    words = view[start:start + count * width]
    if "numpy" in sys.modules:
        return numpy_all_finite(words, width)
    return strided_all_finite(words, width)


def validate_embedding_values(section_id: int, encoding: int, payload: bytes | memoryview,
                              n: int, dim: int, *, errors_as: int | None = None) -> None:
    """Reject any NaN or infinite value or scale (§10.5); int8/int4 are parsed first.

    ``errors_as``: the section id the parse failures name, when not ``section_id`` (the
    reference names 0x04 for a space band's too).
    """
    if errors_as is not None:
        section_id = errors_as
    if encoding == ENCODING_FLOAT32:
        ok = all_finite(payload, 4)
    elif encoding == ENCODING_FLOAT16:
        ok = all_finite(payload, 2)
    elif encoding == ENCODING_INT8:
        check_size(payload, DType.INT8, n, dim)
        check_head(payload, section_id, INT8_SCALE_KIND, "int8")
        ok = all_finite(payload, 4, PREFIX_SIZE, n)
    elif encoding == ENCODING_INT4:
        check_int4_dim(dim, section_id)
        check_size(payload, DType.INT4, n, dim)
        check_head(payload, section_id, INT4_SCALE_KIND, "int4")
        ok = all_finite(payload, 2, PREFIX_SIZE, n * (dim // INT4_BLOCK))
    else:
        raise UnsupportedSectionEncoding(section_id, encoding)
    if not ok:
        raise InvalidEmbeddingValue()
