"""The declarative build end to end: reference bytes, cache reuse, transactional outputs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from helpers.cli_runner import invoke
from helpers.specs import write_documents_spec, write_jsonl_spec
from urna.forge.embedders import PotionEmbedder
from urna.format.reader import UrnaView
from urna.format.sections import canonical

ROOT = Path(__file__).resolve().parents[2]
REF_SPEC_FILE = Path(__file__).parent / "data" / "quickstart-spec-ref0.5.1.urna"
REF_META = json.loads((ROOT / "tests/data/ref-0.5.1/quickstart.chunks.json").read_text())["meta"]
ROW7_ID = "sha256:b5dfeb09a643f6f0afde3f361316dde3ea503ff86c525d297e6ba79b5781a4be"


def _run(args: list[str]):
    return invoke(args, catch_exceptions=False)


@pytest.fixture()
def quickstart_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(ROOT)  # the spec's paths are relative to the repository root
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["build", "--spec", "examples/quickstart/corpus.toml", "--out-dir", str(out),
            "--cache-dir", str(cache)]
    res = _run(args)
    assert res.exit_code == 0, res.output
    return out, args, json.loads(res.stdout)


def test_quickstart_spec_build_equals_the_reference_bytes(quickstart_build) -> None:
    out, _, result = quickstart_build
    data = (out / "quickstart.urna").read_bytes()
    assert data == REF_SPEC_FILE.read_bytes()
    view = UrnaView.from_bytes(data)
    assert view.manifest.model_hash == REF_META["model_hash"]
    assert view.manifest.embedding_model == REF_META["embedding_model"]
    assert result["n_items"] == 12
    assert result["corpus_input_hash"] == (
        "sha256:00ebc2f0e96cbbf0effd0ce5b38a80f8b8eb13c972fdcde4968affa21caaa8bb")
    entry = result["outputs"]["quickstart.urna"]
    # file_hash the reference reported for the bytes it wrote (tests/forge/data/README.md)
    assert entry["bytes"] == len(data) and entry["file_hash"] == (
        "sha256:fadd25ea7d4a72a3145e70304ca44da01d5613345d51360680e1e4d4cf74e16b")
    manifest = json.loads((out / "quickstart.manifest.json").read_text())
    assert manifest["manifest_schema_version"] == 1 and manifest["text_quality"] == "template"
    assert manifest["models"]["potion"]["model_hash"] == REF_META["model_hash"]
    lock = json.loads((out / "quickstart.build.lock.json").read_text())
    assert lock["lock_schema_version"] == 1 and "cache_dir" not in lock["spec"]["output"]
    # the installed versions, read on a worker while the build ran
    for package in ("urna", "numpy", "zstandard", "numba"):
        assert lock["packages"][package] == metadata.version(package)
    assert list(out.glob(".*.tmp")) == []  # no write left half-done


def test_top_hit_for_how_do_citations_work_is_row_7(quickstart_build) -> None:
    out, _, _ = quickstart_build
    view = UrnaView.from_bytes((out / "quickstart.urna").read_bytes())
    matrix = np.frombuffer(view.decoded(0x04), dtype="<f4").reshape(12, 256)
    q = PotionEmbedder().embed(["how do citations work"])[0]
    scores = matrix @ q
    assert int(np.argmax(scores)) == 7
    assert abs(float(scores[7]) - 0.5005) < 1e-4  # 04-surface §8.4(c)
    assert canonical.decode_chunk_ids(view.decoded(0x01), 12)[7] == ROW7_ID


def test_rerun_reuses_the_embed_cache(quickstart_build) -> None:
    out, args, first = quickstart_build
    assert first["embed_cache"]["potion"] == {"rows": 12, "cached_rows": 0, "embedded_rows": 12}
    res = _run(args)
    assert res.exit_code == 0
    again = json.loads(res.stdout)
    assert again["embed_cache"]["potion"] == {"rows": 12, "cached_rows": 12, "embedded_rows": 0}
    assert again["outputs"]["quickstart.urna"]["file_hash"] == (
        first["outputs"]["quickstart.urna"]["file_hash"])


def _big_corpus(tmp_path: Path, n: int) -> Path:
    rows = ({"id": f"{i:05d}",
             "text": f"passage {i} about topic {i % 17} and detail {i * 7919 % 1000}"}
            for i in range(n))
    return write_jsonl_spec(tmp_path, rows, name="big", cache_dir=tmp_path / "cache")


# Runs the build in a child whose embedder stalls in its third part, so the parent can
# SIGKILL it mid-embed at a known point.
_CHILD = r"""
import sys, time
from pathlib import Path
import urna.forge.pipeline as pl
from urna.forge.embedders import PotionEmbedder
progress = Path(sys.argv[2])
real = PotionEmbedder.embed
def slow(self, texts):
    out = real(self, texts)
    with progress.open("a") as f:
        f.write("part\n")
    if len(progress.read_text().splitlines()) >= 3:
        time.sleep(120)
    return out
