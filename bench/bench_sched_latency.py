"""Where a simulated-latency episode's cycle goes: the scheduling-efficiency benchmark, timed per episode.

Run: python bench/bench_sched_latency.py        (the same grid as ``bench_sweep.py --only sched``)

Plays ``bench_sweep.bench_scheduling`` (1,536 episodes of the ``sleep`` agent, 256 in flight,
5 x 1 s of latency each) and, from the driver's dispatch and result times and each episode row's
``started_at`` / ``finished_at``, prints quantiles (p10, p50, p90, p99, seconds) of:

- dispatch -> start: the driver's ``run_many`` call until the episode starts playing in its worker
  (mostly: waiting in the worker's queue for a slot, ``queue_per_worker``, and behind the resets of
  episodes that started there just before);
- start -> finish: the episode itself (ideal: 5.0 s; more when other episodes' resets hold up the
  worker's event loop as a timer fires);
- finish -> result: the episode's end until the driver has its result;

over all episodes and in steady state (without the first and the last 256 dispatched); and how the
first wave's 256 starts spread (each worker resets its share of the wave's worlds one after another).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import bench_sweep as bench  # noqa: E402
import numpy as np  # noqa: E402

from jeval_ray.sweep import driver as drv  # noqa: E402


def main() -> None:
    log: dict[str, dict[str, float]] = {"dispatch": {}, "result": {}}
    submit, result = drv.SweepDriver._submit_batch, drv.SweepDriver._episode_result

    def timed_submit(self, eps, slot):
        now = time.time()
        for ep in eps:
            log["dispatch"][ep.cell.episode_id] = now
        return submit(self, eps, slot)

    def timed_result(self, ep, res):
        log["result"][ep.cell.episode_id] = time.time()
        return result(self, ep, res)

    drv.SweepDriver._submit_batch, drv.SweepDriver._episode_result = timed_submit, timed_result
    from jeval_ray.store import read_dataset

    with tempfile.TemporaryDirectory() as tmp:
        r = bench.bench_scheduling(tmp)
        run_dir = next(p for p in Path(tmp).iterdir() if p.is_dir())
        eps = read_dataset(str(run_dir), "episodes").select(["episode_id", "started_at", "finished_at"]).to_pylist()
    print(f"efficiency {r['efficiency']:.3f} (steady state {r['steady_efficiency']:.3f}), span {r['span_s']:.1f} s, "
          f"{r['episodes']} episodes, {r['in_flight']} in flight, {r['workers']} workers")
    eps.sort(key=lambda e: log["dispatch"][e["episode_id"]])
    wave = eps[: r["in_flight"]]  # eps is in dispatch order
    d0, d_last = (log["dispatch"][e["episode_id"]] for e in (wave[0], wave[-1]))
    starts = np.quantile([e["started_at"].timestamp() - d0 for e in wave], [0.1, 0.5, 0.9, 1.0])
    print(f"first wave: dispatched over {d_last - d0:.2f} s; its starts after the first dispatch (p10 p50 p90 max): "
          + "  ".join(f"{q:.2f}" for q in starts))
    for label, rows in (("all episodes", eps), ("steady state", eps[256:-256])):
        d = np.array([log["dispatch"][e["episode_id"]] for e in rows])
        s = np.array([e["started_at"].timestamp() for e in rows])
        f = np.array([e["finished_at"].timestamp() for e in rows])
        g = np.array([log["result"][e["episode_id"]] for e in rows])
        print(f"{label}:")
        for name, x in (("dispatch -> start", s - d), ("start -> finish", f - s), ("finish -> result", g - f)):
            print(f"  {name:18} " + "  ".join(f"{q:6.3f}" for q in np.quantile(x, [0.1, 0.5, 0.9, 0.99])))


if __name__ == "__main__":
    main()
