"""intpack: the frame-of-reference bit-packing primitive (02-encodings §3).

Layout: ``u32 count | u32 n_blocks | n_blocks x u32 block offset | blocks``; a block of up to
128 values is ``u64 min | u8 width | ceil(len*width/8) bytes`` of ``v - min`` packed LSB-first.
The encoder is a pure function of the values; the decoder bounds every count by the bytes
present before allocating. Errors are ``MalformedSectionPayload`` with section id 0; the
caller re-tags them with the real section.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable

import numpy as np

from ..ahead import worker_count
from .intpack_scan import INTPACK_BLOCK, block_header, read_directory
from .intpack_scan import intpack_error as _fail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def _pack_block(block: np.ndarray) -> bytes:
    lo = int(block.min())
    span = block - np.uint64(lo)
    width = int(span.max()).bit_length()
    head = _U64.pack(lo) + bytes([width])
    if width == 0:
        return head
    shifts = np.arange(width, dtype=np.uint64)
    bits = ((span[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)
    return head + np.packbits(bits.reshape(-1), bitorder="little").tobytes()


def _bit_widths(spans_max: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of each uint64, exactly (no float rounding near powers of two)."""
    width = np.zeros(spans_max.shape[0], dtype=np.int64)
    rest = spans_max.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = rest >= (np.uint64(1) << np.uint64(step))
        width += big * step
        rest = np.where(big, rest >> np.uint64(step), rest)
    return width + (rest > 0)


def _distinct_widths(widths: np.ndarray) -> list[int]:
    """The distinct bit widths (0..64) present, ascending (np.unique would import numpy.ma,
    ~15 ms of a CLI query)."""
    return np.flatnonzero(np.bincount(widths.astype(np.intp), minlength=1)).tolist()


