"""The ``serve`` verb: an HTTP API and a web page over one or more .urna files.

Needs the ``serve`` extra (starlette, uvicorn), imported only when the verb runs, so the rest
of the CLI works without it. Binds to loopback unless ``--expose`` is given with another host.
"""

from __future__ import annotations

import click

from urna.errors import UrnaError


@click.command("serve")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; anything but loopback needs --expose.")
@click.option("--port", type=click.IntRange(0, 65535), default=8077, show_default=True)
@click.option("--expose", is_flag=True,
              help="Allow a non-loopback --host (anyone who can reach it can query the files).")
@click.option("--max-body", type=click.IntRange(min=1024), default=1 << 20, show_default=True,
              help="Largest request body in bytes.")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Searches run at once (a large exact scan already uses every core).")
def serve_cmd(files: tuple[str, ...], host: str, port: int, expose: bool, max_body: int,
              threads: int) -> None:
    """[engine] Serve FILES over HTTP: JSON API (/openapi.json) and a web page at /.

    Each file is opened once and named by its stem (quickstart.urna -> quickstart).

    Example: urna serve examples/quickstart/out/quickstart.urna --port 8077
    """
    try:
        from urna.serve.app import is_loopback, run
    except ImportError as e:
        raise click.ClickException(
            f"urna serve needs the serve extra: pip install 'urna[serve]' ({e})") from None
    if not is_loopback(host):
        if not expose:
            raise click.UsageError(
                f"--host {host} is not loopback; pass --expose to serve on another interface")
        click.echo(f"warning: serving on {host}:{port} without authentication; anyone who can "
                   "reach this address can query these files", err=True)
    try:
        from urna.serve.corpora import Corpora

        corpora = Corpora(list(files))  # each file opened once, before binding
        corpora.warm()  # numba kernels and the embedder load here, not in the first request
    except (UrnaError, ValueError, OSError) as e:
        name = type(e).__name__ if isinstance(e, UrnaError) else ""
        raise click.ClickException(f"{name}: {e}" if name else str(e)) from None
    click.echo(f"urna serve: http://{host if ':' not in host else f'[{host}]'}:{port}/ "
               f"({len(files)} file(s))", err=True)
    run(corpora, host=host, port=port, max_body=max_body, threads=threads)


COMMANDS: list[click.Command] = [serve_cmd]
