"""The options of ``urna.build``: one frozen record, its defaults, and the preset they resolve to.

``BuildOptions`` holds every keyword of ``urna.build`` after the six positional inputs, with the
one copy of its defaults (``build``'s signature reads them from ``DEFAULTS``). ``resolve_storage``
turns preset + overrides into the ``Storage`` the encoders use, refusing unknown values with the
reference's messages. The build never writes to the caller's lists or dicts it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from .errors import BuildError
from .format.dtypes import DType


class TextEncoding(StrEnum):
    """How the text sections are stored: as is, or through the encoding chooser (zstd et al.)."""

    RAW = "raw"
    ZSTD = "zstd"


@dataclass(frozen=True)
class Storage:
    """The resolved encoding and index choices of one build."""

    text_encoding: TextEncoding
    dtype: DType
    with_hnsw: bool
    with_bm25: bool


PRESETS: Mapping[str, Storage] = {
    "exact": Storage(TextEncoding.RAW, DType.FLOAT32, False, False),
    "compressed": Storage(TextEncoding.ZSTD, DType.FLOAT16, False, False),
    "tiny": Storage(TextEncoding.ZSTD, DType.INT8, True, False),
    "nano": Storage(TextEncoding.ZSTD, DType.INT4, True, False),
    "hybrid": Storage(TextEncoding.ZSTD, DType.FLOAT32, True, True),
}


@dataclass(frozen=True)
class BuildOptions:
    """Every keyword option of ``urna.build``; a field's default is the keyword's default."""

    title: str | None = None
    version: str | None = None
    created: str | None = None
    description: str | None = None
    authors: list[str] | None = None
    license: str | None = None
    provenance: dict | None = None
    reproducible: bool = False
    preset: str = "exact"
    text_encoding: str | None = None
    dtype: str | None = None
    mrl_dim: int | None = None
    with_hnsw: bool | None = None
    with_bm25: bool | None = None
    with_graph: bool = False
    graph_top_m: int = 8
    blob_refs: list[dict] | None = None
    blob_data_paths: list[str | None] | None = None
    chunk_blob_spans: list[dict] | None = None
    spaces: list[dict] | None = None
    hnsw_m: int = 16
    hnsw_ef_construction: int = 400
    hnsw_seed: int = 42
    metadata: list[dict | None] | None = None
    metadata_types: dict[str, str] | None = None

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> BuildOptions:
        """Pick this record's fields out of ``keywords`` (a call's locals), ignoring other names."""
        return cls(**{name: keywords[name] for name in OPTION_NAMES})


OPTION_NAMES = tuple(f.name for f in fields(BuildOptions))
_TEXT_ENCODINGS = tuple(TextEncoding)
DEFAULTS = BuildOptions()


def resolve_storage(options: BuildOptions) -> Storage:
    """Apply per-knob overrides to the preset, refusing unknown values as the reference does."""
    preset = PRESETS.get(options.preset)
    if preset is None:
        raise BuildError(
            f"unknown preset: {options.preset} (expected exact|compressed|tiny|nano|hybrid)")
    text, dtype = preset.text_encoding, preset.dtype
    if options.text_encoding is not None:
        if options.text_encoding not in _TEXT_ENCODINGS:
            raise BuildError(f"unknown text_encoding: {options.text_encoding} (expected raw|zstd)")
        text = TextEncoding(options.text_encoding)
    if options.dtype is not None:
        parsed = DType.parse(options.dtype)
        if parsed is None:
            raise BuildError(
                f"unknown dtype: {options.dtype} (expected float32|float16|int8|int4)")
        dtype = parsed
    return Storage(text, dtype,
                   preset.with_hnsw if options.with_hnsw is None else bool(options.with_hnsw),
                   preset.with_bm25 if options.with_bm25 is None else bool(options.with_bm25))
