"""A resident server keeps freed blocks in the heap (``runtime.heap``): its next request's
buffers reuse pages already faulted in instead of fresh ones from the kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna

SRC = str(Path(urna.__file__).resolve().parent.parent)

# Validates the file twice (the server's first requests), then reports the page faults of
# three more: what each later request of a resident server costs the kernel.
DRIVER = r'''
import json, resource, sys
from urna.runtime.heap import keep_freed_memory
from urna.runtime.validation import validate_bytes
tuned = keep_freed_memory() if sys.argv[1] == "1" else None
data = open(sys.argv[2], "rb").read()
for _ in range(2):
    validate_bytes(data)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    validate_bytes(data)
print(json.dumps({"tuned": tuned,
                  "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
'''


@pytest.fixture(scope="module")
def hybrid_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6,000 chunks with HNSW and BM25 (2.7 MB): validate decodes every section."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    vecs = rng.standard_normal((6000, 64)).astype(np.float32)
    chunks = [{"canonical_text": " ".join(rng.choice(words, 40)),
               "source_uri": f"doc{i % 50}.txt", "byte_start": i, "byte_end": i + 10,
               "embedding": vecs[i].tolist()} for i in range(6000)]
    path = tmp_path_factory.mktemp("heap") / "hybrid.urna"
    urna.build(str(path), "m", 64, "v1", "sha256:" + "00" * 32, chunks, preset="hybrid",
               reproducible=True)
    return path


def _run(tune: str, path: Path, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", DRIVER, tune, str(path)], capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=SRC, **env))
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_repeated_request_faults_in_fewer_fresh_pages(hybrid_file: Path) -> None:
    plain, tuned = _run("0", hybrid_file), _run("1", hybrid_file)
    assert tuned["tuned"] is True
    assert tuned["faults"] < plain["faults"] * 3 // 4, (plain, tuned)


def test_the_opt_out_leaves_the_allocator_alone(hybrid_file: Path) -> None:
    assert _run("1", hybrid_file, URNA_KEEP_FREED="0")["tuned"] is False
