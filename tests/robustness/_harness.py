"""Drive every reader entry point over one byte string and classify what happens.

Two drivers:

* :func:`conformance_outcome` follows what the reference's mutation labels mean: the first
  failure of ``urna.open`` (through a file), ``validate``, an exact search, then ANN / hybrid
  search where the file has them; plus ``UrnaView.from_bytes`` on the same bytes, which must
  fail with the same class whenever it fails.
* :func:`exercise` calls everything a user can call (open, validate, inspect, every search verb,
  retrieve, cite, chunk_ids, texts, blob access) and records one :class:`Outcome` per call.

An outcome is *foreign* when the exception is not an ``urna.errors.UrnaError``: that is the bug
class these tests hunt. Every case runs under a wall-clock cap (SIGALRM) so a hang fails the
test instead of stalling it.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import urna
from urna import errors

QUERY_TEXT = "offline search with citations"


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so code under test cannot swallow it."""


@contextmanager
def time_cap(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the main thread if the block runs longer than ``seconds``."""
    def _fire(signum, frame):
        raise CaseTimeout(f"case exceeded {seconds:.1f} s")

    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    """What one call did: ``variant`` None means success."""

    op: str
    variant: str | None = None
    message: str = ""
    foreign: bool = False
    trace: str = ""

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.variant is None


def _classify(op: str, exc: BaseException) -> Outcome:
    if isinstance(exc, CaseTimeout):
        raise exc
    foreign = not isinstance(exc, errors.UrnaError)
    return Outcome(op, type(exc).__name__, str(exc), foreign,
                   traceback.format_exc(limit=-6) if foreign else "")


def attempt(op: str, fn: Callable[[], object], log: list[Outcome]) -> object | None:
    """Run ``fn``, append its outcome to ``log`` and return its result (None on failure)."""
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - classifying every escape is the point
        log.append(_classify(op, exc))
        return None
    log.append(Outcome(op))
    return value


def query_vector(dim: int, seed: int = 7) -> np.ndarray:
    """A deterministic unit query of ``dim`` floats (a short one when dim is absurd)."""
    dim = dim if 0 < dim <= 1 << 16 else 4
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def write_case(buf: bytes, path: Path) -> Path:
    """Write ``buf`` to ``path`` (replacing it) and return the path."""
    with open(path, "wb") as fh:
        fh.write(buf)
    return path


def check_outcome(check: Callable[[bytes], object], buf: bytes) -> tuple[str, str] | None:
    """``(error class, message)`` of the typed error ``check(buf)`` raises, None when it passes."""
    try:
        check(buf)
    except errors.UrnaError as exc:
        return type(exc).__name__, str(exc)
    return None


def view_outcome(buf: bytes) -> Outcome:
    """The outcome of ``UrnaView.from_bytes(buf)``."""
    from urna.format.reader import UrnaView
    log: list[Outcome] = []
    attempt("view", lambda: UrnaView.from_bytes(buf), log)
    return log[0]


def conformance_outcome(buf: bytes, path: Path) -> tuple[Outcome, Outcome]:
    """``(view outcome, first failure of open/validate/search/ann/hybrid)`` for ``buf``."""
    view = view_outcome(buf)
    write_case(buf, path)
    log: list[Outcome] = []
    f = attempt("open", lambda: urna.open(str(path)), log)
    if f is None:
        return view, log[-1]
    try:
        q = query_vector(f.embedding_dim)
        steps: list[tuple[str, Callable[[], object]]] = [
            ("validate", f.validate), ("search", lambda: f.search(q, 5))]
        if f.has_ann:
            steps.append(("search_ann", lambda: f.search_ann(q, 5, 32)))
        if f.has_bm25:
            steps.append(("search_hybrid", lambda: f.search_hybrid(q, QUERY_TEXT, 5, 50)))
        for op, fn in steps:
            attempt(op, fn, log)
            if not log[-1].ok:
                return view, log[-1]
        return view, Outcome("all")
    finally:
        _close(f)


def _close(f) -> None:
    close = getattr(f, "close", None)
    if close is not None:
        # Closing a broken file must not mask the verdict.
        with suppress(Exception):
            close()


@dataclass
class Exercise:
    """All outcomes of one :func:`exercise` run, plus API names the object lacked."""

    outcomes: list[Outcome] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def foreign(self) -> list[Outcome]:
        """The calls that escaped with a non-urna exception."""
        return [o for o in self.outcomes if o.foreign]


def _space_dims(info: object) -> dict[str, int]:
    spaces = info.get("spaces") if isinstance(info, dict) else None
    dims: dict[str, int] = {}
    for s in spaces or []:
        if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("dim"), int):
            dims[s["name"]] = s["dim"]
    return dims


def exercise(buf: bytes, path: Path, *, with_view: bool = True) -> Exercise:
    """Call every reader entry point on ``buf`` (written to ``path``) and record the outcomes."""
    ex = Exercise()
    log = ex.outcomes
    if with_view:
        _exercise_view(buf, log)
    write_case(buf, path)
    f = attempt("open", lambda: urna.open(str(path)), log)
    if f is None:
        return ex
    try:
        _exercise_open(f, ex)
    finally:
        _close(f)
    return ex


def _exercise_view(buf: bytes, log: list[Outcome]) -> None:
    """``UrnaView.from_bytes`` and, when it succeeds, everything the view offers."""
    from urna.format.reader import UrnaView
    view = attempt("view", lambda: UrnaView.from_bytes(buf), log)
    if view is None:
        return
    attempt("view_content_hash", view.content_hash, log)
    attempt("view_values", view.validate_embeddings_values, log)
    attempt("view_contract", view.search_contract, log)
    for e in view.entries[:64]:
        attempt("view_decoded", lambda sid=e.section_id: view.decoded(sid), log)


def _call(ex: Exercise, f: object, name: str, *args, op: str | None = None) -> object | None:
    fn = getattr(f, name, None)
    if fn is None:
        ex.missing.append(name)
        return None
    return attempt(op or name, lambda: fn(*args), ex.outcomes)


def _exercise_open(f, ex: Exercise) -> None:
    dim = attempt("embedding_dim", lambda: int(f.embedding_dim), ex.outcomes) or 4
    q = query_vector(dim)
    _call(ex, f, "validate")
    info = _call(ex, f, "inspect")
    hits = _call(ex, f, "search", q, 5)
    _call(ex, f, "search", q, 1000, op="search_k_large")
    _call(ex, f, "search_ann", q, 5, 32)
    _call(ex, f, "search_hybrid", q, QUERY_TEXT, 5, 50)
    _call(ex, f, "search_graph", q, 5)
    _call(ex, f, "retrieve", q, 3)
    _call(ex, f, "search_batch", np.stack([q, -q]), 3)
    for name, sdim in list(_space_dims(info).items())[:4]:
        _call(ex, f, "search_space", name, query_vector(sdim), 3, op="search_space")
    ids = _call(ex, f, "chunk_ids")
    _call(ex, f, "texts")
    refs = _call(ex, f, "blob_refs")
    for i in range(min(len(refs) if isinstance(refs, list) else 0, 4)):
        inlined = isinstance(refs[i], dict) and refs[i].get("inlined") is True
        _call(ex, f, "blob_bytes", i, op="blob_bytes" if inlined else "blob_bytes_bad")
    if isinstance(refs, list):
        _call(ex, f, "blob_bytes", len(refs), op="blob_bytes_bad")
    if isinstance(hits, list) and hits:
        cid = getattr(hits[0], "citation_id", None)
        if isinstance(cid, str):
            _call(ex, f, "cite", cid)
            _call(ex, f, "cite", cid[:-3] + "zzz", op="cite_bad")
    elif isinstance(ids, list) and ids and isinstance(ids[0], str):
        _call(ex, f, "cite", f"urna://{getattr(f, 'content_hash', '')}/{ids[0]}")


def rss_peak_mib() -> float:
    """Peak resident set of this process, in MiB (Linux ru_maxrss is KiB)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def now() -> float:
    """Monotonic seconds."""
    return time.perf_counter()


def env_int(name: str, default: int) -> int:
    """An integer environment knob."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def env_float(name: str, default: float) -> float:
    """A float environment knob."""
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


# The calls of tools/differential_corruptions.py's worker, in the order its first failure is
# read: these first, then the others (spaces, retrieve, chunk_ids, blobs) by name.
DIFFERENTIAL_ORDER = ("open", "props", "validate", "inspect", "search", "search_ann",
                      "search_hybrid", "search_graph")


def _builtin(exc: BaseException) -> str:
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(exc).__name__


def _differential_query(dim: int, salt: int = 0) -> list[float]:
    return [1.0 if i == 0 else (((i + salt) * 37) % 11 - 5) / 10.0 for i in range(dim)]


def differential_outcome(path: Path) -> tuple[str, BaseException] | None:
    """``(call, exception)`` of the first failing call of the differential run's sequence on
    the file at ``path`` (None when every call succeeds)."""
    failed: dict[str, BaseException] = {}

    def do(op: str, fn: Callable[[], object]) -> object | None:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the first failure is the answer
            failed[op] = exc
            return None

    f = do("open", lambda: urna.open(str(path)))
    if f is None:
        return "open", failed["open"]
    try:
        dim = do("props", lambda: int(f.embedding_dim)) or 1
        q = _differential_query(dim if 0 < dim <= 1 << 16 else 1)
        do("validate", f.validate)
        info = do("inspect", f.inspect)
        do("search", lambda: f.search(q, 5))
        do("search_ann", lambda: f.search_ann(q, 5, 32))
        do("search_hybrid", lambda: f.search_hybrid(q, QUERY_TEXT, 5, 50))
        do("search_graph", lambda: f.search_graph(q, 5))
        spaces = info.get("spaces") if isinstance(info, dict) else None
        for s in (spaces or [])[:4]:
            if isinstance(s, dict) and isinstance(s.get("dim"), int) and 0 < s["dim"] <= 1 << 16:
                do(f"search_space:{s.get('name')}",
                   lambda s=s: f.search_space(s["name"], _differential_query(s["dim"], 3), 3))
        do("retrieve", lambda: f.retrieve(q, 3))
        do("chunk_ids", f.chunk_ids)
        refs = do("blob_refs", f.blob_refs)
        for i in range(min(len(refs) if isinstance(refs, list) else 0, 4)):
            do(f"blob_bytes:{i}", lambda i=i: f.blob_bytes(i))
    finally:
        _close(f)
    if not failed:
        return None
    first = min(failed, key=lambda op: (DIFFERENTIAL_ORDER.index(op)
                                        if op in DIFFERENTIAL_ORDER
                                        else len(DIFFERENTIAL_ORDER), op))
    return first, failed[first]

