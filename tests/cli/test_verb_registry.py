"""The lazy verb registry: every verb is listed, and a call imports only its own verb's module.

Claims: ``VERB_MODULES`` names exactly the verbs each module defines (so no verb is lost or
mis-filed); ``urna --help`` lists them all; a read verb in a fresh process does not import
the writer, the forge, the server or the catalog (what made every CLI call slow, #20).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli_runner import invoke
from urna.cli import VERB_MODULES, all_commands

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests/data/ref-0.5.1/quickstart-hybrid.urna"
HEAVY = ("urna.build", "urna.forge", "urna.serve", "urna.mcp", "urna.tui",
         "urna.runtime.catalog")


def test_table_matches_the_modules() -> None:
    for module_name, verbs in VERB_MODULES.items():
        module = importlib.import_module(f"urna.cli.{module_name}")
        assert tuple(c.name for c in module.COMMANDS) == verbs, module_name


def test_help_lists_every_verb() -> None:
    out = invoke(["--help"]).output
    for verbs in VERB_MODULES.values():
        for verb in verbs:
            assert f"  {verb} " in out or f"  {verb}\n" in out, verb
    assert sorted(all_commands()) == sorted(v for vs in VERB_MODULES.values() for v in vs)


_PROBE = """
import json, sys
from urna.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("argv", [["inspect", str(FILE)], ["validate", str(FILE)],
                                  ["search", str(FILE), "[0.5, 0.5]"]])
def test_read_verb_imports_only_what_it_uses(argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], env=env, capture_output=True,
                         text=True, check=True).stdout
    modules = json.loads(out.strip().splitlines()[-1])
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == [], loaded
