"""Every verb, every option, fed extreme and malformed values: one stderr line, no traceback.

"One line" counts error lines: a ``[urna] ...`` notice printed before the work started (the
model being loaded, a kernel compile) is not one.

The verbs and their parameters come from the CLI's own command objects (``urna.cli.command``),
so a verb added later
is covered without touching this file. Each case starts from arguments that are valid (or,
for ``build``, ``serve`` and ``mcp``, that stop before any build or server starts) and
replaces one parameter with a bad value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_runner import invoke
from helpers.vectors import REF
from urna.cli import all_commands
from urna.cli.command import Argument, Option, Parameter
from urna.cli.options import Choice, FloatRange, IntRange, PathType
from urna.errors import BadParameter, MagicMismatch
from urna.runtime import open_file

GOOD = REF / "quickstart-graph.urna"  # exact, HNSW and graph paths, potion model, dim 256
SPACES = REF / "quickstart-spaces.urna"
GOOD_QUERY = json.dumps([0.1] * 256)
INTS = ["0", "-1", str(2**31), str(2**63), "x", ""]
FLOATS = ["0", "-1", "nan", "inf", "x", ""]
BAD_FILES = ["{DIR}", "{MISSING}", "{NOT_URNA}"]
BAD_QUERIES = ["[1, 2", json.dumps([float("nan")] + [0.1] * 255),
               "[1, 2]", '{"a": 1}', "", "[1e999" + ", 0.1" * 255 + "]"]


def _base(verb: str) -> dict[str, list[str]]:
    """Valid arguments per parameter name (a build, a server never actually starts)."""
    file = SPACES if verb == "search-space" else GOOD
    query = "[1, 0]" if verb == "search-space" else GOOD_QUERY
    return {"file": [str(file)], "files": [str(file)], "query": [query], "text": ["offline"],
            "citation": ["urna://sha256:00/sha256:00"], "spec_path": ["{MISSING}"],
            "space": ["vision"] if verb == "search-space" else []}


# options added to stop a verb before it does real work: a non-loopback host without
# --expose is refused after every option has been parsed
STOPPERS = {"serve": ["--host", "0.0.0.0"], "mcp": ["--http", "--host", "0.0.0.0"]}
# verbs that take over the terminal once their input is valid; their bad input is tested where
# a terminal is driven for real (tests/tui/test_tui_cli.py)
INTERACTIVE = {"tui"}


def _bad_values(param: Parameter) -> list[str]:
    t = param.type
    if param.name == "query":
        return BAD_QUERIES
    if isinstance(t, PathType):
        return BAD_FILES
    if isinstance(t, IntRange):
        return INTS
    if isinstance(t, FloatRange):
        return FLOATS
    if isinstance(t, Choice):
        return ["bogus", ""]
    if param.name == "citation":
        return ["", "urna://x", "not a citation"]
    if isinstance(param, Option):
        return ["", "x"]
    return []


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for verb, command in sorted(all_commands().items()):
        if verb in INTERACTIVE:
            continue
        for param in command.params:
            if isinstance(param, Option) and param.is_flag:
                continue
            for value in _bad_values(param):
                cases.append((verb, param.name or "", value))
    return cases


def _argv(verb: str, name: str, value: str) -> list[str]:
    command = all_commands()[verb]
    base = _base(verb)
    argv = [verb]
    for param in command.params:
        if isinstance(param, Argument):
            argv += [value] if param.name == name else base.get(param.name or "", [])
    for param in command.params:
        if isinstance(param, Option) and not param.is_flag:
            flag = param.opts[0]
            if param.name == name:
                argv += [flag, value]
            elif param.required and base.get(param.name or ""):
                argv += [flag, *base[param.name or ""]]
    stop = STOPPERS.get(verb, [])
    if name == "host":
        stop = [a for a in stop if a != "--host" and a != "0.0.0.0"]
    return argv + stop


def _accepts(verb: str, name: str, value: str) -> bool:
    """Whether the parameter's own type takes ``value`` (then the verb may succeed)."""
    param = next(p for p in all_commands()[verb].params if p.name == name)
    try:
        param.type.convert(value)
    except BadParameter:
        return False
    return True


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad-input")
    (root / "notes.toml").write_text('[corpus]\nname = "notes"\nchunker_version = "n/1"\n' * 20)
    return {"{DIR}": str(root), "{MISSING}": str(root / "absent.urna"),
            "{NOT_URNA}": str(root / "notes.toml")}


