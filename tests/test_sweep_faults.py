"""Fault tolerance: episode workers killed mid-episode (ray.kill, os._exit) and poison episodes."""

from __future__ import annotations

import pytest
from conftest import tiny_config

from jeval_ray.store import read_dataset, read_raw
from jeval_ray.sweep import Grid, run_sweep, validate_config

SLEEPY = {"name": "sim", "provider": "builtin", "agent": "sleep", "agent_options": {"latency_ms": 100, "steps": 8}}


def _run(tmp_path, models, seeds=3, tick=None, **exec_over):
    cfg = validate_config(tiny_config(tmp_path, models=models, seeds=seeds, allow_test_agents=True,
                                      execution={"episode_workers": 2, "episodes_per_worker": 4, "max_in_flight": 8,
                                                 "worker_start_timeout_s": 120, **exec_over}))
    return cfg, run_sweep(cfg, on_tick=tick)


def _raw(result):
    return read_raw(result.run_dir, "episodes", columns=["episode_id", "attempt", "status", "error"]).to_pylist()


def test_episodes_of_a_worker_killed_with_ray_kill_complete_on_a_replacement(ray_local, tmp_path):
    killed = []

    def tick(d):
        busy = [s for s in d.slots if s.kind == "episode" and s.in_flight >= 2]
        if not killed and busy:
            killed.append(busy[0].label)
            ray_local.kill(busy[0].handle, no_restart=True)

    cfg, r = _run(tmp_path, [SLEEPY], seeds=6, tick=tick)
    assert killed and r.retried >= 2 and r.worker_replacements >= 1
    assert (r.done, r.failed) == (6, 0)
    eps = read_dataset(r.run_dir, "episodes").to_pylist()
    assert len(eps) == 6 and all(e["status"] == "completed" for e in eps)
    assert {e["attempt"] for e in eps} == {1, 2}  # the killed worker's episodes finished on attempt 2
    assert killed[0] not in {e["worker"] for e in eps if e["attempt"] == 2}


def test_episodes_queued_on_a_killed_worker_complete_elsewhere_once_each(ray_local, tmp_path):
    """A worker holding queued episodes (``queue_per_worker`` auto: 2 more than the 2 it plays) is
    killed: its playing and its queued episodes are retried on other workers, each written once."""
    killed = []

    def tick(d):
        queued = [s for s in d.slots if s.kind == "episode" and s.ready and s.in_flight > 2]
        if not killed and queued:
            killed.append(queued[0].label)
            ray_local.kill(queued[0].handle, no_restart=True)

    cfg, r = _run(tmp_path, [SLEEPY], seeds=12, tick=tick, episodes_per_worker=2, max_in_flight=4)
    assert killed and r.worker_replacements >= 1 and r.retried >= 3
    assert (r.done, r.failed) == (12, 0)
    eps = read_dataset(r.run_dir, "episodes").to_pylist()
    assert len(eps) == 12 and len({e["episode_id"] for e in eps}) == 12
    assert all(e["status"] == "completed" for e in eps)
    assert len(_raw(r)) == 12  # a dead attempt writes nothing


def test_a_worker_that_exits_mid_episode_is_replaced_and_its_episodes_retried(ray_local, tmp_path):
    model = {"name": "flaky", "provider": "builtin", "agent": "crash_once"}
    cfg, r = _run(tmp_path, [model], seeds=3)
    assert (r.done, r.failed) == (3, 0) and r.retried >= 3 and r.worker_replacements >= 1
    eps = read_dataset(r.run_dir, "episodes").to_pylist()
    assert all(e["status"] == "completed" and e["attempt"] == 2 for e in eps)
    assert len(_raw(r)) == 3  # a dead attempt writes nothing


def test_a_poison_episode_ends_as_a_failed_row_after_bounded_attempts(ray_local, tmp_path):
    models = [{"name": "poison", "provider": "builtin", "agent": "crash"}, {"name": "careful", "agent": "careful"}]
    cfg, r = _run(tmp_path, models, seeds=2, max_attempts=3)
    assert (r.done, r.failed) == (2, 2)
    eps = {(e["model"], e["seed"]): e for e in read_dataset(r.run_dir, "episodes").to_pylist()}
    for seed in (0, 1):
        bad, good = eps[("poison", seed)], eps[("careful", seed)]
        assert bad["status"] == "failed" and bad["attempt"] == 3
        assert "worker died on every attempt" in bad["error"] and bad["termination"] == "error"
        assert good["status"] == "completed" and good["attempt"] <= 3
    assert len(_raw(r)) == 4
    assert len(Grid(cfg)) == 4


