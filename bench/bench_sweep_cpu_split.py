"""Where the CPU of a CPU-bound sweep goes: CPU seconds per episode of every process.

Run: python bench/bench_sweep_cpu_split.py [seeds]     (default 100 seeds x 16 tasks, careful agent)

Plays the grid once as a plain sequential loop in this process, then as a Ray sweep, and prints
the CPU time (user + system, from psutil) that each process spent per episode during the sweep:
the episode workers, the driver (this process), the judge worker and Ray's daemons.
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import bench_sweep as bench  # noqa: E402


def cpu_by_process() -> collections.Counter:
    out: collections.Counter = collections.Counter()
    for p in psutil.process_iter(["cmdline", "name"]):
        try:
            t = p.cpu_times()
            cmd = " ".join(p.info["cmdline"] or [p.info["name"] or ""])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if p.pid == os.getpid():
            key = "driver (this process)"
        elif cmd.startswith("ray::"):
            title = cmd.split()[0]  # process titles may be cut short
            key = next((f"ray::{a}" for a in ("EpisodeWorker", "JudgeWorker") if title.startswith(f"ray::{a[:10]}")), title)
        elif "ray" in cmd and ("raylet" in cmd or "gcs_server" in cmd or "dashboard" in cmd or "log_monitor" in cmd):
            key = "Ray daemons"
        else:
            continue
        out[key] += t.user + t.system
    return out


def main() -> None:
    from jeval_ray.agents import make_agent
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.scoring import reference_judge
    from jeval_ray.sweep import Grid, run_sweep, validate_config

    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    cfg = validate_config(bench._cfg(tempfile.mkdtemp(prefix="cpu_split_"), tasks="available", seeds=seeds,
                                     execution={"episodes_per_worker": 32, "max_in_flight": 64}))
    cells = list(Grid(cfg).cells())
    c0 = time.process_time()
    for c in cells:
        out = asyncio.run(play_episode(JEEnv(c.task_id, c.knobs, c.tools_withheld), make_agent("careful", c.seed), c.seed))
        reference_judge(out.judge_packet)
    seq = time.process_time() - c0
    bench._init_ray()
    before = cpu_by_process()
    r = run_sweep(cfg)
    after = cpu_by_process()
    n = r.done
    print(f"{n} episodes; sequential loop in one process: {1000 * seq / len(cells):.1f} ms CPU per episode")
    print("| process | CPU s | ms per episode |\n|---|---:|---:|")
    total = 0.0
    for k in sorted(after, key=lambda k: -(after[k] - before[k])):
        d = after[k] - before[k]
        if d > 0.01:
            total += d
            print(f"| {k} | {d:.2f} | {1000 * d / n:.1f} |")
    print(f"| all | {total:.2f} | {1000 * total / n:.1f} |")
    print(f"upper bound on 2 cores: 2 x {1000 * seq / len(cells):.1f} / {1000 * total / n:.1f} = "
          f"{2 * (seq / len(cells)) / (total / n):.2f}x")


if __name__ == "__main__":
    main()
