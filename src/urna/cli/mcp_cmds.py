"""The ``mcp`` verb: an MCP server over .urna files for agents (stdio, or streamable HTTP).

Needs the ``mcp`` extra, imported only when the verb runs. Over HTTP it binds to loopback
unless ``--expose`` is given with another host, which also needs a bearer token
(``--token`` / ``URNA_TOKEN``), checked by the same middleware as ``urna serve``.
"""

from __future__ import annotations

import contextlib

from urna.errors import CommandLineError

from ._output import echo
from .command import Command, argument, command, option
from .options import PORT, input_file

MCP_PATH = "/mcp"


@command("mcp")
@argument("files", nargs=-1, required=True,
                type=input_file(exists=True, dir_okay=False, as_path=False))
@option("--http", "use_http", is_flag=True,
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind with --http; anything but loopback needs --expose.")
@option("--port", type=PORT, default=8078, show_default=True)
@option("--expose", is_flag=True, help="Allow a non-loopback --host (needs a token).")
@option("--token", envvar="URNA_TOKEN", default=None,
              help="Require Authorization: Bearer TOKEN over HTTP (env URNA_TOKEN).")
def mcp_cmd(files: tuple[str, ...], use_http: bool, host: str, port: int, expose: bool,
            token: str | None) -> None:
    """[agent] Serve FILES (.urna or .catalog.json) to MCP clients: search, cite, inspect.

    Tools: search (answers as `urna retrieve`), cite, inspect, list_corpora; every citation
    urna://<content_hash>/<chunk_id> is also a resource.

    Example: urna mcp examples/quickstart/out/quickstart.urna
    """
    try:
        from urna.forge.embed import EmbedderError
        from urna.forge.query import query_embedder
        from urna.mcp.corpora import OpenCorpora
        from urna.mcp.server import build_server
    except ImportError as e:
        raise CommandLineError(
            f"urna mcp needs the mcp extra: pip install 'urna[mcp]' ({e})") from None
    from urna.cli.exposure import check_bind

    if use_http:
        check_bind(host, expose, token)
    from urna.runtime.resident import prepare_resident_server

    corpora = OpenCorpora(list(files))  # every file opened and verified before serving
    try:
        # kept heap pages; the kernels prepared on the served files meanwhile
        prepare_resident_server(corpora.by_name.values())
        for f in corpora.by_name.values():
            # Load each query embedder now, not in the first search; a model that cannot
            # load is reported by each search on that corpus instead.
            with contextlib.suppress(EmbedderError):
                query_embedder(str(f.embedding_model))
        server = build_server(corpora)
        if not use_http:
            server.run("stdio")
            return
        import uvicorn

        from urna.serve.security import protect

        app = protect(server.streamable_http_app(streamable_http_path=MCP_PATH, host=host),
                      token=token or None)
        echo(f"urna mcp: http://{host if ':' not in host else f'[{host}]'}:{port}{MCP_PATH}"
                   f" ({len(files)} file(s))", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        corpora.close()


COMMANDS: list[Command] = [mcp_cmd]
