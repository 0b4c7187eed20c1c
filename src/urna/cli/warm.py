"""The warm command line: read verbs answered by a resident process (opt-in, ``URNA_DAEMON=1``).

A cold ``urna search`` pays the interpreter, numpy's import and the embedder's load on every
call; an agent that calls ``urna`` as a tool pays it per call. With ``URNA_DAEMON=1`` the
console hands a read verb (``WARM_VERBS``) to a resident server on a Unix socket and prints
what it answered; the server runs the very same ``main`` in-process, so the output, the error
lines and the exit status are the cold call's. The first call finds no server: it starts one
in the background and answers cold itself.

What keeps a warm answer the cold one: the server opens the file anew on every request (the
open's checks and its on-disk verdicts decide, as cold); it serves only callers with the same
interpreter, package and environment (``server_key``); it quits, unanswered, once a module it
loaded changes on disk; stdout's terminal-ness is the caller's. The socket lives in a folder
only its user can enter. The server exits after ``URNA_DAEMON_IDLE`` seconds (default 600)
without a request, or on ``urna daemon stop``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# One-request verbs whose whole effect is their output (no stdin, no files written).
WARM_VERBS = frozenset({"inspect", "validate", "cite", "stats", "search", "search-ann",
                        "search-graph", "search-space", "ask", "retrieve", "search-text"})
# What may change a verb's answer besides its argv: the caller's environment under these names.
_ENV_PREFIXES = ("URNA_", "HF_", "XDG_", "OPENBLAS_", "OMP_", "MKL_", "NUMBA_", "TRANSFORMERS_",
                 "SENTENCE_TRANSFORMERS_", "TORCH_")
_ENV_NAMES = frozenset({"HOME", "PATH", "PYTHONPATH", "TMPDIR", "LANG", "LC_ALL", "COLUMNS",
                        "NO_COLOR", "TZ"})
_SELF = frozenset({"URNA_DAEMON", "URNA_DAEMON_IDLE"})  # choose the server, not the answer
_LIMIT = 64 << 20  # the largest reply read back
_STALE = "stale"
_SERVER = "from urna.cli import serve_warm; serve_warm()"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this urna's folder
_FOLDER_MAX = 70  # leaves room for "/<key>.sock" within sun_path


def wanted(args: list[str]) -> bool:
    """True when an opted-in call may go to the warm server: a read verb, no --debug, no stdin."""
    return bool(args) and args[0] in WARM_VERBS and "--debug" not in args and "-" not in args


def _answer_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and k not in _SELF}


def server_key() -> str:
    """What a server must share with its callers: interpreter, package folder, environment."""
    import hashlib

    ident = json.dumps([os.path.realpath(sys.executable), sys.prefix, _PACKAGE,
                        sorted(_answer_env().items())])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def socket_dir() -> str:
    """The caller's private folder of server sockets (made 0700; refused if anyone else's)."""
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"urna-daemon-{os.getuid()}")
    if len(folder) > _FOLDER_MAX:  # a socket's path must fit sun_path (108 bytes on Linux)
        import hashlib

        digest = hashlib.sha256(folder.encode()).hexdigest()[:12]
        folder = f"/tmp/urna-daemon-{os.getuid()}-{digest}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not os.path.isdir(folder):
        raise PermissionError(f"{folder} is not a private folder of this user")
    return folder


def socket_path(key: str | None = None) -> str:
    """The socket of the server for this caller's key."""
    return os.path.join(socket_dir(), f"{key or server_key()}.sock")


