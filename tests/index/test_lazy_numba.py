"""numba (~0.5 s to import) loads only when a compiled kernel is first needed.

Claims, each in a fresh interpreter: ``simd_backend()`` (what ``urna inspect`` prints) does
not import numba and gives the label it gives once the kernels are loaded; opening a file and
searching a small slab (numpy path) do not import numba either.
"""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.vectors import REF

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "src")


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=SRC)
    env.pop("URNA_FORCE_SCALAR", None)
    return subprocess.run([sys.executable, "-c", code], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_simd_label_without_numba_equals_label_with_kernels() -> None:
    out = _run("import sys\nfrom urna.index import exact\nbefore = exact.simd_backend()\n"
               "loaded = 'numba' in sys.modules\nexact._kernels()\n"
               "print(before, loaded, exact.simd_backend())")
    before, loaded, after = out.split()
    assert loaded == "False" and before == after


def test_open_and_small_search_stay_on_numpy() -> None:
    path = REF / "quickstart-exact.urna"
    out = _run("import sys\nimport numpy as np\nimport urna\n"
               f"f = urna.open({str(path)!r})\n"
               "f.search(np.ones(f.embedding_dim, np.float32), 3)\n"
               "print('numba' in sys.modules)")
    assert out == "False"


def test_exact_search_of_a_large_float32_slab_stays_on_numpy() -> None:
    # 3,000 x 384 is past NUMBA_MIN_VALUES: the screen + numpy rescoring still answers it
    out = _run("import sys\nimport numpy as np\nfrom urna.index import exact\n"
               "m = np.random.default_rng(1).standard_normal((3000, 384)).astype(np.float32)\n"
               "assert m.size >= exact.NUMBA_MIN_VALUES\n"
               "ids, _ = exact.search(exact.Slab.float32(m), m[7], 5)\n"
               "print(ids[0], 'numba' in sys.modules)")
    assert out == "7 False"


def test_rescoring_loads_the_kernels_once_it_has_cost_their_load() -> None:
    # A resident process rescoring small pools query after query (a library's hybrid asks)
    # pays numpy's rescoring every time: once that has cost the kernels' load (the exact
    # family's rent, made small here), they load, and score the same bits.
    out = _run("import sys\nimport numpy as np\nfrom urna.index import exact\n"
               "exact._RENT.budget = 0.02\n"
               "rng = np.random.default_rng(5)\n"
               "m = rng.standard_normal((2000, 64)).astype(np.float32)\n"
               "slab = exact.Slab.float32(m)\n"
               "q = m[3] / np.linalg.norm(m[3])\n"
               "rows = rng.integers(0, 2000, 200)\n"
               "first = exact.score_rows(slab, q, rows)\n"
               "early = 'numba' in sys.modules\n"
               "calls = 0\n"
               "while not exact._NUMBA_LOADED and calls < 20000:\n"
               "    exact.score_rows(slab, q, rows)\n"
               "    calls += 1\n"
               "loaded = exact._NUMBA_LOADED and exact._NUMBA is not None\n"
               "later = exact.score_rows(slab, q, rows)\n"
               "print(early, loaded, first.view(np.uint32).tolist() == "
               "later.view(np.uint32).tolist())")
    assert out == "False True True"
