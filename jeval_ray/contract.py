"""The run-config contract (spec ``console_run_config_contract``): stored with every episode."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from jeval_ray.env import resolve_tools
from jeval_ray.tasks import Weights, get_task, resolve_knobs


class ScoringContract(BaseModel):
    model_config = ConfigDict(extra="forbid")
    weights: Weights
    judge: str = "global_rubric_v1"
    judges_per_episode: int = Field(ge=1)


class SweepContract(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: list[str]
    seeds: int = Field(ge=1, description="seed count")
    episodes: int = Field(ge=1, description="models x seeds")


class RunConfigContract(BaseModel):
    """``task_id, tier, seed, generator, tools_enabled, tools_withheld, step_budget, scoring, sweep``."""

    model_config = ConfigDict(extra="forbid")
    task_id: str
    tier: str
    seed: int
    generator: dict = Field(description="the difficulty knobs plus the task's sources list")
    tools_enabled: list[str]
    tools_withheld: list[str]
    step_budget: int = Field(ge=1)
    scoring: ScoringContract
    sweep: SweepContract

    def to_json(self) -> str:
        return self.model_dump_json()

    def digest(self) -> str:
        """sha256 of the canonical JSON (the part of the episode id that says 'which config')."""
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def make_contract(task_id: str, seed: int, *, knobs: dict | None = None, tools_withheld=(), step_budget: int | None = None,
                  models: list[str] | None = None, n_seeds: int = 1, judge: str = "global_rubric_v1",
                  weights: Weights | None = None) -> RunConfigContract:
    """The contract of one episode; validates knobs and withheld tools (``ConfigError`` on bad input)."""
    spec = get_task(task_id)
    k = resolve_knobs(spec.id, knobs)
    enabled, withheld = resolve_tools(spec.id, tools_withheld)
    models = list(models or [])
    return RunConfigContract(
        task_id=spec.id, tier=spec.tier, seed=int(seed),
        generator={**k.model_dump(mode="json"), "sources": list(spec.sources)},
        tools_enabled=list(enabled), tools_withheld=list(withheld),
        step_budget=step_budget or spec.step_budget,
        scoring=ScoringContract(weights=weights or spec.weights, judge=judge, judges_per_episode=spec.judges_per_episode),
        sweep=SweepContract(models=models, seeds=max(1, n_seeds), episodes=max(1, len(models) * max(1, n_seeds))),
    )


def knobs_of(contract: RunConfigContract) -> dict:
    """The knob part of the contract's ``generator`` block."""
    return {k: v for k, v in contract.generator.items() if k != "sources"}
