"""The agent protocol: what every agent (built-in or LLM) gives the episode loop.

An agent is reset with the brief and the tool schemas, then asked for a ``Turn`` after each
batch of observations. A turn carries one or more tool calls (``Action``) plus the accounting
the step records need (tokens, latency, cost, reasoning trace). Built-in agents see exactly what
an LLM agent sees: the brief, the tool schemas and the observation texts.
"""

from __future__ import annotations

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


@dataclass
class Observation:
    """What the environment answered to one action, as the agent receives it."""

    call_id: str | None
    tool: str
    text: str
    is_error: bool


class Agent(ABC):
    """Base class of agents. Subclasses implement ``reset`` and ``act``."""

    name: str = "agent"

    @abstractmethod
    def reset(self, brief: str, tools: list[dict], seed: int) -> None:
        """Start a new episode with the brief (system prompt) and the OpenAI-style tool schemas."""

    @abstractmethod
    async def act(self, observations: list[Observation]) -> Turn:
        """The next turn, given the observations of the previous turn's actions (empty at first)."""

    async def aclose(self) -> None:
        """Release resources (HTTP clients); the default has none."""
