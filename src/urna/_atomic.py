"""Atomic file writes: a temp file in the target's folder, fsync, rename, fsync the folder.

A failed or killed write leaves nothing behind and never touches an existing file of that name;
a replaced file keeps its mode, a new one gets the umask's default. Every writer of urna (the
builder, the forge's caches and sidecars, shard catalogs) goes through here.
"""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _file_mode(target: Path) -> int:
    """The written file's mode: the existing file's, else the umask's default (0666 & ~umask)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        pass
    try:  # read the umask without changing it (Linux); os.umask is a set-and-restore race
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, then rename."""
    # on the first write: a query's start-up imports this module, never writes
    import tempfile
    from pathlib import Path

    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, _file_mode(target))  # mkstemp makes 0600; a corpus is a normal file
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
