"""Benchmarks of the sweep runner (issue 4). Run from the repo root:

    python bench/bench_sweep.py            # all four, prints a table of ratios measured side by side
    python bench/bench_sweep.py --only sched,cpu

1. Scheduling efficiency: episodes whose agent awaits a fixed latency per step (no CPU), 256 in
   flight: achieved episodes/s (first dispatch -> last episode written) / ideal (in-flight / the
   pure-latency episode duration). Target >= 0.9. On the product's defaults, which give each
   worker a queue (``queue_per_worker: auto``); measured again without queues in the same run.
2. CPU-bound scaling: the careful agent on one grid, a Ray sweep (which also writes every record
   as Parquet) vs a plain sequential loop in this process (play + reference judge, no writing,
   all episodes in one event loop; a loop of ``play()``, one event loop per episode, is slower
   and is measured too; so is the one-event-loop loop again after the sweep: the ratios use the
   fastest of the three, so a slow minute on a shared host cannot flatter the sweep). Target >= 1.6x
   on 2 cores. Start-up (actor processes importing the
   package, warming up) is inside the sweep's wall time: larger grids (``--cpu-seeds``) amortise it.
   The same run also measures the machine's own ceiling for this grid: two warm plain processes
   started together, each playing half the cells (no Ray, no judge pool, no writing). On a shared
   VM two busy processes do not get two cores' worth of work done; this says how much they got.
3. Driver memory: peak RSS of the driver process for a 20,000- vs a 2,000-episode sweep of fast
   simulated agents (each in a fresh subprocess). Target ratio <= 1.5.
4. Parquet: rows/s written (rows / time inside the writer) and files per partition afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

TINY_WORLD = {"n_entries": 40, "n_defects": 1, "n_decoys": 1, "noise_documents": 0}


def _cfg(out: str, **over) -> dict:
    cfg = {
        "name": "bench", "tasks": ["JE-1"], "seeds": 5, "conditions": ["full"], "allow_test_agents": True,
        "models": [{"name": "careful", "agent": "careful"}],
        "output": {"root": out, "flush_episodes": 256, "flush_seconds": 10, "keep_observations": True},
        "execution": {"episode_workers": 2, "episodes_per_worker": 128, "max_in_flight": 256},
        "ray": {"num_cpus": 2, "object_store_memory_mb": 256, "log_to_driver": False},
    }
    for k, v in over.items():
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) and isinstance(cfg.get(k), dict) else v
    return cfg


def _init_ray():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, object_store_memory=256 << 20, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")


def _files_per_partition(run_dir: str) -> dict[str, float]:
    out = {}
    for name in ("steps", "episodes", "dispositions", "judgments"):
        parts = [p.parent for p in Path(run_dir, name).rglob("part-*.parquet")]
        out[name] = len(parts) / max(len(set(parts)), 1)
    return out


# ---------------------------------------------------------------------------- 1. scheduling
def bench_scheduling(tmp: str, latency_ms: float = 1000.0, steps: int = 4, in_flight: int = 256, waves: int = 6,
                     workers: int | None = None, worker_cpus: float | None = None, queue: int | str = "auto") -> dict:
    """``workers``/``worker_cpus`` None: the product's defaults (``episode_workers: auto``, one per CPU;
    ``episodes_per_worker: auto``, the in-flight work shared among them). ``queue``: the product's
    ``queue_per_worker``; ``auto`` gives each worker a queue as long as what it plays (the ``sleep``
    agent waits on latency), 0 none."""
    from jeval_ray.sweep import run_sweep, validate_config

    _init_ray()
    n = in_flight * waves
    model = {"name": "sim", "agent": "sleep", "agent_options": {"latency_ms": latency_ms, "steps": steps}}
    execution = {"max_in_flight": in_flight, "episode_workers": "auto" if workers is None else workers,
                 "episodes_per_worker": "auto", "queue_per_worker": queue}
    if worker_cpus is not None:
        execution["episode_worker_cpus"] = worker_cpus
    cfg = validate_config(_cfg(tmp, models=[model], seeds=n, knobs=TINY_WORLD, execution=execution))
    r = run_sweep(cfg)
    assert r.done == n, r
    span = r.timeline["last_finish"] - r.timeline["first_dispatch"]
    duration = (steps + 1) * latency_ms / 1000.0  # steps tool calls + submit, one latency each
    achieved, ideal = n / span, in_flight / duration
    # steady state: the episodes after the first wave over the time from the first wave's end (its
    # in_flight-th finish) to the last finish; whole waves, so their bursts do not skew the rate
    from jeval_ray.store import read_dataset

    eps = read_dataset(r.run_dir, "episodes").select(["started_at", "finished_at", "wall_s", "worker"]).to_pandas()
    t = sorted((eps["finished_at"] - eps["started_at"].min()).dt.total_seconds())
    steady = (n - in_flight) / max(t[-1] - t[in_flight - 1], 1e-9)
    return {"episodes": n, "in_flight": in_flight, "workers": int(eps["worker"].nunique()), "episode_s": duration,
            "span_s": span, "achieved_eps": achieved, "ideal_eps": ideal, "efficiency": achieved / ideal, "steady_eps": steady, "steady_efficiency": steady / ideal,
            "mean_episode_wall_s": float(eps["wall_s"].mean()), "files_per_partition": _files_per_partition(r.run_dir),
            "rows": r.rows, "write_s": r.write_seconds}


# ---------------------------------------------------------------------------- 2. cpu scaling
def cpu_grid_config(tmp: str, seeds: int):
    """The CPU-bound grid: every available task x the careful agent x ``seeds``, product flush defaults."""
    from jeval_ray.sweep import validate_config

    return validate_config(_cfg(tmp, tasks="available", seeds=seeds, output={"flush_episodes": 64, "flush_seconds": 20},
                                execution={"episodes_per_worker": 64, "max_in_flight": 128}))


def plain_loop(cells, fresh_loop_per_episode: bool = False) -> None:
    """The sequential baseline: play each cell with the careful agent and apply the reference judge.

    By default every episode runs in one event loop (the fastest plain loop); with
    ``fresh_loop_per_episode`` each gets its own, as ``jeval_ray.episode.play`` does.
    """
    from jeval_ray.agents import make_agent
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.scoring import reference_judge

    def episode(c):
        return play_episode(JEEnv(c.task_id, c.knobs, c.tools_withheld), make_agent("careful", c.seed), c.seed)

    if fresh_loop_per_episode:
        for c in cells:
            reference_judge(asyncio.run(episode(c)).judge_packet)
        return

    async def one_loop() -> None:
        for c in cells:
            reference_judge((await episode(c)).judge_packet)

    asyncio.run(one_loop())


def _plain_share(seeds: int, out: str, k: int, n: int, barrier, results) -> None:
    """A child of ``parallel_plain``: import, warm up, wait for the others, play share ``k`` of ``n``."""
    from jeval_ray.sweep import Grid

    cells = list(Grid(cpu_grid_config(out, seeds)).cells())[k::n]
    plain_loop(cells[:4])  # warm up: imports, first-call costs
    barrier.wait()
    t0 = time.perf_counter()
    plain_loop(cells)
    results.put(time.perf_counter() - t0)


def parallel_plain(seeds: int, out: str, procs: int = 2) -> float:
    """The machine's own ceiling for the CPU-bound grid: ``procs`` plain processes, each playing its
    share of the cells in one event loop, already warm and started together. Seconds until the last
    one finishes. No Ray, no judge pool, no writing: what ideal parallelism of the plain loop gets."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(procs + 1), ctx.Queue()
    children = [ctx.Process(target=_plain_share, args=(seeds, out, k, procs, barrier, results)) for k in range(procs)]
    for c in children:
        c.start()
    barrier.wait()
    t0 = time.perf_counter()
    walls = [results.get() for _ in children]
    elapsed = time.perf_counter() - t0
    for c in children:
        c.join()
    assert len(walls) == procs
    return elapsed


