"""Resume and idempotence: the dedup rule, a driver SIGKILLed mid-sweep then resumed with --run-id, and world
versions (recorded in rows and the manifest; a resume across a version change refused)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import ROOT, run_cli, tiny_config

from jeval_ray.records.schemas import EPISODES, STEPS
from jeval_ray.errors import ConfigError
from jeval_ray.store import dedup, kept_attempts, read_dataset, read_raw, read_run
from jeval_ray.sweep import Grid, validate_config
from jeval_ray.sweep.driver import check_world_versions
from jeval_ray.world._version import WORLD_VERSION

# -- the dedup rule -------------------------------------------------------------------------------


def _eps(rows):
    full = []
    for eid, attempt, status in rows:
        r = {f.name: None for f in EPISODES}
        r.update(run_id="r", episode_id=eid, attempt=attempt, task_id="JE-1", model="m", seed=0, condition="full",
                 status=status)
        full.append(r)
    return pa.Table.from_pylist(full, schema=EPISODES)


def _steps(rows):
    out = []
    for eid, attempt, n in rows:
        for i in range(n):
            r = {f.name: None for f in STEPS}
            r.update(run_id="r", episode_id=eid, attempt=attempt, task_id="JE-1", model="m", seed=0, condition="full", step_idx=i)
            out.append(r)
    return pa.Table.from_pylist(out, schema=STEPS)


def test_dedup_keeps_the_completed_attempt_with_the_highest_number():
    eps = _eps([("a", 1, "failed"), ("a", 2, "completed"), ("b", 1, "completed"), ("b", 2, "failed"),
                ("c", 1, "failed"), ("c", 2, "failed"), ("d", 1, "completed"), ("d", 3, "completed")])
    kept = {(r["episode_id"], r["attempt"]) for r in kept_attempts(eps).to_pylist()}
    assert kept == {("a", 2), ("b", 1), ("c", 2), ("d", 3)}
    out = dedup("episodes", eps, kept_attempts(eps))
    assert sorted(zip(out["episode_id"].to_pylist(), out["attempt"].to_pylist())) == sorted(kept)


def test_dedup_drops_rows_of_attempts_that_are_not_kept_or_have_no_episode_row():
    eps = _eps([("a", 1, "failed"), ("a", 2, "completed")])
    steps = _steps([("a", 1, 3), ("a", 2, 4), ("a", 3, 5), ("z", 1, 2)])  # a/3 and z/1: orphans of a crash
    out = dedup("steps", steps, kept_attempts(eps))
    assert out.num_rows == 4 and set(out["attempt"].to_pylist()) == {2} and set(out["episode_id"].to_pylist()) == {"a"}


def test_dedup_drops_an_episode_row_written_twice():
    eps = _eps([("a", 1, "completed"), ("a", 1, "completed")])
    assert dedup("episodes", eps, kept_attempts(eps)).num_rows == 1


# -- SIGKILL the driver, then resume ----------------------------------------------------------------


def _config(tmp_path: Path) -> Path:
    cfg = tiny_config(
        tmp_path, seeds=8, allow_test_agents=True,
        models=[{"name": "slow/sim", "provider": "builtin", "agent": "sleep", "agent_options": {"latency_ms": 150, "steps": 6}},
                {"name": "careful", "provider": "builtin", "agent": "careful"}],
        execution={"max_in_flight": 3, "episode_workers": 1, "episodes_per_worker": 3},
        output={"root": str(tmp_path / "runs"), "flush_episodes": 1, "flush_seconds": 0.2},
    )
    p = tmp_path / "resume.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _episode_files(run: Path) -> list[Path]:
    return [p for p in (run / "episodes").rglob("part-*.parquet")] if (run / "episodes").exists() else []


def test_a_sigkilled_sweep_resumes_without_rerunning_finished_episodes(tmp_path):
    cfg_path = _config(tmp_path)
    run = tmp_path / "runs" / "killme"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "jeval_ray.sweep", "--config", str(cfg_path), "--run-id", "killme",
                             "--quiet", "--no-leaderboard"], cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(_episode_files(run)) < 4:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep wrote nothing in time"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # Ray processes the killed driver started (its own session)
        except ProcessLookupError:
            pass
    before = read_raw(str(run), "episodes", columns=["episode_id", "attempt", "status"]).to_pylist()
    assert before, "some episodes were written before the kill"
    grid_ids = {c.episode_id for c in Grid(validate_config(yaml.safe_load(cfg_path.read_text()))).cells()}
    assert len({r["episode_id"] for r in before}) < len(grid_ids), "the kill came after the end: nothing to resume"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "running"  # the killed invocation never finished

    out = run_cli("--config", str(cfg_path), "--run-id", "killme", "--quiet", "--no-leaderboard", timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"{len({r['episode_id'] for r in before})} skipped" in out.stdout

    for f in run.rglob("part-*.parquet"):
        pq.read_table(f)  # every visible file is whole
    raw = read_raw(str(run), "episodes", columns=["episode_id", "attempt", "status"]).to_pylist()
    for r in before:  # finished before the kill: not re-run, not duplicated
        assert [(x["attempt"], x["status"]) for x in raw if x["episode_id"] == r["episode_id"]] == [(1, "completed")]
    t = read_run(str(run))
    eps = t["episodes"].to_pylist()
    assert sorted(r["episode_id"] for r in eps) == sorted(grid_ids)
    assert all(r["status"] == "completed" for r in eps)
    n_steps = {r["episode_id"]: r["n_steps"] for r in eps}
    got: dict[str, int] = {}
    for r in t["steps"].select(["episode_id"]).to_pylist():
        got[r["episode_id"]] = got.get(r["episode_id"], 0) + 1
    assert got == n_steps  # no duplicated or orphan steps after dedup
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "completed" and len(m["invocations"]) == 2


# ------------------------------------------------------------------ world versions
# Episode rows and the manifest record the world version, and a resume refuses a run whose versions
# changed (exit 2, nothing written), through the real command line and Parquet read back. One finished
# run serves every test below (a resume that is refused starts no Ray).


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run: JE-1 and JE-2 x 2 seeds, the careful agent."""
    tmp = tmp_path_factory.mktemp("versions")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tmp, tasks=["JE-1", "JE-2"])))
    out = run_cli("--config", str(cfg), "--run-id", "v", "--quiet", "--no-leaderboard")
    assert out.returncode == 0, out.stderr
    return {"cfg": cfg, "run": tmp / "runs" / "v"}


