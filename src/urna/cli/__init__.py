"""The ``urna`` command line: dispatch only; every verb is one library call.

Exit status: 0 success, 1 the file or input failed a check (the message names the error
class), 2 usage. Errors are one line on stderr; ``--debug`` shows the traceback.

The parser is the standard library's argparse, built for the called verb only
(``command.Command.parse``): click's import alone cost more than a light verb's work (#20).
"""

from __future__ import annotations

import os
import sys

# Nothing of the package is imported here: the console's warm path (``cli.warm``) runs on this
# module alone, and a warm call is worth its few milliseconds. The dispatch imports on use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..errors import UsageError
    from .command import Command

# Verb modules, each exposing COMMANDS, with the verbs each defines: a call imports only its
# verb's module (numpy, the forge, the server stay unloaded for the verbs that never use them);
# listing the verbs (`urna --help`, ``all_commands``) imports them all.
VERB_MODULES: dict[str, tuple[str, ...]] = {
    "file_cmds": ("inspect", "validate", "cite"),
    "search_cmds": ("stats", "media", "search", "search-ann", "search-graph", "search-space",
                    "benchmark"),
    "forge_cmds": ("build", "ask", "retrieve", "search-text", "doctor"),
    "eval_cmds": ("eval",),
    "serve_cmds": ("serve",),
    "mcp_cmds": ("mcp",),
    "tui_cmds": ("tui",),
    "living_cmds": ("add", "remove", "log", "compact", "squash"),
    "daemon_cmds": ("daemon",),
}

# Verbs that answer one request and exit. numpy's import starts OpenBLAS's thread pool (50-90
# ms of CPU on this project's machine, a third of an `ask`); these verbs never run a product
# big enough to use it (exact scans split their rows on their own threads), so they ask for
# one BLAS thread unless the user set OPENBLAS_NUM_THREADS. Servers, builds and evals keep it.
ONE_REQUEST_VERBS = frozenset({"inspect", "validate", "cite", "stats", "media", "search",
                               "search-ann", "search-graph", "search-space", "ask", "retrieve",
                               "search-text", "log"})

GROUP_HELP = """urna: a vector database in one file (.urna v1).

Start here: urna build --spec corpus.toml, urna ask FILE "question",
urna retrieve FILE "question", urna cite FILE CITATION, urna validate FILE.
"""


def _module_commands(module_name: str) -> list[Command]:
    """The commands of one verb module ([] for a verb group not present in this tree)."""
    import importlib

    full = f"{__name__}.{module_name}"
    try:
        module = importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name != full:
            raise
        return []
    commands: list[Command] = module.COMMANDS
    return commands


def load_command(verb: str) -> Command | None:
    """The command of ``verb``, importing only its module; None for no such verb."""
    for module_name, verbs in VERB_MODULES.items():
        if verb in verbs:
            return next((c for c in _module_commands(module_name) if c.name == verb), None)
    return None


def all_commands() -> dict[str, Command]:
    """Every verb's command, by name (imports every verb module)."""
    return {c.name: c for module_name in VERB_MODULES for c in _module_commands(module_name)}


def _verbs() -> list[str]:
    return [verb for verbs in VERB_MODULES.values() for verb in verbs]


def _version() -> str:
    from importlib.metadata import version

    return f"urna, version {version('urna')}"


def _group_usage(word: str) -> UsageError:
    """An unknown group option or verb, with the close spellings."""
    from difflib import get_close_matches

    from ..errors import UsageError
    from .command import did_you_mean

    if word.startswith("-"):
        name = word.split("=", 1)[0]
        near = get_close_matches(name, ["--version", "--debug", "--help"])
        return UsageError(f"No such option {name!r}.{did_you_mean(near)}", "urna")
    return UsageError(f"No such command {word!r}.{did_you_mean(get_close_matches(word, _verbs()))}",
                      "urna")


