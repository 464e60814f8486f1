"""World versions in a sweep: episode rows and the manifest record them, and a resume refuses a run whose
versions changed (exit 2, nothing written), through the real command line and Parquet read back."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import run_cli, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.store import read_dataset, read_raw
from jeval_ray.sweep.driver import check_world_versions
from jeval_ray.world._version import WORLD_VERSION


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


def test_a_resume_on_the_same_versions_goes_on(finished):
    out = run_cli("--config", str(finished["cfg"]), "--run-id", "v", "--plain", "--no-leaderboard")
    assert out.returncode == 0, out.stderr
    assert "0 completed, 0 failed, 4 skipped" in out.stdout


def test_tasks_the_run_has_not_played_are_no_conflict():
    check_world_versions({"world_versions": {"JE-1": WORLD_VERSION["JE-1"]}}, ["JE-1", "JE-5"], "r")
    with pytest.raises(ConfigError, match=r"JE-5 v99 -> v"):
        check_world_versions({"world_versions": {"JE-5": 99}}, ["JE-1", "JE-5"], "r")
