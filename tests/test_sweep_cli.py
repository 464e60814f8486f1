"""The sweep's command line as a user meets it: narrowing the grid, addresses it cannot join, Ray jobs
with a relative output root, a cluster that is not there (one line, exit 2, no run folder)."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import run_cli, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.sweep.config import load_sweep_config, narrow_config, validate_config
from jeval_ray.sweep.driver import plan_run
from jeval_ray.sweep.grid import Grid


def _cfg(tmp_path, **over):
    return validate_config(tiny_config(
        tmp_path, tasks=["JE-1", "JE-2", "JE-3"], seeds=[0, 1, 2, 7], conditions=["full", "withheld"],
        models=[{"name": "careful", "agent": "careful"}, {"name": "naive", "agent": "naive"}],
        task_knobs={"JE-3": {}}, **over))


# -- narrowing the grid ---------------------------------------------------------------------------


def test_the_flags_narrow_the_configs_grid(tmp_path):
    cfg = narrow_config(_cfg(tmp_path), tasks="JE-3,JE-1", models="naive", seeds="2", conditions="full")
    cells = list(Grid(cfg).cells())
    assert {c.task_id for c in cells} == {"JE-1", "JE-3"} and {c.model for c in cells} == {"naive"}
    assert {c.seed for c in cells} == {0, 1} and {c.condition for c in cells} == {"full"}
    assert len(cells) == 2 * 1 * 2 * 1
    # a list of seeds, one seed, and task_knobs of a task left out are dropped rather than refused
    assert narrow_config(_cfg(tmp_path), seeds="1,7").seed_list == [1, 7]
    assert narrow_config(_cfg(tmp_path), seeds="[7]").seed_list == [7]
    assert narrow_config(_cfg(tmp_path), tasks="JE-1").task_knobs == {}


def test_a_narrowed_episode_keeps_its_id_so_a_full_run_later_resumes_it(tmp_path):
    full = {c.episode_id for c in Grid(_cfg(tmp_path)).cells()}
    part = {c.episode_id for c in Grid(narrow_config(_cfg(tmp_path), tasks="JE-2", seeds="1")).cells()}
    assert part and part <= full


@pytest.mark.parametrize("flag, value, needle", [
    ("tasks", "JE-9", "--tasks: 'JE-9' is not one of this config's tasks (JE-1, JE-2, JE-3)"),
    ("tasks", "nope", "--tasks: 'nope'"),
    ("tasks", "JE-1,", "--tasks: 'JE-1,' is not a list"),
    ("models", "gpt-4o", "--models: 'gpt-4o' is not one of this config's model names (careful, naive)"),
    ("seeds", "5", "--seeds: 5 is more than the config's 4 seed(s)"),
    ("seeds", "0,3", "--seeds: seed(s) 3 are not among the config's seeds (0, 1, 2, 7)"),
    ("seeds", "0", "--seeds: '0' is neither a count nor a list"),
    ("seeds", "1,1", "--seeds: '1,1' is neither a count nor a list"),
    ("conditions", "injected", "--conditions: 'injected' is not one of this config's conditions (full, withheld)"),
])
def test_a_bad_narrowing_names_the_flag_and_the_fix(tmp_path, flag, value, needle):
    with pytest.raises(ConfigError) as ei:
        narrow_config(_cfg(tmp_path), **{flag: value})
    assert needle in str(ei.value) and "Fix:" in str(ei.value)


def test_the_cli_narrows_and_refuses_with_exit_2(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tmp_path, tasks=["JE-1", "JE-2"], seeds=5, conditions=["full", "withheld"])))
    out = run_cli("--config", str(path), "--tasks", "JE-2", "--seeds", "3", "--conditions", "withheld", "--dry-run")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(ln) for ln in out.stdout.splitlines()]
    assert [(r["task_id"], r["seed"], r["condition"]) for r in rows] == [("JE-2", s, "withheld") for s in range(3)]
    bad = run_cli("--config", str(path), "--models", "gpt", "--dry-run")
    assert bad.returncode == 2 and bad.stdout == "" and "--models: 'gpt'" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "runs").exists()


def test_the_fewer_than_5_seeds_warning_is_said_once_by_the_dry_run(tmp_path):
    out = run_cli("--tasks", "JE-1", "--seeds", "2", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert (out.stdout + out.stderr).count("variance is not measurable") == 1


# -- addresses ------------------------------------------------------------------------------------


@pytest.mark.parametrize("addr, needle", [
    ("ray://127.0.0.1:10001", "Ray Client address; the sweep does not support Ray Client"),
    ("http://127.0.0.1:8265", "set RAY_API_SERVER_ADDRESS instead of RAY_ADDRESS"),
    ("s3://bucket", "is not a Ray cluster address"),
])
def test_addresses_the_sweep_cannot_join_are_refused_before_anything_happens(tmp_path, monkeypatch, addr, needle):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError, match="^--address: ") as ei:
        plan_run(_cfg(tmp_path), address=addr)
    assert needle in str(ei.value)
    monkeypatch.setenv("RAY_ADDRESS", addr)
    with pytest.raises(ConfigError, match="^RAY_ADDRESS: "):
        plan_run(_cfg(tmp_path))


def test_ray_client_is_not_offered_by_help_or_docs():
    from conftest import ROOT

    out = run_cli("--help")
    assert out.returncode == 0 and "ray://" not in out.stdout and "ray job submit" in out.stdout
    for doc in ("docs/sweep.md", "cluster/README.md", "README.md"):
        for line in (ROOT / doc).read_text().splitlines():  # named only to say it is refused
            assert "ray://" not in line or "refuse" in line or "not supported" in line, (doc, line)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _a_ray_runs_on_this_machine() -> bool:
    import psutil

    for proc in psutil.process_iter(["name"]):
        if (proc.info.get("name") or "").startswith("gcs_server"):
            return True
    return False


def test_a_cluster_that_cannot_be_reached_is_one_line_exit_2_and_no_run_folder(tmp_path):
    out_root = tmp_path / "out"
    # "auto" also finds a cluster by its running GCS process (Ray scans the machine's processes), so it is
    # only unreachable while no other Ray runs here (another test worker's, another job's)
    addrs = [f"127.0.0.1:{_free_port()}"] + ([] if _a_ray_runs_on_this_machine() else ["auto"])
    for addr in addrs:
        env = {"RAY_ADDRESS": ""} if addr != "auto" else {"RAY_ADDRESS": "", "RAY_TMPDIR": str(tmp_path / "noray")}
        r = run_cli("--address", addr, "--out", str(out_root), "--tasks", "JE-1", "--models", "careful", "--seeds", "1",
                    "--conditions", "full", env=env, timeout=120)
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert r.returncode == 2, r.stderr
        assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
        assert "Fix:" in errors[0] and (addr in errors[0]), errors[0]
        assert not out_root.exists(), "a half-made run folder was left behind"


def test_without_an_address_the_sweep_starts_its_own_ray_though_this_machine_records_a_cluster(tmp_path):
    """``ray start`` and a live ``ray.cluster_utils.Cluster`` record their address in
    ``$RAY_TMPDIR/ray/ray_current_cluster``; a bare ``ray.init()`` would join it and then refuse the
    sweep's own ``num_cpus``. Without --address the sweep runs on a local Ray of its own."""
    base = Path(tempfile.mkdtemp(prefix="jr-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    try:
        (base / "ray").mkdir()
        recorded = base / "ray" / "ray_current_cluster"
        recorded.write_text(f"127.0.0.1:{_free_port()}")
        out_root = tmp_path / "out"
        r = run_cli("--out", str(out_root), "--run-id", "local", "--tasks", "JE-1", "--models", "careful",
                    "--seeds", "1", "--conditions", "full", "--quiet", "--no-leaderboard",
                    env={"RAY_ADDRESS": "", "RAY_TMPDIR": str(base)}, timeout=180)
        assert r.returncode == 0, r.stderr
        assert (out_root / "local" / "episodes").exists(), sorted(p.name for p in (out_root / "local").iterdir())
        assert recorded.exists()  # the other cluster's record is left alone
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- a relative output root inside a Ray job ------------------------------------------------------


def test_a_relative_output_root_in_a_ray_job_is_refused_naming_out_and_shared_storage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")  # what Ray's job supervisor gives a job's driver
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    cfg = load_sweep_config(None)  # output.root: runs
    with pytest.raises(ConfigError) as ei:
        plan_run(cfg)
    msg = str(ei.value)
    assert msg.startswith("output.root: ") and "--out" in msg and "shared storage" in msg
    with pytest.raises(ConfigError, match="^--out: "):
        plan_run(cfg, out="results")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()
    # an absolute path or an object store is fine, and so is a config that says so explicitly
    assert plan_run(cfg, out=str(tmp_path / "abs")).root == str(tmp_path / "abs")
    allowed = cfg.model_copy(update={"output": cfg.output.model_copy(update={"relative_root_in_ray_job": True})})
    assert plan_run(allowed).root == str(tmp_path / "runs")
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
    assert plan_run(cfg).root == str(tmp_path / "runs")  # outside a job the relative default stays


def test_a_sweep_says_the_fewer_than_5_seeds_warning_once(ray_local, tmp_path, capsys):
    from jeval_ray.sweep.__main__ import main

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tmp_path, seeds=2)))
    assert main(["--config", str(path), "--quiet", "--no-leaderboard"]) == 0
    out = capsys.readouterr()
    assert (out.out + out.err).count("variance is not measurable") == 1, out
    assert "Token authentication is enabled" not in out.out + out.err


