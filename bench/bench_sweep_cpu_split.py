"""Where the CPU of a CPU-bound sweep goes: CPU seconds per episode of every process.

Run: python bench/bench_sweep_cpu_split.py [seeds]     (default 100 seeds x 16 tasks, careful agent)

Plays the grid once as a plain sequential loop in this process, then as a Ray sweep, and prints
the CPU time (user + system, from psutil) that each process spent per episode during the sweep:
the episode workers, the driver (this process), the judge worker and Ray's daemons; over the whole
sweep (worker start-up and imports included) and in steady state (20% to 80% of episodes done).
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


def cpu_by_process() -> dict[int, tuple[str, float]]:
    """CPU seconds so far of every process of interest, by pid (a pid keeps its CPU when an idle
    Ray worker process becomes an actor and changes its title; deltas are taken per pid)."""
    out: dict[int, tuple[str, float]] = {}
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
        out[p.pid] = (key, t.user + t.system)
    return out


def delta(after: dict, before: dict) -> collections.Counter:
    """CPU seconds per process kind between two samples (processes named as in ``after``)."""
    out: collections.Counter = collections.Counter()
    for pid, (key, cpu) in after.items():
        out[key] += cpu - before.get(pid, (key, 0.0))[1]
    return out


def main() -> None:
    from jeval_ray.sweep import Grid, run_sweep

    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    cfg = bench.cpu_grid_config(tempfile.mkdtemp(prefix="cpu_split_"), seeds)
    cells = list(Grid(cfg).cells())
    c0 = time.process_time()
    bench.plain_loop(cells)  # the same plain loop as bench_sweep.py's baseline
    seq = time.process_time() - c0
    bench._init_ray()
    # CPU of every process over the whole sweep (start-up included), and in steady state: between
    # the moments 20% and 80% of the episodes had finished (sampled by the driver's tick hook).
    marks: dict[str, tuple[int, dict]] = {}
    total_eps = len(cells)

    def tick(driver) -> None:
        for name, frac in (("lo", 0.2), ("hi", 0.8)):
            if name not in marks and driver.finished >= frac * total_eps:
                marks[name] = (driver.finished, cpu_by_process())

    before = cpu_by_process()
    r = run_sweep(cfg, on_tick=tick)
    whole = delta(cpu_by_process(), before)
    n = r.done
    per_ep = 1000 * seq / len(cells)
    print(f"{n} episodes; sequential loop in one process (one event loop): {per_ep:.1f} ms CPU per episode")
    (n_lo, c_lo), (n_hi, c_hi) = marks["lo"], marks["hi"]
    steady_n = n_hi - n_lo
    if steady_n < 200:
        print(f"note: only {steady_n} episodes finished between the 20% and 80% marks; the steady-state column "
              "needs a larger grid (e.g. 80 seeds) to mean anything")
    steady_by = delta(c_hi, c_lo)
    print("| process | CPU s, whole sweep | ms per episode, whole sweep | ms per episode, steady state |")
    print("|---|---:|---:|---:|")
    total = steady = 0.0
    for k in sorted(whole, key=lambda k: -whole[k]):
        d, sd = whole[k], steady_by.get(k, 0.0)
        if d > 0.01:
            total += d
            steady += sd
            print(f"| {k} | {d:.2f} | {1000 * d / n:.1f} | {1000 * sd / steady_n:.1f} |")
    print(f"| all | {total:.2f} | {1000 * total / n:.1f} | {1000 * steady / steady_n:.1f} |")
    print(f"upper bound on 2 cores: 2 x {per_ep:.1f} / {1000 * total / n:.1f} = {2 * per_ep / (1000 * total / n):.2f}x "
          f"over the whole sweep, 2 x {per_ep:.1f} / {1000 * steady / steady_n:.1f} = "
          f"{2 * per_ep / (1000 * steady / steady_n):.2f}x in steady state")


if __name__ == "__main__":
    main()
