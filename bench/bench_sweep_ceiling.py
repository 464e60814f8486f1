"""How close the sweep gets to the bare Ray ceiling on a CPU-bound grid, side by side in one run.

Run: python bench/bench_sweep_ceiling.py [seeds]      (default 80 seeds x 16 tasks, careful agent)

1. the fastest plain loop: every episode in one event loop in this process (play + reference judge);
2. bare Ray batches: two already-started ``EpisodeWorker`` actors playing batches of 32 (two in
   flight each), results fetched and dropped: no judge pool, no Parquet, no actor start-up;
3. the sweep itself (``run_sweep``), which also starts its actors, judges in a separate pool and
   writes every record.

(2) is the most a design built on these actors can reach on this machine; the distance from (2)
to (3) is what the judge pool, the writing and start-up cost.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import bench_sweep as bench  # noqa: E402


def main() -> None:
    import ray

    from jeval_ray.sweep import Grid, run_sweep
    from jeval_ray.sweep.actors import episode_worker_class

    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    cfg = bench.cpu_grid_config(tempfile.mkdtemp(prefix="ceiling_"), seeds)
    cells = list(Grid(cfg).cells())
    t0 = time.perf_counter()
    bench.plain_loop(cells)
    seq = time.perf_counter() - t0

    bench._init_ray()
    models = {"careful": {"name": "careful", "provider": "builtin", "agent": "careful"}}
    jobs = [{"run_id": "ceiling", "episode_id": c.episode_id, "attempt": 1, "task_id": c.task_id, "tier": c.tier,
             "model": "careful", "seed": c.seed, "condition": c.condition, "tools_withheld": list(c.tools_withheld),
             "knobs": c.knobs, "step_budget": c.step_budget, "contract_json": c.contract_json,
             "timeout_s": cfg.execution.episode_timeout_s} for c in cells]
    workers = [episode_worker_class(0.5, {}, 64, "default").remote(models, True) for _ in range(2)]
    ray.get([w.ready.remote() for w in workers])
    ray.get([w.run_many.options(num_returns=2).remote(jobs[:16])[0] for w in workers])  # warm up
    chunks = [jobs[i:i + 32] for i in range(0, len(jobs), 32)]
    t0 = time.perf_counter()
    pending: list = []
    k = 0
    while k < len(chunks) or pending:
        while k < len(chunks) and len(pending) < 4:
            pending.append(workers[k % 2].run_many.options(num_returns=2).remote(chunks[k])[0])
            k += 1
        done, pending = ray.wait(pending, num_returns=1)
        ray.get(done)
    bare = time.perf_counter() - t0
    for w in workers:
        ray.kill(w)
    time.sleep(1.0)

    t0 = time.monotonic()  # the clock of the sweep's timeline
    r = run_sweep(cfg)
    sweep = time.monotonic() - t0
    assert r.done == len(cells), r
    print(f"{len(cells)} careful episodes on {os.cpu_count()} CPU(s)")
    print("| run | wall s | speedup over the plain loop |\n|---|---:|---:|")
    print(f"| plain loop, one event loop | {seq:.2f} | 1.00x |")
    print(f"| bare Ray batches (warm workers, no judge, no writes) | {bare:.2f} | {seq / bare:.2f}x |")
    print(f"| the sweep (start-up, judge pool, Parquet) | {sweep:.2f} | {seq / sweep:.2f}x |")
    tl = r.timeline
    print(f"sweep: first dispatch after {tl['first_dispatch'] - t0:.2f} s; dispatch to last write "
          f"{tl['last_finish'] - tl['first_dispatch']:.2f} s; then {t0 + sweep - tl['last_finish']:.2f} s to return")


if __name__ == "__main__":
    main()
