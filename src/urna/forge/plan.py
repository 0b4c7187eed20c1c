"""``urna build --dry-run``: the validated plan of a build, with nothing loaded (§3.6).

Nothing is embedded or written, but every source must exist and be readable: a dry run
that passes means the real build will not fail on a missing file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urna.forge.sources import check_sources
from urna.forge.spec import CorpusSpec, cache_root, copy_with, validate


def plan(spec: CorpusSpec, *, out_dir: str | None = None,
         cache_dir: str | None = None) -> dict[str, Any]:
    """The ``--dry-run`` plan: validated spec, readable sources, models, outputs; loads nothing."""
    validate(spec)
    check_sources(spec)
    spec = copy_with(spec, out_dir=out_dir)
    names = []
    if spec.output.mode in ("single", "both"):
        names.append(f"{spec.name}.urna")
    if spec.output.mode in ("per-model", "both"):
        dm = spec.default_model()
        names += [f"{spec.name}-{m.preset}.urna" for m in spec.models
                  if not (m.preset == dm.preset and spec.output.mode == "per-model")]
    models = []
    for m in spec.models:
        deps = "ok"
        if m.preset == "potion":
            try:
                import tokenizers  # noqa: F401
            except ImportError:
                deps = "MISSING"
        elif m.preset == "st":
            try:
                import sentence_transformers  # noqa: F401
            except ImportError:
                deps = "MISSING"
        models.append({"preset": m.preset, "text": m.text, "image": m.image, "dims": m.dims,
                       "deps": deps})
    return {"name": spec.name, "source": {"kind": spec.source.kind},
            "image_input_mode": "source", "media": None, "models": models,
            "spaces": [f"{m.preset}-text" for m in spec.models if m.text == "space"],
            "output_mode": spec.output.mode, "outputs": names,
            "out_dir": str(Path(spec.output.dir).resolve()),
            "cache_dir": str(cache_root(spec, cache_dir).resolve()),
            "provenance": spec.output.provenance}


def format_plan(p: dict[str, Any]) -> str:
    """Human form of a dry-run plan (§3.6 layout)."""
    lines = [f"corpus: {p['name']}  (source={p['source']['kind']}, "
             f"image_input={p['image_input_mode']}, output={p['output_mode']})"]
    for m in p["models"]:
        dims = ",".join(map(str, m["dims"])) or "-"
        lines.append(f"model:  {m['preset']:<20} text={m['text']:<7} image={m['image']:<5} "
                     f"dims={dims} deps={m['deps']}")
    lines.append(f"spaces: {', '.join(p['spaces']) or '(none)'}")
    lines.append(f"files:  {', '.join(p['outputs'])}")
    lines.append(f"out:    {p['out_dir']}")
    lines.append(f"cache:  {p['cache_dir']}  (embed/<preset>/<triad>.npz, shared)")
    return "\n".join(lines)
