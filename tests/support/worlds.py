"""One process-wide cache of generated worlds and of the built-in agents' episodes on them, so test
modules share them: the task contract (``test_task_contract.py``), the per-task tests and the key
audits read the same ``(task, seed, knobs)`` worlds, each generated once per test process, and the
same episodes, each played once. Worlds are immutable (a frozen dataclass over Arrow tables), so
sharing them is safe; the cache keeps the most recently used ``MAX_WORLDS`` (a world takes about
1 MB) and the first ``MAX_EPISODES`` episodes (played without keeping their observations' text)."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict

from jeval_ray.agents import make_agent
from jeval_ray.env import JEEnv
from jeval_ray.episode import EpisodeOutcome, play_episode
from jeval_ray.world import World, generate_world

MAX_WORLDS = 160
MAX_EPISODES = 400
_WORLDS: OrderedDict[tuple, World] = OrderedDict()
_EPISODES: dict[tuple, EpisodeOutcome] = {}


def world(task_id: str, seed: int, knobs: dict | None = None, *, keep: bool = True) -> World:
    """The world of ``(task_id, seed, knobs)``, generated on first use. ``keep=False``: do not add a
    newly generated world to the cache (for sweeps over many seeds that nothing reads twice)."""
    key = (task_id, int(seed), json.dumps(knobs or {}, sort_keys=True))
    if key in _WORLDS:
        _WORLDS.move_to_end(key)
        return _WORLDS[key]
    w = generate_world(task_id, seed, knobs)
    if keep:
        _WORLDS[key] = w
        while len(_WORLDS) > MAX_WORLDS:
            _WORLDS.popitem(last=False)
    return w


def played(task_id: str, agent: str, seed: int, tools_withheld: tuple[str, ...] = (),
           max_observation_chars: int | None = None) -> EpisodeOutcome:
    """A built-in agent's (``random``, ``naive``, ``careful``) episode on the cached world of ``(task_id,
    seed)`` with the default knobs, played in process with the episode API on first use;
    ``max_observation_chars``: the budget the environment pages every result to (None: unpaged)."""
    key = (task_id, agent, int(seed), tuple(tools_withheld), max_observation_chars)
    if key not in _EPISODES:
        env = JEEnv(task_id, tools_withheld=tools_withheld, keep_observations=False)
        agent_ = make_agent(agent, seed, max_observation_chars=max_observation_chars)
        outcome = asyncio.run(play_episode(env, agent_, seed, world=(world(task_id, seed), False)))
        if len(_EPISODES) >= MAX_EPISODES:
            return outcome
        _EPISODES[key] = outcome
    return _EPISODES[key]