def test_a_single_attempt_budget_fails_a_crashing_episode_at_once(ray_local, tmp_path):
    cfg, r = _run(tmp_path, [{"name": "poison", "agent": "crash"}], seeds=1, max_attempts=1)
    assert (r.done, r.failed, r.retried) == (0, 1, 0)
    (row,) = read_dataset(r.run_dir, "episodes").to_pylist()
    assert row["attempt"] == 1 and "worker died" in row["error"]


def test_an_episode_that_raises_is_a_failed_row_not_a_retry(ray_local, tmp_path):
    # 400 planted entries in the smallest year (about 530 entries) is rejected by the world generator:
    # a deterministic error
    cfg = validate_config(tiny_config(tmp_path, knobs={"n_entries": 100, "n_defects": 200, "n_decoys": 200}))
    r = run_sweep(cfg)
    assert (r.done, r.failed, r.retried) == (0, 2, 0)
    rows = read_dataset(r.run_dir, "episodes").to_pylist()
    assert all("ConfigError" in row["error"] and row["attempt"] == 1 for row in rows)


@pytest.mark.parametrize("mode", ["plain", "quiet"])
def test_progress_modes_report_done_failed_retried(ray_local, tmp_path, capsys, mode):
    cfg = validate_config(tiny_config(tmp_path, models=[{"name": "flaky", "agent": "crash_once"}], seeds=2,
                                      allow_test_agents=True))
    run_sweep(cfg, progress=mode)
    err = capsys.readouterr().err
    if mode == "quiet":
        assert "sweep:" not in err
    else:
        last = [ln for ln in err.splitlines() if ln.startswith("sweep:")][-1]
        assert "2/2 finished" in last and "done 2" in last and "failed 0" in last and "retried" in last and "ep/s" in last


def test_a_wedged_worker_is_killed_by_the_watchdog_and_its_episode_ends_as_a_failed_row(ray_local, tmp_path):
    # 'hang' blocks its worker's event loop: the episode's own deadline can never fire
    models = [{"name": "wedged", "provider": "builtin", "agent": "hang"}, {"name": "careful", "agent": "careful"}]
    cfg, r = _run(tmp_path, models, seeds=1, max_attempts=2, episode_timeout_s=1, watchdog_grace_s=1)
    assert (r.done, r.failed) == (1, 1) and r.worker_replacements >= 2
    eps = {e["model"]: e for e in read_dataset(r.run_dir, "episodes").to_pylist()}
    bad, good = eps["wedged"], eps["careful"]
    assert bad["status"] == "failed" and bad["attempt"] == 2
    assert "worker died on every attempt" in bad["error"] and "watchdog" in bad["error"]
    assert "episode_timeout_s=1" in bad["error"]  # the message names the setting to change
    assert good["status"] == "completed"  # the innocent neighbour of the wedged episode still completes


def test_a_judge_pool_the_cluster_cannot_place_stops_the_sweep_with_an_error_naming_it(ray_local, tmp_path):
    """On a cluster (an address: the local capacity check is skipped) a judge worker asking for a resource
    no node has stays pending; the sweep stops after worker_start_timeout_s instead of waiting forever."""
    from jeval_ray.sweep import SweepError

    cfg = validate_config(tiny_config(tmp_path, models=[SLEEPY], seeds=2, allow_test_agents=True,
                                      # long enough for the episode worker (which can be placed) to start
                                      # while the suite's other worker keeps the cores busy
                                      execution={"episode_workers": 1, "worker_start_timeout_s": 8,
                                                 "judge_worker_resources": {"no_such_resource": 1}}))
    with pytest.raises(SweepError, match=r"no JudgeWorker could be scheduled for 8 s .*no_such_resource.*judge_worker_cpus"):
        run_sweep(cfg, address="auto")
