"""Readers share files safely: threads, processes, atomic replacement, and a file cut short
under an open reader (03-runtime §1: the file is mapped read-only; outside changes are not
the reference's model, so the bar is "typed error or keep serving, never a signal").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import urna
from helpers.mutate import REF_DIR, source_bytes

HYBRID = "quickstart-hybrid.urna"  # HNSW + BM25: every search path has state to share
OTHER = "quickstart-int8_bm25.urna"
QUERIES = [{"text": t, "vector": v}  # the file stores [text, vector] pairs
           for t, v in json.loads((REF_DIR / "quickstart.chunks.json").read_text())["queries"]]


def _key(hits) -> list[tuple[str, float]]:
    return [(h.chunk_id, round(float(h.score), 6)) for h in hits]


def _answers(f) -> list:
    """Every search verb over every reference query, as comparable tuples."""
    out = []
    for q in QUERIES:
        v = np.asarray(q["vector"], dtype=np.float32)
        out.append(_key(f.search(v, 5)))
        out.append(_key(f.search_ann(v, 5, 32)))
        out.append(_key(f.search_hybrid(v, q["text"], 5, 50)))
    return out


@pytest.fixture()
def hybrid_path(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.urna"
    p.write_bytes(source_bytes(HYBRID))
    return p


def test_eight_threads_get_the_serial_answers(hybrid_path: Path) -> None:
    with urna.open(str(hybrid_path)) as f:
        serial = _answers(f)
        assert any(serial)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: _answers(f), range(24)))
    assert all(r == serial for r in results)


def test_threads_mixing_verbs_on_one_file(hybrid_path: Path) -> None:
    errors: list[BaseException] = []
    with urna.open(str(hybrid_path)) as f:
        want = {i: _key(f.search(np.asarray(q["vector"], np.float32), 3))
                for i, q in enumerate(QUERIES)}

        def worker(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(40):
                    i = int(rng.integers(len(QUERIES)))
                    v = np.asarray(QUERIES[i]["vector"], np.float32)
                    verb = int(rng.integers(4))
                    if verb == 0:
                        assert _key(f.search(v, 3)) == want[i]
                    elif verb == 1:
                        f.search_ann(v, 3, 16)
                    elif verb == 2:
                        f.search_hybrid(v, QUERIES[i]["text"], 3, 20)
                    else:
                        assert f.chunk_ids()[0].startswith("sha256:")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not errors, errors[:3]


def test_eight_threads_every_verb_on_a_file_with_every_section(tmp_path: Path) -> None:
    """Graph, spaces, retrieve, batch and cite share state too (file from ``_sources``)."""
    from _sources import built_source

    path = tmp_path / "all.urna"
    path.write_bytes(built_source("built-all-int8", str(tmp_path)))
    rng = np.random.default_rng(5)
    qs = rng.standard_normal((6, 256)).astype(np.float32)
    with urna.open(str(path)) as f:
        spaces = {s["name"]: s["dim"] for s in f.inspect()["spaces"]}
        sq = {n: rng.standard_normal(d).astype(np.float32) for n, d in spaces.items()}

        def answers(_: int) -> list:
            out = []
            for q in qs:
                out.append(_key(f.search_graph(q, 5)))
                out.append([(h.chunk_id, h.text) for h in f.retrieve(q, 3)])
                out.extend(_key(f.search_space(n, v, 3)) for n, v in sq.items())
                out.append(repr(f.cite(f.search(q, 1)[0].citation_id)))
            out.append([_key(r) for r in f.search_batch(qs, 4)])
            return out

        serial = answers(0)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(answers, range(16)))
    assert all(r == serial for r in results)


_FORK_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import urna
    qs = [np.asarray(v, np.float32) for _, v in json.loads(open(sys.argv[2]).read())["queries"]]
    f = urna.open(sys.argv[1])
    want = [[h.chunk_id for h in f.search_ann(q, 5, 32)] for q in qs]
    kids = []
    for _ in range(3):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child searches the parent's open file
            os.close(r)
            got = [[h.chunk_id for h in f.search_ann(q, 5, 32)] for q in qs]
            os.write(w, json.dumps(got == want).encode())
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    ok = []
    for pid, r in kids:
        ok.append(json.loads(os.read(r, 100)))
        _, status = os.waitpid(pid, 0)
        ok.append(status == 0)
    print(json.dumps(ok))
""")


def test_forked_children_search_the_parents_open_file(hybrid_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(hybrid_path),
                           str(REF_DIR / "quickstart.chunks.json")],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert json.loads(proc.stdout) == [True] * 6


_PROC_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import urna
    qs = json.loads(open(sys.argv[2]).read())["queries"]
    with urna.open(sys.argv[1]) as f:
        out = [[(h.chunk_id, round(float(h.score), 6))
                for h in f.search(np.asarray(q[1], np.float32), 5)] for q in qs]
        print(json.dumps({"hits": out, "file_hash": f.file_hash}))
