"""SHA-256 in the forms urna writes: digests of bytes, files and piece streams, and of JSON.

``sha256:`` + lowercase hex is the text form of every hash in a manifest, citation, catalog and
cache key. Canonical JSON hashes come in two variants because files already pin both: the
catalog hashes UTF-8 JSON (``ensure_ascii=False``), the forge's cache keys and model
fingerprints hash ASCII-escaped JSON (Python's default). Both sort keys and use ``,``/``:``.
"""

from __future__ import annotations

import hashlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

HASH_PREFIX = "sha256:"
FILE_BLOCK = 1 << 20  # streamed file hashing reads 1 MiB at a time


def sha256_digest(data: bytes | bytearray | memoryview) -> bytes:
    """The 32-byte SHA-256 digest of ``data``."""
    return hashlib.sha256(data).digest()


def sha256_state(data: bytes | bytearray | memoryview) -> hashlib._Hash:
    """The SHA-256 state after ``data``, to be extended (the body digest, then the file's)."""
    return hashlib.sha256(data)


def sha256_hex(data: bytes | bytearray | memoryview) -> str:
    """Bare lowercase hex SHA-256 of ``data`` (sidecars that store no prefix)."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(digest: bytes) -> str:
    """``sha256:`` + hex of a 32-byte digest."""
    return HASH_PREFIX + digest.hex()


def sha256_bytes(data: bytes | bytearray | memoryview) -> str:
    """``sha256:`` + hex SHA-256 of ``data``."""
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def sha256_pieces(pieces: Iterable[bytes | bytearray | memoryview]) -> str:
    """``sha256:`` + hex SHA-256 of the concatenation of ``pieces``, never joined."""
    h = hashlib.sha256()
    for piece in pieces:
        h.update(piece)
        # unbound before the next piece is built: a streamed rebuild holds one piece, not two
        del piece
    return HASH_PREFIX + h.hexdigest()


def sha256_file_hex(path: str | os.PathLike) -> str:
    """Bare hex SHA-256 of a file's bytes, streamed (= ``sha256sum``)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(FILE_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """``sha256:`` + hex SHA-256 of a file's bytes, streamed."""
    return HASH_PREFIX + sha256_file_hex(path)


def sorted_json_sha256_utf8(value: Any) -> str:
    """``sha256:`` of sorted-key compact JSON with non-ASCII kept as UTF-8 (the catalog's form)."""
    raw = json_dumps_sorted(value, ensure_ascii=False)
    return sha256_bytes(raw.encode("utf-8"))


def sorted_json_sha256_ascii(value: Any) -> str:
    """``sha256:`` of sorted-key compact JSON with non-ASCII escaped (the forge's key form)."""
    raw = json_dumps_sorted(value, ensure_ascii=True)
    return sha256_bytes(raw.encode("utf-8"))


def json_dumps_sorted(value: Any, *, ensure_ascii: bool) -> str:
    """Sorted-key compact JSON (``,`` and ``:`` separators), the text the JSON hashes cover."""
    import json  # not at `import urna`: json imports re and enum

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii)
