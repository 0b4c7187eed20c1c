"""Identity of chunks, content and files, and the citation form (01-container §9).

``chunk_id`` hashes the chunk's text, source and span under a domain string; ``content_hash``
hashes the decoded canonical sections (so raw and compressed twins share it); ``file_hash``
is ``sha256sum`` of the whole file. A citation is ``urna://<content_hash>/<chunk_id>``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable

from ..errors import CitationError
from .layout import CANONICAL_SECTIONS, CHUNK_ID_DOMAIN, CITATION_SCHEME

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
HASH_PREFIX = "sha256:"


def chunk_id(canonical_text: str, source_uri: str, byte_start: int, byte_end: int,
             chunker_version: str, *, domain: bytes = CHUNK_ID_DOMAIN) -> str:
    """The chunk's identity: ``sha256:`` + hex SHA-256 of its domain-separated preimage.

    Example: ``chunk_id("hello", "doc.txt", 0, 5, "v1")`` -> ``"sha256:105aadc3..."``.
    """
    h = hashlib.sha256(domain)
    for text in (canonical_text, source_uri):
        data = text.encode("utf-8")
        h.update(_U32.pack(len(data)))
        h.update(data)
    h.update(_U64.pack(byte_start))
    h.update(_U64.pack(byte_end))
    data = chunker_version.encode("utf-8")
    h.update(_U32.pack(len(data)))
    h.update(data)
    return HASH_PREFIX + h.hexdigest()


def content_hash(decoded_section: Callable[[int], bytes | tuple[int, Iterable[bytes]]]) -> str:
    """Hash the six canonical sections' decoded bytes in the fixed canonical order.

    ``decoded_section(id)`` gives the bytes, or ``(length, pieces)`` for a section that is hashed
    as it is produced (a dedup expansion) rather than held whole.
    """
    h = hashlib.sha256()
    for section_id, name in CANONICAL_SECTIONS:
        data = decoded_section(section_id)
        length, pieces = data if isinstance(data, tuple) else (len(data), (data,))
        h.update(_U32.pack(len(name)))
        h.update(name.encode("ascii"))
        h.update(_U64.pack(length))
        for piece in pieces:
            h.update(piece)
    return HASH_PREFIX + h.hexdigest()


def file_hash(data: bytes | memoryview) -> str:
    """``sha256:`` + hex SHA-256 of the entire file, footer included (= sha256sum)."""
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


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
