"""The ``serve`` verb: an HTTP API and a web page over one or more .urna files.

Needs the ``serve`` extra (starlette, uvicorn), imported only when the verb runs, so the rest
of the CLI works without it. Binds to loopback unless ``--expose`` is given with another host,
which also needs a bearer token (``--token`` / ``URNA_TOKEN``).
"""

from __future__ import annotations

import sys

from urna.errors import CommandLineError, UrnaError

from ._output import echo
from .command import Command, argument, command, option
from .options import PORT, FiniteFloatRange, IntRange, input_file, size


@command("serve")
@argument("files", nargs=-1, required=True,
                type=input_file(exists=True, dir_okay=False, as_path=False))
@option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; anything but loopback needs --expose.")
@option("--port", type=PORT, default=8077, show_default=True)
@option("--expose", is_flag=True,
              help="Allow a non-loopback --host (anyone who can reach it can query the files).")
@option("--max-body", type=size(1024), default=1 << 20, show_default=True,
              help="Largest request body in bytes.")
@option("--threads", type=IntRange(1, 64), default=None,
              help="Worker threads (checks, searches, rendering) [default: one per core].")
@option("--batch-window", "batch_window_ms", type=FiniteFloatRange(min=0, max=1000),
              default=2.0, show_default=True,
              help="Milliseconds a query on a large file waits for concurrent ones to share "
              "its exact scan (never when it is the only request).")
@option("--batch-max", type=IntRange(1, 1024), default=32, show_default=True,
              help="Most queries one shared exact scan answers (1: no sharing).")
@option("--token", envvar="URNA_TOKEN", default=None,
              help="Require Authorization: Bearer TOKEN on the API (env URNA_TOKEN); "
              "needed with --expose.")
@option("--cors-origin", "cors_origins", multiple=True,
              help="Allow browser calls from this origin (repeatable); CORS is off without it.")
@option("--time-limit", type=FiniteFloatRange(min=0.1), default=30.0, show_default=True,
              help="Seconds a request may take before a 503.")
@option("--reload-check-ms", type=size(), default=1000, show_default=True,
              help="How often a request checks whether a served file was replaced (0: never).")
@option("--workers", type=IntRange(1, 64), default=1, show_default=True,
              help="Processes answering on the one port, each opening the files itself; "
              "one per core answers more small requests at once.")
def serve_cmd(files: tuple[str, ...], host: str, port: int, expose: bool, max_body: int,
              threads: int | None, batch_window_ms: float, batch_max: int, token: str | None,
              cors_origins: tuple[str, ...], time_limit: float, reload_check_ms: int,
              workers: int) -> None:
    """[engine] Serve FILES over HTTP: JSON API (/openapi.json) and a web page at /.

    Each file is opened once and named by its stem (quickstart.urna -> quickstart).

    Example: urna serve examples/quickstart/out/quickstart.urna --port 8077
    """
    try:
        from urna.serve.app import run, run_workers
    except ImportError as e:
        raise CommandLineError(
            f"urna serve needs the serve extra: pip install 'urna[serve]' ({e})") from None
    from urna.cli.exposure import check_bind

    check_bind(host, expose, token)
    if workers > 1 and not sys.platform.startswith("linux"):
        # on macOS and most BSDs SO_REUSEPORT shares the port but does not spread connections
        raise CommandLineError("--workers needs Linux, whose SO_REUSEPORT spreads connections "
                               "over the processes")
    try:
        from urna.serve.registry import ReloadingCorpora

        corpora = ReloadingCorpora(list(files), check_ms=reload_check_ms)  # opened before binding
        if workers > 1:
            corpora.close()  # checked here, so a bad file fails now; each process opens its own
        else:
            corpora.warm()  # numba kernels and the embedder load here, not in the first request
    except (UrnaError, ValueError, OSError) as e:
        name = type(e).__name__ if isinstance(e, UrnaError) else ""
        raise CommandLineError(f"{name}: {e}" if name else str(e)) from None
    echo(f"urna serve: http://{host if ':' not in host else f'[{host}]'}:{port}/ "
               f"({len(files)} file(s){f', {workers} processes' if workers > 1 else ''})",
         err=True)
    options: dict = {"max_body": max_body, "threads": threads, "batch_window_ms": batch_window_ms,
                     "batch_max": batch_max, "token": token or None,
                     "cors_origins": cors_origins, "time_limit": time_limit}
    if workers > 1:
        try:
            status = run_workers(list(files), workers, host=host, port=port,
                                 reload_check_ms=reload_check_ms, **options)
        except OSError as e:  # the port: taken, or the host not this machine's
            raise CommandLineError(f"cannot listen on {host}:{port}: {e}") from None
        if status:
            raise SystemExit(status)
    else:
        run(corpora, host=host, port=port, **options)


COMMANDS: list[Command] = [serve_cmd]
