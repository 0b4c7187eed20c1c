"""The ``urna`` command line: dispatch only; every verb is one library call.

Exit status: 0 success, 1 the file or input failed a check (the message names the error
class), 2 usage. Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import click

from ..errors import UrnaError
from ._output import error_line, usage_line
from .options import recorded_files

# Verb modules, each exposing COMMANDS, with the verbs each defines: a call imports only its
# verb's module (numpy, the forge, the server stay unloaded for the verbs that never use them);
# listing the verbs (`urna --help`, ``cli.commands`` iterated) imports them all.
VERB_MODULES: dict[str, tuple[str, ...]] = {
    "file_cmds": ("inspect", "validate", "cite"),
    "search_cmds": ("stats", "media", "search", "search-ann", "search-graph", "search-space",
                    "benchmark"),
    "forge_cmds": ("build", "ask", "retrieve", "search-text", "doctor"),
    "eval_cmds": ("eval",),
    "serve_cmds": ("serve",),
    "mcp_cmds": ("mcp",),
    "tui_cmds": ("tui",),
    "living_cmds": ("add", "remove", "log", "compact"),
}


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


class LazyCommands(Mapping[str, click.Command]):
    """``cli.commands``: verb name -> command, importing a verb's module on first lookup.

    click reads a group's commands through ``get``/``in``/iteration only, so a mapping that
    loads on demand keeps every click path (help, completion, ``add_command``) working.
    """

    def __init__(self, package: str, modules: Mapping[str, tuple[str, ...]]) -> None:
        self._package = package
        self._module_of = {verb: module for module, verbs in modules.items() for verb in verbs}
        self._pending = list(modules)  # modules not imported yet, in listing order
        self._loaded: dict[str, click.Command] = {}

    def _load(self, module_name: str) -> None:
        if module_name not in self._pending:
            return  # imported already
        self._pending.remove(module_name)
        if importlib.util.find_spec(f"{self._package}.{module_name}") is None:
            return  # a verb group not present in this tree
        module = importlib.import_module(f"{self._package}.{module_name}")
        for command in module.COMMANDS:
            self._loaded.setdefault(command.name or "", command)

    def _load_all(self) -> None:
        for module_name in list(self._pending):
            self._load(module_name)

    def __getitem__(self, verb: str) -> click.Command:
        if verb not in self._loaded and verb in self._module_of:
            self._load(self._module_of[verb])
        return self._loaded[verb]

    def __setitem__(self, verb: str, command: click.Command) -> None:
        self._loaded[verb] = command  # click.Group.add_command

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return iter(list(self._loaded))

    def __len__(self) -> int:
        self._load_all()
        return len(self._loaded)


cli.commands = LazyCommands(__name__, VERB_MODULES)  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exits 0 on success, 1 on a failed check, 2 on usage errors."""
    cli.main(args=argv, prog_name="urna")
