"""`urna media --export` writes only inside DIR, whatever the blob uris say (issue 7)."""

from __future__ import annotations

import hashlib
import os

import pytest

import urna
from helpers.cli_runner import invoke
from urna.runtime.media import MAX_NAME_BYTES, safe_blob_name

ZERO = "sha256:" + "0" * 64
HOSTILE = ["../../escape.bin", "/etc/absolute.bin", "media://sub/../../x.bin", "nul\x00byte.bin",
           "back\\slash\\..\\x.bin", "x" * 1000 + ".jpg", "media://plain.bin"]


def build_media_file(tmp_path, uris):
    blobs = []
    for i in range(len(uris)):
        p = tmp_path / f"blob{i}"
        p.write_bytes(f"payload {i}".encode())
        blobs.append(p)
    refs = [{"content_hash": hashlib.sha256(p.read_bytes()).hexdigest(), "original_uri": u,
             "byte_len": p.stat().st_size, "inlined": True}
            for p, u in zip(blobs, uris, strict=True)]
    chunks = [{"canonical_text": "t", "source_uri": "d", "byte_start": 0, "byte_end": 1,
               "embedding": [1.0, 0.0, 0.0, 0.0]}]
    return urna.build(tmp_path / "m.urna", "demo", 4, "c/1", ZERO, chunks, blob_refs=refs,
                      blob_data_paths=[str(p) for p in blobs])


def test_hostile_uris_are_written_inside_dir_only(tmp_path):
    path = build_media_file(tmp_path, HOSTILE)
    out = tmp_path / "deep" / "out"
    before = set(p for p in tmp_path.rglob("*"))
    result = invoke(["media", path, "--export", str(out)])
    assert result.exit_code == 0, result.output
    created = set(tmp_path.rglob("*")) - before
    assert created and all(p == out or out in p.parents or p in out.parents for p in created)
    names = sorted(p.name for p in out.iterdir())
    assert "escape.bin" in names and "absolute.bin" in names and "plain.bin" in names
    assert all(len(n.encode()) <= MAX_NAME_BYTES and "\x00" not in n for n in names)


def test_planted_symlink_is_not_followed(tmp_path):
    path = build_media_file(tmp_path, ["media://plain.bin"])
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    os.symlink(victim, out / "plain.bin")
    result = invoke(["media", path, "--export", str(out)])
    assert result.exit_code == 1
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("uri, name", [("media://a/b/c.avif", "c.avif"), ("..", None), ("a/", None),
                                       ("x/.", None), ("tab\there", "tab_here")])
def test_safe_names(uri, name):
    assert safe_blob_name(uri) == name
