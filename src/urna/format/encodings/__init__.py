"""Wire encodings of section payloads and the vector dtypes (02-encodings), one codec per module.

``decode_section`` / ``decode_chunks_canonical_section`` are the reader's registry (§1.2):
identity for 0/2/3/7, zstd (1), repack (4), fsst (9), txt_streams (10); zstd_dict (5) only for
0x02 with its 0x0A dictionary; anything else (5 elsewhere, the reserved 6 and 8, unknown ids) is
``UnsupportedSectionEncoding``. Codec errors are re-tagged with the section being decoded.
The writer's choices live in ``chooser``; vector layouts in ``vectors`` (numpy), their
numpy-free size and value checks in ``vector_checks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...errors import MalformedSectionPayload, UnsupportedSectionEncoding
from ..layout import SECTION_CHUNKS_CANONICAL, SECTION_DEDUP_MAP, VECTOR_ENCODINGS
from .vector_checks import expected_embeddings_size, validate_embedding_values

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .chooser import choose_chunk_ids, choose_chunks_canonical, choose_spans, encode_smallest
    from .vectors import (
        dequantize,
        encode_embeddings,
        f16_view,
        f32_view,
        fp_slab_view,
        int4_view,
        int8_view,
    )
    from .zstd import zstd_compress, zstd_decompress

# Each name loads its module on first use: reading a file's container, tables and text
# (inspect, cite, validate) imports only the codecs its sections use, never numpy or the
# writer's chooser.
_LAZY_HOMES = {"choose_chunk_ids": "chooser", "choose_chunks_canonical": "chooser",
               "choose_spans": "chooser", "encode_smallest": "chooser",
               "dequantize": "vectors", "encode_embeddings": "vectors", "f16_view": "vectors",
               "f32_view": "vectors", "fp_slab_view": "vectors", "int4_view": "vectors",
               "int8_view": "vectors", "zstd_compress": "zstd", "zstd_decompress": "zstd"}


def __getattr__(name: str) -> Any:
    home = _LAZY_HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _load(home, name)
    globals()[name] = value
    return value


def _load(module: str, name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


_IDENTITY = VECTOR_ENCODINGS  # raw and the fixed-stride vector layouts are stored as is
# zstd decodes to a view of its own buffer: ``decode_section`` makes bytes of it, the 0x02
# pieces hash it in place.
_DECODERS = {1: ("zstd", "zstd_decompress_view"), 4: ("repack", "decode_repack"),
             9: ("fsst", "decode_fsst"), 10: ("textcontainer", "decode_txt_streams")}


def _retag(exc: Exception, section_id: int) -> Exception:
    if isinstance(exc, MalformedSectionPayload):
        return MalformedSectionPayload(section_id, exc.reason)
    if isinstance(exc, UnsupportedSectionEncoding):
        return UnsupportedSectionEncoding(section_id, exc.encoding)
    return exc


def _decode_plain(encoding: int, payload: bytes | memoryview) -> bytes | memoryview:
    if encoding in _IDENTITY:
        return payload
    home = _DECODERS.get(encoding)
    if home is None:
        raise UnsupportedSectionEncoding(0, encoding)
    decoder: Callable[[bytes | memoryview], bytes | memoryview] = _load(*home)
    return decoder(payload)


def decode_section(section_id: int, encoding: int, payload: bytes | memoryview) -> bytes:
    """Logical bytes of any section other than 0x02 (identity encodings return the payload)."""
    try:
        out = _decode_plain(encoding, payload)
    except (MalformedSectionPayload, UnsupportedSectionEncoding) as exc:
        raise _retag(exc, section_id) from None
    return out if isinstance(out, bytes) else bytes(out)


def chunks_canonical_pieces(encoding: int, payload: bytes | memoryview, dictionary: bytes | None,
                            dedup_map: bytes | None
                            ) -> tuple[int, Iterable[bytes | memoryview]]:
    """Length and byte pieces of the decoded 0x02 payload (a dedup expansion is never joined)."""
    out: bytes | memoryview
    try:
        if encoding == 5:
            if dictionary is None:
                raise MalformedSectionPayload(
                    SECTION_CHUNKS_CANONICAL,
                    "zstd_dict: dict-framed section but no dictionary (0x0A)")
            out = _load("zstd_dict", "decode_zstd_dict")(payload, dictionary)
        else:
            out = _decode_plain(encoding, payload)
    except (MalformedSectionPayload, UnsupportedSectionEncoding) as exc:
        raise _retag(exc, SECTION_CHUNKS_CANONICAL) from None
    if dedup_map is None:
        return len(out), (out,)  # a view (of the map, of the decoder's buffer) is not copied
    from .dedup import decode_map, expansion

    try:
        refs = decode_map(dedup_map)
    except (MalformedSectionPayload, UnsupportedSectionEncoding) as exc:
        raise _retag(exc, SECTION_DEDUP_MAP) from None
    return expansion(out, refs)


def decode_chunks_canonical_section(encoding: int, payload: bytes | memoryview,
                                    dictionary: bytes | None, dedup_map: bytes | None) -> bytes:
    """The raw chunks_canonical payload of 0x02 (dictionary for id 5, dedup map when given)."""
    return b"".join(chunks_canonical_pieces(encoding, payload, dictionary, dedup_map)[1])


__all__ = [
    "choose_chunk_ids",
    "choose_chunks_canonical",
    "choose_spans",
    "chunks_canonical_pieces",
    "decode_chunks_canonical_section",
    "decode_section",
    "dequantize",
    "encode_embeddings",
    "encode_smallest",
    "expected_embeddings_size",
    "f16_view",
    "f32_view",
    "fp_slab_view",
    "int4_view",
    "int8_view",
    "validate_embedding_values",
    "zstd_compress",
    "zstd_decompress",
]
