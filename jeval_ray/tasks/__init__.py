"""The task catalogue JE-1 … JE-16: one module per task (``je01`` … ``je16``).

A task module defines ``SPEC`` (a ``TaskSpec``). An *available* task also defines
``plant(builder)`` (what it plants into the simulated year's books, ``jeval_ray.world.WorldBuilder``) and the built-in
agents' strategies ``naive(kit)`` and ``careful(kit)``, which see only the agent's tool interface.
Adding a task is adding one module. A task written with the task kit (``jeval_ray.tasks.taskkit``,
docs/adding_a_task.md) also ends with ``TASK``, its typed ``Task`` value, registered here once
(``task_value``).
"""

from __future__ import annotations

from types import ModuleType

from pydantic import ValidationError

from jeval_ray.errors import TaskNotAvailableError, UnknownTaskError, ConfigError
from jeval_ray.tasks import (je01, je02, je03, je04, je05, je06, je07, je08, je09, je10, je11, je12, je13, je14,
                             je15, je16)
from jeval_ray.builder.spec import ALL_TOOLS, ESSENTIAL_TOOLS, Criterion, Knobs, TaskSpec, Weights
from jeval_ray.tasks.taskkit import Task

TASK_IDS: tuple[str, ...] = tuple(f"JE-{i}" for i in range(1, 17))


def _normalise(task_id: str) -> str:
    t = str(task_id).strip().upper().replace("_", "-")
    if t.startswith("JE") and not t.startswith("JE-"):
        t = "JE-" + t[2:]
    try:
        t = f"JE-{int(t.split('-', 1)[1])}"
    except (IndexError, ValueError):
        pass
    return t


#: the registry: every task's module, by id (imported here, so an import graph sees every task)
_MODULES: dict[str, ModuleType] = dict(zip(TASK_IDS, (je01, je02, je03, je04, je05, je06, je07, je08, je09, je10, je11,
                                                      je12, je13, je14, je15, je16)))


#: the tasks written with the task kit: their ``Task`` values, by id
KIT_TASKS: dict[str, Task] = {tid: mod.TASK for tid, mod in _MODULES.items()
                              if isinstance(getattr(mod, "TASK", None), Task)}


def task_value(task_id: str) -> Task | None:
    """The typed ``Task`` value of ``task_id`` (``None`` while the task is not yet on the task kit)."""
    return KIT_TASKS.get(task_module(task_id).SPEC.id)


def task_module(task_id: str) -> ModuleType:
    tid = _normalise(task_id)
    if tid not in _MODULES:
        raise UnknownTaskError(f"unknown task id {task_id!r}; known tasks are {', '.join(TASK_IDS)}")
    return _MODULES[tid]


def get_task(task_id: str, *, require_available: bool = False) -> TaskSpec:
    """The ``TaskSpec`` of ``task_id`` (``JE-3``, ``je3`` and ``JE-03`` all work)."""
    mod = task_module(task_id)
    spec: TaskSpec = mod.SPEC
    if require_available and not spec.available:
        raise TaskNotAvailableError(
            f"task {spec.id} ({spec.title}) is catalogued but not yet available to play; "
            f"available tasks: {', '.join(t.id for t in available_tasks())}"
        )
    return spec


def all_tasks() -> list[TaskSpec]:
    return [get_task(t) for t in TASK_IDS]


def available_tasks() -> list[TaskSpec]:
    return [t for t in all_tasks() if t.available]


def resolve_knobs(task_id: str, overrides: dict | None = None) -> Knobs:
    """Validate knob overrides for a task; a bad knob raises ``ConfigError`` naming it."""
    spec = get_task(task_id)
    try:
        return spec.resolve_knobs(overrides)
    except ValidationError as exc:
        raise ConfigError(_knob_message(exc)) from None


def _knob_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "knobs"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown knob {loc!r}; known knobs are {', '.join(Knobs.names())}")
        else:
            parts.append(f"knob {loc!r}: {err['msg']} (got {err.get('input')!r})")
    return "; ".join(parts)


def parse_knob_args(pairs: list[str]) -> dict:
    """``["n_entries=300", "prompt_injection=true"]`` -> dict; values are parsed as JSON when they can be."""
    import json

    out = {}
    for p in pairs:
        if "=" not in p:
            raise ConfigError(f"--knob expects name=value, got {p!r}")
        k, v = p.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out


__all__ = [
    "ALL_TOOLS", "ESSENTIAL_TOOLS", "KIT_TASKS", "TASK_IDS", "Criterion", "Knobs", "Task", "TaskSpec", "Weights",
    "all_tasks", "available_tasks", "get_task", "parse_knob_args", "resolve_knobs", "task_module",
]
