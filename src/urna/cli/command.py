"""A verb's declaration (its arguments and options) and the parse of its argv with argparse.

Verb modules declare a command with the ``command`` / ``argument`` / ``option`` decorators;
``Command.parse`` turns the verb's argv into the callback's keyword arguments. argparse
splits the options from the positionals (options before, between or after them, ``--``
ending the options); the values then go through their types (``cli.options``) in the order
the CLI has always checked them: the options as given, then the arguments, then the options
not given (a missing required one). So each usage error keeps the text it had under click:
``Missing argument 'FILE'.``, ``No such option '--jsn'. Did you mean '--json'?``, ``Got
unexpected extra argument (x)``, ``Option '-k' requires an argument.``.
"""

from __future__ import annotations

import os

from ..errors import BadParameter, UsageError
from .options import TEXT, InputFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from .options import ParamType

HELP_OPTS = ("-h", "--help")


class Parameter:
    """One declared parameter: the callback's keyword ``name``, its type and default."""

    def __init__(self, name: str, type: ParamType | None, default: Any, required: bool,
                 multiple: bool, help: str | None) -> None:
        self.name, self.type = name, type or TEXT
        self.default, self.required, self.multiple, self.help = default, required, multiple, help

    def error_hint(self) -> str:
        """How an error names this parameter: ``'FILE'``, ``'--mode' / '--rank'``."""
        raise NotImplementedError


class Argument(Parameter):
    """A positional parameter; ``nargs=-1`` takes every remaining positional."""

    def __init__(self, name: str, type: ParamType | None = None, required: bool | None = None,
                 nargs: int = 1) -> None:
        super().__init__(name, type, () if nargs == -1 else None,
                         nargs == 1 if required is None else required, nargs == -1, None)
        self.nargs = nargs

    def metavar(self) -> str:
        """``FILE``, ``[TARGET]``, ``FILES...``, ``[FILES]...``."""
        word = self.name.upper()
        return (word if self.required else f"[{word}]") + ("..." if self.nargs == -1 else "")

    def error_hint(self) -> str:
        """The metavar, quoted."""
        return repr(self.metavar())


class Option(Parameter):
    """An option: ``opts`` (``-k``, ``--json``), a flag or one taking a value."""

    def __init__(self, opts: tuple[str, ...], name: str, type: ParamType | None = None,
                 default: Any = None, required: bool = False, multiple: bool = False,
                 is_flag: bool = False, help: str | None = None, metavar: str | None = None,
                 show_default: bool = False, envvar: str | None = None) -> None:
        super().__init__(name, type, (() if multiple else False if is_flag else default),
                         required, multiple, help)
        self.opts, self.is_flag, self.value_metavar = opts, is_flag, metavar
        self.show_default, self.envvar = show_default, envvar

    def error_hint(self) -> str:
        """Every spelling, quoted: ``'--mode' / '--rank'``."""
        return " / ".join(repr(o) for o in self.opts)


class Command:
    """A verb: its name, its parameters in declaration order and the function it runs."""

    def __init__(self, name: str, callback: Callable[..., Any], params: list[Parameter],
                 help: str | None) -> None:
        self.name, self.callback, self.params, self.help = name, callback, params, help

    def parse(self, args: list[str], path: str, files: list[str]) -> dict[str, Any] | None:
        """The callback's keyword arguments, or None when the help was asked for.

        ``path`` (``urna search``) is what a usage error points to; each input file is
        appended to ``files`` as it is read off the command line.
        """
        options = [p for p in self.params if isinstance(p, Option)]
        given, positionals, help_asked = _split(options, args, path)
        if help_asked:
            return None
        arguments = [p for p in self.params if isinstance(p, Argument)]
        raw = _assign(arguments, positionals)
        order = [p for p in options if p.name in given] + arguments + [
            p for p in options if p.name not in given]
        values: dict[str, Any] = {}
        for param in order:
            values[param.name] = _value(param, given, raw, path, files)
        extra = positionals[sum(len(v) for v in raw.values()):]
        if extra:
            s = "s" if len(extra) > 1 else ""
            raise UsageError(f"Got unexpected extra argument{s} ({' '.join(extra)})", path)
        return values


