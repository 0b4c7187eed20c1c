"""The warm command line: read verbs answered by a resident process (opt-in, ``URNA_DAEMON=1``).

A cold ``urna search`` pays the interpreter, numpy's import and the embedder's load on every
call; an agent that calls ``urna`` as a tool pays it per call. With ``URNA_DAEMON=1`` the
console hands a read verb (``WARM_VERBS``) to a resident server on a Unix socket and prints
what it answered; the server runs the very same ``main`` in-process, so the output, the error
lines and the exit status are the cold call's. The first call finds no server: it starts one
in the background and answers cold itself.

What keeps a warm answer the cold one: the server opens the file anew on every request (the
open's checks and its on-disk verdicts decide, as cold); it serves only callers with the same
interpreter, package and environment (``server_identity``); it quits, unanswered, once a module it
loaded changes on disk; stdout's terminal-ness is the caller's. The socket lives in a folder
only its user can enter; its name is a short hash of the identity, which the server compares
whole on every request. Messages are length-prefixed UTF-8 fields (``encode_fields``), so the
caller's side imports no ``json``, ``socket``, ``tempfile`` nor ``hashlib``. The server exits
after ``URNA_DAEMON_IDLE`` seconds (default 600) without a request, or on ``urna daemon stop``.
"""

from __future__ import annotations

# The caller's side of a warm call imports nothing beyond these: ``socket`` (enum, selectors),
# ``json`` (re), ``tempfile`` (random, shutil) and ``hashlib`` (OpenSSL) together cost a warm
# call more than the server's answer to ``inspect``; ``_socket`` is the C module ``socket`` wraps.
import _socket
import io
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from socket import socket
    from typing import Any

# One-request verbs whose whole effect is their output (no stdin, no files written).
WARM_VERBS = frozenset({"inspect", "validate", "cite", "stats", "search", "search-ann",
                        "search-graph", "search-space", "ask", "retrieve", "search-text"})
# What may change a verb's answer besides its argv: the caller's environment under these names.
_ENV_PREFIXES = ("URNA_", "HF_", "XDG_", "OPENBLAS_", "OMP_", "MKL_", "NUMBA_", "TRANSFORMERS_",
                 "SENTENCE_TRANSFORMERS_", "TORCH_")
_ENV_NAMES = frozenset({"HOME", "PATH", "PYTHONPATH", "TMPDIR", "LANG", "LC_ALL", "COLUMNS",
                        "NO_COLOR", "TZ"})
_SELF = frozenset({"URNA_DAEMON", "URNA_DAEMON_IDLE", "URNA_DAEMON_WORKERS"})  # the server's
_LIMIT = 64 << 20  # the largest message read
_SERVER = "from urna.cli import serve_warm; serve_warm()"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this urna's folder
_FOLDER_MAX = 70  # leaves room for "/<key>.sock" within sun_path
# Replies: a request answered, refused by a server whose code changed, or by one whose
# identity differs from the caller's (a collision of the short key naming the socket).
_OK, _STALE, _FOREIGN, _STOPPING = "ok", "stale", "foreign", "stopping"


def wanted(args: list[str]) -> bool:
    """True when an opted-in call may go to the warm server: a read verb, no --debug, no stdin."""
    return bool(args) and args[0] in WARM_VERBS and "--debug" not in args and "-" not in args


# ---------------------------------------------------------------- the messages


def encode_fields(fields: list[str]) -> bytes:
    """One message: the field count, then each field's UTF-8 (lone surrogates kept) after its
    length, all 4-byte big-endian, so a message cut anywhere is refused, never shorter."""
    out = bytearray(len(fields).to_bytes(4, "big"))
    for field in fields:
        data = field.encode("utf-8", "surrogatepass")
        out += len(data).to_bytes(4, "big")
        out += data
    return bytes(out)


def decode_fields(message: bytes) -> list[str]:
    """The fields of one message; ValueError for a truncated or malformed one."""
    end = len(message)
    if end < 4:
        raise ValueError("a message starts with its field count")
    count = int.from_bytes(message[:4], "big")
    if count > (end - 4) // 4:  # each field takes 4 bytes at least: a hostile count stops here
        raise ValueError("more fields than the message holds")
    fields: list[str] = []
    at = 4
    for _ in range(count):
        if end - at < 4:
            raise ValueError("a field's length is cut short")
        size = int.from_bytes(message[at:at + 4], "big")
        at += 4
        if size > end - at:
            raise ValueError("a field runs past the message's end")
        fields.append(message[at:at + size].decode("utf-8", "surrogatepass"))
        at += size
    if at != end:
        raise ValueError("bytes after the message's last field")
    return fields


