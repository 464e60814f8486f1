"""Scripted agents: the built-in strategies (``jeval_ray.protocol.kit``) run as agents.

The episode tells a scripted agent its task and step budget at reset (the reset's ``info``); the
strategy then sees only the brief, the tool schemas and the observation texts.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from jeval_ray.builder import rng_for
from jeval_ray.protocol import Action, Agent, Observation, Turn
from jeval_ray.protocol.kit import NOT_RUN, Batch, Kit, Step, Strategy, entries_of


class ScriptedAgent(Agent):
    """Runs a strategy generator; each step it yields is one turn (one call, or a ``Batch`` of calls made
    in one reply, as models make parallel tool calls), no tokens, no latency."""

    def __init__(self, name: str, strategy_for: Callable[[str], Strategy], seed: int = 0, *,
                 max_observation_chars: int | None = None):
        self.name = name
        #: the character budget the environment pages results to (None: unpaged, the built-ins' default;
        #: the kit follows pages transparently, each page a call)
        self.max_observation_chars = max_observation_chars
        self._strategy_for = strategy_for
        self._seed = seed
        self._gen: Generator[Step, Any, None] | None = None
        self._kit: Kit | None = None
        self._batched = False  # the last step was a Batch: the strategy gets the list of texts

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        if not info or "task_id" not in info or "step_budget" not in info:
            raise ValueError(f"the built-in agent {self.name!r} needs the episode's task id and step budget: "
                             "reset(brief, tools, seed, info={'task_id': ..., 'step_budget': ...})")
        task_id = str(info["task_id"])
        kit = Kit(brief, tools, seed, rng_for(task_id, seed, f"agent:{self.name}"), task_id=task_id,
                  step_budget=int(info["step_budget"]))
        self._kit = kit
        self._gen = self._strategy_for(task_id)(kit)
        self._started = False
        self._batched = False

    async def act(self, observations: list[Observation]) -> Turn:
        return self.act_sync(observations)

    def act_sync(self, observations: list[Observation]) -> Turn:
        assert self._gen is not None, "reset() first"
        try:
            if not self._started:
                self._started = True
                step = next(self._gen)
            elif self._batched:
                step = self._gen.send([o.text for o in observations] or [NOT_RUN])
            else:
                step = self._gen.send(observations[-1].text if observations else "{}")
        except StopIteration:
            # a strategy that ended without submitting: its waiting dispositions go out with the submit
            waiting = self._kit.take_waiting() if self._kit is not None else []
            step = Batch((*waiting, Action(tool="submit", args={"summary": "done"})))
        self._batched = isinstance(step, Batch)
        return Turn(actions=list(step.actions) if isinstance(step, Batch) else [step])


__all__ = ["Batch", "Kit", "ScriptedAgent", "Step", "Strategy", "entries_of"]
