"""Files mapped read-only, and a map's body digest started ahead of its open (the head start).

Every open of a .urna file begins with one SHA-256 pass over its body: the footer check of a
first open, or the comparison with a kept verdict on a repeat one. A command-line call spends
its first 60-80 ms importing (numpy, the verb's modules) on one core, so the CLI maps the file
as soon as its arguments are parsed and starts that pass on a worker (``start_body_digest``):
hashlib releases the GIL, and the pass runs on the other core while the imports go on. The
verb's open then takes the same map (``map_file``) and the reader's checks the same digest
(``take_body_digest``), so the digest always covers exactly the bytes the checks read.

Nothing here decides anything: a head start that is never taken only cost a pass on an idle
core, and a map that is not a .urna file (or is too small to be worth a thread) is left alone.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat

from ..errors import Io
from .ahead import INLINE_BYTES, Job, submit, worker_count
from .hashing import sha256_state
from .layout import LEGACY_MAGIC, URNA_FOOTER_SIZE, URNA_HEADER_SIZE, URNA_MAGIC
from .record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class HeadStart(FrozenRecord):
    """A file mapped ahead of its open, with the body digest running over the map."""

    __slots__ = _fields = ("path", "mm", "st", "body_end", "job")
    path: str
    mm: mmap.mmap
    st: os.stat_result
    body_end: int
    job: Job

    def __init__(self, path: str, mm: mmap.mmap, st: os.stat_result, body_end: int,
                 job: Job) -> None:
        self._set(path, mm, st, body_end, job)


_by_path: dict[str, HeadStart] = {}  # started, map not taken yet
_by_map: dict[int, HeadStart] = {}  # started, digest not taken yet (keyed by id of the map)


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
    return _by_path.pop(os.fspath(path), None)


def start_body_digest(path: str) -> None:
    """Map ``path`` and start the SHA-256 of its body on a worker, if it looks like a .urna
    file worth it (at least ``INLINE_BYTES``, the magic in place) and threads are allowed."""
    if path in _by_path or worker_count() < 2:
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
    body_end = len(mm) - URNA_FOOTER_SIZE
    if len(mm) < max(INLINE_BYTES, URNA_HEADER_SIZE + URNA_FOOTER_SIZE) or \
            mm[:4] not in (URNA_MAGIC, LEGACY_MAGIC):
        mm.close()
        return
    job = Job(_digest_over, (memoryview(mm), body_end))
    started = HeadStart(path, mm, st, body_end, job)
    _by_path[path] = started
    _by_map[id(mm)] = started
    submit(job)


def _digest_over(buf: memoryview, end: int) -> object:
    with buf, buf[:end] as body:  # released before the job reports: the map may close then
        return sha256_state(body)


def take_body_digest(buf: memoryview, body_end: int) -> Job | None:
    """The started job hashing exactly ``buf[:body_end]`` (its value: the SHA-256 state after
    the body), handed over once; None when no head start covers these bytes. The taker waits
    for it before the map may close."""
    started = _by_map.get(id(buf.obj))
    if started is None or started.mm is not buf.obj or started.body_end != body_end \
            or len(buf) != len(started.mm):
        return None
    del _by_map[id(buf.obj)]
    return started.job


def drop_started() -> None:
    """Forget every head start (waiting for its pass) and close the maps never taken."""
    for started in list(_by_map.values()):
        started.job.wait()
        started.job.forget()
    _by_map.clear()
    for started in list(_by_path.values()):
        started.mm.close()
    _by_path.clear()
