"""Every public function under src/urna has type hints and a docstring (README "Layout").

Public: a module-level function or a method of a class, neither starting with ``_``, in a module
whose path has no ``_``-prefixed part. Hints: every parameter but ``self`` / ``cls`` and the
return. A property setter shares its getter's docstring and is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "urna"


Def = ast.FunctionDef | ast.AsyncFunctionDef


def _public_defs(tree: ast.Module) -> list[tuple[str, Def, bool]]:
    out: list[tuple[str, Def, bool]] = []
    for node in tree.body:
        if isinstance(node, Def) and not node.name.startswith("_"):
            out.append((node.name, node, False))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            out.extend((f"{node.name}.{sub.name}", sub, True) for sub in node.body
                       if isinstance(sub, Def) and not sub.name.startswith("_"))
    return out


def _is_setter(fn: Def) -> bool:
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter")
               for d in fn.decorator_list)


def gaps(source: str) -> list[str]:
    """``name: what is missing`` for each public function of one module's source."""
    out = []
    for name, fn, is_method in _public_defs(ast.parse(source)):
        if _is_setter(fn):
            continue
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                     for d in fn.decorator_list)
        if is_method and not static and args:
            args = args[1:]  # self / cls
        args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
        missing = []
        untyped = [a.arg for a in args if a.annotation is None]
        if untyped:
            missing.append("untyped " + ",".join(untyped))
        if fn.returns is None:
            missing.append("no return type")
        if not ast.get_docstring(fn):
            missing.append("no docstring")
        if missing:
            out.append(f"{name}: {'; '.join(missing)}")
    return out


def _modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if not any(part.startswith("_") and part != "__init__.py"
                       for part in p.relative_to(PACKAGE).parts)]


def test_public_functions_have_hints_and_a_docstring() -> None:
    found = {f"{p.relative_to(PACKAGE).as_posix()} {g}"
             for p in _modules() for g in gaps(p.read_text(encoding="utf-8"))}
    assert sorted(found) == []


@pytest.mark.parametrize("source,expected", [
    ('def f(x: int) -> int:\n    """Doc."""\n', []),
    ("def f(x: int) -> int:\n    return x\n", ["f: no docstring"]),
    ('def f(x, *a, **k) -> None:\n    """Doc."""\n', ["f: untyped x,a,k"]),
    ('def f(x: int):\n    """Doc."""\n', ["f: no return type"]),
    ('def _f(x):\n    pass\n', []),
    ('class C:\n    def m(self, y) -> None:\n        """Doc."""\n', ["C.m: untyped y"]),
    ('class C:\n    @staticmethod\n    def m(y: int):\n        """Doc."""\n',
     ["C.m: no return type"]),
    ('class C:\n    @property\n    def p(self) -> int:\n        """Doc."""\n'
     '    @p.setter\n    def p(self, v: int) -> None:\n        pass\n', []),
    ('class _C:\n    def m(self, y):\n        pass\n', []),
    ('def f() -> None:\n    def inner(y):\n        pass\n', ["f: no docstring"]),
])
def test_the_check_finds_each_gap(source: str, expected: list[str]) -> None:
    assert gaps(source) == expected
