"""Fixtures of the index tests: which exact-scan screen runs."""

from __future__ import annotations

import pytest

from urna.index import exact


@pytest.fixture(params=["kernels", "portable", "numpy"])
def screen_backend(request, monkeypatch):
    """Run a test with this machine's numba screens (VNNI where the CPU has it), with the
    portable int16 screens, and with the numpy / BLAS screen."""
    if request.param in ("kernels", "portable"):
        assert exact.load_kernels()
        monkeypatch.setattr(exact._RENT, "spent", exact._RENT.budget)
        assert exact._scan_kernels() is not None
        if request.param == "portable":
            from urna.index import _scan_kernels

            monkeypatch.setattr(exact, "_SCAN", [_scan_kernels.PORTABLE
                                                 | {"kth": _scan_kernels.kth_largest,
                                                    "quantise": _scan_kernels.quantise_query}])
    else:
        monkeypatch.setattr(exact, "_SCAN", [None])
    return request.param
