"""Model fingerprints are computed once per state of the model files, not once per process
(#20): a new embedder reuses the cached fingerprint, a touched file or a broken cache entry
means hashing again, and the model_hash never changes with the cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import urna.forge.embedders.base as base
import urna.forge.embedders.potion as potion_mod
from urna.forge.embedders import PotionEmbedder
from urna.forge.embedders.potion import POTION_DIR, POTION_FILES

ROOT = Path(__file__).resolve().parents[2]
REF_META = json.loads((ROOT / "tests/data/ref-0.5.1/quickstart.chunks.json").read_text())["meta"]


@pytest.fixture()
def hashed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Names of the files SHA-256-hashed from now on (the real hash still runs)."""
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[str] = []
    real = base.sha256_file

    def counting(path: Path) -> str:
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(base, "sha256_file", counting)
    monkeypatch.setattr(potion_mod, "sha256_file", counting)
    return seen


def test_a_second_embedder_reuses_the_fingerprint(hashed: list[str]) -> None:
    first = PotionEmbedder().model_hash()
    assert first == REF_META["model_hash"] and "model.safetensors" in hashed
    hashed.clear()
    assert PotionEmbedder().model_hash() == first
    assert hashed == []  # the 30 MB table was not hashed again


def test_touching_a_model_file_recomputes(hashed: list[str], tmp_path: Path) -> None:
    model = tmp_path / "potion"
    shutil.copytree(POTION_DIR, model)
    want = PotionEmbedder(model).model_hash()
    hashed.clear()
    table = model / "model.safetensors"
    st = table.stat()
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert PotionEmbedder(model).model_hash() == want  # same bytes, same hash
    assert "model.safetensors" in hashed


def test_a_corrupt_or_unwritable_cache_just_recomputes(hashed: list[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    want = PotionEmbedder().model_hash()
    entries = list((tmp_path / "cache" / "fingerprints").glob("*.json"))
    assert len(entries) == 1
    for garbage in (b"", b"{not json", b'{"schema": 1, "files": [], "fingerprint": {}}',
                    b"\xff\xfe"):
        entries[0].write_bytes(garbage)
        hashed.clear()
        assert PotionEmbedder().model_hash() == want
        assert "model.safetensors" in hashed
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("URNA_CACHE_DIR", str(blocker))
    assert PotionEmbedder().model_hash() == want


def test_the_fingerprint_is_reused_across_processes(tmp_path: Path) -> None:
    code = ("import sys, urna.forge.embedders.base as b, urna.forge.embedders.potion as p\n"
            "n = []\nreal = b.sha256_file\n"
            "def spy(path):\n    n.append(str(path))\n    return real(path)\n"
            "b.sha256_file = p.sha256_file = spy\n"
            "print(p.PotionEmbedder().model_hash(), len(n))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "URNA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True).stdout.split() for _ in range(2)]
    assert runs[0][0] == runs[1][0] == REF_META["model_hash"]
    assert int(runs[0][1]) == len(POTION_FILES) + 1  # the files and the tokenizer, once
    assert runs[1][1] == "0"


def test_ask_imports_no_optional_backend(tmp_path: Path) -> None:
    code = ("import sys\nfrom urna.cli import main\n"
            "try:\n    main(['ask', sys.argv[1], 'offline', '-k', '1'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "heavy = ('sentence_transformers', 'torch', 'ray', 'pypdf', 'bs4', 'pyarrow', 'rich')\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)), file=sys.stderr)\n")
    ref = ROOT / "tests" / "data" / "ref-0.5.1" / "quickstart-exact.urna"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "URNA_CACHE_DIR": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", code, str(ref)], capture_output=True,
                         text=True, env=env, check=True)
    assert res.stderr.strip().splitlines()[-1] == "[]"
