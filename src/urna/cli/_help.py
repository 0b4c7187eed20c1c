"""``urna --help`` and ``urna VERB --help``: the usage line, the docstring, the options.

Imported only when a help is printed. The layout is the one the CLI had under click
(``Usage: urna search [OPTIONS] FILE QUERY``, a two-column option list), so a reader who
knows it, and a script that greps it, meet the same text.
"""

from __future__ import annotations

import shutil
import textwrap

from .command import HELP_OPTS, Argument, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .command import Command

COLUMN_MAX = 30  # a first column wider than this puts its help on the next line


def _width() -> int:
    return max(min(shutil.get_terminal_size().columns, 80) - 2, 50)


def _paragraphs(doc: str | None, width: int) -> list[str]:
    """The docstring, dedented, each paragraph rewrapped and indented by two."""
    if not doc:
        return []
    first, _, rest = doc.strip("\n").partition("\n")
    text = first.strip() + "\n" + textwrap.dedent(rest)
    out = []
    for para in text.strip().split("\n\n"):
        out.append("\n".join(textwrap.wrap(" ".join(para.split()), width,
                                           initial_indent="  ", subsequent_indent="  ")))
    return out


def _rows(rows: Iterable[tuple[str, str]], width: int) -> list[str]:
    """A two-column definition list."""
    rows = list(rows)
    first = min(max((len(a) for a, _ in rows), default=0), COLUMN_MAX)
    lines = []
    for term, text in rows:
        wrapped = textwrap.wrap(text, max(width - first - 4, 10)) or [""]
        if len(term) > first:
            lines.append(f"  {term}")
            lines += [" " * (first + 4) + w for w in wrapped if text]
            continue
        lines.append(f"  {term:<{first}}  {wrapped[0]}".rstrip())
        lines += [" " * (first + 4) + w for w in wrapped[1:]]
    return lines


def short_help(doc: str | None, limit: int) -> str:
    """The first sentence of a verb's docstring, cut at a word to ``limit`` with '...'."""
    words = (doc or "").split("\n\n")[0].split()
    total = 0
    for i, word in enumerate(words):
        total += len(word) + (i > 0)
        if total > limit:
            break
        if word.endswith("."):
            return " ".join(words[:i + 1])
        if total == limit and i != len(words) - 1:
            break
    else:
        return " ".join(words)
    total += 3
    while i > 0:
        total -= len(words[i]) + 1
        if total <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def _option_row(opt: Option) -> tuple[str, str]:
    term = ", ".join(opt.opts)
    if not opt.is_flag:
        term += " " + (opt.value_metavar or opt.type.metavar())
    extra = []
    if opt.show_default and opt.default is not None:
        extra.append(f"default: {opt.default}")
    if opt.type.describe():
        extra.append(opt.type.describe())
    if opt.required:
        extra.append("required")
    text = opt.help or ""
    if extra:
        text = (text + "  " if text else "") + "[" + "; ".join(extra) + "]"
    return term, text


def command_help(command: Command, path: str) -> str:
    """``urna VERB --help``."""
    width = _width()
    args = " ".join(p.metavar() for p in command.params if isinstance(p, Argument))
    out = [f"Usage: {path} [OPTIONS]" + (f" {args}" if args else ""), ""]
    for para in _paragraphs(command.help, width):
        out += [para, ""]
    rows = [_option_row(p) for p in command.params if isinstance(p, Option)]
    rows.append((", ".join(HELP_OPTS), "Show this message and exit."))
    out += ["Options:", *_rows(rows, width)]
    return "\n".join(out)


def group_help(doc: str, commands: dict[str, Command]) -> str:
    """``urna --help``: the group's text, its options, every verb with its first sentence."""
    width = _width()
    out = ["Usage: urna [OPTIONS] COMMAND [ARGS]...", ""]
    for para in _paragraphs(doc, width):
        out += [para, ""]
    out += ["Options:", *_rows([("--version", "Show the version and exit."),
                                ("--debug", "Show tracebacks on errors."),
                                (", ".join(HELP_OPTS), "Show this message and exit.")], width),
            "", "Commands:"]
    longest = max(len(v) for v in commands)
    out += _rows(((verb, short_help(commands[verb].help, width - 6 - longest))
                  for verb in sorted(commands)), width)
    return "\n".join(out)
