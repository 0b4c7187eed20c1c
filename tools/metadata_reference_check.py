"""Prove that the reference wheel reads files carrying our metadata section (0x18) unchanged.

For every file of tests/data/ref-0.5.1 this adds a metadata section (format.append.with_section),
then opens the result with the reference urna 0.5.1 in /work/refvenv and checks, there, that
open + validate succeed, content_hash and chunk ids equal expected.json, every query path
returns the reference's hits (file_hash aside: the bytes did change) and inspect lists 0x18 as
an unknown section. Not a test: the reference wheel is never a dependency of the suite.

    PYTHONPATH=src /work/main/.venv/bin/python tools/metadata_reference_check.py [REF_PYTHON]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from reference_wheel import REF_PYTHON, ReferenceFailed, report_failure, run_reference

from urna.format.append import with_section
from urna.format.layout import SECTION_METADATA
from urna.format.sections.metadata import encode_metadata

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the sample rows are the ones the tests use
from helpers.vectors import metadata_sample_rows as sample_rows  # noqa: E402

REF = ROOT / "tests" / "data" / "ref-0.5.1"

# Runs inside the reference interpreter: argv[1] = JSON list of [path, expected entry].
CHECK = r'''
import json, sys
import urna

def hits_equal(got, want, file_hash):
    if [h.chunk_id for h in got] != [w["chunk_id"] for w in want]:
        return False
    for h, w in zip(got, want):
        for key, value in w.items():
            if key == "file_hash":
                value = file_hash
            if key == "score":
                if abs(h.score - value) > 1e-6:
                    return False
            elif getattr(h, key) != value:
                return False
    return True

out = []
for path, exp in json.load(open(sys.argv[1])):
    f = urna.open(path)
    f.validate()
    checked = failed = 0
    for q in exp["queries"]:
        vec, text = q["vector"], q["text"]
        runs = [(f.search(vec, 5), q["search"]), (f.retrieve(vec, 5), q["retrieve"])]
        if "search_ann_ef32" in q:
            runs.append((f.search_ann(vec, 5, 32), q["search_ann_ef32"]))
        if "search_hybrid" in q:
            runs.append((f.search_hybrid(vec, text, 5, 50), q["search_hybrid"]))
        if "search_graph" in q:
            runs.append((f.search_graph(vec, 5), q["search_graph"]))
        for key, value in q.items():
            if key.startswith("search_space_"):
                runs.append((f.search_space(key[13:], value["vector"], 5), value["hits"]))
        for got, want in runs:
            checked += 1
            failed += not hits_equal(got, want, f.file_hash)
    sections = [s for s in f.inspect()["sections"] if s["section_id"] == 0x18]
    out.append({"path": path, "content_hash_ok": f.content_hash == exp["content_hash"],
                "chunk_ids_ok": f.chunk_ids() == exp["chunk_ids"],
                "hit_lists": checked, "hit_lists_failed": failed,
                "section_0x18": [s["name"] for s in sections]})
print(json.dumps({"module": urna.__file__, "version": getattr(urna, "__version__", "?"),
                  "files": out}))
'''


def main(ref_python: str = REF_PYTHON) -> int:
    """Write the augmented files, check them in the reference interpreter, print a table."""
    expected = json.loads((REF / "expected.json").read_text())["files"]
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for name in sorted(expected):
            n = expected[name]["inspect"]["n_chunks"]
            data = with_section((REF / name).read_bytes(), SECTION_METADATA,
                                encode_metadata(sample_rows(n), n))
            path = Path(tmp) / name
            path.write_bytes(data)
            cases.append([str(path), expected[name]])
        try:
            report = run_reference(CHECK, cases, cwd=tmp, ref_python=ref_python)
        except ReferenceFailed as exc:
            return report_failure(exc)
    assert isinstance(report, dict)
    results = report["files"]
    print(f"reference module: {report['module']} (version {report['version']})")
    ok = True
    print(f"{'file':32} content_hash chunk_ids hit_lists 0x18_in_inspect")
    for r in results:
        good = r["content_hash_ok"] and r["chunk_ids_ok"] and not r["hit_lists_failed"]
        ok &= good and r["section_0x18"] == ["unknown"]
        print(f"{Path(r['path']).name:32} {'same' if r['content_hash_ok'] else 'DIFF':12} "
              f"{'same' if r['chunk_ids_ok'] else 'DIFF':9} "
              f"{str(r['hit_lists'] - r['hit_lists_failed']) + '/' + str(r['hit_lists']):9} "
              f"{','.join(r['section_0x18'])}")
    total = sum(r["hit_lists"] for r in results)
    print(f"{len(results)} files, {total} hit lists: {'ALL EQUAL' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
