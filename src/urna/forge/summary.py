"""The short human summary ``urna build`` prints on a terminal instead of the result JSON."""

from __future__ import annotations

from typing import Any


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"


def format_result(result: dict[str, Any]) -> str:
    """A few lines: what was written, how big, how long, and the next command to run."""
    outputs = result.get("outputs", {})
    lines: list[str] = []
    if "catalog" in result:
        total = sum(int(o.get("bytes", 0)) for o in outputs.values())
        lines.append(f"built {len(outputs)} shard(s) of {result['n_items']} chunks "
                     f"({_size(total)}, engine {result['engine']}; built "
                     f"{len(result['built'])}, skipped {len(result['skipped'])})")
        lines.append(f"  catalog: {result['catalog']}")
        target = str(result["catalog"])
    else:
        for o in outputs.values():
            lines.append(f"built {o['file']}: {result['n_items']} chunks, {_size(int(o['bytes']))}")
        target = next((str(o["file"]) for o in outputs.values()), "")
        for preset, st in sorted(result.get("embed_cache", {}).items()):
            lines.append(f"  embed {preset}: {st['embedded_rows']} embedded, "
                         f"{st['cached_rows']} from the cache")
    timings = result.get("timings", {})
    if timings:
        lines.append("  time: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    for key in ("manifest", "build_lock"):
        if key in result:
            lines.append(f"  {key.replace('_', ' ')}: {result[key]}")
    if target:
        lines.append(f'next: urna ask {target} "your question"   (--json: the full result)')
    return "\n".join(lines)
