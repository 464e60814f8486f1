"""The agent protocol: what every agent (built-in or LLM) gives the episode loop.

An agent is reset with the brief and the tool schemas, then asked for a ``Turn`` after each
batch of observations. A turn carries one or more tool calls (``Action``) plus the accounting
the step records need (tokens, latency, cost, reasoning trace). Built-in agents see exactly what
an LLM agent sees: the brief, the tool schemas and the observation texts.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Action:
    """One tool call. ``args`` may be a dict or the raw JSON text a model produced."""

    tool: str
    args: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None


@dataclass
class Turn:
    """An agent's reply: tool calls and per-reply accounting.

    An empty ``actions`` list is a reply with no tool call; the loop logs it as a step and
    reminds the agent to act. ``stop_reason`` set means the agent cannot go on (e.g. its
    context would overflow, or its endpoint failed for good); the loop ends the episode with it.
    """

    actions: list[Action]
    #: None = not measured (agents without a model); the records keep it as null, not 0 (docs/data.md)
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    cost_usd: float = 0.0
    #: parts of tokens_in that were prompt-cache reads and writes (None = not measured)
    tokens_cached_in: int | None = None
    tokens_cache_write: int | None = None
    #: the part of tokens_out the model spent reasoning, where its endpoint reports it
    tokens_reasoning: int | None = None
    #: answered from the response cache (None = the agent uses no model)
    cache_hit: bool | None = None
    reasoning_trace: str | None = None
    text: str | None = None
    stop_reason: str | None = None
    #: tool results the agent elided from its conversation before this reply's request (context management)
    elided: int | None = None
    #: observations the agent cut at its max_observation_chars before this reply's request (the safety net
    #: behind the environment's paging)
    observations_cut: int | None = None


@dataclass
class Observation:
    """What the environment answered to one action, as the agent receives it."""

    call_id: str | None
    tool: str
    text: str
    is_error: bool


#: the keys of the ``info`` an agent receives at reset
EPISODE_INFO_KEYS: tuple[str, ...] = ("task_id", "step_budget")


class Agent(ABC):
    """Base class of agents. Subclasses implement ``reset`` and ``act``."""

    name: str = "agent"

    @abstractmethod
    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        """Start a new episode with the brief (system prompt) and the OpenAI-style tool schemas.

        ``info`` is what the episode tells the agent besides the brief: ``task_id`` and ``step_budget``
        (``EPISODE_INFO_KEYS``). A model never sees it (the brief says all a model needs); the built-in
        agents take their task and budget from it rather than reading them off the brief."""

    @abstractmethod
    async def act(self, observations: list[Observation]) -> Turn:
        """The next turn, given the observations of the previous turn's actions (empty at first)."""

    async def aclose(self) -> None:
        """Release resources (HTTP clients); the default has none."""


def reset_agent(agent: Agent, brief: str, tools: list[dict], seed: int, info: dict) -> None:
    """``agent.reset`` with the episode's ``info``, or without it for an agent whose ``reset`` takes
    only ``(brief, tools, seed)`` (agents written before ``info`` existed keep working)."""
    if _takes_info(type(agent)):
        agent.reset(brief, tools, seed, info=info)
    else:
        agent.reset(brief, tools, seed)


@functools.cache
def _takes_info(cls: type) -> bool:
    params = inspect.signature(cls.reset).parameters
    return "info" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
