"""Multi-node: a head and two worker nodes (ray.cluster_utils.Cluster); a node is removed mid-sweep."""

from __future__ import annotations

import time

import pytest
from conftest import tiny_config

from jeval_ray.store import read_dataset
from jeval_ray.sweep import Grid, run_sweep, validate_config

MB = 1024**2


@pytest.fixture(scope="module")
def cluster():
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, connect=False,
                head_node_args={"num_cpus": 1, "object_store_memory": 100 * MB, "include_dashboard": False,
                                "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4}})
    workers = [c.add_node(num_cpus=1, object_store_memory=100 * MB) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    yield c, workers
    ray.shutdown()
    c.shutdown()


def test_a_sweep_completes_when_a_worker_node_is_removed_mid_sweep(cluster, tmp_path):
    c, workers = cluster
    victim = workers[0]
    removed = []

    def tick(d):
        on_victim = [s for s in d.slots if s.ready and s.kind == "episode" and s.label.startswith(victim.node_id[:8])]
        if not removed and d.finished >= 2 and on_victim and on_victim[0].in_flight:
            removed.append(time.monotonic())
            c.remove_node(victim)

    cfg = validate_config(tiny_config(
        tmp_path, tasks=["JE-1", "JE-2"], seeds=3, allow_test_agents=True,
        models=[{"name": "sim", "agent": "sleep", "agent_options": {"latency_ms": 100, "steps": 10}},
                {"name": "careful", "agent": "careful"}],
        # no queues: the cells not yet playing stay with the driver, so the victim keeps getting work
        execution={"episode_workers": "auto", "scheduling": "spread", "episodes_per_worker": 3, "max_in_flight": 9,
                   "queue_per_worker": 0, "worker_start_timeout_s": 120}))
    r = run_sweep(cfg, on_tick=tick)
    assert removed, "the victim node never hosted a busy worker"
    total = len(Grid(cfg))
    assert (r.done, r.failed) == (total, 0)
    assert r.retried >= 1 and r.worker_replacements >= 1
    eps = read_dataset(r.run_dir, "episodes").to_pylist()
    assert len(eps) == total and all(e["status"] == "completed" for e in eps)
    assert len({e["worker"].split(":")[0] for e in eps}) >= 2  # work ran on more than one node
