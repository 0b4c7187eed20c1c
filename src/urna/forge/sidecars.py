"""The sidecars of a build: ``<name>.manifest.json`` and ``<name>.build.lock.json`` (§3.5).

The lock pins platform, package versions, model hashes and the resolved spec; a
``--rebuild-only`` run compares its lock with the old one (location keys ignored).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urna.errors import ForgeError
from urna.forge.canonical import write_json
from urna.forge.sources.item import Row
from urna.forge.spec import CorpusSpec
from urna.format.ahead import Job, submit


def _redact(path: str, mode: str, spec_dir: Path) -> str:
    if mode == "full":
        return str(Path(path).resolve())
    try:
        return os.path.relpath(Path(path).resolve(), spec_dir.resolve())
    except ValueError:
        return Path(path).name


def _read_package_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for pkg in ("urna", "numpy", "tokenizers", "zstandard", "numba"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


_VERSIONS: list[Job] = []  # this process's reading of them (the environment's, not a build's)


def start_package_versions() -> None:
    """Start reading the lock's package versions on a worker: importing ``importlib.metadata``
    and the lookups take ~40 ms of a small build, which its stages' waits then cover."""
    if not _VERSIONS:
        job = Job(_read_package_versions, ())
        submit(job)
        _VERSIONS.append(job)


def _package_versions() -> dict[str, str]:
    start_package_versions()
    return dict(_VERSIONS[0].result())


# keys that name places, not inputs: a rebuild elsewhere may differ in them
_LOCATION_KEYS = ("spec_path", "output.dir", "output.cache_dir", "source.path", "source.db")


def lock_diffs(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two build locks (location keys ignored)."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        dotted = f"{prefix}{key}"
        if dotted.removeprefix("spec.") in _LOCATION_KEYS:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += lock_diffs(a, b, dotted + ".")
        elif a != b:
            out.append(f"{dotted}: {a!r} -> {b!r}")
    return out


@dataclass(frozen=True)
class BuildRecord:
    """What the sidecars of a finished build describe."""

    spec: CorpusSpec
    out_dir: Path
    rows: Sequence[Row]
    input_hash: str
    model_meta: dict[str, dict[str, Any]]
    timings: dict[str, float]
    rebuild_only: bool = False
    strict_env: bool = False
    models_subset: list[str] | None = None
    report: Callable[[str], None] | None = None


def finalize(record: BuildRecord, result: dict[str, Any]) -> None:
    """Write ``<name>.manifest.json`` and ``<name>.build.lock.json`` (atomic) into ``result``."""
    spec = record.spec
    mode = spec.output.provenance
    spec_dir = Path(spec.spec_path).parent if spec.spec_path else record.out_dir
    resolved = spec.to_dict()
    resolved["output"].pop("cache_dir", None)
    lock = {"lock_schema_version": 1, "platform": {"python": platform.python_version(),
            "system": platform.system(), "machine": platform.machine()},
            "packages": _package_versions(),
            "models": {p: m["model_hash"] for p, m in record.model_meta.items()},
            "device": os.environ.get("URNA_ST_DEVICE", "auto"), "spec": resolved}
    lock_path = record.out_dir / f"{spec.name}.build.lock.json"
    say = record.report or (lambda m: print(m, file=sys.stderr))
    if record.rebuild_only and lock_path.is_file():
        diffs = lock_diffs(json.loads(lock_path.read_text()), lock)
        if diffs:
            msg = "build.lock divergence (L3 not claimable): " + "; ".join(diffs[:8])
            if record.strict_env:
                raise ForgeError(msg)
            say(f"[forge] warning: {msg}")
            lock_path = record.out_dir / f"{spec.name}.build.lock.rebuild.json"
    if record.models_subset is not None:
        lock["models_subset"] = sorted(record.models_subset)
    if record.models_subset is not None and lock_path.is_file():
        say("[forge] --models subset: keeping the existing build.lock untouched")
    else:
        write_json(lock_path, lock)
    items: Any
    if mode == "minimal":
        items = [{"key": r.key, "ordinal": r.ordinal} for r in record.rows]
    else:
        items = [{"key": r.key, "label": r.label, "ordinal": r.ordinal,
                  "source_uri": r.source_uri} for r in record.rows]
    manifest = {
        "manifest_schema_version": 1, "name": spec.name, "n_items": len(record.rows),
        "n_unique_frames": len(record.rows), "corpus_input_hash": record.input_hash,
        "text_quality": "template" if spec.source.text.template or spec.source.kind == "documents"
        else "identity-only",
        "models": record.model_meta, "spaces": [
            {"name": f"{m.preset}-text", "preset": m.preset, "modality": "text", "dim": None,
             "space_dtype": m.space_dtype} for m in spec.models if m.text == "space"],
        "media": None, "provenance_mode": mode, "timings": record.timings,
        "outputs": {k: {**v, "file": _redact(v["file"], mode, spec_dir)}
                    for k, v in result["outputs"].items()},
        "items": items,
    }
    if mode == "full":
        manifest["sql"] = spec.source.query
    man_path = record.out_dir / f"{spec.name}.manifest.json"
    write_json(man_path, manifest)
    result["manifest"] = str(man_path)
    result["build_lock"] = str(lock_path)
