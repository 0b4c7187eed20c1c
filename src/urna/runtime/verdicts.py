"""Verdicts of full opens, so a file opened again costs one hash pass instead of three (#20).

Every check of an open (the section checksums, the NaN walk, the content hash, the decoding of
the indexes) is a pure function of the file's body, and the footer digest is the SHA-256 of
that body. After a full open succeeds, the body digest and the content hash are kept under
the user cache (``<URNA_CACHE_DIR or ~/.cache/urna>/opened/``), one entry per resolved path.
The next open of that path still computes the body digest over every byte; only when it
equals the digest of the verified body are the other passes known to pass (the bytes are the
same bytes) and skipped. The file's stat (size, mtime, inode) only chooses that strategy:
it never stands in for a check. A changed byte changes the digest, so a damaged file always
gets the full checks and fails with the reference's first error.

A verdict names the checks it settled beyond the reader's nineteen and the content hash, and
is trusted only for those: ``OPEN`` (the runtime open's value walks and index decodes, kept by
``UrnaFile``), ``CITE_RECORDS`` (0x01 / 0x02 / 0x03 parsed with the header's chunk count, kept
by ``urna cite``), ``TEXT_RECORDS`` (0x02 alone parsed so, kept by the first retrieve of an
open file). ``inspect`` and ``cite`` need none to trust a body; an open needs
``OPEN``, so a verdict kept by ``cite`` or ``inspect`` never lets an open skip its NaN walk.
Verdicts of the same bytes merge their checks.

Only files past ``MIN_BYTES`` are remembered (below it the passes cost less than the entry);
``URNA_OPEN_CACHE=0`` turns the cache off. A missing, stale or corrupt entry just means the full
open; a cache that cannot be written is skipped.

Two things derived from a verified body are kept beside the verdicts, by body digest, under
the same rules: the record starts of its 0x02 / 0x03 (``keep_starts``) and its scoring rows'
norm bound (``RowNormMemo``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import sys

from .._cache_dir import user_cache_folder
from .._version import __version__
from ..format.record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from array import array

    from ..format.reader import UrnaView

SCHEMA = 2
OPEN = "open"
CITE_RECORDS = "cite-records"
TEXT_RECORDS = "text-records"
OPEN_CHECKS = frozenset({OPEN})
NO_CHECKS: frozenset[str] = frozenset()
MIN_BYTES = 4 << 20
MAX_ENTRIES = 256
_HEX = frozenset("0123456789abcdef")


class Verdict(FrozenRecord):
    """A verified body: its SHA-256 (32 bytes), its content hash and the checks it passed."""

    __slots__ = _fields = ("body_digest", "content_hash", "checks")
    body_digest: bytes
    content_hash: str
    checks: frozenset[str]

    def __init__(self, body_digest: bytes, content_hash: str,
                 checks: frozenset[str] = OPEN_CHECKS) -> None:
        self._set(body_digest, content_hash, checks)


def enabled() -> bool:
    """Whether opens consult and keep verdicts (``URNA_OPEN_CACHE=0`` turns them off)."""
    return os.environ.get("URNA_OPEN_CACHE", "1") != "0"


def _state(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def _entry_path(path: str) -> str:
    key = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(user_cache_folder(), "opened", f"{key}.json")


def _read(path: str, st: os.stat_result) -> Verdict | None:
    try:
        with open(_entry_path(path), encoding="utf-8") as fh:
            doc = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and doc.get("schema") == SCHEMA
            and doc.get("urna") == __version__ and doc.get("state") == _state(st)):
        return None
    body, content, checks = doc.get("body_sha256"), doc.get("content_hash"), doc.get("checks")
    if not (isinstance(body, str) and len(body) == 64 and set(body) <= _HEX
            and isinstance(content, str) and content.startswith("sha256:")
            and isinstance(checks, list) and all(isinstance(c, str) for c in checks)):
        return None
    return Verdict(bytes.fromhex(body), content, frozenset(checks))


def lookup(path: str, st: os.stat_result, needs: frozenset[str] = OPEN_CHECKS) -> Verdict | None:
    """The kept verdict of ``path`` when its stat is unchanged since and it settled ``needs``."""
    if st.st_size < MIN_BYTES or not enabled():
        return None
    verdict = _read(path, st)
    return verdict if verdict is not None and needs <= verdict.checks else None


def remember(path: str, st: os.stat_result, verdict: Verdict) -> None:
    """Keep ``verdict`` for ``path`` as of ``st`` (best effort: errors leave no entry).

    A kept verdict of the same bytes keeps its checks too: the entry holds their union.
    """
    if st.st_size < MIN_BYTES or not enabled():
        return
    kept = _read(path, st)
    checks = verdict.checks
    if kept is not None and kept.body_digest == verdict.body_digest:
        checks = checks | kept.checks
        if checks == kept.checks:
            return  # nothing new to keep
    doc = {"schema": SCHEMA, "urna": __version__, "path": os.path.realpath(path),
           "state": _state(st), "body_sha256": verdict.body_digest.hex(),
           "content_hash": verdict.content_hash, "checks": sorted(checks)}
    _write_entry(_entry_path(path), json.dumps(doc, sort_keys=True).encode("utf-8"))


def _write_entry(target: str, data: bytes) -> None:
    """Replace the cache file ``target`` with ``data`` (best effort: errors leave no file),
    first pruning its folder's oldest files of the same suffix. No fsync: a torn entry fails
    its own check when read, and only costs the work it would have saved."""
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    try:
        os.makedirs(folder, exist_ok=True)
        _prune(folder, os.path.splitext(name)[1])
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _prune(folder: str, suffix: str = ".json") -> None:
    """Drop the oldest entries (files ending ``suffix``) so the folder holds fewer than
    ``MAX_ENTRIES``."""
    entries = [os.path.join(folder, name) for name in os.listdir(folder)
               if name.endswith(suffix)]
    if len(entries) < MAX_ENTRIES:
        return
    aged = []
    for entry in entries:
        with contextlib.suppress(OSError):
            aged.append((os.stat(entry).st_mtime_ns, entry))
    aged.sort()
    for _, entry in aged[:len(aged) - MAX_ENTRIES + 1]:
        with contextlib.suppress(OSError):
            os.unlink(entry)


# Record starts of a verified body's 0x02 / 0x03 (``canonical.RecordWalk``), kept by body
# digest so the next call reads row i at once instead of walking i length fields (~2-4 ms a
# table of 18,000 records): ``<cache>/opened/starts/<digest>-<section>.bin``, a header (magic,
# count, the SHA-256 of the starts) and the starts as little-endian u64. A missing, torn or
# foreign file is no starts: the walk runs and keeps them anew.
_STARTS_MAGIC = b"URNAST01"
_STARTS_HEAD = struct.Struct("<8sQ32s")
STARTS_MIN_RECORDS = 4096  # below it the walk costs less than the file read


def _starts_path(body_digest: bytes, section_id: int) -> str:
    return os.path.join(user_cache_folder(), "opened", "starts",
                        f"{body_digest.hex()}-{section_id:02x}.bin")


def kept_starts(body_digest: bytes, section_id: int, count: int) -> array | None:
    """The ``count`` record starts kept for section ``section_id`` of the body whose SHA-256 is
    ``body_digest`` (``keep_starts``), or None."""
    if count < STARTS_MIN_RECORDS or not enabled():
        return None
    try:
        with open(_starts_path(body_digest, section_id), "rb") as fh:
            blob = fh.read()
    except OSError:
        return None
    if len(blob) != _STARTS_HEAD.size + 8 * count:
        return None
    magic, n, digest = _STARTS_HEAD.unpack_from(blob)
    body = memoryview(blob)[_STARTS_HEAD.size:]
    if magic != _STARTS_MAGIC or n != count or hashlib.sha256(body).digest() != digest:
        return None
    from array import array

    starts = array("Q")
    starts.frombytes(body)
    if sys.byteorder != "little":
        starts.byteswap()
    return starts


def keep_starts(body_digest: bytes, section_id: int, starts: list[int] | array) -> None:
    """Keep the record starts a walk of these verified bytes found (best effort)."""
    if len(starts) < STARTS_MIN_RECORDS or not enabled():
        return
    from array import array

    packed = array("Q", starts)
    if sys.byteorder != "little":
        packed.byteswap()
    body = packed.tobytes()
    head = _STARTS_HEAD.pack(_STARTS_MAGIC, len(packed), hashlib.sha256(body).digest())
    _write_entry(_starts_path(body_digest, section_id), head + body)


# The scoring slab's row-norm bound (``Slab.max_row_norm``, which the exact screen needs and
# which reads every row), kept by body digest as the record starts are, so a later call's
# first exact search reads the rows once instead of twice: ``<cache>/opened/norms/
# <digest>.bin``, the magic, the bound (f64) and the SHA-256 of both. A missing, torn or
# foreign file is no bound: the pass runs and keeps it anew.
_NORM_MAGIC = b"URNARN01"
_NORM = struct.Struct("<8sd32s")


def _norm_path(body_digest: bytes) -> str:
    return os.path.join(user_cache_folder(), "opened", "norms", f"{body_digest.hex()}.bin")


def _norm_record(bound: float) -> bytes:
    head = _NORM_MAGIC + struct.pack("<d", bound)
    return head + hashlib.sha256(head).digest()


class RowNormMemo:
    """``Slab.norm_memo`` for the scoring rows of the body whose SHA-256 is ``body_digest``."""

    __slots__ = ("body_digest",)

    def __init__(self, body_digest: bytes) -> None:
        self.body_digest = body_digest

    def get(self) -> float | None:
        """The bound kept for these rows, or None."""
        try:
            with open(_norm_path(self.body_digest), "rb") as fh:
                blob = fh.read(_NORM.size + 1)
        except OSError:
            return None
        if len(blob) != _NORM.size:
            return None
        magic, bound, _ = _NORM.unpack(blob)
        # a NaN or negative bound is never kept: such a file is not ours
        if magic != _NORM_MAGIC or blob != _norm_record(bound) or not bound >= 0.0:
            return None
        return float(bound)

    def put(self, bound: float) -> None:
        """Keep ``bound`` for these rows (best effort: errors leave no file)."""
        if bound >= 0.0:
            _write_entry(_norm_path(self.body_digest), _norm_record(bound))


def row_norm_memo(st: os.stat_result, body_digest: bytes) -> RowNormMemo | None:
    """The memo of a verified body's scoring rows, for a file of ``st`` (None where verdicts
    are not kept: a small file, or ``URNA_OPEN_CACHE=0``)."""
    if st.st_size < MIN_BYTES or not enabled():
        return None
    return RowNormMemo(body_digest)


def checked(path: str, data: bytes | memoryview) -> tuple[UrnaView, frozenset[str]]:
    """``UrnaView.from_bytes(data)`` for the bytes read from ``path``, through its verdict, and
    the further checks known to pass on these bytes (none unless the view is trusted).

    A trusted view takes the kept content hash; ``keep_view`` keeps a verdict for the next
    call (``cite``, ``inspect`` and the open share them).
    """
    from ..format.reader import UrnaView

    try:
        st = os.stat(path)
    except OSError:
        return UrnaView.from_bytes(data), NO_CHECKS
    verdict = lookup(path, st, NO_CHECKS) if st.st_size == len(data) else None
    view = UrnaView.from_bytes(data, trusted_body=None if verdict is None
                               else verdict.body_digest)
    if not view.trusted:
        return view, NO_CHECKS
    assert verdict is not None
    view.adopt_content_hash(verdict.content_hash)
    return view, verdict.checks


def checked_view(path: str, data: bytes | memoryview) -> UrnaView:
    """The view of ``checked``."""
    return checked(path, data)[0]


def keep(path: str, st: os.stat_result, view: UrnaView,
         checks: frozenset[str] = NO_CHECKS) -> Verdict | None:
    """Keep the verdict of a checked ``view`` of the bytes ``path`` held as of ``st`` (its
    content hash is computed if it is not known yet), with the further ``checks`` that passed
    on these bytes; the verdict, or None for a view the checks did not open."""
    digest = view.body_digest()
    if digest is None:
        return None
    verdict = Verdict(digest, view.content_hash(), checks)
    remember(path, st, verdict)
    return verdict


def keep_view(path: str, data: bytes | memoryview, view: UrnaView,
              checks: frozenset[str] = NO_CHECKS) -> None:
    """``keep`` for the bytes ``data`` just read from ``path`` (its stat taken now); a trusted
    view with no further checks has nothing new to keep."""
    if view.body_digest() is None or (view.trusted and not checks):
        return
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if st.st_size == len(data):
            keep(path, st, view, checks)
