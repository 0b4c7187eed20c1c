"""The full integrity check behind ``urna validate`` (01-container §12.3, 04-surface §2.3).

``FORMAT_STEPS`` is the one ordered list of what the check runs after the reader's 19 checks:
the NaN/Inf walk of 0x04, the search contract, the decoded canonical sections (with their
record counts), the content hash and, when 0x17 exists, every inlined blob against its 0x14
SHA-256. ``runtime.validation.VALIDATE_STEPS`` is this list with the runtime open's own step
put in its place; the CLI, ``UrnaFile.validate(full=True)`` and the TUI's rows all run it
through ``Checks``, so adding a step is one edit.

Which error wins: the reference's ``urna validate`` fails as its open does whenever its open
refuses, else with the first failure of its own further checks. A step says whether the open
makes it too (``opens``). The failure of such a step ends the run; a failure of one the open
does not make (or makes again later, in its own order: ``repeats``) is held while the later
steps of the open still run, and is the outcome only when they pass.

The big passes run ahead on workers (``format.ahead``): the NaN walk and the 0x02 decode
start at once (the decode even before a job the run waits for, ``Checks``' ``loading``), the
content hash as soon as 0x02 is decoded; each outcome is claimed in the steps' order.

A passed 0x01 and 0x03 parse is kept (``Checking.proven_ids``, ``proven_spans``): the runtime
open's steps, run by ``urna validate`` after them, take those records instead of proving the
same bytes again.
"""

from __future__ import annotations

from ..errors import MalformedSectionPayload, UrnaError
from .ahead import Job, Lane
from .hashing import sha256_digest
from .layout import (
    SECTION_BLOB_DATA,
    SECTION_BLOB_REFS,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
)
from .reader import UrnaView, detached
from .record import FrozenRecord
from .sections.canonical import SpanRecords, StringRecords, string_records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable
    from typing import Any

    from .encodings.repack import ColumnSpans

OK, FAIL, SKIP = "ok", "fail", "skip"
NOT_RUN = "not run: an earlier check failed"


class Verification(FrozenRecord):
    """What a successful full check established."""

    __slots__ = _fields = ("n_sections", "blobs_verified", "file_hash", "content_hash")
    n_sections: int
    blobs_verified: int | None
    file_hash: str
    content_hash: str

    def __init__(self, n_sections: int, blobs_verified: int | None, file_hash: str,
                 content_hash: str) -> None:
        self._set(n_sections, blobs_verified, file_hash, content_hash)