def bench_cpu(tmp: str, seeds: int = 20) -> dict:
    from jeval_ray.sweep import Grid, run_sweep

    cfg = cpu_grid_config(tmp, seeds)
    cells = list(Grid(cfg).cells())
    t0 = time.perf_counter()
    plain_loop(cells)
    seq = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain_loop(cells, fresh_loop_per_episode=True)
    seq_play = time.perf_counter() - t0
    par = parallel_plain(seeds, tmp)
    _init_ray()
    t0 = time.perf_counter()
    r = run_sweep(cfg)
    wall = time.perf_counter() - t0
    assert r.done == len(cells), r
    span = r.timeline["last_finish"] - r.timeline["first_dispatch"]
    # the one-event-loop baseline again, after the sweep: on a shared host a slow minute during the
    # first measurement would flatter the sweep, so the ratios use the fastest plain loop measured
    t0 = time.perf_counter()
    plain_loop(cells)
    seq_after = time.perf_counter() - t0
    best = min(seq, seq_after, seq_play)
    return {"episodes": len(cells), "sequential_s": seq, "sequential_after_s": seq_after, "sequential_play_s": seq_play,
            "fastest_plain_s": best, "parallel_plain_s": par, "speedup_parallel_plain": best / par,
            "ray_vs_parallel_plain": par / wall, "ray_wall_s": wall, "ray_span_s": span, "speedup_wall": best / wall,
            "speedup_span": best / span, "rows": r.rows, "write_s": r.write_seconds,
            "files_per_partition": _files_per_partition(r.run_dir)}


