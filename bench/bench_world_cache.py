"""The world cache on the README's main job, side by side in one run.

Run: python bench/bench_world_cache.py [rounds]      (default 2 rounds, ABBA order)

Plays the embedded default sweep (``configs/local.yaml``: every available task x random, naive,
careful x 5 seeds x 2 conditions = 480 episodes; 80 distinct worlds) on one local Ray, alternately
with ``execution.world_cache: 16`` (the default: each episode worker keeps the worlds it generated,
and the next cells of the same (task, seed) take them) and ``world_cache: 0`` (every episode
generates its world). Prints each sweep's wall time (``run_sweep``: actors start, play, judge,
write) and the median ratio. The records of both are the same (``tests/test_sweep_run.py``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def main() -> None:
    import ray
    import yaml

    from jeval_ray.sweep import Grid, run_sweep, validate_config
    from jeval_ray.sweep.config import default_config_text

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    base = yaml.safe_load(default_config_text())
    ray.init(num_cpus=2, object_store_memory=256 << 20, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    walls: dict[int, list[float]] = {16: [], 0: []}
    with tempfile.TemporaryDirectory() as tmp:
        grid = Grid(validate_config(base))
        n = len(grid)
        worlds = len({(c.task_id, c.seed, str(sorted(c.knobs.items()))) for c in grid.cells()})
        print(f"# default sweep: {n} episodes, {worlds} distinct worlds; {rounds} round(s), order ABBA")
        order = [16, 0, 0, 16] * rounds
        for i, cache in enumerate(order):
            cfg = validate_config({**base, "output": {**base.get("output", {}), "root": f"{tmp}/r{i}"},
                                   "execution": {**base.get("execution", {}), "world_cache": cache}})
            t0 = time.perf_counter()
            r = run_sweep(cfg)
            wall = time.perf_counter() - t0
            assert r.done + r.failed == n, r
            walls[cache].append(wall)
            print(f"world_cache={cache:2d}: {wall:6.2f} s  ({n / wall:5.1f} episodes/s)", flush=True)
    on, off = statistics.median(walls[16]), statistics.median(walls[0])
    print(f"median: world_cache=16 {on:.2f} s, world_cache=0 {off:.2f} s -> {off / on:.2f}x faster with the cache")


if __name__ == "__main__":
    main()