def _run(args: list[str], state: dict[str, object], files: list[str]) -> int:
    """Parse the group's options, then run the verb; errors propagate to ``main``."""
    from ..errors import UsageError
    from ._output import echo

    if not args and sys.stdin.isatty() and sys.stdout.isatty() and "tui" in _verbs():
        args = ["tui"]  # bare `urna` on a terminal opens the TUI
    if not args:  # elsewhere it prints the help, as a usage error
        from ._help import group_help

        echo(group_help(GROUP_HELP, all_commands()), err=True)
        return 2
    at = 0
    while at < len(args) and args[at].startswith("-"):
        word = args[at]
        if word in ("-h", "--help"):
            from ._help import group_help

            echo(group_help(GROUP_HELP, all_commands()))
            return 0
        if word == "--version":
            echo(_version())
            return 0
        if word == "--debug":
            state["debug"] = True
        elif word.startswith("--debug=") or word.startswith("--version="):
            raise UsageError(f"Option {word.split('=', 1)[0]!r} does not take a value.")
        else:
            raise _group_usage(word)
        at += 1
    if at == len(args):
        raise UsageError("Missing command.", "urna")
    verb, rest = args[at], args[at + 1:]
    state["verb"] = verb
    if verb in ONE_REQUEST_VERBS:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        if state.get("quick_exit"):
            # The process ends right after this verb (``_exit_now``): a cyclic collection would
            # only walk the objects numpy's import just made, which all live on (some 45
            # passes, 5-10 ms of a validate with the GIL held); the few cycles die with it.
            import gc

            gc.disable()
    command = load_command(verb)
    if command is None:
        raise _group_usage(verb)
    path = f"urna {verb}"
    state["in_verb"] = True
    values = command.parse(rest, path, files)
    if values is None:
        from ._help import command_help

        echo(command_help(command, path))
        return 0
    head_start = verb in ONE_REQUEST_VERBS and bool(files)
    if head_start:
        # The open's first SHA-256 pass runs on the other core during the verb's imports.
        from ..runtime.mapping import start_head_start

        start_head_start(files[0])
    try:
        command.callback(**values)
    except UsageError as exc:  # a verb's own check of its options
        if exc.command is None:
            exc.command = path
        raise
    finally:
        if head_start:
            from ..runtime.mapping import drop_head_starts

            drop_head_starts()
    return 0


def main(argv: list[str] | None = None, *, quick_exit: bool = False) -> None:
    """Console entry point: exits 0 on success, 1 on a failed check, 2 on usage errors.

    ``quick_exit``: the process ends right after a one-request verb (``console``).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    state: dict[str, object] = {"verb": None}
    code = outcome(args, quick_exit=quick_exit, state=state)
    if quick_exit and state["verb"] in ONE_REQUEST_VERBS:
        _exit_now(code)
    sys.exit(code)


def outcome(args: list[str], *, quick_exit: bool = False,
            state: dict[str, object] | None = None) -> int:
    """Run one command line in this process and give its exit status (``main`` without exit).

    ``state`` (optional) receives the called ``verb``.
    """
    from ..errors import CommandLineError, UrnaError, UsageError
    from ._output import echo, error_line, usage_line

    state = {} if state is None else state
    state.update({"debug": False, "in_verb": False, "verb": None, "quick_exit": quick_exit})
    files: list[str] = []  # every input file of this call, so an error can name the bad one
    try:
        code = _run(args, state, files)
    except UsageError as exc:
        if state["debug"] and state["in_verb"]:
            raise
        echo(usage_line(exc), err=True)
        code = 2
    except CommandLineError as exc:
        echo(f"{exc.prefix}: {exc.message}", err=True)
        code = exc.exit_code
    except BrokenPipeError:
        # The reader left (`urna ... | head`): end quietly, as a tool killed by SIGPIPE does;
        # stdout goes to /dev/null so the interpreter's last flush cannot fail again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        code = 128 + 13
    except (UrnaError, OSError) as exc:
        if state["debug"]:
            raise
        echo(error_line(exc, files), err=True)
        code = 1
    except (KeyboardInterrupt, EOFError):
        echo(err=True)
        echo("Aborted!", err=True)
        code = 1
    except Exception as exc:  # a bug, not bad input: still one line unless --debug
        if state["debug"]:
            raise
        echo(f"Error: internal error: {type(exc).__name__}: {exc} (run with --debug "
             "for the traceback)", err=True)
        code = 1
    return code


def console() -> None:
    """The ``urna`` command (console script and ``python -m urna.cli``)."""
    if os.environ.get("URNA_DAEMON", "") not in ("", "0"):
        from .warm import try_warm, wanted

        args = sys.argv[1:]
        code = try_warm(args) if wanted(args) else None
        if code is not None:
            _exit_now(code)
    main(quick_exit=True)


def serve_warm() -> None:
    """The warm server's process (``cli.warm``): answer read verbs with ``outcome``."""
    from .warm import serve_forever

    serve_forever(outcome)


def _exit_now(code: int) -> None:
    """End the process once the output is flushed, skipping the interpreter's teardown.

    With numpy loaded, finalising the modules and unloading its libraries costs 15-30 ms, paid
    on every call an agent makes; a one-request verb has nothing left to do by then (its files
    are written and closed, every lane has waited for its jobs). ``os._exit`` skips atexit
    handlers, so only the command line, never ``main()`` as a library call, ends this way.
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = 128 + 13
    try:  # noqa: SIM105 - contextlib is not imported on this path
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)
