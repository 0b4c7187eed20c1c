"""Identity of chunks, content and files, and the citation form (01-container §9).

``chunk_id`` hashes the chunk's text, source and span under a domain string; ``content_hash``
hashes the decoded canonical sections (so raw and compressed twins share it); ``file_hash``
is ``sha256sum`` of the whole file. A citation is ``urna://<content_hash>/<chunk_id>``.
"""

from __future__ import annotations

import struct

from ..errors import CitationError
from .hashing import HASH_PREFIX, sha256_bytes, sha256_pieces
from .layout import CANONICAL_SECTIONS, CHUNK_ID_DOMAIN, CITATION_SCHEME

# `import urna` imports this module: its annotations cost no import (format/record.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    SectionBytes = Callable[[int], bytes | memoryview | tuple[int, Iterable[bytes | memoryview]]]

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def chunk_id(canonical_text: str, source_uri: str, byte_start: int, byte_end: int,
             chunker_version: str, *, domain: bytes = CHUNK_ID_DOMAIN) -> str:
    """The chunk's identity: ``sha256:`` + hex SHA-256 of its domain-separated preimage.

    Example: ``chunk_id("hello", "doc.txt", 0, 5, "v1")`` -> ``"sha256:105aadc3..."``.
    """
    text, uri, chunker = (v.encode("utf-8") for v in (canonical_text, source_uri, chunker_version))
    # One join and one hash call: the preimage is small, and builds hash one per chunk.
    return sha256_bytes(b"".join((domain, _U32.pack(len(text)), text, _U32.pack(len(uri)), uri,
                                  _U64.pack(byte_start), _U64.pack(byte_end),
                                  _U32.pack(len(chunker)), chunker)))


def _content_preimage(decoded_section: SectionBytes) -> Iterator[bytes | memoryview]:
    for section_id, name in CANONICAL_SECTIONS:
        data = decoded_section(section_id)
        length, pieces = data if isinstance(data, tuple) else (len(data), (data,))
        yield _U32.pack(len(name))
        yield name.encode("ascii")
        yield _U64.pack(length)
        yield from pieces


def content_hash(decoded_section: SectionBytes) -> str:
    """Hash the six canonical sections' decoded bytes in the fixed canonical order.

    ``decoded_section(id)`` gives the bytes, or ``(length, pieces)`` for a section that is hashed
    as it is produced (a dedup expansion) rather than held whole.
    """
    return sha256_pieces(_content_preimage(decoded_section))


def file_hash(data: bytes | memoryview) -> str:
    """``sha256:`` + hex SHA-256 of the entire file, footer included (= sha256sum)."""
    return sha256_bytes(data)


def format_citation(content_hash_value: str, chunk_id_value: str) -> str:
    """``urna://<content_hash>/<chunk_id>``."""
    return f"{CITATION_SCHEME}{content_hash_value}/{chunk_id_value}"


def parse_citation(citation: str) -> tuple[str, str]:
    """Split a citation into (expected content_hash, chunk_id) as ``urna cite`` does.

    The ``sha256:`` prefix of the content hash is optional; anything after a further ``/``
    in the chunk id is ignored. Raises CitationError on a wrong scheme or a missing chunk id.
    """
    if not citation.startswith(CITATION_SCHEME):
        raise CitationError(f"citation must start with 'urna://': {citation}")
    rest = citation[len(CITATION_SCHEME):]
    if "/" not in rest:
        raise CitationError(f"citation missing chunk_id: {citation}")
    head, tail = rest.split("/", 1)
    chunk = tail.split("/", 1)[0]
    while head.startswith(HASH_PREFIX):
        head = head[len(HASH_PREFIX):]
    return HASH_PREFIX + head, chunk
