"""Fixtures of the index tests: which exact-scan screen runs."""

from __future__ import annotations

import pytest

from urna.index import exact


def _tiers() -> list[str]:
    from urna.index import _scan_kernels

    return list(_scan_kernels.RUNNABLE)


@pytest.fixture(params=[*_tiers(), "numpy"])
def screen_backend(request, monkeypatch):
    """Run a test with each numba screen tier this machine can run (VNNI, AVX2, portable) and
    with the numpy / BLAS screen."""
    if request.param != "numpy":
        from urna.index import _scan_kernels

        assert exact.load_kernels()
        monkeypatch.setattr(exact._RENT, "spent", exact._RENT.budget)
        assert exact._scan_kernels() is not None
        monkeypatch.setattr(exact, "_SCAN", [_scan_kernels.RUNNABLE[request.param]])
    else:
        monkeypatch.setattr(exact, "_SCAN", [None])
    return request.param
