"""A one-shot read verb imports only what its path runs (process start is part of its answer).

Claims, on the real CLI in a fresh process: ``urna search`` (the exact path, no filter)
imports neither the fused order nor the tokenizer's tables, the metadata filter or
`tokenizers` (a file's first open still decodes its BM25 section, as the reference's does);
``urna ask`` imports the fused order it ranks with, and still not `tokenizers` for an ASCII
question.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.vectors import REF

SRC = Path(__file__).resolve().parents[2] / "src"
_RUN = ("import sys; from urna.cli import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print(json.dumps(sorted(sys.modules)))")


def _modules(tmp_path: Path, *argv: str) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), URNA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", "import json\n" + _RUN, *argv], env=env,
                         check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_an_exact_search_imports_no_lexical_or_filter_code(tmp_path: Path) -> None:
    path = REF / "quickstart-hybrid.urna"
    vector = json.dumps([1.0] + [0.0] * 255)
    loaded = _modules(tmp_path, "search", str(path), vector, "-k", "3")
    assert "urna.runtime.search" in loaded
    for name in ("urna.runtime.fused", "urna.index.stemmed_bm25", "urna.index.tokenize",
                 "urna.index.filter", "urna.format.sections.metadata",
                 "tokenizers"):
        assert name not in loaded, name


def test_ask_imports_its_fused_order_but_not_tokenizers(tmp_path: Path) -> None:
    loaded = _modules(tmp_path, "ask", str(REF / "quickstart-hybrid.urna"),
                      "how do citations work", "-k", "2")
    assert {"urna.runtime.fused", "urna.index.tokenize"} <= loaded
    assert "tokenizers" not in loaded
