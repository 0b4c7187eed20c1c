"""Exporting inlined media blobs to a folder, safely (issue 7, `urna media --export`).

Each inlined blob is checked against its blob_refs SHA-256 before anything is written, and is
written under the last path component of its ``original_uri`` (``media://`` stripped), as the
reference does, made safe: control characters and backslashes become ``_``, over-long names are
shortened (keeping the suffix), and ``""``, ``.`` and ``..`` are refused. Files are created
without following symlinks, so a hostile uri or a planted link never writes outside the folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import BlobNotInlined, MalformedSectionPayload
from ..format.hashing import sha256_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .file import UrnaFile

MAX_NAME_BYTES = 200
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\/]")


def safe_blob_name(uri: str) -> str | None:
    """The file name a blob with ``uri`` is exported under, or None when it has none."""
    tail = uri[len("media://"):] if uri.startswith("media://") else uri
    name = _UNSAFE.sub("_", tail.rsplit("/", 1)[-1]).strip()
    if name in ("", ".", ".."):
        return None
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        stem, dot, suffix = name.rpartition(".")
        suffix = dot + suffix if dot and len(suffix.encode()) <= 16 else ""
        keep = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
        name = name.encode("utf-8")[:keep].decode("utf-8", "ignore") + suffix
    return name


def export_blobs(f: UrnaFile, folder: str | os.PathLike) -> list[str]:
    """Write every inlined blob of ``f`` (an UrnaFile) into ``folder``; returns the paths."""
    if not f.has_blob_data:
        raise BlobNotInlined(0)
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for i, ref in enumerate(f.blob_refs()):
        if not ref["inlined"]:
            continue
        data = f.blob_bytes(i)
        if sha256_bytes(data) != ref["content_hash"]:
            raise MalformedSectionPayload(
                0x17, f"blob {i} ({ref['original_uri']}) does not match its blob_refs sha256")
        name = safe_blob_name(ref["original_uri"])
        if name is None:
            raise MalformedSectionPayload(
                0x14, f"blob {i} has no exportable name: {ref['original_uri']!r}")
        path = root / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        written.append(str(path))
    return written