# ---------------------------------------------------------------------------- 3. driver memory
def _memory_child(n: int, out: str) -> None:
    from jeval_ray.sweep import run_sweep, validate_config

    model = {"name": "fast", "agent": "sleep", "agent_options": {"latency_ms": 0, "steps": 1}}
    cfg = validate_config(_cfg(out, models=[model], seeds=n, knobs=TINY_WORLD,
                               output={"keep_observations": False, "flush_episodes": 2000, "flush_seconds": 5},
                               execution={"max_in_flight": 256, "episodes_per_worker": 128}))
    t0 = time.perf_counter()
    r = run_sweep(cfg)
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"episodes": n, "done": r.done, "peak_rss_mb": rss_mb, "wall_s": wall, "rows": r.rows,
                      "write_s": r.write_seconds, "files_per_partition": _files_per_partition(r.run_dir)}))


def bench_memory(tmp: str, small: int = 2000, large: int = 20000) -> dict:
    res = {}
    for n in (small, large):
        p = subprocess.run([sys.executable, __file__, "--memory-child", str(n), tmp], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1800)
        if p.returncode:
            raise RuntimeError(p.stderr[-3000:])
        res[n] = json.loads(p.stdout.strip().splitlines()[-1])
    return {"small": res[small], "large": res[large], "ratio": res[large]["peak_rss_mb"] / res[small]["peak_rss_mb"]}


# ---------------------------------------------------------------------------- calibration
_SPIN = "import time\nt=time.perf_counter()\nx=0\nfor i in range(15_000_000): x+=i\nprint(time.perf_counter()-t)"


def machine_parallelism() -> float:
    """How many cores this machine gives right now: 2 pure-Python spin loops at once vs one alone."""
    one = float(subprocess.run([sys.executable, "-c", _SPIN], capture_output=True, text=True).stdout)
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    both = max(float(p.communicate()[0]) for p in procs)
    return 2 * one / both