def test_the_cases_cover_every_verb_with_parameters() -> None:
    verbs = {verb for verb, _, _ in _cases()}
    for verb, command in all_commands().items():
        if verb not in INTERACTIVE and any(
                not (isinstance(p, Option) and p.is_flag) for p in command.params):
            assert verb in verbs
    assert {"ask", "retrieve", "search", "search-ann", "search-graph", "search-text"} <= verbs


def test_every_integer_option_is_bounded() -> None:
    # IntRange is the CLI's only integer type (cli.options): every integer is one of them
    for verb, command in all_commands().items():
        for p in command.params:
            if isinstance(p.type, IntRange):
                assert p.type.max is not None, (verb, p.name)
                assert p.type.max < 2**64, (verb, p.name)


@pytest.mark.parametrize("verb,name,value", _cases())
def test_bad_values_give_one_line_and_no_traceback(verb: str, name: str, value: str,
                                                   places: dict[str, str]) -> None:
    argv = [places.get(a, a) for a in _argv(verb, name, value)]
    res = invoke(argv)
    shown = res.output + res.stderr
    assert "Traceback" not in shown, argv
    assert res.exception is None or isinstance(res.exception, SystemExit), (argv, res.exception)
    if res.exit_code == 0:
        assert _accepts(verb, name, value), (argv, res.output)  # e.g. --hops 0
        return
    assert res.exit_code in (1, 2), (argv, res.exit_code, shown)
    # "[urna] ..." lines are notices printed before the work (the model, kernel compiles)
    lines = [line for line in res.stderr.splitlines() if not line.startswith("[urna] ")]
    assert len(lines) == 1 and lines[0].strip(), (argv, res.stderr)


def test_big_k_is_a_usage_error_not_an_overflow() -> None:
    for verb, query in (("search", GOOD_QUERY), ("ask", "offline")):
        res = invoke([verb, str(GOOD), query, "-k", str(2**31)])
        assert res.exit_code == 2
        assert res.stderr == (f"Error: Invalid value for '-k': 2147483648 is not in the range "
                              f"{'-2147483648' if verb == 'search' else '1'}<=x<=2147483647. "
                              f"(see 'urna {verb} --help')\n")


def test_k_zero_keeps_the_reference_error() -> None:
    res = invoke(["search", str(GOOD), GOOD_QUERY, "-k", "0"])
    assert (res.exit_code, res.stderr) == (1, "Error: InvalidK: invalid k: 0\n")


def test_a_non_urna_file_is_named(places: dict[str, str]) -> None:
    notes = Path(places["{NOT_URNA}"])
    with pytest.raises(MagicMismatch) as raised:
        open_file(notes)
    library = str(raised.value)
    assert library == "magic mismatch: expected [85, 82, 78, 65], got [91, 99, 111, 114]"
    for argv in (["ask", str(notes), "x"], ["inspect", str(notes)], ["search", str(notes), "[1]"]):
        res = invoke(argv)
        assert res.exit_code == 1
        assert res.stderr == f"Error: MagicMismatch: {library} (notes.toml is not a .urna file)\n"


def test_debug_still_shows_the_traceback() -> None:
    res = invoke(["--debug", "search", str(GOOD), "[1, 2]"])
    assert res.exit_code == 1 and res.exception is not None


@pytest.mark.parametrize("argv,line", [
    (["--bogus"], "Error: No such option '--bogus'. (see 'urna --help')"),
    (["nosuch"], "Error: No such command 'nosuch'. (see 'urna --help')"),
    (["search"], "Error: Missing argument 'FILE'. (see 'urna search --help')"),
])
def test_usage_errors_are_one_line(argv: list[str], line: str) -> None:
    res = invoke(argv)
    assert (res.exit_code, res.stderr) == (2, line + "\n")
