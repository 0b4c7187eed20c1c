"""A one-shot read verb imports only what its path runs (process start is part of its answer).

Claims, on the real CLI in a fresh process: ``urna search`` (the exact path, no filter)
imports neither the fused order nor the tokenizer's tables, the metadata filter or
`tokenizers` (a file's first open still decodes its BM25 section, as the reference's does);
``urna ask`` imports the fused order it ranks with, and still not `tokenizers` for an ASCII
question. Nor do ``search``, ``ask``, ``retrieve`` and ``cite`` import what they once did
without using it (#20): the zstandard package (libzstd's cffi extension is loaded alone),
``dataclasses`` (the open's and the index payloads' records), ``pathlib`` (the embedder's
folders), the forge's compatibility module ``forge.embed`` and the small-graph builder
(``index.hnsw_small_build``, which only a build runs); ``cite``, which needs no
numpy, imports no ``typing`` or ``platform`` either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.vectors import REF

SRC = Path(__file__).resolve().parents[2] / "src"
_RUN = ("import sys; from urna.cli import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print(json.dumps(sorted(sys.modules)))")


def _modules(tmp_path: Path, *argv: str, env_extra: dict[str, str] | None = None) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), URNA_CACHE_DIR=str(tmp_path), **(env_extra or {}))
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


_HYBRID = REF / "quickstart-hybrid.urna"  # zstd sections, HNSW and BM25
# the last: the small-graph builder, which only a build runs
_UNUSED = ("zstandard", "dataclasses", "pathlib", "urna.forge.embed", "urna.index.hnsw_small_build")
_NUMPY_FREE_UNUSED = ("typing", "platform")


def _read_verb_argv(verb: str) -> list[str]:
    import urna

    if verb in ("ask", "retrieve"):
        return [verb, str(_HYBRID), "how do citations work", "-k", "2"]
    with urna.open(_HYBRID) as f:
        vector = [1.0] + [0.0] * (f.embedding_dim - 1)
        citation = f.search(vector, 1)[0].citation_id
    if verb == "search":
        return [verb, str(_HYBRID), json.dumps(vector), "-k", "3"]
    return [verb, str(_HYBRID), citation]


@pytest.mark.parametrize("first_open", [False, True], ids=["kept-verdict", "first-open"])
@pytest.mark.parametrize("verb", ["search", "ask", "retrieve", "cite"])
def test_a_read_verb_imports_nothing_it_does_not_use(verb: str, first_open: bool,
                                                     tmp_path: Path) -> None:
    argv = _read_verb_argv(verb)
    _modules(tmp_path, *argv)  # the first call keeps its caches (a verdict, a fingerprint)
    extra = {"URNA_OPEN_CACHE": "0"} if first_open else None
    loaded = _modules(tmp_path, *argv, env_extra=extra)
    unused = _UNUSED + (_NUMPY_FREE_UNUSED if verb == "cite" else ())
    assert [name for name in unused if name in loaded] == []
    if verb == "cite":
        assert "numpy" not in loaded
    else:  # libzstd was used: its extension, loaded without the package
        assert "zstandard._cffi" in loaded
