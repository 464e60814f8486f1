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


def check_naive_flags_only_the_key(task: str, worlds: dict) -> None:
    """Where a task's surface rule selects exactly the key: ``naive`` flags every planted entry (recall 1,
    as tests/test_task_contract.py checks for every task) and nothing else (every decoy and nothing
    more a false positive). ``worlds``: ``{seed: World}`` (the ``worlds`` fixture)."""
    from support.worlds import played

    for seed, w in worlds.items():
        v = played(task, "naive", seed).score.verification
        assert v.recall == 1.0 and v.fp == len(w.decoys), (task, seed, v)
