"""A file body's SHA-256 started ahead of the checks that take it (the CLI's head start).

Every check of an open begins with the SHA-256 of the body (everything before the footer):
the footer check of a first open, the comparison with a kept verdict on a repeat one.
``start_body_digest`` starts that pass on a worker over an object exporting the file's bytes
(its mmap), offered under that object (``format.ahead.offer``); ``claim_body_digest`` is the
reader's claim of it, over the same object and length, so the digest always covers the bytes
the checks read. Kept apart from ``format.reader`` so a head start begins before the reader
(its manifest, JSON and table decoders) is imported: the pass then runs on the other core
during that import.
"""

from __future__ import annotations

from .ahead import Job, claim_offered, offer, submit_over
from .hashing import sha256_state
from .layout import URNA_FOOTER_SIZE, URNA_HEADER_SIZE


def _key(length: int) -> tuple[str, int]:
    return ("body digest", length)


def start_body_digest(data: bytes | bytearray | memoryview) -> None:
    """Start the SHA-256 of the body of ``data`` (an object exporting a file's bytes, e.g. its
    mmap) on a worker, for the checks of a later ``UrnaView.from_bytes`` over that same object
    to take instead of hashing the body again (the CLI's head start, ``runtime.mapping``)."""
    buf = memoryview(data).cast("B")  # a flat byte view; its ``obj`` is the owner still
    length = len(buf)
    if length < URNA_HEADER_SIZE + URNA_FOOTER_SIZE:
        return
    offer(buf.obj, _key(length), submit_over(sha256_state, buf, 0, length - URNA_FOOTER_SIZE))


def claim_body_digest(buf: memoryview) -> Job | None:
    """The body digest started over ``buf``'s object for a file of ``len(buf)`` bytes, now the
    caller's; None when none was."""
    return claim_offered(buf.obj, _key(len(buf)))