# ---------------------------------------------------------------- who may share a server


def _answer_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and k not in _SELF}


def server_identity() -> str:
    """What a server must share with its callers: interpreter, package folder, environment."""
    parts = [os.path.realpath(sys.executable), sys.prefix, _PACKAGE]
    parts += [f"{k}={v}" for k, v in sorted(_answer_env().items())]
    return "\0".join(parts)


def server_key(identity: str | None = None) -> str:
    """The short name of a server's socket: FNV-1a (64 bits) of its identity.

    A name only; the server compares the whole identity on every request, so a collision
    costs a cold answer, never another environment's.
    """
    digest = 0xCBF29CE484222325
    for byte in (server_identity() if identity is None else identity).encode(
            "utf-8", "surrogatepass"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}"


def _temp_root() -> str:
    """The temporary folder ``tempfile`` would pick on a Unix system, without its import."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        folder = os.environ.get(name)
        if folder and os.path.isdir(folder):
            return os.path.abspath(folder)
    return "/tmp"


def socket_dir() -> str:
    """The caller's private folder of server sockets (made 0700; refused if anyone else's)."""
    folder = os.path.join(_temp_root(), f"urna-daemon-{os.getuid()}")
    if len(folder) > _FOLDER_MAX:  # a socket's path must fit sun_path (108 bytes on Linux)
        folder = f"/tmp/urna-daemon-{os.getuid()}-{server_key(folder)[:12]}"
    try:  # noqa: SIM105 - contextlib is not imported on the caller's path
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not os.path.isdir(folder):
        raise PermissionError(f"{folder} is not a private folder of this user")
    return folder


def socket_path(key: str | None = None) -> str:
    """The socket of the server for this caller's key."""
    return os.path.join(socket_dir(), f"{key or server_key()}.sock")


# ---------------------------------------------------------------- the caller


