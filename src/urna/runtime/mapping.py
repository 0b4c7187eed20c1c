"""Files mapped read-only, and the CLI's head start: a file mapped, and its body's digest
started, before the verb asks for them.

Every open of a .urna file begins with one SHA-256 pass over its body: the footer check of a
first open, or the comparison with a kept verdict on a repeat one. A command-line call spends
its first 60-80 ms importing (numpy, the verb's modules) on one core, so the CLI maps the file
as soon as its arguments are parsed and starts that pass on a worker (``start_head_start``;
the pass itself is ``format.body_digest.start_body_digest``, before the reader is imported):
hashlib releases the GIL, and the pass runs on the other core while the imports go on. The
verb's open then takes the same map (``map_file``, ``take_map``) and the reader's checks the
same digest, so the digest always covers exactly the bytes the checks read.

Nothing here decides anything: a head start that is never taken only cost a pass on an idle
core, and a path that is not a regular .urna file (or too small to be worth a thread) is left
alone.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat

from ..errors import Io
from ..format.ahead import INLINE_BYTES, withdraw_offers, worker_count
from ..format.body_digest import start_body_digest
from ..format.layout import LEGACY_MAGIC, URNA_FOOTER_SIZE, URNA_HEADER_SIZE, URNA_MAGIC
from ..format.record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class HeadStart(FrozenRecord):
    """A file mapped ahead of its open (its body digest running over the map)."""

    __slots__ = _fields = ("mm", "st")
    mm: mmap.mmap
    st: os.stat_result

    def __init__(self, mm: mmap.mmap, st: os.stat_result) -> None:
        self._set(mm, st)


_started: dict[str, HeadStart] = {}  # by path, map not taken yet


def io_error(exc: OSError) -> Io:
    """The reference's ``Io`` error for a failed open or map: ``<strerror> (os error N)``."""
    code = exc.errno if exc.errno is not None else 0
    return Io(f"{os.strerror(code) if code else exc} (os error {code})")


def map_file(path: str | os.PathLike) -> tuple[mmap.mmap | None, Any, os.stat_result]:
    """``(map, bytes, stat)`` of ``path`` mapped read-only: the head start's map when one was
    started for this path; an empty file maps to ``b""`` (the reader reports it)."""
    started = take_map(path)
    if started is not None:
        return started.mm, started.mm, started.st
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except OSError as exc:
        raise io_error(exc) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # mmap(2) on a directory fails with ENODEV
            raise Io(f"{os.strerror(errno.ENODEV)} (os error {errno.ENODEV})")
        if st.st_size == 0:
            return None, b"", st
        try:
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise io_error(exc) from exc
        except ValueError as exc:  # e.g. /dev/null: not mappable
            raise Io(f"{os.strerror(errno.ENODEV)} (os error {errno.ENODEV})") from exc
        return mm, mm, st
    finally:
        os.close(fd)


def take_map(path: str | os.PathLike) -> HeadStart | None:
    """The head start of ``path`` (its map and stat now the caller's), or None."""
    return _started.pop(os.fspath(path), None)


def start_head_start(path: str) -> None:
    """Map ``path`` and start the SHA-256 of its body on a worker, if it is a regular file that
    looks like a .urna file worth it (at least ``INLINE_BYTES``, the magic in place) and
    threads are allowed."""
    if path in _started or worker_count() < 2:
        return
    try:
        # Only a regular file: opening a FIFO would wait for its writer, and then take the
        # stream the verb itself is to read.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
        mm, _, st = map_file(path)
    except (OSError, Io):
        return  # the verb's own open reports it
    if mm is None:
        return
    if len(mm) < max(INLINE_BYTES, URNA_HEADER_SIZE + URNA_FOOTER_SIZE) or \
            mm[:4] not in (URNA_MAGIC, LEGACY_MAGIC):
        mm.close()
        return
    start_body_digest(memoryview(mm))
    _started[path] = HeadStart(mm, st)


def drop_head_starts() -> None:
    """Forget every head start (waiting for its pass) and close the maps never taken."""
    withdraw_offers()
    for started in list(_started.values()):
        started.mm.close()
    _started.clear()
