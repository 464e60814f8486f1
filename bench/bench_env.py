"""Environment benchmarks: world generation, reset time per task, careful-agent episodes per second.

Run: python bench/bench_env.py            (add --quick for a smoke run)
Targets: 1e6-entry world < 5 s; default reset < 50 ms (L4 < 100 ms).

A world is the simulated year of its seed (cached per process, shared by the tasks of a seed)
plus the task's planting. "cold" times clear that cache first, so they include simulating the
year; "warm" times reuse the year, as a sweep does for the other tasks of a seed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from jeval_ray.agents import make_agent
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.tasks import available_tasks
from jeval_ray.world import generate_world
from jeval_ray.world._base import books_for


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    generate_world("JE-1", 0)  # warm imports

    def cold(fn):
        def run():
            books_for.cache_clear()
            return fn()
        return run

    print("## World generation (JE-2 planting on the simulated year), cold: the year simulated too")
    print("| n_entries | entries | lines | median s | min s |")
    print("|---:|---:|---:|---:|---:|")
    for n, rep in ((1_000, 5), (100_000, 3), (1_000_000, 1 if args.quick else 3)):
        ts = timed(cold(lambda: generate_world("JE-2", 0, {"n_entries": n})), rep)
        w = generate_world("JE-2", 0, {"n_entries": n})
        print(f"| {n:,} | {w.n_entries:,} | {w.ledger.num_rows:,} | {statistics.median(ts):.3f} | {min(ts):.3f} |")

    big = 100_000 if args.quick else 1_000_000
    print(f"\n## World generation per task at n_entries={big:,}: cold (year simulated) and warm (year cached)")
    print("| task | tier | cold s | warm s | lines |")
    print("|---|---|---:|---:|---:|")
    for t in available_tasks():
        books_for.cache_clear()
        start = time.perf_counter()
        generate_world(t.id, 0, {"n_entries": big})
        c = time.perf_counter() - start
        start = time.perf_counter()
        w = generate_world(t.id, 0, {"n_entries": big})
        print(f"| {t.id} | {t.tier} | {c:.2f} | {time.perf_counter() - start:.2f} | {w.ledger.num_rows:,} |")
    books_for.cache_clear()

    print("\n## Reset time at default knobs (world generation + brief): cold = a new seed each time")
    print("| task | tier | entries | cold median ms | cold max ms | warm median ms |")
    print("|---|---|---:|---:|---:|---:|")
    reps = 3 if args.quick else 10
    for t in available_tasks():
        env = JEEnv(t.id)
        seeds = iter(range(10_000, 10_000 + reps))
        ts = timed(cold(lambda: env.reset(seed=next(seeds))), reps)
        warm = timed(lambda: env.reset(seed=10_000), reps)
        print(f"| {t.id} | {t.tier} | {env.world.n_entries} | {1000 * statistics.median(ts):.1f} | {1000 * max(ts):.1f} | "
              f"{1000 * statistics.median(warm):.1f} |")

    print("\n## Careful agent, one process, sequential")
    n = 0
    t0 = time.perf_counter()
    rounds = 1 if args.quick else 3
    for _ in range(rounds):
        for t in available_tasks():
            for seed in range(5):
                asyncio.run(play_episode(JEEnv(t.id), make_agent("careful", seed), seed))
                n += 1
    dt = time.perf_counter() - t0
    print(f"{n} episodes in {dt:.2f} s = {n / dt:.1f} episodes/s ({1000 * dt / n:.1f} ms per episode, reset included)")


if __name__ == "__main__":
    main()
