"""Shared fixtures: one Ray instance per test module, tiny sweep configs, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="module")
def ray_local():
    """A small local Ray shared by every test of a module (started here, shut down at module end)."""
    import ray

    started = not ray.is_initialized()
    if started:
        # "local": another worker's ray.cluster_utils.Cluster records its address for this machine
        ray.init(address="local", num_cpus=2, object_store_memory=200 * 1024**2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def worlds(request) -> dict:
    """The worlds of a task test module: ``{seed: World}`` for its ``TASK`` over its ``SEEDS`` (default 0-4),
    from the process-wide cache ``support.worlds`` (shared with the task contract and other modules)."""
    from support.worlds import world

    task = request.module.TASK
    return {s: world(task, s) for s in getattr(request.module, "SEEDS", range(5))}


def tiny_config(tmp_path: Path, **over) -> dict:
    """A sweep config small enough for tests: 1-2 tasks, 2 seeds, fast flushes."""
    cfg = {
        "name": "test",
        "tasks": ["JE-1"],
        "models": [{"name": "careful", "provider": "builtin", "agent": "careful"}],
        "seeds": 2,
        "conditions": ["full"],
        "output": {"root": str(tmp_path / "runs"), "flush_episodes": 4, "flush_seconds": 0.5},
        "execution": {"episode_workers": 2, "episodes_per_worker": 8, "max_in_flight": 16,
                      "worker_start_timeout_s": 120},
        "ray": {"num_cpus": 2, "object_store_memory_mb": 200, "log_to_driver": False},
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    return cfg


def run_cli(*args: str, env: dict | None = None, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m jeval_ray.sweep <args>`` in a subprocess (from the checkout)."""
    e = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "jeval_ray.sweep", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=str(cwd or ROOT))


def check_naive_and_careful(task: str, seeds=range(500, 504), withheld_seeds=range(0)) -> None:
    """The task's built-in agents as its tests expect them: ``naive`` flags every candidate its
    surface rule selects (recall 1, every decoy a false positive); ``careful`` reads the evidence
    (outcome ≥ 0.95 and rationale ≥ 0.9, also with the withheld-tool variant on ``withheld_seeds``)
    and beats naive by at least 0.15."""
    import statistics

    from jeval_ray.episode import play
    from jeval_ray.tasks import get_task
    from jeval_ray.world import generate_world

    naive = [play(task, "naive", seed=s) for s in seeds]
    careful = [play(task, "careful", seed=s) for s in seeds]
    withheld = [play(task, "careful", seed=s, tools_withheld=get_task(task).withheld_variant) for s in withheld_seeds]
    for o in naive:
        v = o.score.verification
        assert v.recall == 1.0 and v.fp == len(generate_world(task, o.seed).decoys), (task, o.seed)
    for o in careful + withheld:
        assert o.score.outcome >= 0.95 and o.score.rationale >= 0.9, (task, o.seed)
    assert statistics.fmean(o.score.score for o in careful) - statistics.fmean(o.score.score for o in naive) >= 0.15
