"""The sweep grid: ``tasks x conditions x models x seeds`` cells, each with its run-config contract.

Cells are produced lazily (a 20,000-episode sweep never holds 20,000 contracts at once). The
``episode_id`` of a cell is stable: a hash of (task, model, seed, condition) and a digest of the
cell's contract *without* its ``sweep`` block plus the model entry's fingerprint, so adding a
model or a seed to a sweep does not change the ids of the cells already played (resume skips them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from jeval_ray.contract import RunConfigContract, make_contract
from jeval_ray.errors import ConfigError
from jeval_ray.records import episode_id
from jeval_ray.sweep._names import FULL, WITHHELD, _task_overrides
from jeval_ray.tasks import TASK_IDS, TaskSpec, Weights, available_tasks, get_task, resolve_knobs


@dataclass(frozen=True)
class Condition:
    """A condition resolved for one task: its name, the tools it withholds and its knob overrides."""

    name: str
    tools_withheld: tuple[str, ...]
    knobs: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Cell:
    """One episode of the grid (everything a worker needs to play it)."""

    task_id: str
    tier: str
    model: str
    seed: int
    condition: str
    tools_withheld: tuple[str, ...]
    knobs: dict = field(hash=False, compare=False)
    step_budget: int
    episode_id: str
    contract_json: str = field(repr=False)

    @property
    def partition(self) -> tuple[str, str]:
        return (self.task_id, self.model)


def resolve_tasks(cfg) -> list[TaskSpec]:
    """The sweep's tasks; unknown or unavailable ids raise a ``ConfigError`` naming ``tasks``."""
    if cfg.tasks == "available":
        tasks = available_tasks()
    elif cfg.tasks == "all":
        tasks = [get_task(t) for t in TASK_IDS]
        missing = [t.id for t in tasks if not t.available]
        if missing:
            raise ConfigError(f"field 'tasks': 'all' includes tasks not yet available ({', '.join(missing)}). "
                              "Fix: use tasks: available or list the available ones.")
    else:
        tasks = []
        for i, tid in enumerate(cfg.tasks):
            try:
                t = get_task(tid, require_available=True)
            except ConfigError as exc:
                raise ConfigError(f"field 'tasks[{i}]': {exc}. Fix: use one of the available tasks "
                                  f"({', '.join(x.id for x in available_tasks())}).") from None
            if t.id in [x.id for x in tasks]:
                raise ConfigError(f"field 'tasks[{i}]': task {t.id} is listed twice. Fix: list each task once.")
            tasks.append(t)
    if not tasks:
        raise ConfigError("field 'tasks': no task to play. Fix: list at least one available task.")
    return tasks


def resolve_conditions(cfg, tasks: list[TaskSpec]) -> dict[str, list[Condition]]:
    """Per task id, its conditions (a task with no ``withheld_variant`` skips ``withheld``)."""
    from jeval_ray.env import resolve_tools

    out: dict[str, list[Condition]] = {t.id: [] for t in tasks}
    for i, c in enumerate(cfg.conditions):
        for t in tasks:
            if isinstance(c, str):
                if c == FULL:
                    out[t.id].append(Condition(FULL, ()))
                elif c == WITHHELD:
                    if t.withheld_variant:
                        out[t.id].append(Condition(WITHHELD, tuple(t.withheld_variant)))
                else:
                    raise ConfigError(f"field 'conditions[{i}]': unknown condition {c!r}. "
                                      f"Fix: use 'full', 'withheld' or {{name: ..., withhold: [tools], knobs: {{...}}}}.")
            else:
                try:
                    resolve_tools(t.id, tuple(c.withhold))
                except ConfigError as exc:
                    raise ConfigError(f"field 'conditions[{i}].withhold': {exc}. "
                                      f"Fix: withhold only tools of every task in the sweep (or narrow tasks).") from None
                try:
                    resolve_knobs(t.id, {**_knobs_for(cfg, t), **c.knobs})
                except ConfigError as exc:
                    raise ConfigError(f"field 'conditions[{i}].knobs': {exc}. "
                                      "Fix: use knob names and values from `python -m jeval_ray.tasks --json`.") from None
                out[t.id].append(Condition(c.name, tuple(c.withhold), dict(c.knobs)))
    return out


def _weights_for(cfg, task: TaskSpec) -> Weights | None:
    for k, w in cfg.scoring.task_weights.items():
        if get_task(k).id == task.id:
            return w
    return cfg.scoring.weights


def _knobs_for(cfg, task: TaskSpec) -> dict:
    return {**cfg.knobs, **_task_overrides(cfg.task_knobs, task.id)}


class Grid:
    """The grid of a validated ``SweepConfig``; iterate ``cells()`` lazily."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.tasks = resolve_tasks(cfg)
        self.conditions = resolve_conditions(cfg, self.tasks)
        self.seeds = cfg.seed_list
        self.models = cfg.model_names
        self._fingerprints = {m.name: m.fingerprint() for m in cfg.models}

    def __len__(self) -> int:
        return sum(len(self.conditions[t.id]) for t in self.tasks) * len(self.models) * len(self.seeds)

    def base_contract(self, task: TaskSpec, cond: Condition) -> RunConfigContract:
        c = make_contract(task.id, self.seeds[0], knobs={**_knobs_for(self.cfg, task), **cond.knobs},
                          tools_withheld=cond.tools_withheld,
                          step_budget=self.cfg.step_budget, models=self.models, n_seeds=len(self.seeds),
                          judge=self.cfg.scoring.judge, weights=_weights_for(self.cfg, task))
        if self.cfg.scoring.judges_per_episode:
            c = c.model_copy(update={"scoring": c.scoring.model_copy(
                update={"judges_per_episode": self.cfg.scoring.judges_per_episode})})
        return c

    def cells(self) -> Iterator[Cell]:
        """Seeds outermost, so a partial run covers every task and model evenly."""
        bases = {}
        for t in self.tasks:
            for cond in self.conditions[t.id]:
                base = self.base_contract(t, cond)
                bases[(t.id, cond.name)] = (t, cond, base, _identity(base))
        for seed in self.seeds:
            for (tid, cname), (t, cond, base, ident) in bases.items():
                contract = base.model_copy(update={"seed": int(seed)})
                cjson = contract.to_json()
                knobs = {k: v for k, v in contract.generator.items() if k != "sources"}
                for m in self.models:
                    digest = hashlib.sha256(f"{ident}|{self._fingerprints[m]}".encode()).hexdigest()
                    yield Cell(task_id=tid, tier=t.tier, model=m, seed=int(seed), condition=cname,
                               tools_withheld=cond.tools_withheld, knobs=knobs, step_budget=contract.step_budget,
                               episode_id=episode_id(tid, m, seed, cname, digest), contract_json=cjson)

    def summary_rows(self) -> list[dict]:
        """Per task and condition: tools withheld and the episode count (for --dry-run)."""
        rows = []
        for t in self.tasks:
            for cond in self.conditions[t.id]:
                rows.append({"task_id": t.id, "tier": t.tier, "condition": cond.name,
                             "tools_withheld": list(cond.tools_withheld), "models": len(self.models),
                             "seeds": len(self.seeds), "episodes": len(self.models) * len(self.seeds)})
        return rows


def _identity(contract: RunConfigContract) -> str:
    """The contract without its seed and ``sweep`` block (the seed is hashed separately into the id)."""
    d = contract.model_dump(mode="json")
    d.pop("sweep", None)
    d.pop("seed", None)
    return json.dumps(d, sort_keys=True)


__all__ = ["Cell", "Condition", "Grid", "resolve_conditions", "resolve_tasks"]
