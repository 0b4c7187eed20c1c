"""How the command line reads a verb's words (``urna.cli.command`` over argparse).

Claims: options go before, between or after the positionals; ``--`` ends the options; a
short option takes its value attached (``-k3``; ``-k=3`` is the value ``=3``, refused); the
last of a repeated option wins, a repeatable one keeps every value; abbreviations are not
options; a flag refuses a value; and the path and number types agree with pathlib and int
on any text (property tests).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.cli_runner import invoke
from helpers.vectors import REF
from urna.cli import load_command
from urna.cli.options import Choice, IntRange, shown_path
from urna.errors import BadParameter

FILE = REF / "quickstart-exact.urna"  # dim 256
QUERY = json.dumps([0.1] * 256)


def _k(res) -> int:  # noqa: ANN001 - a CliResult
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["k_requested"]


@pytest.mark.parametrize("argv", [
    ["search", FILE, QUERY, "-k", "3", "--json"],
    ["search", "-k", "3", FILE, QUERY, "--json"],
    ["search", FILE, "-k", "3", QUERY, "--json"],
    ["search", "--json", FILE, QUERY, "-k3"],
    ["search", "-k", "7", FILE, QUERY, "-k", "3", "--json"],  # the last one wins
    ["search", "-k", "3", "--json", "--", FILE, QUERY],
])
def test_options_anywhere(argv: list[object]) -> None:
    assert _k(invoke(argv)) == 3


def test_after_double_dash_every_word_is_a_positional() -> None:
    res = invoke(["search", FILE, QUERY, "--", "--json"])
    assert (res.exit_code, res.stderr) == (
        2, "Error: Got unexpected extra argument (--json) (see 'urna search --help')\n")


@pytest.mark.parametrize("argv,line", [
    (["search", FILE, QUERY, "-k=3"],
     "Error: Invalid value for '-k': '=3' is not a valid integer. (see 'urna search --help')"),
    (["search", FILE, QUERY, "--js"],
     "Error: No such option '--js'. Did you mean '--json'? (see 'urna search --help')"),
    (["search", FILE, QUERY, "--json=1"], "Error: Option '--json' does not take a value."),
    (["search", FILE, QUERY, "-k"], "Error: Option '-k' requires an argument."),
    (["search", FILE, QUERY, "-q", "1"], "Error: No such option '-q'. (see 'urna search --help')"),
    (["serch"], "Error: No such command 'serch'. (Did you mean one of: 'search', 'search-ann', "
                "'search-text'?) (see 'urna --help')"),
    (["--debug"], "Error: Missing command. (see 'urna --help')"),
    (["eval", FILE], "Error: Missing option '--queries'. (see 'urna eval --help')"),
    (["serve"], "Error: Missing argument 'FILES...'. (see 'urna serve --help')"),
    (["eval", FILE, "--queries", FILE, "--mode", "x"],
     "Error: Invalid value for '--mode' / '--rank': 'x' is not one of 'cosine', 'bm25', "
     "'hybrid', 'fused'. (see 'urna eval --help')"),
])
def test_usage_lines(argv: list[object], line: str) -> None:
    res = invoke(argv)
    assert (res.exit_code, res.stdout, res.stderr) == (2, "", line + "\n")


def test_what_a_verb_receives() -> None:
    files: list[str] = []
    remove = load_command("remove")
    assert remove is not None
    got = remove.parse(["--chunk-id", "a", "x.catalog.json", "--chunk-id", "b", "--json"],
                       "urna remove", files)
    assert got == {"chunk_ids": ("a", "b"), "catalog": Path("x.catalog.json"), "sources": (),
                   "source_glob": None, "where": None, "as_json": True}
    inspect = load_command("inspect")
    assert inspect is not None
    assert inspect.parse([".//a/./b.urna"], "urna inspect", files) == {
        "file": "a/b.urna", "as_json": False}
    assert files == ["a/b.urna"]  # input files are recorded, so an error can name them
    assert inspect.parse(["-h"], "urna inspect", files) is None  # the help was asked for


@given(st.text(alphabet="/. a\x00", max_size=12))
def test_shown_path_is_pathlibs_spelling(text: str) -> None:
    assert shown_path(text) == str(PurePosixPath(text))


@given(st.integers(-(2**70), 2**70), st.integers(-100, 100), st.integers(0, 200))
def test_int_range_accepts_exactly_its_range(n: int, low: int, width: int) -> None:
    kind = IntRange(low, low + width)
    if low <= n <= low + width:
        assert kind.convert(str(n)) == n
    else:
        with pytest.raises(BadParameter, match=rf"^{n} is not in the range {low}<=x<="):
            kind.convert(str(n))


@given(st.text(max_size=8))
def test_int_range_refuses_text_int_refuses(text: str) -> None:
    try:
        want = int(text)
    except ValueError:
        with pytest.raises(BadParameter, match="is not a valid integer"):
            IntRange(None, None).convert(text)
    else:
        assert IntRange(None, None).convert(text) == want


@given(st.text(max_size=6))
def test_choice_takes_only_its_words(text: str) -> None:
    kind = Choice(["jsonl", "json"])
    if text in ("jsonl", "json"):
        assert kind.convert(text) == text
    else:
        with pytest.raises(BadParameter):
            kind.convert(text)