PotionEmbedder.embed = slow
pl.PART_ROWS = 100
from urna.forge.spec import load_spec
pl.build(load_spec(sys.argv[1]))
"""


def test_killed_build_leaves_no_urna_and_rerun_reuses_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec_path = _big_corpus(tmp_path, 650)
    progress = tmp_path / "progress.txt"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(spec_path), str(progress)],
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if progress.exists() and len(progress.read_text().splitlines()) >= 3:
            break
        assert child.poll() is None, "the build ended before it could be killed"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    out = tmp_path / "out"
    assert not list(out.rglob("*.urna"))  # nothing in out/, nothing half-written in .tmp
    from urna.forge import pipeline
    from urna.forge.spec import load_spec

    monkeypatch.setattr(pipeline, "PART_ROWS", 100)
    result = pipeline.build(load_spec(spec_path))
    # killed inside the third embed call: the two finished parts are reused
    assert result["embed_cache"]["potion"] == {"rows": 650, "cached_rows": 200,
                                               "embedded_rows": 450}
    assert (out / "big.urna").is_file()
    assert not list((tmp_path / "cache").rglob("parts/*.npy"))  # folded into the entry


def test_failed_emit_leaves_the_previous_file_untouched(tmp_path: Path) -> None:
    spec_path = _big_corpus(tmp_path, 20)
    assert _run(["build", "--spec", str(spec_path)]).exit_code == 0
    before = (tmp_path / "out" / "big.urna").read_bytes()
    spec_path.write_text(spec_path.read_text().replace('preset = "exact"', 'preset = "bogus"'))
    res = _run(["build", "--spec", str(spec_path)])
    assert res.exit_code == 1
    assert "unknown preset: bogus" in res.stderr and "Traceback" not in res.output
    assert (tmp_path / "out" / "big.urna").read_bytes() == before
    assert list((tmp_path / "out").glob(".*.tmp")) == []  # no write left half-done


def test_sample_builds_a_smaller_file(tmp_path: Path) -> None:
    spec_path = _big_corpus(tmp_path, 40)
    res = _run(["build", "--spec", str(spec_path), "--sample", "5"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["n_items"] == 5
    view = UrnaView.from_bytes((tmp_path / "out" / "big.urna").read_bytes())
    assert view.manifest.n_chunks == 5


def test_documents_build_reports_bad_files_and_never_tracebacks(docs_dir: Path,
                                                                tmp_path: Path) -> None:
    spec = write_documents_spec(tmp_path / "docs.toml", docs_dir, tmp_path, model="potion",
                                source='chunker = "paragraph"')
    res = _run(["build", "--spec", str(spec)])
    assert res.exit_code == 0, res.output
    for name in ("b-latin1.txt", "c-empty.txt", "f-broken.pdf"):
        assert f"skipping {name}" in res.stderr
    assert "Traceback" not in res.output
    view = UrnaView.from_bytes((tmp_path / "out" / "docs.urna").read_bytes())
    spans = canonical.decode_spans(view.decoded(0x03), view.manifest.n_chunks)
    assert {s[0] for s in spans} == {"a.md", "e.html", "sub/d.pdf#page=1"}
    documents = json.loads(res.stdout)["documents"]
    assert (documents["files_read"], documents["skipped"]) == (3, 4)
    assert "[forge] read 3 files, skipped 4: " in res.stderr
    stopped = _run(["build", "--spec", str(spec), "--stop-on-error"])
    assert stopped.exit_code == 1
    assert stopped.stderr.startswith("Error: b-latin1.txt: not UTF-8")
    assert "Traceback" not in stopped.output


def test_progress_is_silent_in_a_pipe_and_draws_on_a_terminal(
        capsys: pytest.CaptureFixture) -> None:
    from urna.forge.pipeline import Progress

    assert Progress().enabled is False  # pytest's stderr is not a terminal
    with Progress().stage("embed", 3) as advance:
        advance(3)
    assert capsys.readouterr().err == ""
    seen = []
    with Progress(enabled=True).stage("embed", 2) as advance:
        advance(1)
        advance(1)
        seen.append(True)
    assert seen == [True]


# A child whose file write stalls halfway (half the bytes on disk), to be killed there.
_CHILD_EMIT = r"""
import sys, time
from pathlib import Path
import urna.forge.emit as emit_mod
def stalled(path, data):  # where write_atomic keeps a write in progress
    part = Path(path).parent / f".{Path(path).name}.killed.tmp"
    part.write_bytes(data[: len(data) // 2])
    Path(sys.argv[2]).write_text("writing")
    time.sleep(120)
emit_mod.write_atomic = stalled
import urna.forge.pipeline as pl
from urna.forge.spec import load_spec
pl.build(load_spec(sys.argv[1]))
"""


def test_build_killed_while_writing_keeps_the_old_file(tmp_path: Path) -> None:
    spec_path = _big_corpus(tmp_path, 30)
    assert _run(["build", "--spec", str(spec_path)]).exit_code == 0
    final = tmp_path / "out" / "big.urna"
    before = final.read_bytes()
    spec_path.write_text(spec_path.read_text().replace('with_graph = false',
                                                       'with_graph = false\ndtype = "float16"'))
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", _CHILD_EMIT, str(spec_path), str(marker)],
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert final.read_bytes() == before  # the old file, whole
    assert [p.name for p in (tmp_path / "out").rglob("*.urna")] == ["big.urna"]
    assert _run(["build", "--spec", str(spec_path)]).exit_code == 0  # rerun cleans up
    assert final.read_bytes() != before
    assert list((tmp_path / "out").glob(".big.urna.*.tmp")) == []


def test_rebuild_only_compares_the_lock(tmp_path: Path) -> None:
    spec_path = _big_corpus(tmp_path, 10)
    out = tmp_path / "out"
    missing = _run(["build", "--spec", str(spec_path), "--rebuild-only"])
    assert missing.exit_code == 1 and "cache for 'potion' is missing" in missing.stderr
    assert _run(["build", "--spec", str(spec_path)]).exit_code == 0
    same = _run(["build", "--spec", str(spec_path), "--rebuild-only"])
    assert same.exit_code == 0 and "divergence" not in same.stderr
    assert not (out / "big.build.lock.rebuild.json").exists()
    lock_path = out / "big.build.lock.json"
    lock = json.loads(lock_path.read_text())
    lock["platform"]["python"] = "0.0.0"
    lock["spec"]["source"]["path"] = "/elsewhere/rows.jsonl"  # a location: never a divergence
    lock_path.write_text(json.dumps(lock))
    diverged = _run(["build", "--spec", str(spec_path), "--rebuild-only"])
    assert diverged.exit_code == 0
    assert "warning: build.lock divergence" in diverged.stderr
    assert "platform.python: '0.0.0'" in diverged.stderr and "source.path" not in diverged.stderr
    assert json.loads(lock_path.read_text())["platform"]["python"] == "0.0.0"  # kept
    assert (out / "big.build.lock.rebuild.json").is_file()
    strict = _run(["build", "--spec", str(spec_path), "--rebuild-only", "--strict-env"])
    assert strict.exit_code == 1 and "build.lock divergence" in strict.stderr


def test_models_subset_must_name_spec_presets(tmp_path: Path) -> None:
    spec_path = _big_corpus(tmp_path, 5)
    res = _run(["build", "--spec", str(spec_path), "--models", "floor"])
    assert res.exit_code == 2 and res.stderr.startswith("spec error: --models: ['floor']")
    ok = _run(["build", "--spec", str(spec_path), "--models", "potion"])
    assert ok.exit_code == 0
    assert json.loads((tmp_path / "out" / "big.build.lock.json").read_text())[
        "models_subset"] == ["potion"]


def test_a_second_text_model_becomes_a_named_space(tmp_path: Path) -> None:
    import urna

    spec_path = _big_corpus(tmp_path, 8)
    spec_path.write_text(spec_path.read_text().replace(
        "[build]", '[[models]]\npreset = "floor"\ntext = "space"\nspace_dtype = "float16"\n'
        '[build]').replace("[output]\n", '[output]\nmode = "both"\n'))
    res = _run(["build", "--spec", str(spec_path)])
    assert res.exit_code == 0, res.output
    assert sorted(json.loads(res.stdout)["outputs"]) == ["big-floor.urna", "big-potion.urna",
                                                          "big.urna"]
    with urna.open(tmp_path / "out" / "big.urna") as f:
        assert f.space_names == ["floor-text"]
        assert f.model_hash == PotionEmbedder().model_hash()
    with urna.open(tmp_path / "out" / "big-potion.urna") as f:
        assert f.space_names == []


def test_duplicate_texts_are_embedded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from urna.forge import pipeline
    from urna.forge.embedders import FloorEmbedder
    from urna.forge.spec import load_spec

    seen: list[str] = []

    class Counting(FloorEmbedder):
        def embed(self, texts):  # noqa: D401 - test double
            seen.extend(texts)
            return super().embed(texts)

    monkeypatch.setattr(pipeline, "create_embedder", lambda *a, **k: Counting())
    spec_path = _big_corpus(tmp_path, 1)
    rows = tmp_path / "dups.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "text": ["alpha", "beta"][i % 2]}) + "\n"
                            for i in range(10)))
    spec_path.write_text(spec_path.read_text().replace('"potion"', '"floor"'))
    spec = load_spec(spec_path)
    spec.source.path = str(rows)
    pipeline.build(spec)
    assert sorted(seen) == ["alpha", "beta"]
    view = UrnaView.from_bytes((tmp_path / "out" / "big.urna").read_bytes())
    m = np.frombuffer(view.decoded(0x04), dtype="<f4").reshape(10, 256)
    want = FloorEmbedder().embed(["alpha", "beta"])
    assert all(np.array_equal(m[i], want[int(k) % 2]) for i, k in
               enumerate(sorted(str(j) for j in range(10))))


def test_a_build_keeps_the_verdicts_its_first_query_takes(verdict_cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The first query after `urna build` opens the file as a repeat open would: the build
    # opened it with every check and proved its texts (runtime.file.keep_verdicts).
    import urna
    from urna.runtime import verdicts

    monkeypatch.chdir(ROOT)
    out = verdict_cache / "out"
    res = _run(["build", "--spec", "examples/quickstart/corpus.toml", "--out-dir", str(out),
                "--cache-dir", str(verdict_cache / "embed")])
    assert res.exit_code == 0, res.output
    path = out / "quickstart.urna"
    kept = verdicts.lookup(str(path), os.stat(path))
    assert kept is not None and verdicts.TEXT_RECORDS in kept.checks
    with urna.open(path) as f:
        assert f._state.view.trusted and f._state.texts_proven
        assert f.content_hash == UrnaView.from_bytes(path.read_bytes()).content_hash()
    before = os.stat(path)
    with open(path, "r+b") as fh:  # a byte changed after the build, the stat kept as it was
        fh.seek(before.st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0x01]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(urna.UrnaError):  # the body digest differs: every check again
        urna.open(path)


def test_a_build_below_the_cache_floor_keeps_no_verdict(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from urna.runtime import verdicts

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    res = _run(["build", "--spec", "examples/quickstart/corpus.toml", "--out-dir", str(out),
                "--cache-dir", str(tmp_path / "embed")])
    assert res.exit_code == 0, res.output
    assert os.path.getsize(out / "quickstart.urna") < verdicts.MIN_BYTES
    assert not (tmp_path / "cache" / "opened").exists()
