"""How many calls careful needs per task, against the step budget (issue 29, point 5).

Plays the built-in careful agent in process at the LLM agent's defaults (every result paged to 20,000
characters) with an unbounded step budget, so it makes every call its procedure wants, over ``--seeds``
at default knobs, and prints per task: the calls careful made (median, p99, most), the task's step
budget, the budget the rule asks for (1.5 x the most, rounded up to a multiple of 10) and whether the
budget meets it.

    python bench/bench_budgets.py --seeds 40000-40199
    python bench/bench_budgets.py --seeds 40000-40019 --tasks JE-1,JE-2
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jeval_ray.agents import make_agent  # noqa: E402
from jeval_ray.env import JEEnv  # noqa: E402
from jeval_ray.episode import play_episode  # noqa: E402
from jeval_ray.tasks import TASK_IDS, task_value  # noqa: E402

from bench_limits import seeds_of  # noqa: E402  (bench/ is on sys.path when a script runs)

UNBOUNDED = 100_000
FACTOR = 1.5


def needed(most: int) -> int:
    """The budget the rule asks for: 1.5 x the most calls, up to a multiple of 10."""
    return int(math.ceil(FACTOR * most / 10.0) * 10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASK_IDS), help="comma list of task ids (default: all)")
    p.add_argument("--seeds", default="40000-40199", help="seeds, e.g. 40000-40199 (default)")
    a = p.parse_args()
    tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    seeds = seeds_of(a.seeds)
    print(f"careful at 20,000 characters, unbounded budget; seeds {a.seeds} ({len(seeds)} per task)\n")
    print("| task | calls (median, p99, most) | worst seed | outcome (lowest) | step budget | 1.5 x most | meets |")
    print("|---|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for task in tasks:
        calls, lowest, worst = [], 1.0, (0, seeds[0])
        for s in seeds:
            out = asyncio.run(play_episode(JEEnv(task, step_budget=UNBOUNDED),
                                           make_agent("careful", s, max_observation_chars=20_000), s))
            calls.append(len(out.steps))
            lowest = min(lowest, out.score.verification.outcome)
            worst = max(worst, (len(out.steps), s))
        budget = task_value(task).spec.step_budget
        most = max(calls)
        p99 = sorted(calls)[min(len(calls) - 1, int(round(0.99 * (len(calls) - 1))))]
        print(f"| {task} | {statistics.median(calls):g}, {p99}, {most} | {worst[1]} | {lowest:.3f} | {budget} | "
              f"{needed(most)} | {'yes' if budget >= needed(most) else 'no'} |", flush=True)
    print(f"\n{len(tasks) * len(seeds)} episodes in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