class Checking:
    """One run of the steps over a view that passed the reader: the work started ahead (by
    step name, claimed once) and what the steps found."""

    def __init__(self, view: UrnaView, lane: Lane) -> None:
        self.view, self._lane = view, lane
        self._ahead: dict[str, Job] = {}
        self.blobs_verified: int | None = None
        # The records of 0x01 and 0x03 as their steps' parses proved them (None until then).
        self.proven_ids: StringRecords | None = None
        self.proven_spans: SpanRecords | ColumnSpans | None = None

    def start(self, name: str, size: int, fn: Callable[..., Any], *args: Any) -> None:
        """Start ``fn(*args)`` for step ``name`` (on a worker when ``size`` bytes warrant it)."""
        self._ahead[name] = self._lane.start(size, fn, *args)

    def claim(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """The outcome of ``name``'s work started ahead, else of ``fn(*args)`` run now."""
        job = self._ahead.pop(name, None)
        return fn(*args) if job is None else job.result()

    def settle(self, name: str) -> None:
        """Wait for ``name``'s work started ahead, if any, leaving its outcome unclaimed."""
        job = self._ahead.get(name)
        if job is not None:
            job.wait()


class Step(FrozenRecord):
    """One check of ``urna validate`` after the reader's.

    ``run`` returns what the check found (a row's detail) or raises its typed error;
    ``opens``: the runtime open makes this check too, with the same outcome; ``repeats``: the
    steps whose open check this one makes again, in the open's order, on the files it
    ``applies`` to; ``ahead`` starts its big pass before the first step runs; ``early``: that
    pass may start while ``Checks``' ``loading`` job still runs (it holds no GIL for long and
    reads nothing that job loads).
    """

    __slots__ = _fields = ("name", "run", "opens", "repeats", "applies", "ahead", "early")
    name: str
    run: Callable[[Checking], str]
    opens: bool
    repeats: frozenset[str]
    applies: Callable[[UrnaView], bool] | None
    ahead: Callable[[Checking], None] | None
    early: bool

    def __init__(self, name: str, run: Callable[[Checking], str], *, opens: bool,
                 repeats: frozenset[str] = frozenset(),
                 applies: Callable[[UrnaView], bool] | None = None,
                 ahead: Callable[[Checking], None] | None = None, early: bool = False) -> None:
        self._set(name, run, opens, repeats, applies, ahead, early)

    def repeated_on(self, view: UrnaView) -> frozenset[str]:
        """The steps this one checks again on ``view``'s file (none where it does not apply)."""
        if self.applies is not None and not self.applies(view):
            return frozenset()
        return self.repeats


class StepOutcome(FrozenRecord):
    """One step's row: ``ok`` (``detail`` says what it found), ``fail`` (``error``) or
    ``skip`` (an earlier failure decided the outcome)."""

    __slots__ = _fields = ("name", "status", "detail", "error")
    name: str
    status: str
    detail: str
    error: UrnaError | None

    def __init__(self, name: str, status: str, detail: str = "",
                 error: UrnaError | None = None) -> None:
        self._set(name, status, detail, error)


class Checks:
    """The steps run over a view that passed the reader, as an iterator of ``StepOutcome``.

    Once it is run out, ``error`` is the outcome (None when every step passed) and, on a pass,
    ``verification`` what the check established. Closing it early waits for the work ahead.

    ``loading``: a job started elsewhere that the steps want over before they run (``urna
    validate``'s import of the open's decoders): the ``early`` passes ahead start first, beside
    it, then the run waits for it, then the other passes start and the steps run.
    """

    def __init__(self, view: UrnaView, steps: Iterable[Step], *,
                 loading: Job | None = None) -> None:
        self.view = view
        self.steps = tuple(steps)
        self.loading = loading
        self.error: UrnaError | None = None
        self.verification: Verification | None = None

    def __iter__(self) -> Generator[StepOutcome, None, None]:
        return self._run()

    def _run(self) -> Generator[StepOutcome, None, None]:
        view, steps = self.view, self.steps
        held: UrnaError | None = None  # a failure the open's later steps may still overrule
        with Lane() as lane:
            checking = Checking(view, lane)
            try:
                for step in steps:
                    if step.ahead is not None and step.early:
                        step.ahead(checking)
            finally:
                if self.loading is not None:
                    self.loading.wait()
            for step in steps:
                if step.ahead is not None and not step.early:
                    step.ahead(checking)
            for i, step in enumerate(steps):
                if held is not None and not step.opens:
                    yield StepOutcome(step.name, SKIP, NOT_RUN)
                    continue
                try:
                    detail = step.run(checking)
                except UrnaError as exc:
                    error = detached(exc)
                    yield StepOutcome(step.name, FAIL, error=error)
                    later = steps[i + 1:]
                    if not step.opens or any(step.name in s.repeated_on(view) for s in later):
                        held = held or error
                        continue
                    self.error = error
                    for rest in later:
                        yield StepOutcome(rest.name, SKIP, NOT_RUN)
                    return
                yield StepOutcome(step.name, OK, detail)
            if held is not None:
                self.error = held
                return
            self.verification = Verification(len(view.entries), checking.blobs_verified,
                                             view.file_hash(), view.content_hash())


def check_view(view: UrnaView, steps: Iterable[Step], *,
               loading: Job | None = None) -> Verification:
    """Run ``steps`` over a view that passed the reader; raises the outcome's typed error.

    ``loading``: as for ``Checks`` (waited for before the first step runs)."""
    checks = Checks(view, steps, loading=loading)
    for row in checks:
        del row  # a failed row holds the error, whose traceback will hold this frame
    if checks.verification is not None:
        return checks.verification
    error = checks.error
    assert error is not None  # a run ends with one or the other
    del checks
    try:
        raise error
    finally:
        del error  # no cycle error -> traceback -> this frame -> error


def verify_blobs(view: UrnaView) -> int | None:
    """Check every inlined blob of 0x17 against its 0x14 digest; None when there is no 0x17."""
    from .sections.blobs import decode_blob_data, decode_blob_refs

    data_entry = view.entry(SECTION_BLOB_DATA)
    if data_entry is None:
        return None
    payload = view.payload(data_entry)
    table, data_start = decode_blob_data(payload)
    has_refs = view.entry(SECTION_BLOB_REFS) is not None
    refs = decode_blob_refs(view.decoded(SECTION_BLOB_REFS)) if has_refs else []
    verified = 0
    for i, (offset, length) in enumerate(table):
        if i >= len(refs) or not refs[i].inlined:
            continue
        blob = payload[data_start + offset:data_start + offset + length]
        if sha256_digest(blob) != refs[i].content_hash:
            raise MalformedSectionPayload(SECTION_BLOB_DATA, f"blob {i} ({refs[i].original_uri}) "
                                          "does not match its blob_refs sha256")
        verified += 1
    return verified


# -- the steps, in order ---------------------------------------------------------------------

VALUES, CONTRACT, CHUNK_IDS, SPANS, TEXTS = ("embedding values", "search contract", "chunk ids",
                                             "spans", "canonical texts")
CONTENT_HASH, BLOBS = "content hash", "inlined blobs"


def _start_values(c: Checking) -> None:
    c.start(VALUES, c.view.check_embeddings_layout().size, c.view.validate_embeddings_values)


def _values(c: Checking) -> str:
    c.claim(VALUES, c.view.validate_embeddings_values)
    return "no NaN or Inf"


def _contract(c: Checking) -> str:
    return f"{len(c.view.search_contract())} keys"


def _chunk_ids(c: Checking) -> str:
    n = c.view.header.n_embeddings
    c.proven_ids = string_records(c.view.decoded(SECTION_CHUNK_IDS), n, SECTION_CHUNK_IDS)
    return f"{n} ids"


def _spans(c: Checking) -> str:
    n = c.view.header.n_embeddings
    c.proven_spans = c.view.span_records(n)
    return f"{n} spans"


def _start_texts(c: Checking) -> None:
    # zstd releases the GIL; the decoder bounds its expansion
    entry = c.view.entry(SECTION_CHUNKS_CANONICAL)
    assert entry is not None  # a required section (reader step 16)
    c.start(TEXTS, entry.size, _decode_texts, c)


def _decode_texts(c: Checking) -> bytes | memoryview:
    """0x02 decoded, then the content hash (which reads the decoded tables) started at once:
    it runs beside the steps up to its own, not from the 0x02 parse on."""
    view = c.view
    decoded = view.decoded(SECTION_CHUNKS_CANONICAL)
    c.start(CONTENT_HASH, view.check_embeddings_layout().size + len(decoded), view.content_hash)
    return decoded


def _texts(c: Checking) -> str:
    view = c.view
    decoded = c.claim(TEXTS, _decode_texts, c)
    n = view.header.n_chunks
    string_records(decoded, n, SECTION_CHUNKS_CANONICAL)
    return f"{n} texts"


def _content_hash(c: Checking) -> str:
    c.settle(TEXTS)  # an unclaimed 0x02 decode (its step skipped) may still start the hash
    return str(c.claim(CONTENT_HASH, c.view.content_hash))


def _blobs(c: Checking) -> str:
    n = c.blobs_verified = verify_blobs(c.view)
    return "no inlined blobs" if n is None else f"{n} blobs match their sha256"


# The format-level steps in the reference's order. The contract, 0x02's records and the blobs'
# SHA-256 are validate's own; the open walks the values, parses 0x01 and 0x03 with the same
# outcome, and computes the content hash.
FORMAT_STEPS: tuple[Step, ...] = (
    Step(VALUES, _values, opens=True, ahead=_start_values),
    Step(CONTRACT, _contract, opens=False),
    Step(CHUNK_IDS, _chunk_ids, opens=True),
    Step(SPANS, _spans, opens=True),
    Step(TEXTS, _texts, opens=False, ahead=_start_texts, early=True),
    Step(CONTENT_HASH, _content_hash, opens=True),
    Step(BLOBS, _blobs, opens=False),
)


def verify(data: bytes | memoryview) -> Verification:
    """Run the format-level full check over a file's bytes; raises the first typed error."""
    return verify_view(UrnaView.from_bytes(data))


def verify_view(view: UrnaView) -> Verification:
    """The format-level steps after the reader's, on a view that passed them."""
    return check_view(view, FORMAT_STEPS)