def test_a_local_sweep_replaces_rays_token_notice_by_one_plain_line(tmp_path):
    """Ray 2.60 warns "Token authentication is enabled ... Set RAY_AUTH_MODE=disabled to opt out" when a
    local ray.init() turns it on; the sweep says instead whether the user must do anything."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tmp_path, seeds=1)))
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env.update(PYTHONPATH=str(ROOT), RAY_USAGE_STATS_ENABLED="0")
    for mode, expect in (("--plain", "ray: token authentication is on for this sweep's own local Ray; nothing to do."),
                         ("--quiet", None)):
        r = subprocess.run([sys.executable, "-m", "jeval_ray.sweep", "--config", str(path), mode, "--no-leaderboard"],
                           capture_output=True, text=True, env=env, timeout=300, cwd=str(ROOT))
        assert r.returncode == 0, r.stderr[-3000:]
        assert "Token authentication is enabled" not in r.stderr + r.stdout
        notes = [ln for ln in r.stderr.splitlines() if ln.startswith("ray: ")]
        assert notes == ([expect] if expect else []), r.stderr  # --quiet: nothing to do, so nothing said


def test_a_run_that_fails_says_why_in_its_manifest(ray_local, tmp_path):
    from jeval_ray.sweep.driver import run_sweep

    def boom(driver):
        raise RuntimeError("the scheduling loop broke")

    cfg = validate_config(tiny_config(tmp_path, seeds=1))
    with pytest.raises(RuntimeError):
        run_sweep(cfg, run_id="broken", on_tick=boom)
    m = json.loads((tmp_path / "runs" / "broken" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["error"] == "RuntimeError: the scheduling loop broke"


def test_the_resume_hint_after_an_interrupt_repeats_the_narrowing(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    slow = {"name": "sim", "provider": "builtin", "agent": "sleep", "agent_options": {"latency_ms": 500, "steps": 40}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tmp_path, tasks=["JE-1", "JE-2"], seeds=5, allow_test_agents=True,
                                               models=[slow, {"name": "careful", "agent": "careful"}])))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    p = subprocess.Popen([sys.executable, "-m", "jeval_ray.sweep", "--config", str(path), "--plain", "--tasks", "JE-2",
                          "--models", "sim", "--seeds", "3"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=env, cwd=str(ROOT))
    deadline = time.monotonic() + 120
    for line in p.stderr:  # wait until episodes are being played
        if line.startswith("sweep: ") and "/" in line.split()[1] or time.monotonic() > deadline:
            break
    # Ctrl-C, pressed again while the driver has not stopped: in full parallel test runs a first SIGINT that lands
    # while Ray is still starting the pools is sometimes not acted on (the sweep then ran to the end, exit 0)
    for _ in range(6):
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)  # an interrupted sweep flushes, writes its manifest and stops Ray within this
            break
        except subprocess.TimeoutExpired:
            continue
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    hint = next(ln for ln in err.splitlines() if "Resume with:" in ln)
    assert "--tasks JE-2 --models sim --seeds 3 --out " in hint and "--run-id " in hint
