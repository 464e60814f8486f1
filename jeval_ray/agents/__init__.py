"""Agents: the protocol, the built-in agents (random, naive, careful) and the LLM agent.

Built-in agents need no network. ``naive`` applies the task's red-flag rule without reading the
documents that clear decoys; ``careful`` is the reference solver. Both are strategies defined in
each task's module and see only the brief, the tool schemas and the observations.
"""

from __future__ import annotations

from jeval_ray.protocol import Action, Agent, Observation, Turn
from jeval_ray.agents._script import Kit, ScriptedAgent, entries_of
from jeval_ray.agents.random_agent import random_strategy
from jeval_ray.errors import ConfigError
from jeval_ray.tasks import task_value

BUILTIN_AGENTS: tuple[str, ...] = ("random", "naive", "careful")


def _task_strategy(kind: str):
    def pick(task_id: str):
        return getattr(task_value(task_id), kind)

    return pick


def make_agent(name: str, seed: int = 0, *, max_observation_chars: int | None = None) -> Agent:
    """A built-in agent by name (``random``, ``naive``, ``careful``); ``max_observation_chars``: the
    budget the environment pages its results to (None, the default: unpaged)."""
    if name == "random":
        return ScriptedAgent("random", lambda _task: random_strategy, seed, max_observation_chars=max_observation_chars)
    if name in ("naive", "careful"):
        return ScriptedAgent(name, _task_strategy(name), seed, max_observation_chars=max_observation_chars)
    raise ConfigError(f"unknown built-in agent {name!r}; choose one of {', '.join(BUILTIN_AGENTS)}")


__all__ = ["Action", "Agent", "BUILTIN_AGENTS", "Kit", "Observation", "ScriptedAgent", "Turn", "entries_of", "make_agent"]