# ---------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="sched,cpu,mem", help="comma list of sched, cpu, mem (parquet is reported by each)")
    ap.add_argument("--cpu-seeds", type=int, default=20, help="seeds per task of the CPU-bound grid (x 16 tasks)")
    ap.add_argument("--memory-child", nargs=2, metavar=("N", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        _memory_child(int(args.memory_child[0]), args.memory_child[1])
        return 0
    only = set(args.only.split(","))
    results = {}
    load_before = os.getloadavg()
    par_before = machine_parallelism()
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        if "mem" in only:  # before this process starts Ray: the children start their own
            results["mem"] = bench_memory(tmp)
        if "sched" in only:
            results["sched"] = bench_scheduling(tmp)
            results["sched_noq"] = bench_scheduling(tmp, queue=0)
        if "cpu" in only:
            results["cpu"] = bench_cpu(tmp, seeds=args.cpu_seeds)
    print(f"# bench_sweep on {os.cpu_count()} CPU(s), python {sys.version.split()[0]}; load average before "
          f"{load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print(f"# cores available to 2 spin loops: {par_before:.2f} before, {machine_parallelism():.2f} after "
          "(2.00 = an idle 2-core machine; a CPU-bound speedup cannot exceed this)")
    line = "{:36} {:>44} {:>10} {:>8}".format
    print(line("benchmark", "measured", "ratio", "target"))
    if "sched" in results:
        s = results["sched"]
        print(line("scheduling efficiency", "%.1f / %.1f ep/s ideal" % (s["achieved_eps"], s["ideal_eps"]),
                   "%.3f" % s["efficiency"], ">= 0.9"))
        print(line("  steady state (after wave 1)", "%.1f / %.1f ep/s ideal" % (s["steady_eps"], s["ideal_eps"]),
                   "%.3f" % s["steady_efficiency"], ""))
        print(line("", "%d eps, %d in flight, %.1f s latency each (played in %.2f s)" % (
            s["episodes"], s["in_flight"], s["episode_s"], s["mean_episode_wall_s"]), "", ""))
        s0 = results["sched_noq"]
        print(line("  same without queues (queue_per_worker 0)", "%.1f / %.1f ep/s ideal" % (s0["achieved_eps"], s0["ideal_eps"]),
                   "%.3f" % s0["efficiency"], ""))
    if "cpu" in results:
        c = results["cpu"]
        print(line("cpu-bound scaling (careful, %d eps)" % c["episodes"],
                   "seq %.1f s / ray sweep %.1f s" % (c["fastest_plain_s"], c["ray_wall_s"]), "%.2fx" % c["speedup_wall"], ">= 1.6"))
        print(line("  same, dispatch -> last write", "seq %.1f s / ray %.1f s" % (c["fastest_plain_s"], c["ray_span_s"]),
                   "%.2fx" % c["speedup_span"], ""))
        print(line("  machine ceiling: 2 warm plain processes", "seq %.1f s / 2 procs %.1f s" % (c["fastest_plain_s"], c["parallel_plain_s"]),
                   "%.2fx" % c["speedup_parallel_plain"], ""))
        print(line("  sweep / that ceiling", "2 procs %.1f s / ray sweep %.1f s" % (c["parallel_plain_s"], c["ray_wall_s"]),
                   "%.2f" % c["ray_vs_parallel_plain"], ""))
        print(line("  seq = fastest plain loop measured:", "one loop %.1f s, after the sweep %.1f s, play() loop %.1f s" % (
            c["sequential_s"], c["sequential_after_s"], c["sequential_play_s"]), "", ""))
    if "mem" in results:
        m = results["mem"]
        print(line("driver peak RSS, 20k vs 2k episodes", "%.0f MB / %.0f MB" % (m["large"]["peak_rss_mb"], m["small"]["peak_rss_mb"]),
                   "%.3f" % m["ratio"], "<= 1.5"))
        print(line("", "20k sweep %.0f s, 2k sweep %.0f s" % (m["large"]["wall_s"], m["small"]["wall_s"]), "", ""))
    for key, label in (("cpu", "careful sweep"), ("sched", "simulated-latency sweep"), ("mem", "20k fast sweep")):
        if key not in results:
            continue
        r = results[key]["large"] if key == "mem" else results[key]
        rows = sum(r["rows"].values())
        fpp = ", ".join("%s %.1f" % kv for kv in r["files_per_partition"].items())
        print(line("parquet: " + label, "%d rows in %.2f s of writing" % (rows, r["write_s"]),
                   "%.0f" % (rows / max(r["write_s"], 1e-9)), "rows/s"))
        print(line("", "files/partition: " + fpp, "", ""))
    print(json.dumps(results, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