""")


def test_several_processes_open_the_same_file(hybrid_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _PROC_SCRIPT, str(hybrid_path),
                               str(REF_DIR / "quickstart.chunks.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-1500:] for _, e in outs]
    docs = [json.loads(o) for o, _ in outs]
    with urna.open(str(hybrid_path)) as f:
        want = [[list(h) for h in _key(f.search(np.asarray(q["vector"], np.float32), 5))]
                for q in QUERIES]
        assert all(d["hits"] == want and d["file_hash"] == f.file_hash for d in docs)


def test_atomic_replace_does_not_disturb_open_readers(hybrid_path: Path) -> None:
    other = source_bytes(OTHER)
    with urna.open(str(hybrid_path)) as old:
        before, old_hash = _answers(old), old.file_hash
        stop = threading.Event()
        seen: list[list] = []
        failures: list[BaseException] = []

        def reader() -> None:
            try:
                while not stop.is_set():
                    seen.append(_answers(old))
            except BaseException as exc:  # noqa: BLE001
                failures.append(exc)

        t = threading.Thread(target=reader)
        t.start()
        for i in range(5):  # replace the path back and forth under the reader
            tmp = hybrid_path.with_name(f".swap{i}.tmp")
            tmp.write_bytes(other if i % 2 == 0 else source_bytes(HYBRID))
            os.replace(tmp, hybrid_path)
        stop.set()
        t.join(timeout=120)
        assert not failures, failures[:3]
        assert seen and all(s == before for s in seen)
        assert _answers(old) == before and old.file_hash == old_hash
    with urna.open(str(hybrid_path)) as new:  # the path now holds OTHER (last i was 4)
        assert new.file_hash != old_hash


_TRUNC_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import urna
    from urna.errors import UrnaError
    path, cut = sys.argv[1], int(sys.argv[2])
    q = np.asarray(json.loads(open(sys.argv[3]).read())["queries"][0][1], np.float32)
    f = urna.open(path)
    first = [h.chunk_id for h in f.search(q, 5)]
    size = os.path.getsize(path)
    os.truncate(path, cut if cut >= 0 else size // 2)
    results = []
    for verb in ("search", "search_ann", "search_hybrid", "retrieve", "chunk_ids", "validate"):
        try:
            if verb == "search":
                out = [h.chunk_id for h in f.search(q, 5)]
                results.append(["served" if out == first else "changed", verb])
            elif verb == "search_ann":
                f.search_ann(q, 5, 32); results.append(["served", verb])
            elif verb == "search_hybrid":
                f.search_hybrid(q, "offline", 5, 50); results.append(["served", verb])
            elif verb == "retrieve":
                f.retrieve(q, 3); results.append(["served", verb])
            elif verb == "chunk_ids":
                f.chunk_ids(); results.append(["served", verb])
            else:
                f.validate(); results.append(["served", verb])
        except UrnaError as e:
            results.append(["typed:" + type(e).__name__, verb])
        except Exception as e:
            results.append(["foreign:" + type(e).__name__ + ":" + str(e)[:200], verb])
    print(json.dumps(results))
""")


# A file cut under an open reader: every call checks the file's size against the map first
# and raises FileSizeMismatch instead of touching lost pages (the reference 0.5.1 dies of SIGBUS).
@pytest.mark.parametrize("cut", [-1, 0, 200], ids=["half", "empty", "header_only"])
def test_file_truncated_under_an_open_reader_never_kills_the_process(tmp_path: Path,
                                                                      cut: int) -> None:
    path = tmp_path / "victim.urna"
    path.write_bytes(source_bytes(HYBRID))
    proc = subprocess.run([sys.executable, "-c", _TRUNC_SCRIPT, str(path), str(cut),
                           str(REF_DIR / "quickstart.chunks.json")],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (
        f"reader process died (returncode {proc.returncode}, negative = killed by that signal, "
        f"-7 = SIGBUS from the mapping): {proc.stderr[-1500:]}")
    results = json.loads(proc.stdout)
    assert [r for r in results if r[0].startswith("foreign")] == []
    assert all(r[0] in ("served",) or r[0].startswith("typed:") for r in results), results


_OVERWRITE_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import urna
    from urna.errors import UrnaError
    q = np.asarray(json.loads(open(sys.argv[1]).read())["queries"][0][1], np.float32)
    report = {}
    for arg in sys.argv[2:]:
        path, fill = arg.split("=")
        f = urna.open(path)
        f.search_ann(q, 5, 32)
        size = os.path.getsize(path)
        junk = {"ff": b"\\xff" * size, "zero": bytes(size),
                "random": np.random.default_rng(1).integers(0, 256, size, np.uint8).tobytes()}[fill]
        with open(path, "r+b") as fh:  # same size, in place: the mapping sees the new bytes
            fh.write(junk)
        calls = {"search": lambda: f.search(q, 5), "search_ann": lambda: f.search_ann(q, 5, 32),
                 "search_hybrid": lambda: f.search_hybrid(q, "offline", 5, 50),
                 "search_graph": lambda: f.search_graph(q, 5), "retrieve": lambda: f.retrieve(q, 3),
                 "search_batch": lambda: f.search_batch(np.stack([q, q]), 3),
                 "inspect": f.inspect, "validate": f.validate}
        out = {}
        for name, call in calls.items():
            try:
                call()
                out[name] = "served"
            except UrnaError as e:
                out[name] = "typed:" + type(e).__name__
            except Exception as e:
                out[name] = "foreign:" + type(e).__name__ + ":" + str(e)[:200]
        report[fill] = out
    print(json.dumps(report))
""")


def test_file_overwritten_in_place_under_an_open_reader(tmp_path: Path) -> None:
    """Same-size garbage (0xFF, zeros, random) written over the mapped file: every verb serves
    or raises a typed error, never a signal (the HNSW/BM25 state decoded at open is not
    re-read), and ``validate`` notices."""
    args = []
    for fill in ("ff", "zero", "random"):
        path = tmp_path / f"victim-{fill}.urna"
        path.write_bytes(source_bytes(HYBRID))
        args.append(f"{path}={fill}")
    proc = subprocess.run([sys.executable, "-c", _OVERWRITE_SCRIPT,
                           str(REF_DIR / "quickstart.chunks.json"), *args],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"returncode {proc.returncode}: {proc.stderr[-1500:]}"
    report = json.loads(proc.stdout)
    assert set(report) == {"ff", "zero", "random"}
    for fill, out in report.items():
        assert not [v for v in out.values() if v.startswith("foreign")], (fill, out)
        assert out["validate"].startswith("typed:"), (fill, out)
