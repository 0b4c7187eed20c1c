"""`urna inspect`, `urna validate`, `urna cite` against the reference vectors (04-surface §2.3)."""

from __future__ import annotations

import json

import pytest

from helpers.cli_runner import invoke
from helpers.mutate import find_entry
from helpers.vectors import DATA, REF, expected

GOLDEN = DATA / "golden_v1_minimal.urna"


def run(*args):
    return invoke([str(a) for a in args])


@pytest.mark.parametrize("name", sorted(expected()))
def test_validate_prints_reference_hashes(name):
    result = run("validate", REF / name)
    assert result.exit_code == 0, result.output
    info = expected()[name]
    lines = result.stdout.splitlines()
    assert lines[0] == f"OK: {REF / name} is a valid .urna v1 file"
    assert f"  File hash:          {info['file_hash']}" in lines
    assert f"  Content hash:       {info['content_hash']}" in lines
    assert f"  Section checksums:  {len(info['inspect']['sections'])} sections OK" in lines


def test_validate_json():
    result = run("validate", GOLDEN, "--json")
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["content_hash"].startswith("sha256:982e9860")


def test_validate_blobs_line_only_with_inlined_data():
    result = run("validate", REF / "quickstart-blobs.urna")
    assert "  Inlined blobs:      1 verified against blob_refs" in result.stdout.splitlines()
    assert "Inlined blobs" not in run("validate", GOLDEN).stdout


def test_validate_corrupted_file_exits_1_naming_the_class(tmp_path):
    data = bytearray(GOLDEN.read_bytes())
    _, _, entry = find_entry(data, 2)
    data[entry.offset + 12] ^= 1
    bad = tmp_path / "bad.urna"
    bad.write_bytes(bytes(data))
    result = run("validate", bad)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "Error: SectionChecksumMismatch: section 2 checksum mismatch"


def test_validate_refuses_a_resealed_hnsw_payload_as_the_open_does(tmp_path):
    from helpers.mutate import apply_case, load_cases

    case = load_cases()["quickstart-hybrid__s07_payload_zero_fixed"]
    bad = tmp_path / "bad.urna"
    bad.write_bytes(apply_case(case))
    result = run("validate", bad)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == f"Error: {case['variant']}: {case['message']}"


@pytest.mark.parametrize("name", sorted(expected()))
def test_inspect_json_equals_reference_dict(name):
    result = run("inspect", REF / name, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    ref = dict(expected()[name]["inspect"])
    assert doc.pop("simd_backend") in ("scalar", "avx2", "neon", "numba", "numpy")
    ref.pop("simd_backend")
    assert doc == ref
    assert list(doc) == ["magic", "version_major", "version_minor", "format_version",
                         "schema_version", "embedding_dim", "n_chunks", "n_embeddings",
                         "file_size", "manifest", "sections", "blobs", "spaces", "file_hash",
                         "content_hash"]


def test_inspect_human_form():
    lines = run("inspect", GOLDEN).stdout.splitlines()
    assert lines[:4] == ['Magic: "URNA"', "Version: 1.0", "File size: 1366 bytes", "Sections: 6"]
    assert lines[4] == ("0x01 chunk_ids                encoding=raw offset=832 size=87 "
                        "checksum=25a2ed26e1382cfb")
    assert lines[-1] == ("Content hash: "
                         "sha256:982e986094ae9c3f14ccdb19faf0d27d8f9155bfc53b025b37b0624fab78a378")


def test_cite_resolves_a_reference_hit():
    name = "quickstart-zstd_f32.urna"
    hit = expected()[name]["queries"][0]["retrieve"][0]
    result = run("cite", REF / name, hit["citation_id"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"citation_id:  {hit['citation_id']}"
    assert lines[4] == f"chunk_id:     {hit['chunk_id']}"
    assert lines[5] == f"source_uri:   {hit['source_uri']}"
    assert lines[6:8] == [f"byte_start:   {hit['offset_start']}",
                          f"byte_end:     {hit['offset_end']}"]
    assert lines[8] == "text:" and lines[9] == hit["text"]


def test_cite_refuses_other_corpus_and_unknown_chunk():
    hit = expected()["quickstart-exact.urna"]["queries"][0]["retrieve"][0]
    other = run("cite", REF / "quickstart-hybrid.urna", hit["citation_id"])
    assert other.exit_code == 1 and "content_hash mismatch: citation says" in other.stderr
    content = expected()["quickstart-exact.urna"]["content_hash"]
    missing = run("cite", REF / "quickstart-exact.urna", f"urna://{content}/sha256:{'ab' * 32}")
    assert missing.exit_code == 1 and "not found in file" in missing.stderr
    wrong = run("cite", REF / "quickstart-exact.urna", "nest://x/y")
    assert wrong.exit_code == 1 and "citation must start with 'urna://'" in wrong.stderr


def test_cli_missing_file_is_a_one_line_error(tmp_path):
    result = run("validate", tmp_path / "nope.urna")
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["quickstart-zstd_f32.urna", "quickstart-exact.urna"])
def test_repeat_calls_with_kept_verdicts_print_the_same(name, verdict_cache):
    import shutil

    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    hit = expected()[name]["queries"][0]["retrieve"][0]
    for args in (("cite", path, hit["citation_id"]), ("inspect", path), ("validate", path)):
        first, again, third = (run(*args) for _ in range(3))  # full, then trusted by verdicts
        assert first.exit_code == 0, first.output
        assert first.stdout == again.stdout == third.stdout


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "quickstart-exact.urna"])
def test_a_passed_validate_keeps_the_open_verdict(name, verdict_cache):
    import os
    import shutil

    import urna
    from urna.runtime import verdicts
    from urna.runtime.validation import SETTLED

    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    assert run("validate", path).exit_code == 0
    kept = verdicts.lookup(str(path), os.stat(path), SETTLED)
    assert kept is not None and kept.content_hash == expected()[name]["content_hash"]
    with urna.open(path) as f:  # the next open hashes the body once and trusts it
        assert f._state.view.trusted


def test_a_failed_validate_keeps_no_verdict(verdict_cache):
    import os

    from helpers.mutate import apply_case, load_cases
    from urna.runtime import verdicts

    bad = verdict_cache / "bad.urna"
    bad.write_bytes(apply_case(load_cases()["quickstart-hybrid__s07_payload_zero_fixed"]))
    assert run("validate", bad).exit_code == 1
    assert verdicts.lookup(str(bad), os.stat(bad), frozenset()) is None


@pytest.mark.parametrize("name", ["quickstart-zstd_f32.urna", "synthetic-exact.urna"])
def test_cite_of_every_chunk_through_a_kept_verdict_prints_the_full_parse(name, verdict_cache):
    # a trusted cite walks 0x02 / 0x03 only up to the cited record: first, middle and last
    import shutil

    info = expected()[name]
    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    citations = [f"urna://{info['content_hash']}/{chunk}" for chunk in info["chunk_ids"]]
    fresh = [run("cite", REF / name, c).stdout for c in citations]  # no verdict: full parse
    run("validate", path)  # keeps the verdict with the records proven
    trusted = [run("cite", path, c) for c in citations]
    assert all(r.exit_code == 0 for r in trusted)
    assert [r.stdout.replace(str(path), str(REF / name)) for r in trusted] == fresh
    hits = {h["chunk_id"]: h for q in info["queries"] for h in q["retrieve"]}
    for chunk, out in zip(info["chunk_ids"], fresh, strict=True):
        if chunk in hits:
            assert f"text:\n{hits[chunk]['text']}" in out
