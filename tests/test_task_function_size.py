"""No function in ``jeval_ray/tasks/`` is longer than 100 lines (issue 26): a task states its
procedure with the task kit (``jeval_ray.tasks.taskkit``) instead of hand-rolling it. The
exceptions are listed in ``ALLOWED`` with the reason each is still long; a function leaves the list
when its task is migrated onto the kit (the test fails when a listed function is already short).

Tasks on the kit (their module defines ``TASK``) also keep ``careful`` and ``naive`` to their
procedure: at most 40 lines each."""

from __future__ import annotations

import ast
from pathlib import Path

from jeval_ray import tasks

TASKS = Path(tasks.__file__).resolve().parent
LIMIT = 100
STRATEGY_LIMIT = 40
#: (module path relative to jeval_ray/tasks, function name) -> why it is still longer than LIMIT: none today
ALLOWED: dict[tuple[str, str], str] = {}


def function_lengths() -> dict[tuple[str, str], int]:
    """(module, qualified function name) -> lines, for every function under jeval_ray/tasks."""
    out = {}
    for path in sorted(TASKS.rglob("*.py")):
        rel = path.relative_to(TASKS).as_posix()
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[(rel, node.name)] = max(out.get((rel, node.name), 0), node.end_lineno - node.lineno + 1)
    return out


def test_no_task_function_is_longer_than_the_limit_unless_listed():
    sizes = function_lengths()
    long = {k: n for k, n in sizes.items() if n > LIMIT}
    assert set(long) <= set(ALLOWED), f"functions over {LIMIT} lines not in ALLOWED: {set(long) - set(ALLOWED)}"
    stale = [k for k in ALLOWED if sizes.get(k, 0) <= LIMIT]
    assert not stale, f"listed in ALLOWED but no longer over {LIMIT} lines (remove them): {stale}"


def _hand_rolled(tree: ast.AST) -> list[str]:
    """What a task on the kit leaves to the kit: regular expressions, the budget, string-keyed entry columns."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out += [f"imports {n}" for n in names if n == "re"]
        elif isinstance(node, ast.Attribute) and node.attr == "calls_left":
            out.append(f"reads calls_left (line {node.lineno})")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str) and (
                    (isinstance(node.value, ast.Name) and node.value.id == "e")
                    or (isinstance(node.value, ast.Attribute) and node.value.attr == "e")):
            out.append(f"reads e[{node.slice.value!r}] (line {node.lineno})")
    return out


def test_tasks_on_the_kit_state_only_their_procedure():
    sizes = function_lengths()
    on_kit = [tasks.task_module(t) for t in tasks.TASK_IDS if hasattr(tasks.task_module(t), "TASK")]
    assert on_kit
    for mod in on_kit:
        rel = Path(mod.__file__).name
        for name in ("careful", "naive"):
            assert sizes.get((rel, name), 0) <= STRATEGY_LIMIT, (rel, name, sizes.get((rel, name)))
        assert not _hand_rolled(ast.parse(Path(mod.__file__).read_text())), rel
