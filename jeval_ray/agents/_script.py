"""Scripted agents: the built-in strategies (``jeval_ray.protocol.kit``) run as agents.

The episode tells a scripted agent its task and step budget at reset (the reset's ``info``); the
strategy then sees only the brief, the tool schemas and the observation texts.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from jeval_ray.builder import rng_for
from jeval_ray.protocol import Action, Agent, Observation, Turn
from jeval_ray.protocol.kit import Kit, Strategy, entries_of


class ScriptedAgent(Agent):
    """Runs a strategy generator; one action per turn, no tokens, no latency."""

    def __init__(self, name: str, strategy_for: Callable[[str], Strategy], seed: int = 0, *,
                 max_observation_chars: int | None = None):
        self.name = name
        #: the character budget the environment pages results to (None: unpaged, the built-ins' default;
        #: the kit follows pages transparently, each page a call)
        self.max_observation_chars = max_observation_chars
        self._strategy_for = strategy_for
        self._seed = seed
        self._gen: Generator[Action, str, None] | None = None
        self._pending: Action | None = None

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        if not info or "task_id" not in info or "step_budget" not in info:
            raise ValueError(f"the built-in agent {self.name!r} needs the episode's task id and step budget: "
                             "reset(brief, tools, seed, info={'task_id': ..., 'step_budget': ...})")
        task_id = str(info["task_id"])
        kit = Kit(brief, tools, seed, rng_for(task_id, seed, f"agent:{self.name}"), task_id=task_id,
                  step_budget=int(info["step_budget"]))
        self._gen = self._strategy_for(task_id)(kit)
        self._started = False

    async def act(self, observations: list[Observation]) -> Turn:
        return self.act_sync(observations)

    def act_sync(self, observations: list[Observation]) -> Turn:
        assert self._gen is not None, "reset() first"
        try:
            if not self._started:
                self._started = True
                action = next(self._gen)
            else:
                text = observations[-1].text if observations else "{}"
                action = self._gen.send(text)
        except StopIteration:
            action = Action(tool="submit", args={"summary": "done"})
        return Turn(actions=[action])


__all__ = ["Kit", "ScriptedAgent", "Strategy", "entries_of"]
