"""Careful under paging and context management (issue 27, points 1 and 5).

In process (default): the built-in careful agent with the environment paging every result to
``--chars`` characters (the LLM agent's default, 20,000), against careful unpaged, per task over
``--seeds``: mean and lowest outcome, calls used (median and most) against the step budget, the
episodes that spent the whole budget, and the largest observation.

``--server``: careful played as a model through the local test server by the LLM agent at ``--chars``
and a ``--window``-token context (elide_oldest), per task and seed: outcome, calls, results elided,
observations the agent cut (0 when paging works), the largest request and the cumulative input tokens
(cl100k_base, as the server counts them).

Run:    python bench/bench_paging.py                                     (JE-1..JE-16, seeds 0-4)
        python bench/bench_paging.py --server --window 32768 --tasks JE-9,JE-16
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from jeval_ray.agents import make_agent
from jeval_ray.agents.llm import LLMAgent
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.models import ModelConfig
from jeval_ray.tasks import TASK_IDS
from jeval_ray.testserver import LocalModelServer, builtin_brain


def _play(task: str, seed: int, chars: int | None):
    env = JEEnv(task)
    out = asyncio.run(play_episode(env, make_agent("careful", seed, max_observation_chars=chars), seed))
    return out, env.step_budget


def in_process(tasks: list[str], seeds: list[int], chars: int) -> None:
    print(f"| task | outcome at {chars:,} (mean, lowest) | unpaged | calls at {chars:,} (median, most) | unpaged calls "
          "(median, most) | step budget | budget spent | largest observation (paged, unpaged) |")
    print("|---|---|---|---|---|---|---|---|")
    for task in tasks:
        paged = [_play(task, s, chars) for s in seeds]
        whole = [_play(task, s, None) for s in seeds]
        budget = paged[0][1]
        po = [o.score.verification.outcome for o, _ in paged]
        wo = [o.score.verification.outcome for o, _ in whole]
        pc = [len(o.steps) for o, _ in paged]
        wc = [len(o.steps) for o, _ in whole]
        spent = [s for s, n in zip(seeds, pc) if n >= budget]
        big = max(len(st.observation) for o, _ in paged for st in o.steps)
        big_whole = max(len(st.observation) for o, _ in whole for st in o.steps)
        print(f"| {task} | {statistics.mean(po):.3f}, {min(po):.3f} | {statistics.mean(wo):.3f} | "
              f"{statistics.median(pc):g}, {max(pc)} | {statistics.median(wc):g}, {max(wc)} | {budget} | "
              f"{', '.join(f'seed {s}' for s in spent) or '-'} | {big:,}, {big_whole:,} |", flush=True)


def through_server(tasks: list[str], seeds: list[int], chars: int, window: int) -> None:
    print(f"| task | seed | outcome | calls / budget | results elided (elisions) | observations cut | largest request "
          f"| input tokens | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    with LocalModelServer(builtin_brain("careful")) as server:
        for task in tasks:
            for seed in seeds:
                cfg = ModelConfig(name="careful-http", model="careful", base_url=server.url, max_attempts=2,
                                  backoff_base_s=0.01, context_window=window, max_observation_chars=chars)
                agent, env, t0 = LLMAgent(cfg), JEEnv(task), time.perf_counter()
                out = asyncio.run(play_episode(env, agent, seed))
                chunks = sum(1 for s in out.steps if s.elided)
                print(f"| {task} | {seed} | {out.score.verification.outcome:.3f} | {len(out.steps)} / {env.step_budget} | "
                      f"{agent.results_elided} ({chunks}) | {agent.observations_cut} | "
                      f"{max(s.tokens_in or 0 for s in out.steps):,} | {out.tokens_in:,} | "
                      f"{time.perf_counter() - t0:.1f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASK_IDS))
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--chars", type=int, default=20_000)
    p.add_argument("--server", action="store_true")
    p.add_argument("--window", type=int, default=128_000)
    a = p.parse_args()
    tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    seeds = [int(s) for s in a.seeds.split(",")]
    if a.server:
        through_server(tasks, seeds, a.chars, a.window)
    else:
        in_process(tasks, seeds, a.chars)


if __name__ == "__main__":
    main()
