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
import psutil  # noqa: E402


def _cpu(procs) -> float:
    return sum(p.cpu_times().user + p.cpu_times().system for p in procs)


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
    procs = [psutil.Process(info["pid"]) for info in ray.get([w.ready.remote() for w in workers])]
    ray.get([w.run_many.options(num_returns=2).remote(jobs[:16])[0] for w in workers])  # warm up
    chunks = [jobs[i:i + 32] for i in range(0, len(jobs), 32)]
    c0 = _cpu(procs)
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
    bare_cpu = 1000 * (_cpu(procs) - c0) / len(jobs)
    for w in workers:
        ray.kill(w)
    time.sleep(1.0)

    # the sweep's episode workers: CPU from the moment both are ready until all but the last 64
    # episodes have finished (their start-up imports excluded, their first-episode warm-up included)
    marks: dict = {}

    def tick(d) -> None:
        ready = [s for s in d.slots if s.kind == "episode" and s.ready]
        if "ready" not in marks and len(ready) == 2:
            marks["procs"] = [psutil.Process(int(s.label.rsplit(":", 1)[1])) for s in ready]
            marks["ready"] = (_cpu(marks["procs"]), d.finished)
        if "ready" in marks and "end" not in marks and d.finished >= len(cells) - 64:
            marks["end"] = (_cpu(marks["procs"]), d.finished)

    t0 = time.monotonic()  # the clock of the sweep's timeline
    r = run_sweep(cfg, on_tick=tick)
    sweep = time.monotonic() - t0
    assert r.done == len(cells), r
    sweep_cpu = 1000 * (marks["end"][0] - marks["ready"][0]) / (marks["end"][1] - marks["ready"][1])
    print(f"{len(cells)} careful episodes on {os.cpu_count()} CPU(s)")
    print("| run | wall s | speedup over the plain loop | episode-worker CPU, ms per episode |\n|---|---:|---:|---:|")
    print(f"| plain loop, one event loop | {seq:.2f} | 1.00x | ({1000 * seq / len(cells):.2f} wall) |")
    print(f"| bare Ray batches (warm workers, no judge, no writes) | {bare:.2f} | {seq / bare:.2f}x | {bare_cpu:.2f} |")
    print(f"| the sweep (start-up, judge pool, Parquet) | {sweep:.2f} | {seq / sweep:.2f}x | {sweep_cpu:.2f} |")
    tl = r.timeline
    print(f"sweep: first dispatch after {tl['first_dispatch'] - t0:.2f} s; dispatch to last write "
          f"{tl['last_finish'] - tl['first_dispatch']:.2f} s; then {t0 + sweep - tl['last_finish']:.2f} s to return")


if __name__ == "__main__":
    main()
