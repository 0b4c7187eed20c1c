"""The real ``urna`` command line, in-process: ``urna.cli.main(argv)`` with its output captured.

``invoke`` swaps in an empty stdin and capturing stdout / stderr (never terminals), runs
``main``, catches its ``SystemExit`` and puts every stream and variable back, whatever
happened. A module first imported during a call may keep the capture it saw as a default
(the MCP SDK's ``stdio_client(errlog=sys.stderr)``); a capture therefore stays writable
after the call and hands a child process the descriptor of the stream it stood in for, so
that later use (``tests/test_readme.py``'s MCP example) still works.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from urna.cli import main


@dataclass
class CliResult:
    """One call's exit status, its streams (``output``: both, interleaved) and its exception."""

    exit_code: int
    stdout: str
    stderr: str
    output: str
    exception: BaseException | None


class _Capture(io.StringIO):
    """A text stream that also copies what it is given into the interleaved transcript."""

    def __init__(self, transcript: io.StringIO, replaced: object, fallback_fd: int) -> None:
        super().__init__()
        self._transcript, self._replaced, self._fallback_fd = transcript, replaced, fallback_fd

    def write(self, s: str) -> int:
        self._transcript.write(s)
        return super().write(s)

    def fileno(self) -> int:
        """The replaced stream's descriptor (for a child process), as a real stream has."""
        try:
            return int(self._replaced.fileno())  # type: ignore[attr-defined]
        except (AttributeError, OSError, ValueError):
            return self._fallback_fd


@contextmanager
def _environment(env: Mapping[str, str | None] | None) -> Iterator[None]:
    """``env`` set for the call (a None value unsets the variable), then restored."""
    saved = {k: os.environ.get(k) for k in env or {}}
    try:
        for key, value in (env or {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def invoke(args: Sequence[object], *, env: Mapping[str, str | None] | None = None,
           catch_exceptions: bool = True) -> CliResult:
    """Run ``urna ARGS...`` in this process; an exception ``main`` lets through (``--debug``,
    a bug) is exit status 1 with ``exception`` set, or raised with ``catch_exceptions=False``."""
    transcript = io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = _Capture(transcript, sys.stdout, 1), _Capture(transcript, sys.stderr, 2)
    exception: BaseException | None = None
    code = 0
    try:
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out, err
        with _environment(env):
            main([str(a) for a in args])
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("text"): Python prints it and exits 1
            err.write(f"{exc.code}\n")
            code = 1
        exception = exc if code else None
    except Exception as exc:
        if not catch_exceptions:
            raise
        code, exception = 1, exc
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return CliResult(code, out.getvalue(), err.getvalue(), transcript.getvalue(), exception)
