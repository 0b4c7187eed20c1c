"""The vector dtypes (01-container §1.2, 02-encodings §10): one parsed value and its wire codes.

``DType`` is a ``StrEnum``: ``DType.INT8 == "int8"`` holds, so modules that still compare strings
keep working while they migrate. The manifest names a dtype; the section table stores its wire
encoding id (``DTYPE_ENCODINGS``); the space table stores its own one-byte code
(``SPACE_DTYPE_CODES``, a different numbering). Every other module reads these tables from here.
"""

from __future__ import annotations

from enum import StrEnum

from .layout import ENCODING_FLOAT16, ENCODING_FLOAT32, ENCODING_INT4, ENCODING_INT8

INT4_BLOCK = 64  # values per int4 scale group; an int4 dim must be a multiple of it
QUANTISED_PREFIX_SIZE = 8  # u32 payload version + u32 scale kind, before the scales
_U64_MAX = (1 << 64) - 1


class DType(StrEnum):
    """A stored vector dtype; the value is the manifest's name."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    INT8 = "int8"
    INT4 = "int4"

    @classmethod
    def parse(cls, name: object) -> DType | None:
        """The dtype named ``name``, or None for anything else (no exception: callers word it)."""
        return _BY_NAME.get(name) if isinstance(name, str) else None

    @classmethod
    def from_space_code(cls, code: int) -> DType | None:
        """The dtype of a space-table code, or None for an unknown code."""
        return _BY_SPACE_CODE.get(code)

    @property
    def encoding(self) -> int:
        """The section-table encoding id of a payload in this dtype."""
        return DTYPE_ENCODINGS[self.value]

    @property
    def space_code(self) -> int:
        """The one-byte dtype code of the space table (0x15)."""
        return SPACE_DTYPE_CODES[self.value]

    @property
    def is_quantised(self) -> bool:
        """int8 / int4: codes with per-row or per-group scales, behind an 8-byte prefix."""
        return self in (DType.INT8, DType.INT4)

    @property
    def full_precision(self) -> bool:
        """Only float32 stores the vectors as given (scores come from full precision)."""
        return self is DType.FLOAT32

    def dim_supported(self, dim: int) -> bool:
        """Whether ``dim`` can be stored (int4 needs a multiple of 64)."""
        return self is not DType.INT4 or dim % INT4_BLOCK == 0

    def row_bytes(self, dim: int) -> int:
        """Bytes per row of ``dim``, scales included, prefix excluded (needs dim_supported)."""
        if self is DType.FLOAT32:
            return 4 * dim
        if self is DType.FLOAT16:
            return 2 * dim
        if self is DType.INT8:
            return 4 + dim
        return 2 * (dim // INT4_BLOCK) + dim // 2

    def payload_size(self, n: int, dim: int) -> int | None:
        """Exact payload size of ``n`` rows of ``dim`` (None: unsupported dim or u64 overflow)."""
        if n * dim > _U64_MAX or not self.dim_supported(dim):
            return None
        size = n * self.row_bytes(dim) + (QUANTISED_PREFIX_SIZE if self.is_quantised else 0)
        return size if size <= _U64_MAX else None


DTYPE_NAMES = tuple(d.value for d in DType)  # float32, float16, int8, int4: the order messages list
DTYPE_ENCODINGS = {DType.FLOAT32.value: ENCODING_FLOAT32, DType.FLOAT16.value: ENCODING_FLOAT16,
                   DType.INT8.value: ENCODING_INT8, DType.INT4.value: ENCODING_INT4}
SPACE_DTYPE_CODES = {DType.FLOAT32.value: 0, DType.FLOAT16.value: 1, DType.INT8.value: 2,
                     DType.INT4.value: 3}
SPACE_DTYPES = {code: name for name, code in SPACE_DTYPE_CODES.items()}  # code -> name
_BY_NAME = {d.value: d for d in DType}
_BY_SPACE_CODE = {code: DType(name) for code, name in SPACE_DTYPES.items()}
