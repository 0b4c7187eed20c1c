"""``urna doctor``: check that this install can build and answer offline (04-surface §2.3).

Checks run in order; the first failure's code is the exit code: 3 a required
dependency is missing, 5 the potion table is missing / a git-lfs pointer / not the table
its SOURCE.md names, 6 the offline probe embed failed. Optional extras only warn.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

from urna.errors import EmbedderError
from urna.forge.embedders.potion import POTION_DIR, PotionEmbedder, check_potion_dir


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _recorded_model_hash() -> str | None:
    """The model_hash the vendored table's SOURCE.md records, if it records one."""
    try:
        text = (POTION_DIR / "SOURCE.md").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"model_hash\s*`(sha256:[0-9a-f]{64})`", text)
    return m.group(1) if m else None


def run_checks() -> tuple[list[dict[str, Any]], int]:
    """Run every check; return (checks, exit code)."""
    checks: list[dict[str, Any]] = []

    def add(status: str, what: str, detail: str, code: int = 0) -> None:
        checks.append({"status": status, "what": what, "detail": detail, "code": code})

    add("ok", "version", f"urna {_version('urna') or 'dev'}, format v1")
    required = ("numpy", "tokenizers", "zstandard")  # the CLI is the standard library's
    for pkg in required:
        v = _version(pkg)
        if v is None:
            add("fail", "python deps", f"{pkg} missing (pip install {pkg})", 3)
            return checks, 3
    add("ok", "python deps", ", ".join(f"{p} {_version(p)}" for p in required))
    try:
        import zstandard

        add("ok", "libzstd", ".".join(map(str, zstandard.ZSTD_VERSION)))
    except (ImportError, AttributeError) as e:  # pragma: no cover - dep checked above
        add("warn", "libzstd", str(e))
    numba = _version("numba")
    if numba:
        add("ok", "numba", f"{numba} (fast kernels available)")
    else:
        add("warn", "numba", "not installed; plain numpy kernels (pip install numba)")
    for pkg, extra, why in (("pypdf", "pdf", "PDF text in documents builds"),
                            ("sentence-transformers", "st", "bring-your-own models")):
        v = _version(pkg)
        add("ok" if v else "warn", pkg, f"{v}" if v else f"not installed ({why}: "
            f"pip install 'urna[{extra}]')")
    try:
        check_potion_dir(POTION_DIR)
    except EmbedderError as e:
        add("fail", "potion table", str(e), 5)
        return checks, 5
    size_mb = (POTION_DIR / "model.safetensors").stat().st_size / 1e6
    emb = PotionEmbedder()
    try:
        got = emb.model_hash()
    except (EmbedderError, OSError, ValueError) as e:
        add("fail", "potion table", f"unreadable: {e}", 5)
        return checks, 5
    want = _recorded_model_hash()
    if want is not None and got != want:
        add("fail", "potion table", f"model_hash {got} differs from SOURCE.md's {want}", 5)
        return checks, 5
    add("ok", "potion table", f"{POTION_DIR / 'model.safetensors'} ({size_mb:.1f} MB), "
        f"model_hash {got}")
    try:
        vec = emb.embed(["urna doctor probe"])[0]
        norm = float((vec * vec).sum()) ** 0.5
        if vec.shape[0] != emb.embedding_dim or abs(norm - 1.0) > 1e-3:
            raise ValueError(f"bad probe vector (dim {vec.shape[0]}, norm {norm:.4f})")
    except Exception as e:  # noqa: BLE001 - doctor reports any probe failure as code 6
        add("fail", "offline embed", f"{type(e).__name__}: {e}", 6)
        return checks, 6
    add("ok", "offline embed", f"dim {emb.embedding_dim}, model {emb.embedding_model}")
    return checks, 0