def _recv_all(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _LIMIT:
            raise OSError("reply too large")
        chunks.append(chunk)


def _ask(path: str, request: dict[str, object], timeout: float | None) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(socket.SHUT_WR)
        reply = json.loads(_recv_all(conn))
    if not isinstance(reply, dict):
        raise OSError("malformed reply")
    return reply


def try_warm(args: list[str]) -> int | None:
    """Answer ``args`` through the warm server: its exit status, or None to answer cold.

    A missing or dead server is started in the background for the next call.
    """
    try:
        path = socket_path()
    except OSError:  # no private folder for a socket: answer cold, start nothing
        return None
    try:
        reply = _ask(path, {"argv": args, "cwd": os.getcwd(),
                            "tty": sys.stdout.isatty()}, None)
    except (OSError, ValueError):
        _spawn()
        return None
    if reply.get("status") != "ok":
        return None
    sys.stdout.write(str(reply["out"]))
    sys.stdout.flush()
    sys.stderr.write(str(reply["err"]))
    sys.stderr.flush()
    code = reply["code"]
    return code if isinstance(code, int) else 1


def _spawn() -> None:
    import subprocess

    with contextlib.suppress(OSError):  # no server this time; the call still answers cold
        subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


def stop() -> bool:
    """Stop the caller's warm server; False when none was running."""
    try:
        _ask(socket_path(), {"stop": True}, 10.0)
    except (OSError, ValueError):
        return False
    return True


def status() -> dict[str, object] | None:
    """The caller's warm server's pid, requests served and idle limit; None when none runs."""
    try:
        reply = _ask(socket_path(), {"status": True}, 10.0)
    except (OSError, ValueError):
        return None
    return reply


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


class _Server:
    """Serves one request at a time on ``path`` until idle for ``idle`` seconds or stopped."""

    def __init__(self, path: str, idle: float, answer: Callable[[list[str]], int]) -> None:
        self.path, self.idle, self.answer = path, idle, answer
        self.served = 0
        self.known: dict[str, float] = {}

    def _stale(self) -> bool:
        now = _loaded_files()
        stale = any(now.get(path, t) != t for path, t in self.known.items())
        self.known = now
        return stale

    def _handle(self, conn: socket.socket) -> bool:
        """Answer one connection; False when the server should stop."""
        request = json.loads(_recv_all(conn))
        if request.get("stop"):
            conn.sendall(json.dumps({"status": "stopping"}).encode())
            return False
        if request.get("status"):
            conn.sendall(json.dumps({"status": "ok", "pid": os.getpid(), "served": self.served,
                                     "idle_seconds": self.idle}).encode())
            return True
        if self._stale():
            conn.sendall(json.dumps({"status": _STALE}).encode())
            return False
        out, err = _Captured(bool(request.get("tty"))), _Captured(False)
        saved = sys.stdout, sys.stderr, os.getcwd()
        try:
            os.chdir(str(request["cwd"]))
            sys.stdout, sys.stderr = out, err
            try:
                code = self.answer([str(a) for a in request["argv"]])
            except SystemExit as exc:  # a verb that exits on its own, as it would cold
                code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.stdout, sys.stderr = saved[0], saved[1]
            os.chdir(saved[2])
        self.served += 1
        self.known = _loaded_files()  # the verb may have loaded more modules
        conn.sendall(json.dumps({"status": "ok", "code": code, "out": out.getvalue(),
                                 "err": err.getvalue()}).encode())
        return True

    def serve(self) -> None:
        """Bind, then answer requests until idle, stopped or stale."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            if os.path.exists(self.path):
                os.unlink(self.path)  # a dead server's; the lock says none is alive
            listener.bind(self.path)
            listener.listen(16)
            listener.settimeout(self.idle)
            self.known = _loaded_files()
            try:
                while True:
                    try:
                        conn, _ = listener.accept()
                    except TimeoutError:
                        return
                    with conn:
                        conn.settimeout(None)
                        try:
                            if not self._handle(conn):
                                return
                        except (OSError, ValueError, KeyError):
                            continue  # a caller that left or spoke garbage
            finally:
                os.unlink(self.path)


def serve_forever(answer: Callable[[list[str]], int]) -> None:
    """Run the caller's warm server in this process, answering with ``answer(argv)`` (the
    console's ``outcome``), unless one already runs."""
    import fcntl

    path = socket_path()  # before any change to the environment the key is made of
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # it serves read verbs only
    lock = open(path[:-len(".sock")] + ".lock", "w")  # noqa: SIM115 - held for the lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server holds it
    try:
        idle = float(os.environ.get("URNA_DAEMON_IDLE", "600"))
    except ValueError:
        idle = 600.0
    try:
        _Server(path, max(idle, 1.0), answer).serve()
    finally:
        os.unlink(lock.name)
