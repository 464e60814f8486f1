"""The ``Task`` value: everything one task of the catalogue is, typed, in one place.

A task module built on the kit ends with ``TASK = Task(spec=SPEC, plant=plant, careful=careful,
naive=naive, key_rationale=KEY_RATIONALE, decisive=..., policy=..., rules=(...))`` and the
registry (``jeval_ray.tasks``) registers it (``task_value(task_id)``). The module keeps the
names ``SPEC``, ``plant``, ``careful``, ``naive`` and ``KEY_RATIONALE`` the rest of the package
reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jeval_ray.builder._base import WorldBuilder
from jeval_ray.builder.spec import KeyRationale, TaskSpec
from jeval_ray.protocol.kit import Strategy


@dataclass(frozen=True)
class Task:
    """One task: its catalogue entry (``spec``), how it plants (``plant``), how the built-in agents
    solve it (``careful``: the procedure an auditor follows; ``naive``: the surface rule alone),
    why its key says what it says (``key_rationale``), the comparison that decides every planted
    entry (``decisive``, one sentence), the policy text it states (``policy``: '' when the evidence
    is master data alone) and the rules it applies (``rules``: values from ``taskkit.rules``)."""

    spec: TaskSpec
    plant: Callable[[WorldBuilder], None]
    careful: Strategy
    naive: Strategy
    key_rationale: tuple[KeyRationale, ...]
    decisive: str
    policy: str = ""
    rules: tuple[Any, ...] = ()
    #: the task's page in docs/tasks.md (the registry fills it from the module's docstring when empty)
    doc: str = ""
    #: ``outcome_adjust(world, state, outcome, final) -> (outcome, extra)``: a task's refinement of its
    #: outcome, which the scorer applies (JE-15 rewards naming the scheme's user); ``None`` for most tasks
    outcome_adjust: Callable[..., tuple[float, dict[str, Any]]] | None = None
    #: the seed of the task's worked examples in docs/tasks.md (``None``: the catalogue's default)
    worked_seed: int | None = None

    @property
    def id(self) -> str:
        return self.spec.id


__all__ = ["Task"]
