"""The ``urna`` command line: dispatch only; every verb is one library call.

Exit status: 0 success, 1 the file or input failed a check (the message names the error
class), 2 usage. Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from ..errors import UrnaError
from ._output import error_line, usage_line
from .options import recorded_files

# Verb modules, each exposing COMMANDS; listed here in the help's order of groups.
VERB_MODULES = ("file_cmds", "search_cmds", "forge_cmds", "eval_cmds", "serve_cmds",
                "mcp_cmds", "tui_cmds", "living_cmds")


_HELP_ERRORS = tuple(getattr(click.exceptions, n) for n in ("NoArgsIsHelpError",)
                     if hasattr(click.exceptions, n))


class _UsageLine(click.ClickException):
    """A group-level usage error, shown as one line (exit 2)."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(self.message, err=True)


class UrnaGroup(click.Group):
    """A click group that turns urna errors into one stderr line and exit status 1, and a
    verb's usage errors into one line and exit status 2."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _HELP_ERRORS:
            raise  # `urna` alone prints the help
        except click.UsageError as exc:  # e.g. `urna --bogus`
            raise _UsageLine(usage_line(exc)) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Bare `urna` on a terminal opens the TUI; elsewhere it prints the help (exit 2).
        if not args and sys.stdin.isatty() and sys.stdout.isatty() and "tui" in self.commands:
            args = ["tui"]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if (ctx.obj or {}).get("debug"):
                raise
            click.echo(usage_line(exc), err=True)
            ctx.exit(2)
        except (UrnaError, OSError) as exc:
            if (ctx.obj or {}).get("debug"):
                raise
            click.echo(error_line(exc, recorded_files(ctx)), err=True)
            ctx.exit(1)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug, not bad input: still one line unless --debug
            if (ctx.obj or {}).get("debug"):
                raise
            click.echo(f"Error: internal error: {type(exc).__name__}: {exc} (run with --debug "
                       "for the traceback)", err=True)
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
