"""Careful at a model's limits (issue 27, points 2 and 4): every task over many seeds, in process and
through the local test server, at the LLM agent's defaults.

Each episode is played twice on the same world: in process by the built-in careful agent with every
result paged to 20,000 characters, and as a model by the LLM agent (20,000 characters, a 128k window,
``elide_oldest``) against the test server's careful brain over the OpenAI wire. Per task it prints the
outcome of both (mean and lowest), how many episodes agree (the same tool calls and the same score), and
the server side's tokens as the server counts them (cl100k_base): median and p90 cumulative input per
episode, the largest single request, requests (median), calls (median), output tokens (median), and the
observations the agent cut and results it elided (0 and 0 when the environment's paging works).

    python bench/bench_limits.py --seeds 7000-7019
    python bench/bench_limits.py --seeds 0-4 --tasks JE-16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jeval_ray.agents import make_agent  # noqa: E402
from jeval_ray.agents.llm import LLMAgent  # noqa: E402
from jeval_ray.env import JEEnv  # noqa: E402
from jeval_ray.episode import play_episode  # noqa: E402
from jeval_ray.models import ModelConfig  # noqa: E402
from jeval_ray.tasks import TASK_IDS  # noqa: E402
from jeval_ray.testserver import LocalModelServer, builtin_brain  # noqa: E402

CHARS, WINDOW = 20_000, 128_000
GOALS = {"median": 500_000, "p90": 800_000, "request": 64_000, "outcome": 0.95}


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def calls_of(out) -> list[tuple[str, object]]:
    """An episode's (tool, arguments) in order, the arguments parsed (the wire and the kit space JSON apart)."""
    return [(s.tool, json.loads(s.args) if isinstance(s.args, str) and s.args[:1] == "{" else s.args) for s in out.steps]


def p90(xs: list[int]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


async def _server_side(server: LocalModelServer, task: str, seeds: list[int], concurrency: int):
    sem = asyncio.Semaphore(concurrency)

    async def one(seed: int):
        async with sem:
            cfg = ModelConfig(name="careful-http", model="careful", base_url=server.url, max_attempts=2,
                              backoff_base_s=0.01, timeout_s=60, context_window=WINDOW, max_observation_chars=CHARS)
            agent = LLMAgent(cfg)
            out = await play_episode(JEEnv(task), agent, seed)
            return out, agent

    return await asyncio.gather(*(one(s) for s in seeds))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASK_IDS), help="comma list of task ids (default: all 16)")
    p.add_argument("--seeds", default="7000-7019", help="seeds, e.g. 7000-7019 or 1,2,5 (default 7000-7019)")
    p.add_argument("--concurrency", type=int, default=4, help="episodes in flight against the server (default 4)")
    a = p.parse_args()
    tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    seeds = seeds_of(a.seeds)
    print(f"careful at {CHARS:,} characters, a {WINDOW:,}-token window; seeds {a.seeds} ({len(seeds)} per task)\n")
    print("| task | outcome in process (mean, lowest) | through the server (mean, lowest) | agree | median input | p90 "
          "input | largest request | requests (median) | calls (median) | output (median) | cut | elided |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    misses: list[str] = []
    with LocalModelServer(builtin_brain("careful")) as server:
        for task in tasks:
            local = [asyncio.run(play_episode(JEEnv(task), make_agent("careful", s, max_observation_chars=CHARS), s))
                     for s in seeds]
            remote = asyncio.run(_server_side(server, task, seeds, a.concurrency))
            lo = [o.score.verification.outcome for o in local]
            ro = [o.score.verification.outcome for o, _ in remote]
            agree = sum(1 for x, (y, _) in zip(local, remote) if calls_of(x) == calls_of(y) and x.score.score == y.score.score)
            tin = [o.tokens_in or 0 for o, _ in remote]
            largest = max(max((s.tokens_in or 0) for s in o.steps) for o, _ in remote)
            requests = [sum(bool(s.tokens_in) for s in o.steps) for o, _ in remote]
            calls = [len(o.steps) for o, _ in remote]
            tout = [o.tokens_out or 0 for o, _ in remote]
            cut = sum(ag.observations_cut for _, ag in remote)
            elided = sum(ag.results_elided for _, ag in remote)
            med, top = statistics.median(tin), p90(tin)
            if (med > GOALS["median"] or top > GOALS["p90"] or largest > GOALS["request"]
                    or statistics.mean(lo) < GOALS["outcome"] or statistics.mean(ro) < GOALS["outcome"]):
                misses.append(task)
            print(f"| {task} | {statistics.mean(lo):.3f}, {min(lo):.3f} | {statistics.mean(ro):.3f}, {min(ro):.3f} | "
                  f"{agree}/{len(seeds)} | {med / 1e3:,.0f}k | {top / 1e3:,.0f}k | {largest / 1e3:,.1f}k | "
                  f"{statistics.median(requests):g} | {statistics.median(calls):g} | {statistics.median(tout):,.0f} | "
                  f"{cut} | {elided} |", flush=True)
    print(f"\n{len(tasks) * len(seeds) * 2} episodes in {time.perf_counter() - t0:.0f} s. Goals: outcome >= "
          f"{GOALS['outcome']} (mean), median input <= {GOALS['median']:,}, p90 <= {GOALS['p90']:,}, no request above "
          f"{GOALS['request']:,}: " + (f"missed on {', '.join(misses)}" if misses else "met on every task"))


if __name__ == "__main__":
    main()
