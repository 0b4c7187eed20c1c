"""Served files that follow an atomic replacement with no failed request (hot reload).

:class:`ReloadingCorpora` is a :class:`~urna.serve.corpora.Corpora` whose every request runs
under a lease on the corpus it found. At most every ``check_ms`` milliseconds a request stats
each served path; a new (st_dev, st_ino, size, mtime) means the file was replaced (``mv new
old`` is an atomic rename), so the new file is opened and validated (every checksum) outside
the lock, then swapped in. The old file is closed when its last lease ends, never under a
running search. A replacement that fails its checks is refused, logged, and the old file keeps
serving; it is tried again only once the path changes again.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

from ..errors import UrnaError
from .corpora import Corpora, Corpus

T = TypeVar("T")

Signature = tuple[int, int, int, int]


def signature(path: str) -> Signature:
    """What changes when a file is replaced or rewritten: (st_dev, st_ino, size, mtime_ns)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReloadingCorpora(Corpora):
    """Corpora that pick up a replaced file between requests (see the module docstring)."""

    def __init__(self, paths: list[str | os.PathLike], *, check_ms: int = 1000,
                 log_stream: TextIO | None = None) -> None:
        super().__init__(paths)
        self.check_ms = check_ms
        self._log_stream = log_stream
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._next_check = 0.0
        self._signature = {n: signature(c.path) for n, c in self._by_name.items()}
        self._refused: dict[str, Signature] = {}
        self._leases: dict[int, int] = {}
        self._retired: dict[int, Corpus] = {}

    # -- leases ------------------------------------------------------------------------------

    @contextmanager
    def lease(self, name: str) -> Iterator[Corpus]:
        """The current corpus ``name``, kept open until the block ends."""
        self.maybe_reload()
        with self._lock:
            corpus = self.get(name)
            self._leases[id(corpus)] = self._leases.get(id(corpus), 0) + 1
        try:
            yield corpus
        finally:
            with self._lock:
                left = self._leases[id(corpus)] - 1
                if left:
                    self._leases[id(corpus)] = left
                else:
                    del self._leases[id(corpus)]
                last = left == 0 and self._retired.pop(id(corpus), None) is not None
            if last:
                corpus.file.close()

    def call(self, name: str, action: Callable[[Corpus], T]) -> T:
        """``action(corpus)`` under a lease on the current corpus ``name``."""
        with self.lease(name) as corpus:
            return action(corpus)

    def listing(self) -> dict[str, Any]:
        """The ``GET /api/corpora`` document, each entry read under a lease."""
        doc = super().listing()
        entries = []
        for name in self.names():
            with self.lease(name) as corpus:
                entries.append(corpus.summary())
        doc["corpora"] = entries
        return doc

    # -- reload ------------------------------------------------------------------------------

    def maybe_reload(self) -> None:
        """Run :meth:`reload_changed` if ``check_ms`` passed since the last check."""
        now = time.monotonic()
        if self.check_ms <= 0 or now < self._next_check:
            return
        if not self._reload_lock.acquire(blocking=False):
            return  # another request is checking; this one is served by the current files
        try:
            self._next_check = now + self.check_ms / 1000.0
            self.reload_changed()
        finally:
            self._reload_lock.release()

    def reload_changed(self) -> list[str]:
        """Reopen every served path whose signature changed; the names swapped in."""
        swapped = []
        for name in self.names():
            old = self._by_name[name]
            try:
                sig = signature(old.path)
            except OSError:
                continue  # between an unlink and a rename: keep serving the open file
            if sig == self._signature[name] or sig == self._refused.get(name):
                continue
            try:
                new = self._open_like(old)
            except (UrnaError, OSError, ValueError) as e:
                self._refused[name] = sig
                self._log("reload_refused", name, error=f"{type(e).__name__}: {e}")
                continue
            with self._lock:
                self._by_name[name] = new
                self._signature[name] = sig
                self._refused.pop(name, None)
                idle = id(old) not in self._leases
                if not idle:
                    self._retired[id(old)] = old
            if idle:
                old.file.close()
            self._log("reload", name, file_hash=new.file.file_hash)
            swapped.append(name)
        return swapped

    def _open_like(self, old: Corpus) -> Corpus:
        from urna.runtime import open_file

        f = open_file(old.path)  # every checksum verified here, before it can serve
        try:
            new = Corpus(old.name, old.path, f)
            if f.embedding_model == old.file.embedding_model and \
                    f.model_hash == old.file.model_hash:
                new._embedder = old._embedder  # same model: keep the loaded embedder
            new.warm()
        except BaseException:
            f.close()
            raise
        return new

    def _log(self, event: str, name: str, **fields: Any) -> None:
        line = json.dumps({"ts": round(time.time(), 3), "event": event, "corpus": name,
                           **fields})
        stream = self._log_stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()

    def close(self) -> None:
        """Close every served and every retired file (idempotent)."""
        super().close()
        if not hasattr(self, "_lock"):  # the base __init__ failed and closed what it opened
            return
        with self._lock:
            retired, self._retired = list(self._retired.values()), {}
        for c in retired:
            c.file.close()