def _split(options: list[Option], args: list[str],
           path: str) -> tuple[dict[str, Any], list[str], bool]:
    """argparse's part: (the options given, by name; the positionals; whether -h was given)."""
    import argparse

    class Given(argparse.Action):
        """Stores a value (or True for a flag, a list for a repeatable option) in order."""

        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                      values: Any, option_string: str | None = None) -> None:
            found = namespace.given
            if self.nargs == 0:
                found[self.dest] = True
            elif self.const == "multiple":
                found.setdefault(self.dest, []).append(values)
            else:  # the last value wins; the option keeps the place of its first use
                found[self.dest] = values

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # never print and exit: one usage line
            raise UsageError(message[:1].upper() + message[1:] + ".", path)

    # a fixed width: argparse's default formatter, which add_argument builds for every
    # argument, would import shutil (and bz2, lzma) to ask the terminal's; our help is _help's
    parser = Parser(prog=path, add_help=False, allow_abbrev=False, exit_on_error=False,
                    formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
    for option in options:
        parser.add_argument(*option.opts, dest=option.name, action=Given,
                            nargs=0 if option.is_flag else None,
                            const="multiple" if option.multiple else None,
                            default=argparse.SUPPRESS)
    parser.add_argument(*HELP_OPTS, dest="help", action="store_true")
    parser.add_argument("positionals", nargs="*")
    # after `--` every word is a positional (argparse's intermixed parse would drop some)
    cut = args.index("--") if "--" in args else len(args)
    # `-k3` and `-k=3` are -k's value "3" and "=3" (argparse would read `-k=3` as "3")
    shorts = {o for opt in options if not opt.is_flag for o in opt.opts if o[1] != "-"}
    words = [part for w in args[:cut] for part in (
        (w[:2], w[2:]) if len(w) > 2 and w[:2] in shorts else (w,))]
    namespace = argparse.Namespace(given={})
    try:
        namespace, unknown = parser.parse_known_intermixed_args(words, namespace)
    except argparse.ArgumentError as exc:
        raise _parser_error(exc, words) from None
    for word in unknown:
        if word.startswith("-") and len(word) > 1:
            raise _no_such_option(word, options, path)
    positionals = list(namespace.positionals) + unknown + args[cut + 1:]
    return namespace.given, positionals, namespace.help


def _parser_error(exc: Any, args: list[str]) -> UsageError:
    """argparse's complaint about a known option, as the one line it always was."""
    spellings = (exc.argument_name or "").split("/")
    used = next((a.split("=", 1)[0] for a in reversed(args)
                 if a.split("=", 1)[0] in spellings), spellings[0])
    if exc.message.startswith("ignored explicit argument"):
        return UsageError(f"Option {used!r} does not take a value.")  # no help pointer
    return UsageError(f"Option {used!r} requires an argument.")


def _no_such_option(word: str, options: Iterable[Option], path: str) -> UsageError:
    """``No such option '--jsn'. Did you mean '--json'?`` (close long spellings only)."""
    name = word.split("=", 1)[0] if word.startswith("--") else word[:2]
    line = f"No such option {name!r}."
    if name.startswith("--"):
        from difflib import get_close_matches

        longs = [o for opt in options for o in opt.opts if o.startswith("--")] + ["--help"]
        line += did_you_mean(get_close_matches(name, longs))
    return UsageError(line, path)


def did_you_mean(matches: list[str]) -> str:
    """`` Did you mean 'x'?``, `` (Did you mean one of: 'x', 'y'?)`` or ''."""
    if not matches:
        return ""
    listed = ", ".join(repr(m) for m in sorted(matches))
    return f" Did you mean {listed}?" if len(matches) == 1 else f" (Did you mean one of: {listed}?)"


def _assign(arguments: list[Argument], positionals: list[str]) -> dict[str, list[str]]:
    """Each argument's words, in declaration order (a ``nargs=-1`` one takes the rest)."""
    raw: dict[str, list[str]] = {}
    at = 0
    for arg in arguments:
        take = len(positionals) - at if arg.nargs == -1 else min(1, len(positionals) - at)
        raw[arg.name] = positionals[at:at + take]
        at += take
    return raw


def _value(param: Parameter, given: dict[str, Any], raw: dict[str, list[str]], path: str,
           files: list[str]) -> Any:
    """One parameter's converted value, its default, or the usage error it earns."""
    if isinstance(param, Argument):
        words = raw[param.name]
        if not words:
            if param.required:
                raise UsageError(f"Missing argument {param.error_hint()}.", path)
            return param.default
    else:
        assert isinstance(param, Option)
        if param.is_flag:
            return bool(given.get(param.name, False))
        found = given.get(param.name)
        if found is None and param.envvar and os.environ.get(param.envvar):
            found = os.environ[param.envvar]
        if found is None:
            if param.required:
                raise UsageError(f"Missing option {param.error_hint()}.", path)
            return param.default
        words = found if param.multiple else [found]
    try:
        converted = [param.type.convert(w) for w in words]
    except BadParameter as exc:
        raise UsageError(f"Invalid value for {param.error_hint()}: {exc}", path) from None
    if isinstance(param.type, InputFile):
        files.extend(str(v) for v in converted)
    return tuple(converted) if param.multiple else converted[0]


def _params_of(fn: Any) -> list[Parameter]:
    if not hasattr(fn, "__urna_params__"):
        fn.__urna_params__ = []
    params: list[Parameter] = fn.__urna_params__
    return params


def command(name: str) -> Callable[[Callable[..., Any]], Command]:
    """Declare a verb: the decorated function, its docstring the help, its parameters."""
    def make(fn: Callable[..., Any]) -> Command:
        params = list(reversed(_params_of(fn)))  # decorators run bottom-up
        return Command(name, fn, params, fn.__doc__)
    return make


def argument(name: str, *, type: ParamType | None = None, required: bool | None = None,
             nargs: int = 1) -> Callable[[Any], Any]:
    """Declare a positional parameter (``nargs=-1``: all remaining ones, a tuple)."""
    def add(fn: Any) -> Any:
        _params_of(fn).append(Argument(name, type, required, nargs))
        return fn
    return add


def option(*decls: str, type: ParamType | None = None, default: Any = None,
           required: bool = False, multiple: bool = False, is_flag: bool = False,
           help: str | None = None, metavar: str | None = None, show_default: bool = False,
           envvar: str | None = None) -> Callable[[Any], Any]:
    """Declare an option: its spellings (``-k``, ``--json``) and, optionally, its keyword."""
    opts = tuple(d for d in decls if d.startswith("-"))
    names = [d for d in decls if not d.startswith("-")]
    longs = [o for o in opts if o.startswith("--")]
    name = names[0] if names else (longs or list(opts))[0].lstrip("-").replace("-", "_")

    def add(fn: Any) -> Any:
        _params_of(fn).append(Option(opts, name, type, default, required, multiple, is_flag,
                                     help, metavar, show_default, envvar))
        return fn
    return add
