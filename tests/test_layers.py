"""The package's import graph: no cycle, and imports point down the layers only.

Counts every import, including those inside functions and under TYPE_CHECKING, read from the
AST of each module under src/urna (04: cli -> serve / mcp / tui / integrations -> forge ->
runtime / build -> index -> format -> errors).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "urna"

# Rank of each top-level part; an import may only reach an equal or lower rank (same part:
# any module), never a higher one. Modules at the package root are listed by name.
LAYER = {
    "errors": 0, "argument_conversion": 0, "_atomic": 0, "_cache_dir": 0, "_version": 0,
    "format": 1,
    "index": 2,
    "runtime": 3, "build": 3, "build_args": 3, "build_media": 3, "build_options": 3,
    "forge": 4,
    "serve": 5, "mcp": 5, "tui": 5, "integrations": 5,
    "cli": 6,
    "__init__": 7, "__main__": 7,
}


def _module_name(path: Path, src: Path = SRC) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("urna"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - node.level + 1]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("urna"):
                continue
            for alias in node.names:  # `from pkg import module` is an edge to the module
                sub = f"{mod}.{alias.name}"
                out.add(sub if sub in modules else mod)
    return out


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = {_module_name(p, package.parent): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for imp in _imports(path, name, set(files)):
            # resolve to the longest existing module name
            parts = imp.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
        graph[name] = targets
    return graph


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_has_a_layer() -> None:
    parts = {_part(m) for m in _graph()}
    assert parts <= set(LAYER), f"give these a layer in LAYER: {sorted(parts - set(LAYER))}"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every edge from a part to a higher-ranked part, as ``src -> dst``."""
    return sorted(
        f"{src} -> {dst}"
        for src, dsts in graph.items() for dst in dsts
        if _part(src) != _part(dst) and LAYER.get(_part(dst), 99) > LAYER.get(_part(src), 99)
    )


def test_imports_point_down() -> None:
    upward = _upward(_graph())
    assert not upward, "upward imports:\n" + "\n".join(upward)


@pytest.mark.parametrize("body", [
    "from urna.forge import spec\n",
    "def f():\n    from urna.forge import spec\n",
    "class C:\n    def m(self):\n        import urna.forge.spec\n",
    "def f():\n    if True:\n        from ..forge.spec import load_spec\n",
    "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from urna.forge.spec import CorpusSpec\n",
])
def test_a_planted_upward_import_is_found(tmp_path: Path, body: str) -> None:
    # A tree shaped like the package: format (rank 1) reaching up into forge (rank 4).
    pkg = tmp_path / "urna"
    for rel in ("__init__.py", "format/__init__.py", "forge/__init__.py", "forge/spec.py",
                "errors.py"):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text("")
    (pkg / "format" / "reader.py").write_text("from urna.errors import x\n" + body)
    assert _upward(_graph(pkg)) == ["urna.format.reader -> urna.forge.spec"]
    (pkg / "format" / "reader.py").write_text("from urna.errors import x\n")
    assert _upward(_graph(pkg)) == []


def _cycle_from(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle_from(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("source,expected", [
    ("from . import x", {"urna.a.x"}),
    ("from . import helper", {"urna.a"}),
    ("from ..c import d", {"urna.c"}),
    ("def f():\n    from urna.a import x\n", {"urna.a.x"}),
    ("import urna.c, os", {"urna.c"}),
])
def test_imports_are_read_with_function_level_and_relative_ones(
        tmp_path: Path, source: str, expected: set[str]) -> None:
    mod = tmp_path / "b.py"
    mod.write_text(source)
    assert _imports(mod, "urna.a.b", {"urna.a", "urna.a.x", "urna.c"}) == expected


def test_a_cycle_is_found() -> None:
    assert _cycle_from({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle_from({"a": {"b"}, "b": set()}) is None
