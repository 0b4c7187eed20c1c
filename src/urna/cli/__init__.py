"""The ``urna`` command line: dispatch only; every verb is one library call.

Exit status: 0 success, 1 the file or input failed a check (the message names the error
class), 2 usage. Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

from ..errors import UrnaError
from ._output import error_line

# Verb modules, each exposing COMMANDS; listed here in the help's order of groups.
VERB_MODULES = ("file_cmds", "search_cmds", "forge_cmds", "serve_cmds", "mcp_cmds",
                "living_cmds")


class UrnaGroup(click.Group):
    """A click group that turns urna errors into one stderr line and exit status 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (UrnaError, OSError) as exc:
            if (ctx.obj or {}).get("debug"):
                raise
            click.echo(error_line(exc), err=True)
            ctx.exit(1)


@click.group(cls=UrnaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="urna", prog_name="urna")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """urna: a vector database in one file (.urna v1).

    Start here: urna build --spec corpus.toml, urna ask FILE "question",
    urna retrieve FILE "question", urna cite FILE CITATION, urna validate FILE.
    """
    ctx.obj = {"debug": debug}


def _register() -> None:
    for name in VERB_MODULES:
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            continue  # a verb group not present in this tree
        module = importlib.import_module(f"{__name__}.{name}")
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exits 0 on success, 1 on a failed check, 2 on usage errors."""
    cli.main(args=argv, prog_name="urna")