def _recv_all(conn: socket | _socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _LIMIT:
            raise OSError("message too large")
        chunks.append(chunk)


def _ask(path: str, fields: list[str], timeout: float | None) -> list[str]:
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(encode_fields(fields))
        conn.shutdown(_socket.SHUT_WR)
        return decode_fields(_recv_all(conn))
    finally:
        conn.close()


def try_warm(args: list[str]) -> int | None:
    """Answer ``args`` through the warm server: its exit status, or None to answer cold.

    A missing or dead server is started in the background for the next call.
    """
    identity = server_identity()
    try:
        path = socket_path(server_key(identity))
    except OSError:  # no private folder for a socket: answer cold, start nothing
        return None
    try:
        reply = _ask(path, ["run", identity, os.getcwd(), "1" if sys.stdout.isatty() else "0",
                            *args], None)
    except (OSError, ValueError):
        _spawn()
        return None
    if len(reply) != 4 or reply[0] != _OK or not reply[1].lstrip("-").isdigit():
        return None  # stale, foreign or garbled: the cold call answers
    sys.stdout.write(reply[2])
    sys.stdout.flush()
    sys.stderr.write(reply[3])
    sys.stderr.flush()
    return int(reply[1])


def _spawn() -> None:
    import contextlib
    import subprocess

    with contextlib.suppress(OSError):  # no server this time; the call still answers cold
        subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


def stop() -> bool:
    """Stop the caller's warm server; False when none was running."""
    try:
        reply = _ask(socket_path(), ["stop"], 10.0)
    except (OSError, ValueError):
        return False
    return reply == [_STOPPING]


def status() -> dict[str, object] | None:
    """The caller's warm server's pid, requests served (by all its processes), idle limit and
    worker pids; None when none runs."""
    try:
        reply = _ask(socket_path(), ["status"], 10.0)
        if len(reply) != 5 or reply[0] != _OK:
            return None
        return {"status": _OK, "pid": int(reply[1]), "served": int(reply[2]),
                "idle_seconds": float(reply[3]),
                "workers": [int(pid) for pid in reply[4].split(",") if pid]}
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- the server


class _Captured(io.StringIO):
    """A text stream that keeps what a verb prints and reports the caller's terminal-ness."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        """What the caller's stream is."""
        return self._tty


def _loaded_files() -> dict[str, float]:
    """Modification times of the package's loaded modules (a change makes the server stale)."""
    package = _PACKAGE + os.sep
    times = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(package):
            try:
                times[path] = os.stat(path).st_mtime
            except OSError:
                times[path] = -1.0
    return times


def worker_processes() -> int:
    """How many processes of one server answer at once: ``URNA_DAEMON_WORKERS`` (1-64), else
    two (one on a single core): an agent's parallel tool calls then do not queue."""
    try:
        wanted = int(os.environ.get("URNA_DAEMON_WORKERS", ""))
    except ValueError:
        wanted = 0
    return min(wanted, 64) if wanted > 0 else min(2, os.cpu_count() or 1)


_TICK = 2.0  # how often an idle process looks at the board (and a worker for its parent)
_DEFER = 0.003  # how long a worker leaves a waiting caller to the parent
_IO_TIMEOUT = 30.0  # a caller that sends nothing (or reads nothing) frees its process after it
_SLOT = 16  # one board slot: u64 requests served, f64 monotonic time of the last one


class _Server:
    """Serves on ``path`` from ``workers`` processes (this one and forked copies sharing the
    listening socket), each one request at a time, until idle for ``idle`` seconds or stopped.

    ``identity``: the callers it answers (``server_identity``, by default this process's). The
    processes share a board (an anonymous shared map: each one's count and last request), so
    ``status`` counts every request and the idle limit runs from the last one any served. This
    process decides the end: when it is idle, asked to stop, or finds its code changed (a
    worker that is asked to stop or finds it so signals it), it ends the workers and removes
    the socket; a worker whose parent is gone exits by itself.
    """

    def __init__(self, path: str, idle: float, answer: Callable[[list[str]], int],
                 identity: str | None = None, workers: int = 1) -> None:
        import mmap

        self.path, self.idle, self.answer = path, idle, answer
        self.identity = server_identity() if identity is None else identity
        self.workers = max(1, workers)
        self.known: dict[str, float] = {}
        self.board = mmap.mmap(-1, _SLOT * self.workers)  # shared with the forked workers
        self.slot = 0
        self.pids = [os.getpid()]
        self.busy = self.ending = False  # answering a request; asked to end after it
        self._mark(0)

    def _served_by(self, slot: int) -> int:
        import struct

        return struct.unpack_from("<Q", self.board, _SLOT * slot)[0]

    @property
    def served(self) -> int:
        """Requests served by every process of this server."""
        return sum(map(self._served_by, range(self.workers)))

    def _mark(self, count: int) -> None:
        import struct
        import time

        struct.pack_into("<Qd", self.board, _SLOT * self.slot, count, time.monotonic())

    def _idle_for(self) -> float:
        import struct
        import time

        last = max(struct.unpack_from("<d", self.board, _SLOT * i + 8)[0]
                   for i in range(self.workers))
        return time.monotonic() - last

    def _stale(self) -> bool:
        now = _loaded_files()
        stale = any(now.get(path, t) != t for path, t in self.known.items())
        self.known = now
        return stale

    def _reply(self, request: list[str]) -> tuple[list[str], bool]:
        """The reply to one request, and whether to go on serving after it."""
        kind = request[0] if request else ""
        if kind == "stop":
            return [_STOPPING], False
        if kind == "status":
            return [_OK, str(self.pids[0]), str(self.served), repr(self.idle),
                    ",".join(map(str, self.pids[1:]))], True
        if kind != "run" or len(request) < 4:
            raise ValueError("not a request")
        if request[1] != self.identity:
            return [_FOREIGN], True
        if self._stale():
            return [_STALE], False
        cwd, tty, argv = request[2], request[3] == "1", request[4:]
        out, err = _Captured(tty), _Captured(False)
        saved = sys.stdout, sys.stderr, os.getcwd()
        try:
            os.chdir(cwd)
            sys.stdout, sys.stderr = out, err
            try:
                code = self.answer(argv)
            except SystemExit as exc:  # a verb that exits on its own, as it would cold
                code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.stdout, sys.stderr = saved[0], saved[1]
            os.chdir(saved[2])
        self._mark(self._served_by(self.slot) + 1)
        self.known = _loaded_files()  # the verb may have loaded more modules
        return [_OK, str(code), out.getvalue(), err.getvalue()], True

    def _next(self, listener: socket, parent: int | None, poller: Any) -> socket | None:
        """The next connection, or None after a quiet tick. A worker leaves a caller to the
        parent for ``_DEFER`` first: one caller at a time goes to the same warm process, and a
        worker answers when the parent is busy (or kept off the CPU that long)."""
        import time

        if parent is None:  # the listener waits up to a tick (``_loop``)
            try:
                return listener.accept()[0]
            except TimeoutError:
                return None
        if not poller.poll(min(self.idle, _TICK) * 1000):
            return None
        time.sleep(_DEFER)
        try:  # the listener does not wait (``_loop``)
            return listener.accept()[0]
        except BlockingIOError:  # the parent took it
            return None

    def _loop(self, listener: socket, parent: int | None) -> None:
        """Answer requests on ``listener`` until this process's part is over."""
        import select
        import signal

        poller = None
        if parent is None:
            listener.settimeout(min(self.idle, _TICK))
        else:  # a worker polls, then takes a caller the parent left, without waiting
            listener.settimeout(0.0)
            poller = select.poll()
            poller.register(listener.fileno(), select.POLLIN)
        while True:
            conn = self._next(listener, parent, poller)
            if conn is None:
                if parent is not None:  # a worker: the parent decides, unless it is gone
                    if os.getppid() != parent:
                        return
                elif self._idle_for() >= self.idle:
                    return
                continue
            self.busy = True
            try:
                with conn:
                    conn.settimeout(_IO_TIMEOUT)
                    try:
                        reply, going_on = self._reply(decode_fields(_recv_all(conn)))
                        conn.sendall(encode_fields(reply))
                    except (OSError, ValueError):
                        continue  # a caller that left, stalled or spoke garbage
            finally:
                self.busy = False
            if not going_on:
                if parent is not None:
                    os.kill(parent, signal.SIGTERM)  # the parent ends every process
                return
            if self.ending:
                return

    def _fork_workers(self, listener: socket) -> None:
        """Start the other processes; in each, serve and exit without returning."""
        parent = os.getpid()
        for slot in range(1, self.workers):
            pid = os.fork()
            if pid == 0:  # a worker: no thread runs yet, nothing of the parent's to undo
                import signal

                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's end is its end
                self.slot, code = slot, 0
                try:
                    self._loop(listener, parent)
                except BaseException:  # noqa: BLE001 - a worker never unwinds the parent's stack
                    code = 1
                finally:
                    os._exit(code)
            self.pids.append(pid)

    def _end_workers(self) -> None:
        import contextlib
        import signal

        for pid in self.pids[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in self.pids[1:]:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        del self.pids[1:]

    def serve(self) -> None:
        """Bind, fork the workers, then answer requests until idle, stopped or stale."""
        import signal
        import socket

        def ended(signum: int, frame: object) -> None:
            # a worker was asked to stop (or found its code changed): end now when waiting,
            # after the request when one is being answered (its caller gets its answer)
            self.ending = True
            if not self.busy:
                raise _Ended

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            if os.path.exists(self.path):
                os.unlink(self.path)  # a dead server's; the lock says none is alive
            listener.bind(self.path)
            listener.listen(16)
            self.known = _loaded_files()
            previous = signal.signal(signal.SIGTERM, ended)
            try:
                self._fork_workers(listener)
                self._loop(listener, None)
            except _Ended:
                pass
            finally:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup runs to its end
                self._end_workers()
                os.unlink(self.path)
                signal.signal(signal.SIGTERM, previous)


class _Ended(BaseException):
    """A worker's stop reached the parent while it waited for a request."""


# What the read verbs import, loaded once before the workers fork so every process shares it
# (copy on write) instead of each paying the imports on its first request. No embedder and no
# numba: the tokenizers' thread pool and numba's must not have run before a fork.
_PRELOAD = ("numpy", "urna.cli.file_cmds", "urna.cli.search_cmds", "urna.cli.forge_cmds",
            "urna.runtime.file", "urna.runtime.validation", "urna.runtime.opening",
            "urna.runtime.search", "urna.forge.query", "urna.index.bm25", "urna.index.hnsw")


def _preload() -> None:
    import importlib

    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # a verb that needs it reports it, as it would cold
            continue


def _single_threaded() -> bool:
    """Whether this process runs one OS thread (``/proc``, Linux); False where it cannot tell."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def serve_forever(answer: Callable[[list[str]], int]) -> None:
    """Run the caller's warm server in this process, answering with ``answer(argv)`` (the
    console's ``outcome``), unless one already runs."""
    import fcntl

    identity = server_identity()  # before any change to the environment it is made of
    path = socket_path(server_key(identity))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # it serves read verbs only
    from ..runtime.heap import keep_freed_memory

    keep_freed_memory()  # each request then reuses the pages the one before faulted in
    lock = open(path[:-len(".sock")] + ".lock", "w")  # noqa: SIM115 - held for the lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server holds it
    try:
        idle = float(os.environ.get("URNA_DAEMON_IDLE", "600"))
    except ValueError:
        idle = 600.0
    workers = worker_processes()
    if workers > 1:
        _preload()
        if not _single_threaded():  # a native pool (a BLAS thread count set higher, say)
            workers = 1  # would not survive a fork: one process answers
    try:
        _Server(path, max(idle, 1.0), answer, identity, workers).serve()
    finally:
        os.unlink(lock.name)
