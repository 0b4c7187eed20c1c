"""Loopback ports for tests (and benchmarks) that start a server process."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """An unused TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_on(port: int) -> int:
    """How many sockets listen on loopback TCP ``port`` (IPv4, from Linux's /proc/net/tcp):
    one per process of a ``urna serve --workers`` server, each with its own socket."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for r in rows
               if r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A")


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float, what: str) -> None:
    """Return once loopback ``port`` accepts a connection.

    RuntimeError ``<what> did not start`` (with ``proc``'s stderr when it is a pipe) as soon
    as ``proc`` exits or ``seconds`` pass.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read() if proc.stderr is not None else ""
                if isinstance(err, bytes):
                    err = err.decode(errors="replace")
                raise RuntimeError(f"{what} did not start" + (f": {err}" if err else "")) \
                    from None
            time.sleep(0.1)