def _files(run):
    return sorted((p, p.stat().st_size) for p in run.rglob("part-*.parquet"))


def test_rows_and_manifest_record_the_world_version(finished):
    eps = read_dataset(str(finished["run"]), "episodes")
    assert eps.num_rows == 4
    assert eps.schema.field("world_version").type == "int32"
    assert sorted(zip(eps["task_id"].to_pylist(), eps["world_version"].to_pylist())) == \
        sorted([("JE-1", WORLD_VERSION["JE-1"])] * 2 + [("JE-2", WORLD_VERSION["JE-2"])] * 2)
    m = json.loads((finished["run"] / "manifest.json").read_text())
    assert m["world_versions"] == {"JE-1": WORLD_VERSION["JE-1"], "JE-2": WORLD_VERSION["JE-2"]}


def _resume(finished, manifest: dict):
    path = finished["run"] / "manifest.json"
    original = path.read_text()
    path.write_text(json.dumps(manifest))
    files = _files(finished["run"])
    try:
        out = run_cli("--config", str(finished["cfg"]), "--run-id", "v", "--quiet", "--no-leaderboard")
        assert path.read_text() == json.dumps(manifest), "the refused resume rewrote the manifest"
        assert _files(finished["run"]) == files, "the refused resume wrote Parquet"
    finally:
        path.write_text(original)
    return out


def test_a_resume_after_a_version_change_stops_naming_the_tasks(finished):
    m = json.loads((finished["run"] / "manifest.json").read_text())
    old = WORLD_VERSION["JE-2"] - 1  # the run as if it had been played before a bump of JE-2
    out = _resume(finished, {**m, "world_versions": {**m["world_versions"], "JE-2": old}})
    assert out.returncode == 2, out.stdout + out.stderr
    err = out.stderr
    assert f"JE-2 v{old} -> v{WORLD_VERSION['JE-2']}" in err and "JE-1 v" not in err
    assert "another --run-id" in err and "--allow-mixed" in err
    raw = read_raw(str(finished["run"]), "episodes", columns=["attempt"])
    assert raw.num_rows == 4  # nothing played


def test_a_resume_of_a_run_without_recorded_versions_stops(finished):
    m = json.loads((finished["run"] / "manifest.json").read_text())
    del m["world_versions"]
    out = _resume(finished, m)
    assert out.returncode == 2 and "did not record world versions" in out.stderr and "--allow-mixed" in out.stderr


def test_rerunning_a_finished_run_plays_nothing(finished):
    """A resume on the same world versions goes on, and finds nothing left to play."""
    files = _files(finished["run"])
    out = run_cli("--config", str(finished["cfg"]), "--run-id", "v", "--plain", "--no-leaderboard")
    assert out.returncode == 0, out.stderr
    assert "0 completed, 0 failed, 4 skipped" in out.stdout
    assert _files(finished["run"]) == files


def test_tasks_the_run_has_not_played_are_no_conflict():
    check_world_versions({"world_versions": {"JE-1": WORLD_VERSION["JE-1"]}}, ["JE-1", "JE-5"], "r")
    with pytest.raises(ConfigError, match=r"JE-5 v99 -> v"):
        check_world_versions({"world_versions": {"JE-5": 99}}, ["JE-1", "JE-5"], "r")
