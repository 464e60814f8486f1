"""The task catalogue JE-1 … JE-16: one module per task (``je01`` … ``je16``), and the registry.

A task module defines ``SPEC`` (a ``TaskSpec``). An *available* task also defines
``plant(builder)`` (what it plants into the simulated year's books, ``jeval_ray.world.WorldBuilder``) and the built-in
agents' strategies ``naive(kit)`` and ``careful(kit)``, which see only the agent's tool interface.
A task written with the task kit (``jeval_ray.tasks.taskkit``, docs/adding_a_task.md) ends with ``TASK``,
its typed ``Task`` value.

The registry holds one ``Task`` value per task, made once here (``task_value``): the package reads
every task through it (the environment its spec, world generation its plant, the built-in agents its
strategies, the scorer its outcome refinement, the catalogue its page). ``register(task)`` adds a task
outside the catalogue (a test's own task, or a user's) under an id of its own; such a task can be
played and scored like any other, but is not in ``TASK_IDS``, ``all_tasks()`` or the golden.
"""

from __future__ import annotations

import dataclasses
import inspect
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


def _task_of(mod: ModuleType) -> Task:
    """A catalogue module's ``Task``: its ``TASK`` (on the kit) or one made of its names (not yet on the
    kit; a catalogued task that is not available has only its ``SPEC``), with the module's docstring as
    its page and its ``outcome_adjust`` and ``WORKED_SEED`` where the value does not carry them."""
    task = getattr(mod, "TASK", None)
    if not isinstance(task, Task):
        task = Task(mod.SPEC, getattr(mod, "plant", _unavailable), getattr(mod, "careful", _unavailable),
                    getattr(mod, "naive", _unavailable), tuple(getattr(mod, "KEY_RATIONALE", ())), decisive="")
    return dataclasses.replace(
        task, doc=task.doc or inspect.getdoc(mod) or "",
        outcome_adjust=task.outcome_adjust or getattr(mod, "outcome_adjust", None),
        worked_seed=task.worked_seed if task.worked_seed is not None else getattr(mod, "WORKED_SEED", None))


def _unavailable(*_args, **_kwargs):
    raise TaskNotAvailableError("this task is catalogued but not yet available to play")


#: the registry: one ``Task`` value per task, the catalogue's and any registered
_TASKS: dict[str, Task] = {tid: _task_of(mod) for tid, mod in _MODULES.items()}


def register(task: Task) -> Task:
    """Add ``task`` to the registry under its spec's id, so it can be generated, played and scored by id
    (``generate_world``, ``JEEnv``, the built-in agents). The id must not be one of the catalogue's;
    registering the same value again is a no-op; another task under a registered id is an error."""
    if not isinstance(task, Task):
        raise TypeError(f"register() takes a Task value, got {type(task).__name__}")
    tid = task.spec.id
    if tid in _MODULES:
        raise ValueError(f"{tid} is a catalogue task; a registered task needs an id of its own")
    if _TASKS.get(tid, task) is not task:
        raise ValueError(f"another task is already registered as {tid}")
    _TASKS[tid] = dataclasses.replace(task, doc=task.doc or inspect.getdoc(inspect.getmodule(task.plant)) or "") \
        if not task.doc else task
    return _TASKS[tid]


def task_value(task_id: str) -> Task:
    """The ``Task`` value of ``task_id`` (``JE-3``, ``je3`` and ``JE-03`` all work)."""
    tid = _normalise(task_id)
    if tid not in _TASKS:
        raise UnknownTaskError(f"unknown task id {task_id!r}; known tasks are {', '.join(TASK_IDS)}"
                               + (f" and the registered {', '.join(t for t in _TASKS if t not in _MODULES)}"
                                  if len(_TASKS) > len(_MODULES) else ""))
    return _TASKS[tid]


def task_module(task_id: str) -> ModuleType:
    """The module of a catalogue task (its constants, for tests and tools that read them)."""
    tid = _normalise(task_id)
    if tid not in _MODULES:
        raise UnknownTaskError(f"unknown task id {task_id!r}; known tasks are {', '.join(TASK_IDS)}")
    return _MODULES[tid]


def get_task(task_id: str, *, require_available: bool = False) -> TaskSpec:
    """The ``TaskSpec`` of ``task_id`` (``JE-3``, ``je3`` and ``JE-03`` all work)."""
    spec: TaskSpec = task_value(task_id).spec
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
    "all_tasks", "available_tasks", "get_task", "parse_knob_args", "register", "resolve_knobs", "task_module",
    "task_value",
]
