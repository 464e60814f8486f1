"""Every test module imports from the package, ``conftest`` or ``tests/support``, never from another
test module: a test module imported by another runs its tests' imports twice and only imports when
pytest runs from the repository root."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                out.append((node.lineno, "." * node.level + (node.module or "")))
            else:
                out.append((node.lineno, node.module or ""))
    return out


def _is_test_module(name: str) -> bool:
    parts = name.lstrip(".").split(".")
    if parts[0] == "tests":
        parts = parts[1:]
    return bool(parts) and (parts[0].startswith("test_") or name.startswith("."))


def test_no_test_module_imports_another():
    modules = sorted(TESTS.glob("test_*.py"))
    assert len(modules) > 50
    bad = [f"{m.name}:{line}: imports {name}" for m in modules
           for line, name in _imported_modules(ast.parse(m.read_text(encoding="utf-8"), str(m)))
           if _is_test_module(name)]
    assert not bad, "\n".join(bad)


def test_the_scan_catches_each_way_of_importing_a_test_module():
    for src in ("from tests.test_task_je16 import entries", "from test_task_je16 import entries",
                "import tests.test_world", "import test_world", "from . import test_world", "from .test_world import x",
                "def f():\n    from tests.test_world import x"):
        assert any(_is_test_module(n) for _, n in _imported_modules(ast.parse(src))), src
    for src in ("from conftest import ROOT", "from support.je16 import entries", "import jeval_ray.tasks",
                "from jeval_ray.world import generate_world"):
        assert not any(_is_test_module(n) for _, n in _imported_modules(ast.parse(src))), src
