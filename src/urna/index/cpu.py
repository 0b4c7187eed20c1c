"""What this machine's kernels are, as the reference names it; imports no numpy.

``URNA_FORCE_SCALAR`` (set and not "0") forces the scalar order and the numpy paths, as the
reference's variable does; otherwise the label comes from the CPU, detected once per process.
"""

from __future__ import annotations

import os


def force_scalar() -> bool:
    """Whether ``URNA_FORCE_SCALAR`` asks for the scalar kernels."""
    v = os.environ.get("URNA_FORCE_SCALAR")
    return v is not None and v != "0"


def _detect_simd() -> str:
    if force_scalar():
        return "scalar"
    if hasattr(os, "uname"):  # what platform.machine() reads here, without importing it
        machine = os.uname().machine.lower()  # (3-13 ms of a one-shot `urna stats`)
    else:
        import platform

        machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "neon"
    if machine in ("x86_64", "amd64"):
        try:
            with open("/proc/cpuinfo", "rb") as fh:  # bytes: no codec to look up
                flags = fh.read()
            if b" avx2" in flags and b" fma" in flags:
                return "avx2"
        except OSError:
            return "scalar"
    return "scalar"


_SIMD: list[str] = []


def simd_backend() -> str:
    """The reference's label for this machine's kernels: ``scalar``, ``avx2`` or ``neon``.

    Detected once per process like the reference: ``URNA_FORCE_SCALAR``, then the CPU.
    """
    if not _SIMD:
        _SIMD.append(_detect_simd())
    return _SIMD[0]
