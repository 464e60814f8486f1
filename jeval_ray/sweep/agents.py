"""``make_model_agent``: the one place where a sweep model entry becomes an ``Agent``.

Built-in agents come from ``jeval_ray.agents.make_agent``; endpoints (``openai``/``anthropic``)
become an ``LLMAgent`` whose client shares the endpoint's cluster-wide ``RateLimiter`` actor.

Test agents (fault injection and benchmarks; a config must set ``allow_test_agents: true``):

- ``crash``: calls ``os._exit(1)`` on its first turn, on every attempt (a poison episode).
- ``crash_once``: calls ``os._exit(1)`` on attempt 1, then plays like ``careful``.
- ``sleep``: awaits ``agent_options.latency_ms`` (default 100) per step, no CPU, for
  ``agent_options.steps`` (default 5) cheap tool calls, then submits (a simulated slow model).

An endpoint model may take one test option (also only with ``allow_test_agents: true``):
``agent_options: {crash_after_calls: k}`` kills the worker (``os._exit``) on attempt 1 once the
model has answered k calls of the episode, before the next is sent (a crash between two calls).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from jeval_ray.agents import Action, Agent, Observation, Turn, make_agent
from jeval_ray.protocol import reset_agent


class CrashAgent(Agent):
    """Kills its worker process (``os._exit``) on its first turn when ``crash`` is true."""

    def __init__(self, inner: Agent | None, crash: bool):
        self.inner, self.crash = inner, crash
        self.name = "crash"

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        if self.inner is not None:
            reset_agent(self.inner, brief, tools, seed, info or {})

    async def act(self, observations: list[Observation]) -> Turn:
        if self.crash:
            os._exit(1)  # simulates a segfault/OOM of the worker mid-episode
        assert self.inner is not None
        return await self.inner.act(observations)


class CrashAfterCallsAgent(Agent):
    """Plays ``inner`` and kills its worker process before turn ``calls + 1`` (after ``calls`` replies)."""

    def __init__(self, inner: Agent, calls: int):
        self.inner, self.calls, self.name = inner, int(calls), inner.name
        self._turns = 0

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        self._turns = 0
        reset_agent(self.inner, brief, tools, seed, info or {})

    async def act(self, observations: list[Observation]) -> Turn:
        if self._turns >= self.calls:
            os._exit(1)  # a worker lost between two model calls of an episode
        self._turns += 1
        return await self.inner.act(observations)

    async def aclose(self) -> None:
        await self.inner.aclose()


class HangAgent(Agent):
    """Blocks its worker's event loop (a blocking sleep inside ``act``): no ``await`` ever returns, so
    the episode's own deadline cannot fire. Only the driver's watchdog can end it."""

    name = "hang"

    def __init__(self, hang_s: float = 3600.0):
        self.hang_s = float(hang_s)

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        pass

    async def act(self, observations: list[Observation]) -> Turn:
        time.sleep(self.hang_s)  # deliberately blocking: simulates a wedged agent or library call
        return Turn(actions=[Action("submit", {"summary": "woke up"})])


class SleepAgent(Agent):
    """A simulated remote model: waits ``latency_ms`` per turn without using CPU."""

    name = "sleep"

    def __init__(self, latency_ms: float = 100.0, steps: int = 5):
        self.latency_s = float(latency_ms) / 1000.0
        self.steps = int(steps)
        self._n = 0

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        self._n = 0

    async def act(self, observations: list[Observation]) -> Turn:
        await asyncio.sleep(self.latency_s)
        self._n += 1
        if self._n > self.steps:
            return Turn(actions=[Action("submit", {"summary": "simulated agent done"})], latency_ms=self.latency_s * 1e3)
        return Turn(actions=[Action("list_documents", {"limit": 1})], latency_ms=self.latency_s * 1e3)


def is_builtin(entry: dict) -> bool:
    """A model entry (as a dict) served by a built-in agent rather than an endpoint."""
    return entry.get("provider", "builtin") == "builtin"


def waits_on_latency(entry: dict) -> bool:
    """A model entry whose episodes spend their time waiting (an endpoint, or the simulated ``sleep``
    agent) rather than computing, as the other built-in agents do."""
    return not is_builtin(entry) or entry.get("agent") == "sleep"


def agent_label(entry: dict) -> str:
    """The ``agent`` column of an episode row: the built-in agent's name, or ``provider:model``."""
    return str(entry.get("agent")) if is_builtin(entry) else f"{entry.get('provider')}:{entry.get('model')}"


def make_model_agent(entry: Any, seed: int, *, attempt: int = 1, response_cache: str | None = None) -> Agent:
    """The agent of one episode for a sweep model entry (a ``ModelEntry`` or its dict); an endpoint's
    calls go through the response cache at ``response_cache`` (a directory or URI) when given."""
    d = entry if isinstance(entry, dict) else {**entry.model_dump(), **(entry.model_extra or {})}
    provider = d.get("provider", "builtin")
    if provider == "builtin":
        agent, opts = d.get("agent"), d.get("agent_options") or {}
        if agent == "crash":
            return CrashAgent(None, True)
        if agent == "crash_once":
            return CrashAgent(make_agent("careful", seed), attempt <= 1)
        if agent == "hang":
            return HangAgent(opts.get("hang_s", 3600.0))
        if agent == "sleep":
            return SleepAgent(opts.get("latency_ms", 100.0), opts.get("steps", 5))
        return make_agent(agent, seed)
    from jeval_ray.agents.llm import LLMAgent
    from jeval_ray.models.config import ModelConfig
    from jeval_ray.models.ratelimit import get_rate_limiter

    fields = {k: v for k, v in d.items() if k not in ("agent", "agent_options")}
    cfg = ModelConfig.model_validate(fields)
    limiter = None
    if cfg.rpm or cfg.tpm or cfg.max_concurrency or cfg.budget_usd is not None:
        # a budgeted model's calls pass the actor that admits its episodes (sweep.budget), limits or none
        limiter = get_rate_limiter(cfg.endpoint_key, cfg.rpm, cfg.tpm, cfg.max_concurrency)
    cache = None
    if response_cache:
        from jeval_ray.cache import ResponseCache

        cache = ResponseCache(response_cache)
    agent = LLMAgent(cfg, limiter=limiter, cache=cache)
    crash_after = (d.get("agent_options") or {}).get("crash_after_calls")
    if crash_after is not None and attempt <= 1:
        return CrashAfterCallsAgent(agent, crash_after)
    return agent


__all__ = ["CrashAfterCallsAgent", "CrashAgent", "HangAgent", "SleepAgent", "agent_label", "is_builtin", "make_model_agent", "waits_on_latency"]
