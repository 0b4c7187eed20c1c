"""A bounds-checked little-endian reader over a payload (02-encodings §2 cursor semantics).

Every read checks ``k > remaining`` before touching the bytes, so a hostile length can never
wrap or allocate; failures are ``MalformedSectionPayload`` with the reference's reason texts
("want {k} bytes at offset {pos}, have {len}", "invalid utf-8: ...", "trailing bytes: ...").
"""

from __future__ import annotations

import struct

from ..errors import MalformedSectionPayload

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_F32 = struct.Struct("<f")


def utf8_error_text(data: bytes, exc: UnicodeDecodeError) -> str:
    """Render a decode failure the way Rust's ``Utf8Error`` displays it."""
    if exc.reason == "unexpected end of data":
        return f"incomplete utf-8 byte sequence from index {exc.start}"
    return f"invalid utf-8 sequence of {exc.end - exc.start} bytes from index {exc.start}"


def decode_utf8(data: bytes, section_id: int, prefix: str = "") -> str:
    """Decode UTF-8 strictly, raising the reference's malformed-payload text on failure."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedSectionPayload(
            section_id, f"{prefix}invalid utf-8: {utf8_error_text(data, exc)}"
        ) from exc


DEFAULT_EOF = "want {k} bytes at offset {pos}, have {len}"


class Cursor:
    """Sequential reader over ``buf`` that reports errors against ``section_id``.

    ``eof`` is the reason text of a short read (``str.format`` fields ``k``, ``pos``, ``len``):
    the canonical sections use the default, while some optional-section decoders of the
    reference have their own wording (e.g. ``"bm25: unexpected EOF (need {k})"``).
    """

    __slots__ = ("buf", "pos", "section_id", "eof")

    def __init__(self, buf: bytes | memoryview, section_id: int, pos: int = 0,
                 eof: str = DEFAULT_EOF) -> None:
        self.buf = buf
        self.pos = pos
        self.section_id = section_id
        self.eof = eof

    def _short(self, k: int) -> MalformedSectionPayload:
        return MalformedSectionPayload(
            self.section_id, self.eof.format(k=k, pos=self.pos, len=len(self.buf)))

    @property
    def remaining(self) -> int:
        """Bytes left after the cursor."""
        return len(self.buf) - self.pos

    def take(self, k: int) -> bytes:
        """The next ``k`` bytes."""
        if k > self.remaining:
            raise self._short(k)
        out = bytes(self.buf[self.pos:self.pos + k])
        self.pos += k
        return out

    def view(self, k: int) -> memoryview:
        """The next ``k`` bytes as a zero-copy view."""
        if k > self.remaining:
            raise self._short(k)
        out = memoryview(self.buf)[self.pos:self.pos + k]
        self.pos += k
        return out

    def unpack(self, fmt: struct.Struct) -> tuple:
        """Read one fixed-size record."""
        return fmt.unpack(self.take(fmt.size))

    def u8(self) -> int:
        """Read one byte."""
        return self.take(1)[0]

    def u16(self) -> int:
        """Read a little-endian u16."""
        return _U16.unpack(self.take(2))[0]

    def u32(self) -> int:
        """Read a little-endian u32."""
        return _U32.unpack(self.take(4))[0]

    def u64(self) -> int:
        """Read a little-endian u64."""
        return _U64.unpack(self.take(8))[0]

    def f32(self) -> float:
        """Read a little-endian f32 (as a Python float)."""
        return _F32.unpack(self.take(4))[0]

    def lp_bytes(self) -> bytes:
        """Read ``u32 len`` then that many bytes."""
        return self.take(self.u32())

    def lp_str(self, prefix: str = "") -> str:
        """Read a length-prefixed UTF-8 string."""
        return decode_utf8(self.lp_bytes(), self.section_id, prefix)

    def expect_end(self) -> None:
        """Fail if bytes are left over."""
        if self.pos != len(self.buf):
            raise MalformedSectionPayload(
                self.section_id, f"trailing bytes: consumed {self.pos} of {len(self.buf)}"
            )


def lp(data: bytes) -> bytes:
    """``u32 len`` followed by ``data``."""
    return _U32.pack(len(data)) + data
