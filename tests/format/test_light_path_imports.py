"""The library calls of ``urna inspect``, ``cite`` and ``validate`` import nothing heavy (#20).

These verbs are whole processes an agent may call for every answer, so their start-up is their
cost: ``dataclasses`` (it imports ``inspect``, ``ast``, ``dis``, ``tokenize``), ``pathlib``,
``logging`` and ``concurrent.futures`` cost more than their work on a small file, numpy and
click several times more (``format/record.py`` says how the records do without them). Each
verb runs in a fresh interpreter over every reference file, the calls the CLI makes in
``cli/file_cmds.py`` (through the verdict cache, a first call and a repeat), and then reports
which of those modules were ever imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import urna
from helpers.vectors import DATA, REF, expected
from urna.runtime.validation import VERIFIED_WITHOUT_OPEN, listed_sections

SRC = str(Path(urna.__file__).resolve().parent.parent)
FORBIDDEN = ("dataclasses", "inspect", "pathlib", "logging", "concurrent.futures", "typing",
             "numpy", "click")

DRIVER = r'''
import json, mmap, sys

from urna.runtime import verdicts

verdicts.MIN_BYTES = 0  # keep a verdict for these small files too: the repeat call trusts it
verb, jobs = sys.argv[1], json.loads(sys.argv[2])


def read_file(path):
    with open(path, "rb") as fh:
        return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))


answers = []
for path, citation in jobs:
    for _ in range(2):  # a first call and a repeat one (with the verdict the first kept)
        data = read_file(path)
        if verb == "inspect":
            from urna.format.inspect import inspect_view
            from urna.format.layout import ENCODING_NAMES, SECTION_METADATA
            from urna.runtime.stats import (SECTION_ENCODING_LABELS, display_section_name,
                                            metadata_schema)

            view = verdicts.checked_view(path, data)
            doc = inspect_view(view, None)
            verdicts.keep_view(path, data, view)
            labels = [(display_section_name(s["section_id"]),
                       SECTION_ENCODING_LABELS.get(s["encoding"],
                                                   ENCODING_NAMES.get(s["encoding"])))
                      for s in doc["sections"]]
            if view.entry(SECTION_METADATA) is not None:
                labels.append(metadata_schema(view))
            answers.append(doc["content_hash"])
        elif verb == "validate":
            from urna.runtime.validation import validate_bytes

            answers.append(validate_bytes(data).content_hash)
        else:
            from urna.format.citation import resolve_citation
            from urna.runtime.catalog_paths import is_catalog_path

            assert not is_catalog_path(path)
            view, known = verdicts.checked(path, data)
            hit = resolve_citation(view, citation,
                                   records_checked=verdicts.CITE_RECORDS in known)
            verdicts.keep_view(path, data, view, frozenset({verdicts.CITE_RECORDS}))
            answers.append(hit.content_hash + " " + view.file_hash())
print(json.dumps({"answers": answers,
                  "imported": [m for m in sys.argv[3].split(",") if m in sys.modules],
                  "zstandard": "zstandard" in sys.modules}))
'''


def _jobs() -> list[tuple[str, str]]:
    want = expected()
    jobs = []
    for path in sorted(REF.glob("*.urna")):
        queries = want.get(path.name, {}).get("queries") or [{}]
        hits = queries[0].get("retrieve") or [{}]
        jobs.append((str(path), hits[0].get("citation_id", "")))
    return jobs


def needs_open(path: str) -> bool:
    listed = listed_sections(Path(path).read_bytes())
    return listed is None or not listed <= VERIFIED_WITHOUT_OPEN


def run_verb(verb: str, jobs: list[tuple[str, str]], cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]),
               URNA_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", DRIVER, verb, json.dumps(jobs),
                           ",".join(FORBIDDEN)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("verb", ["inspect", "validate", "cite"])
def test_light_verb_imports_nothing_heavy(verb: str, tmp_path: Path) -> None:
    jobs = [job for job in _jobs() if verb != "cite" or job[1]]
    if verb == "validate":  # a file with HNSW, BM25, graph or spaces is decoded as the open does
        jobs = [job for job in jobs if not needs_open(job[0])]
        assert len(jobs) >= 8
    else:
        assert len(jobs) >= 20
    out = run_verb(verb, jobs, tmp_path)
    assert len(out["answers"]) == 2 * len(jobs)
    assert out["imported"] == [], out["imported"]
    # libzstd is loaded without the zstandard package (its __init__ imports typing, platform)
    assert not out["zstandard"]


def test_a_raw_file_imports_no_typing_either(tmp_path: Path) -> None:
    raw = [(str(DATA / "golden_v1_minimal.urna"), "")]
    for verb in ("inspect", "validate"):
        out = run_verb(verb, raw, tmp_path)
        assert not out["zstandard"]
        assert out["imported"] == [], (verb, out["imported"])


def test_citing_a_repacked_span_table_imports_no_numpy(tmp_path: Path) -> None:
    # the reference wrote this file's 0x03 as a spans repack: the repeat cite reads the one
    # cited span from its columns (``repack.column_span``), not numpy's whole-column decode
    path = DATA / "ref-0.5.1-tokens" / "tokens-hybrid.urna"
    with urna.open(path) as f:
        ids, content_hash = f.chunk_ids(), f.content_hash
    jobs = [(str(path), f"urna://{content_hash}/{ids[i]}") for i in (0, len(ids) - 1)]
    first = run_verb("cite", jobs, tmp_path)  # a first cite proves the records whole (numpy)
    again = run_verb("cite", jobs, tmp_path)  # a new process, the verdict kept on disk
    assert again["answers"] == first["answers"] and len(again["answers"]) == 4
    assert again["imported"] == [], again["imported"]