def _pack_full_blocks(full: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Every 128-value block of ``full`` (n x 128) back to back, and each block's size."""
    lo = full.min(axis=1)
    span = full - lo[:, None]
    width = _bit_widths(span.max(axis=1))
    sizes = 9 + (INTPACK_BLOCK // 8) * width
    starts = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    out[starts[:, None] + np.arange(8)] = lo.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[starts + 8] = width.astype(np.uint8)
    for w in _distinct_widths(width[width > 0]):
        rows = np.flatnonzero(width == w)
        # 128 values of w bits fill exactly 2w little-endian u64 words: value i starts at bit
        # i*w, so OR it into its word and the spill into the next one (bits never overlap).
        # Worked column-wise (value i of every block at once) on transposed copies, so each
        # step streams contiguous memory.
        values = np.ascontiguousarray(span[rows].T)
        words = np.zeros((2 * w, rows.shape[0]), dtype=np.uint64)
        for i in range(INTPACK_BLOCK):
            word, shift = divmod(i * w, 64)
            words[word] |= values[i] << np.uint64(shift)
            if shift + w > 64:
                words[word + 1] |= values[i] >> np.uint64(64 - shift)
        packed = np.ascontiguousarray(words.T, dtype="<u8").view(np.uint8)
        out[(starts[rows] + 9)[:, None] + np.arange(packed.shape[1])] = packed
    return out.tobytes(), sizes


def pack_u64s(values: ArrayLike) -> bytes:
    """Encode a sequence of unsigned 64-bit values canonically."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.uint64).reshape(-1))
    count = int(arr.shape[0])
    n_blocks = -(-count // INTPACK_BLOCK)
    n_full = count // INTPACK_BLOCK
    body, sizes = _pack_full_blocks(arr[:n_full * INTPACK_BLOCK].reshape(n_full, INTPACK_BLOCK))
    if count > n_full * INTPACK_BLOCK:
        tail = _pack_block(arr[n_full * INTPACK_BLOCK:])
        body += tail
        sizes = np.append(sizes, len(tail))
    offsets = (8 + 4 * n_blocks + np.cumsum(sizes, dtype=np.int64) - sizes) & 0xFFFFFFFF
    head = struct.pack("<II", count & 0xFFFFFFFF, n_blocks)
    return head + offsets.astype("<u4").tobytes() + body


def packed_len(values: ArrayLike) -> int:
    """Length in bytes of ``pack_u64s(values)`` without building it."""
    arr = np.asarray(values, dtype=np.uint64).reshape(-1)
    count = int(arr.shape[0])
    n_blocks = -(-count // INTPACK_BLOCK)
    total = 8 + 4 * n_blocks
    for b in range(n_blocks):
        blk = arr[b * INTPACK_BLOCK:(b + 1) * INTPACK_BLOCK]
        width = int(blk.max() - blk.min()).bit_length()
        total += 9 + (len(blk) * width + 7) // 8
    return total


# by bit width: the powers of two that weigh a block's bits back into its fields (a walk
# decodes blocks one at a time, so they are made once, not per block)
_WEIGHTS = [np.left_shift(np.uint64(1), np.arange(w, dtype=np.uint64)) for w in range(65)]


class IntpackReader:
    """Random and full access to one intpack blob, with the reference's checks."""

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        self.count, self.n_blocks = read_directory(self.buf)
        self.offsets = np.frombuffer(self.buf, dtype="<u4", count=self.n_blocks, offset=8)

    def __len__(self) -> int:
        return self.count

    def block(self, b: int) -> np.ndarray:
        """Decode block ``b`` to a uint64 array."""
        o = int(self.offsets[b])
        blen = min(INTPACK_BLOCK, self.count - b * INTPACK_BLOCK)
        lo, width, body_len = block_header(self.buf, o, blen)
        if width == 0:
            return np.full(blen, lo, dtype=np.uint64)
        body = np.frombuffer(self.buf, dtype=np.uint8, count=body_len, offset=o + 9)
        bits = np.unpackbits(body, count=blen * width, bitorder="little").reshape(blen, width)
        fields = bits @ _WEIGHTS[width]
        with np.errstate(over="ignore"):
            return fields + np.uint64(lo)  # wrapping add, as the reference

    def get(self, i: int) -> int:
        """Value ``i`` (reads only its block)."""
        if i >= self.count or i < 0:
            raise _fail("index out of range")
        return int(self.block(i // INTPACK_BLOCK)[i % INTPACK_BLOCK])

    def all(self, dtype: type[np.unsignedinteger] = np.uint64) -> np.ndarray:
        """Every value, in order, as a uint64 array (allocation bounded by the bytes read);
        ``dtype=np.uint32``: each value's low 32 bits (a wrapping ``as u32``), at half the memory.

        Blocks are checked in order (the first bad block raises what ``block`` would); then the
        full blocks decode together, a batch at a time (``_decode_full``), and a short last
        block by ``block``.
        """
        count, n_blocks = self.count, self.n_blocks
        if count == 0:
            return np.zeros(0, dtype=dtype)
        raw = np.frombuffer(self.buf, dtype=np.uint8)
        n = raw.shape[0]
        offs = self.offsets.astype(np.int64)
        lens = np.full(n_blocks, INTPACK_BLOCK, dtype=np.int64)
        lens[-1] = count - (n_blocks - 1) * INTPACK_BLOCK
        headed = offs + 8 < n
        widths = np.where(headed, raw[np.where(headed, offs + 8, 0)], 0).astype(np.int64)
        bodies = (lens * widths + 7) // 8
        bad = ~headed | (widths > 64) | (offs + 9 + bodies > n)
        if bad.any():
            self.block(int(np.argmax(bad)))  # raises that block's error, in the reference's order
        mins = raw[offs[:, None] + np.arange(8)].copy().view("<u8").reshape(-1)
        out = np.empty(n_blocks * INTPACK_BLOCK, dtype=dtype)
        blocks = out.reshape(n_blocks, INTPACK_BLOCK)
        n_full = n_blocks if lens[-1] == INTPACK_BLOCK else n_blocks - 1
        # the blob as aligned words of the output's width, zero padded: a field's (first) two
        # words are always there
        word = out.dtype.itemsize
        words = np.zeros(n // word + 2, dtype=out.dtype.newbyteorder("<"))
        words.view(np.uint8)[:n] = raw
        mins = mins.astype(out.dtype)  # a u32 output: the low bits of each min

        def decode(first: int, last: int) -> None:
            for start in range(first, last, _BATCH_BLOCKS):  # bounds the temporaries
                stop = min(last, start + _BATCH_BLOCKS)
                _decode_full(words, offs[start:stop], widths[start:stop], mins[start:stop],
                             blocks[start:stop])

        _split(decode, n_full)
        if n_full < n_blocks:
            np.copyto(out[n_full * INTPACK_BLOCK:count], self.block(n_blocks - 1),
                      casting="unsafe")
        return out[:count]


# Full blocks decoded per step: 512 x 128 values keep each temporary at 512 KB, in cache and
# reused by the allocator (a fresh multi-MB array costs a page fault per 4 KB).
_BATCH_BLOCKS = 512

# A column of at least this many full blocks (262,144 values) decodes its batches on
# every core: numpy releases the GIL in each pass, the rows are disjoint, the values the same.
_SPLIT_BLOCKS = 4 * _BATCH_BLOCKS


def _split(decode: Callable[[int, int], None], n_full: int) -> None:
    """Run ``decode(first, last)`` over the full blocks, in contiguous parts on plain threads
    (not the open pool, whose workers may be the caller: a worker waiting on its own queue
    could wait forever)."""
    parts = min(worker_count(), n_full // _SPLIT_BLOCKS) if n_full >= _SPLIT_BLOCKS else 1
    if parts <= 1:
        decode(0, n_full)
        return
    bounds = [n_full * k // parts // _BATCH_BLOCKS * _BATCH_BLOCKS for k in range(parts)]
    bounds.append(n_full)
    errors: list[BaseException] = []

    def run(first: int, last: int) -> None:
        try:
            decode(first, last)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller below
            errors.append(exc)

    helpers = [threading.Thread(target=run, args=(bounds[k], bounds[k + 1]), daemon=True)
               for k in range(1, parts)]
    for helper in helpers:
        helper.start()
    run(bounds[0], bounds[1])
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]


# per width (row) and value (column): where the value's bits start in its block's body
_FIRST_BIT = np.arange(65, dtype=np.int64)[:, None] * np.arange(INTPACK_BLOCK, dtype=np.int64)
# per output word size (32, 64): by width, the mask of the field bits that fit the output
_MASKS = {bits: np.array([(1 << min(w, bits)) - 1 for w in range(65)], dtype=f"u{bits // 8}")
          for bits in (32, 64)}


def _decode_full(words: np.ndarray, offs: np.ndarray, widths: np.ndarray, mins: np.ndarray,
                 out: np.ndarray) -> None:
    """Decode full blocks into ``out`` (one row each), in the arithmetic of its dtype (u64, or
    u32 for the low 32 bits): a field of w bits at absolute bit b is the bits ``b % k`` up of
    k-bit word ``b // k`` and the rest from the next word, masked."""
    kind = out.dtype.type
    bits = 8 * out.dtype.itemsize
    one, top = kind(1), kind(bits - 1)
    bit = _FIRST_BIT[widths]
    bit += 8 * (offs[:, None] + 9)  # after the block's u64 min and u8 width
    shift = (bit & (bits - 1)).astype(kind)
    bit >>= bits.bit_length() - 1  # the word index
    np.take(words, bit, out=out)
    np.right_shift(out, shift, out=out)
    bit += 1
    high = np.take(words, bit)
    # the next word's bits above the field's first part: << (bits - shift) as two shifts, each
    # under the word's width (so a shift of 0 takes nothing from it)
    np.left_shift(high, one, out=high)
    np.left_shift(high, top - shift, out=high)
    np.bitwise_or(out, high, out=out)
    np.bitwise_and(out, _MASKS[bits][widths][:, None], out=out)
    with np.errstate(over="ignore"):
        np.add(out, mins[:, None], out=out)  # wrapping add, as the reference


def unpack_u64s(buf: bytes | memoryview) -> np.ndarray:
    """Decode a whole intpack blob to a uint64 array."""
    return IntpackReader(buf).all()


def unpack_low_u32s(buf: bytes | memoryview) -> np.ndarray:
    """Decode a whole intpack blob to the low 32 bits of each value (the reference's ``as u32``)."""
    return IntpackReader(buf).all(np.uint32)
