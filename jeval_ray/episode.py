"""The episode loop: one agent plays one world until ``submit`` or the step budget, then it is scored."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from jeval_ray.protocol import EPISODE_INFO_KEYS, Action, Agent, Observation, Turn, reset_agent
from jeval_ray.env import JEEnv, StepLog
from jeval_ray.scoring import EpisodeScore, build_judge_packet
from jeval_ray.world import World, WorldCache

NO_TOOL_REMINDER = ("You replied without calling a tool. Continue the engagement by calling one of the tools; "
                    "call submit(summary) when you are done.")
FAILED_PREFIXES = ("model_error", "error", "timeout")


@dataclass
class EpisodeOutcome:
    """Everything an episode produced, before keys and records are attached."""

    task_id: str
    seed: int
    world_hash: str
    brief: str
    steps: list[StepLog]
    score: EpisodeScore
    termination: str
    status: str  # completed | failed
    judge_packet: dict
    tokens_in: int | None = None  # None: no reply of the agent reported tokens (agents without a model)
    tokens_out: int | None = None
    cost_usd: float = 0.0
    tokens_cached_in: int | None = None
    tokens_cache_write: int | None = None
    tokens_reasoning: int | None = None
    cache_hits: int | None = None  # replies answered from the response cache; None for agents without a model
    wall_s: float = 0.0
    error: str | None = None
    dispositions: list[dict] = field(default_factory=list)
    world_reused: bool = False  # the world came from a WorldCache (generated for an earlier episode)


def _account(step: StepLog, turn: Turn, first: bool) -> None:
    """A reply's accounting goes on its first step; its other steps get 0 where the reply measured
    something (counted once) and None where it measured nothing."""
    if first:
        step.tokens_in, step.tokens_out = turn.tokens_in, turn.tokens_out
        step.latency_ms, step.reasoning_trace = turn.latency_ms, turn.reasoning_trace
        step.tokens_cached_in, step.tokens_cache_write = turn.tokens_cached_in, turn.tokens_cache_write
        step.cache_hit, step.tokens_reasoning = turn.cache_hit, turn.tokens_reasoning
        step.elided, step.observations_cut = turn.elided, turn.observations_cut
        return
    step.cache_hit = turn.cache_hit
    for name in _COUNTED:
        setattr(step, name, None if getattr(turn, name) is None else 0)
    step.latency_ms = None if turn.latency_ms is None else 0.0


#: a reply's counts: on its first step, 0 on its other steps, None where the reply measured nothing
_COUNTED = ("tokens_in", "tokens_out", "tokens_cached_in", "tokens_cache_write", "tokens_reasoning", "elided",
            "observations_cut")


def _add(total: int | None, value: int | None) -> int | None:
    return total if value is None else (total or 0) + value


async def play_episode(env: JEEnv, agent: Agent, seed: int, *, timeout_s: float | None = None,
                       worlds: WorldCache | None = None,
                       world: tuple[World, bool] | None = None) -> EpisodeOutcome:
    """Play one episode; per-turn accounting lands on the first step of each turn. ``worlds``: a cache
    to take the world from (or generate it into); ``world``: a world already built for this episode
    and whether it was reused (``WorldCache.fetch``); with neither the episode generates its own."""
    t0 = time.perf_counter()
    built, reused = world if world is not None else (None, False)
    if built is None and worlds is not None and worlds.capacity:
        built, reused = worlds.fetch(env.spec.id, seed, env.knobs.model_dump())
    world = built
    # the environment pages every tool result to the agent's character budget (None: no paging)
    brief, info = env.reset(seed, world=world, max_observation_chars=observation_budget(agent))
    reset_agent(agent, brief, info["tools"], seed, {k: info[k] for k in EPISODE_INFO_KEYS})
    observations: list[Observation] = []
    totals: list = [None, None, 0.0]
    counts: dict[str, int | None] = {"tokens_cached_in": None, "tokens_cache_write": None, "tokens_reasoning": None,
                                       "cache_hits": None}
    error = None
    try:
        # One deadline for the whole episode (not a wait_for per turn: that costs a Task per turn).
        async with asyncio.timeout(timeout_s):
            while not env.done:
                turn = await agent.act(observations)
                totals[0] = _add(totals[0], turn.tokens_in)
                totals[1] = _add(totals[1], turn.tokens_out)
                totals[2] += turn.cost_usd
                for name in ("tokens_cached_in", "tokens_cache_write", "tokens_reasoning"):
                    counts[name] = _add(counts[name], getattr(turn, name))
                counts["cache_hits"] = _add(counts["cache_hits"], None if turn.cache_hit is None else int(turn.cache_hit))
                if turn.stop_reason:
                    env.end(turn.stop_reason)
                    break
                actions = turn.actions or [Action(tool="", args={"reply": (turn.text or "")[:2000]})]
                observations = []
                for i, action in enumerate(actions):
                    text, _r, _term, _trunc, step_info = env.step(action)
                    _account(env.steps[-1], turn, first=i == 0)
                    if action.tool == "":
                        text = NO_TOOL_REMINDER
                    observations.append(Observation(action.call_id, action.tool, text, step_info["is_error"]))
                    if env.done:
                        break
    except TimeoutError:
        env.end(f"timeout: episode exceeded {timeout_s:.0f} s")
    finally:
        await agent.aclose()
    termination = env.termination or "unknown"
    status = "failed" if termination.startswith(FAILED_PREFIXES) else "completed"
    if status == "failed":
        error = termination
    score = env.score()
    packet = build_judge_packet(env.spec, env.world, env.state, brief)
    return EpisodeOutcome(
        task_id=env.spec.id, seed=seed, world_hash=env.world.world_hash, brief=brief, steps=env.steps, score=score,
        termination=termination, status=status, judge_packet=packet, tokens_in=totals[0], tokens_out=totals[1],
        cost_usd=totals[2], **counts, wall_s=time.perf_counter() - t0, error=error, dispositions=packet["dispositions"],
        world_reused=reused,
    )


def observation_budget(agent: Agent) -> int | None:
    """The agent's character budget per tool result (its ``max_observation_chars``; None: unlimited)."""
    budget = getattr(agent, "max_observation_chars", None)
    return int(budget) if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None


def play(task_id: str, agent: Agent | str, seed: int = 0, knobs: dict | None = None,
         tools_withheld: tuple[str, ...] = (), **kw) -> EpisodeOutcome:
    """Synchronous convenience: play one episode of ``task_id`` with a built-in agent name or an Agent."""
    from jeval_ray.agents import make_agent

    if isinstance(agent, str):
        agent = make_agent(agent, seed)
    env = JEEnv(task_id, knobs, tools_withheld)
    return asyncio.run(play_episode(env, agent, seed, **kw))
