"""Sweep config: the embedded default, the shipped configs, bad configs (one message, exit 2, nothing written), dry run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.sweep.config import default_config_text, json_schema, load_sweep_config, validate_config
from jeval_ray.sweep.driver import plan_run, resolve_queue
from jeval_ray.sweep.grid import Grid
from jeval_ray.tasks import available_tasks


def _bad(cfg: dict) -> str:
    with pytest.raises(ConfigError) as ei:
        c = validate_config(cfg)
        plan_run(c)
    return str(ei.value)


# -- the shipped configs --------------------------------------------------------------------------


def test_the_embedded_default_is_the_checked_in_local_yaml():
    assert default_config_text() == (ROOT / "configs" / "local.yaml").read_text()


def test_the_default_sweep_is_every_available_task_by_builtin_agents_by_5_seeds_by_two_conditions():
    cfg = load_sweep_config(None)
    grid = Grid(cfg)
    assert cfg.model_names == ["random", "naive", "careful"]
    assert cfg.seed_list == [0, 1, 2, 3, 4] and cfg.seed_warning() is None
    assert [t.id for t in grid.tasks] == [t.id for t in available_tasks()]
    with_variant = sum(1 for t in grid.tasks if t.withheld_variant)
    assert len(grid) == (len(grid.tasks) + with_variant) * 3 * 5
    assert {c.condition for c in grid.cells()} == {"full", "withheld"}


def test_run_config_json_holds_the_knobs_and_the_model_list():
    cfg = load_sweep_config(ROOT / "configs" / "run_config.json")
    raw = json.loads((ROOT / "configs" / "run_config.json").read_text())
    assert set(raw["knobs"]) == {"n_entries", "n_defects", "n_decoys", "noise_documents", "near_miss",
                                 "description_quality", "prompt_injection"}
    assert cfg.model_names == ["random", "naive", "careful"]


def test_the_openai_compatible_example_names_key_variables_only(monkeypatch):
    text = (ROOT / "configs" / "openai_compatible.yaml").read_text()
    raw = yaml.safe_load(text)
    for m in raw["models"]:
        assert "api_key" not in m and not any(str(v).startswith("sk-") for v in m.values())
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-1")
    monkeypatch.setenv("OPENROUTER_API_KEY", "test-key-2")
    cfg = load_sweep_config(ROOT / "configs" / "openai_compatible.yaml")
    assert any("/" in n for n in cfg.model_names)


def test_json_schema_describes_the_sweep_config():
    s = json_schema()
    assert s["type"] == "object" and "models" in s["required"]
    assert {"tasks", "models", "seeds", "conditions", "knobs", "execution", "output", "ray"} <= set(s["properties"])
    out = run_cli("--schema")
    assert out.returncode == 0 and json.loads(out.stdout)["title"] == "jeval_ray sweep config"


def test_fewer_than_five_seeds_warns_that_variance_is_not_measurable():
    cfg = validate_config({"models": [{"name": "careful", "agent": "careful"}], "seeds": 3})
    assert "variance is not measurable" in cfg.seed_warning()


def test_seeds_can_be_an_explicit_list():
    cfg = validate_config({"models": [{"name": "careful", "agent": "careful"}], "seeds": [7, 11, 13, 17, 19]})
    assert cfg.seed_list == [7, 11, 13, 17, 19] and cfg.seed_warning() is None


def test_episode_ids_are_stable_and_unique():
    cfg = validate_config({"models": [{"name": "careful", "agent": "careful"}, {"name": "org/x", "agent": "naive"}], "seeds": 2})
    a = [c.episode_id for c in Grid(cfg).cells()]
    b = [c.episode_id for c in Grid(validate_config(cfg.model_dump())).cells()]
    assert a == b and len(set(a)) == len(a)


def test_adding_a_seed_keeps_the_ids_of_existing_cells():
    base = {"models": [{"name": "careful", "agent": "careful"}]}
    two = {c.episode_id for c in Grid(validate_config({**base, "seeds": 2})).cells()}
    three = {c.episode_id for c in Grid(validate_config({**base, "seeds": 3})).cells()}
    assert two < three


def test_every_cell_carries_the_run_config_contract():
    cfg = validate_config({"tasks": ["JE-1"], "models": [{"name": "careful", "agent": "careful"}], "seeds": 2})
    for c in Grid(cfg).cells():
        contract = json.loads(c.contract_json)
        assert set(contract) == {"task_id", "tier", "seed", "generator", "tools_enabled", "tools_withheld", "step_budget",
                                 "scoring", "sweep"}
        assert contract["seed"] == c.seed and contract["sweep"] == {"models": ["careful"], "seeds": 2, "episodes": 2}
        assert contract["tools_withheld"] == list(c.tools_withheld)


# -- bad configs through the validation function --------------------------------------------------

BASE = {"tasks": ["JE-1"], "models": [{"name": "careful", "provider": "builtin", "agent": "careful"}], "seeds": 2}


@pytest.mark.parametrize("patch, field, fix", [
    ({"tasks": ["JE-99"]}, "tasks[0]", "Fix"),
    ({"tasks": ["JE-1", "JE-1"]}, "tasks[1]", "list each task once"),
    ({"models": [{"name": "x", "provider": "builtin", "agent": "genius"}]}, "models[0].agent", "random, naive, careful"),
    ({"models": [{"name": "x", "provider": "cohere", "model": "c"}]}, "models[0].provider", "builtin, openai, anthropic"),
    ({"models": [{"name": "x", "provider": "builtin", "agent": "crash"}]}, "models[0].agent", "allow_test_agents"),
    ({"models": [{"name": "x", "agent": "careful"}, {"name": "x", "agent": "naive"}]}, "unique", "Fix"),
    ({"models": []}, "models", "add at least one"),
    ({"scoring": {"weights": {"outcome": 0.5, "process": 0.3, "rationale": 0.3}}}, "scoring.weights", "equal 1"),
    ({"scoring": {"task_weights": {"JE-1": {"outcome": 0.9, "process": 0.9, "rationale": 0.0}}}}, "task_weights", "equal 1"),
    ({"seeds": 0}, "seeds", "Fix"),
    ({"seeds": []}, "seeds", "Fix"),
    ({"conditions": [{"name": "nope", "withhold": ["compute_stats"]}]}, "conditions[0].withhold", "withhold only tools"),
    ({"conditions": [{"name": "nosubmit", "withhold": ["submit"]}]}, "conditions[0].withhold", "Fix"),
    ({"conditions": ["harder"]}, "conditions[0]", "'full', 'withheld'"),
    ({"knobs": {"n_entrys": 100}}, "knobs", "known knob"),
    ({"knobs": {"near_miss": 3}}, "knobs", "Fix"),
    ({"task_knobs": {"JE-2": {"noise_documents": 1}}}, "task_knobs.JE-2", "add JE-2 to tasks"),
    ({"scoring": {"judges": ["oracle"]}}, "scoring.judges", "reference"),
    ({"execution": {"episode_worker_cpus": 0}}, "execution.episode_worker_cpus", "raise it"),
    ({"execution": {"episodes_per_worker": 0}}, "execution.episodes_per_worker", "raise it"),
    ({"execution": {"episodes_per_worker": "lots"}}, "execution.episodes_per_worker", "'auto'"),
    ({"execution": {"queue_per_worker": -1}}, "execution.queue_per_worker", "raise it"),
    ({"execution": {"queue_per_worker": "long"}}, "execution.queue_per_worker", "'auto'"),
    ({"execution": {"episode_workers": 8, "episode_worker_cpus": 0.25}, "ray": {"num_cpus": 2}}, "execution.episode_workers=8",
     "raise ray.num_cpus"),
    ({"execution": {"episode_worker_cpus": 1.0}, "ray": {"num_cpus": 1}}, "judge_worker_cpus", "raise ray.num_cpus"),
    ({"execution": {"judge_worker_resources": {"tpu": 1}}}, "judge_worker_resources", "--address"),
    ({"colour": "blue"}, "colour", "remove it"),
])
def test_a_bad_config_gives_one_message_naming_the_field_and_the_fix(patch, field, fix):
    msg = _bad({**BASE, **patch})
    assert field in msg and "Fix" in msg and fix in msg, msg
    assert "\n" not in msg


def test_queue_per_worker_auto_queues_for_models_that_wait_on_latency_only():
    careful = {"name": "careful", "agent": "careful"}
    sleep = {"name": "sim", "agent": "sleep"}
    endpoint = {"name": "m", "provider": "openai_compatible", "model": "x"}
    assert resolve_queue("auto", 64, [careful]) == 0  # CPU-bound agents keep their worker busy anyway
    assert resolve_queue("auto", 64, [careful, sleep]) == 64
    assert resolve_queue("auto", 64, [endpoint]) == 64
    assert resolve_queue(5, 64, [careful]) == 5 and resolve_queue(0, 64, [endpoint]) == 0
    assert validate_config(tiny_config(Path("/tmp"))).execution.queue_per_worker == "auto"


def test_a_missing_api_key_variable_names_the_variable(monkeypatch):
    monkeypatch.delenv("JEVAL_TEST_NO_SUCH_KEY", raising=False)
    msg = _bad({**BASE, "models": [{"name": "gpt", "provider": "openai", "model": "gpt-4o-mini",
                                    "api_key_env": "JEVAL_TEST_NO_SUCH_KEY"}]})
    assert "models[0].api_key_env" in msg and "JEVAL_TEST_NO_SUCH_KEY" in msg and "export" in msg
    monkeypatch.setenv("JEVAL_TEST_NO_SUCH_KEY", "present")
    validate_config({**BASE, "models": [{"name": "gpt", "provider": "openai", "model": "gpt-4o-mini",
                                         "api_key_env": "JEVAL_TEST_NO_SUCH_KEY"}]})


def test_a_key_pasted_into_api_key_env_is_refused():
    msg = _bad({**BASE, "models": [{"name": "gpt", "provider": "openai", "model": "m", "api_key_env": "sk-abc123"}]})
    assert "models[0].api_key_env" in msg and "NAME" in msg


def test_an_unknown_endpoint_field_is_named():
    msg = _bad({**BASE, "models": [{"name": "gpt", "provider": "openai", "model": "m", "temprature": 0.1}]})
    assert "models[0].temprature" in msg and "remove it" in msg


def test_a_non_empty_foreign_output_directory_is_refused(tmp_path):
    (tmp_path / "runs" / "mine").mkdir(parents=True)
    (tmp_path / "runs" / "mine" / "thesis.docx").write_text("precious")
    cfg = validate_config(tiny_config(tmp_path))
    with pytest.raises(ConfigError, match="not a jeval_ray sweep run"):
        plan_run(cfg, run_id="mine")


def test_an_output_root_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        plan_run(validate_config(tiny_config(tmp_path)), out=str(tmp_path / "afile"))


def test_an_unwritable_output_root_is_refused(tmp_path):
    if os.geteuid() == 0:
        # permission bits do not stop root; /proc refuses new directories to everyone
        with pytest.raises(ConfigError, match="not writable"):
            plan_run(validate_config(tiny_config(tmp_path)), out="/proc/jeval-runs")
        return
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="not writable"):
            plan_run(validate_config(tiny_config(tmp_path)), out=str(ro / "runs"))
    finally:
        ro.chmod(0o700)


def test_an_output_root_below_a_file_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match="--out.*not writable"):
        plan_run(validate_config(tiny_config(tmp_path)), out=str(tmp_path / "afile" / "runs"))


def test_a_bad_run_id_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="--run-id"):
        plan_run(validate_config(tiny_config(tmp_path)), run_id="../escape")


# -- bad configs through the CLI ------------------------------------------------------------------


def _write(tmp_path: Path, cfg: dict, name: str = "bad.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg))
    return p


@pytest.mark.parametrize("patch, needle", [
    ({"tasks": ["JE-42"]}, "tasks[0]"),
    ({"models": [{"name": "x", "provider": "mystery"}]}, "models[0].provider"),
    ({"scoring": {"weights": {"outcome": 0.2, "process": 0.2, "rationale": 0.2}}}, "scoring.weights"),
    ({"seeds": -1}, "seeds"),
    ({"execution": {"episode_workers": 4, "episode_worker_cpus": 0.5}, "ray": {"num_cpus": 2}}, "execution.episode_workers"),
])
def test_the_cli_exits_2_with_one_line_and_writes_nothing(tmp_path, patch, needle):
    cfg = {**tiny_config(tmp_path), **patch}
    out = run_cli("--config", str(_write(tmp_path, cfg)), "--out", str(tmp_path / "out"))
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0] and "Fix" in lines[0], out.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()
    assert "Ray" not in out.stderr and "ray" not in out.stdout.lower()


def test_the_cli_refuses_a_missing_key_and_a_foreign_directory(tmp_path):
    cfg = tiny_config(tmp_path, models=[{"name": "gpt", "provider": "openai", "model": "m", "api_key_env": "JEVAL_NOPE_KEY"}])
    env = {k: v for k, v in os.environ.items() if k != "JEVAL_NOPE_KEY"}
    out = run_cli("--config", str(_write(tmp_path, cfg)), env=env)
    assert out.returncode == 2 and "JEVAL_NOPE_KEY" in out.stderr
    (tmp_path / "out" / "r1").mkdir(parents=True)
    (tmp_path / "out" / "r1" / "notes.txt").write_text("mine")
    out = run_cli("--config", str(_write(tmp_path, tiny_config(tmp_path), "ok.yaml")), "--out", str(tmp_path / "out"),
                  "--run-id", "r1")
    assert out.returncode == 2 and "not a jeval_ray sweep run" in out.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "r1").iterdir()) == ["notes.txt"]


def test_bad_config_in_process_never_starts_ray(tmp_path):
    import ray

    from jeval_ray.sweep.__main__ import main

    assert main(["--config", str(_write(tmp_path, {**tiny_config(tmp_path), "tasks": ["nope"]}))]) == 2
    assert not ray.is_initialized()


def test_a_missing_config_file_exits_2(tmp_path):
    out = run_cli("--config", str(tmp_path / "absent.yaml"))
    assert out.returncode == 2 and "--config" in out.stderr


# -- dry run ----------------------------------------------------------------------------------------


def test_dry_run_prints_the_grid_and_every_contract_without_ray_or_writes(tmp_path):
    cfg = tiny_config(tmp_path, tasks=["JE-1", "JE-2"], conditions=["full", "withheld"],
                      models=[{"name": "careful", "agent": "careful"}, {"name": "org/naive", "agent": "naive"}])
    out = run_cli("--config", str(_write(tmp_path, cfg)), "--dry-run")
    assert out.returncode == 0, out.stderr
    contracts = [json.loads(ln) for ln in out.stdout.splitlines()]  # stdout is JSON lines only
    assert len(contracts) == 2 * 2 * 2 * 2
    assert "# grid: 16 episodes" in out.stderr
    assert {c["run_config"]["task_id"] for c in contracts} == {"JE-1", "JE-2"}
    assert "variance is not measurable" in out.stderr
    assert not (tmp_path / "runs").exists()


def test_help_explains_every_option():
    out = run_cli("--help")
    for opt in ("--config", "--address", "RAY_ADDRESS", "--out", "s3://", "--run-id", "--dry-run", "--max-in-flight",
                "--schema", "--quiet", "--plain"):
        assert opt in out.stdout, opt


def test_the_cluster_address_comes_from_the_option_then_ray_address_then_the_config(tmp_path, monkeypatch):
    cfg = validate_config(tiny_config(tmp_path, ray={"address": "from-config:6379"}))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert plan_run(cfg).address == "from-config:6379"
    monkeypatch.setenv("RAY_ADDRESS", "from-env:6379")
    assert plan_run(cfg).address == "from-env:6379"
    assert plan_run(cfg, address="auto").address == "auto"


def test_make_model_agent_builds_builtin_test_and_endpoint_agents():
    from jeval_ray.agents.llm import LLMAgent
    from jeval_ray.sweep.agents import CrashAgent, SleepAgent, make_model_agent

    assert make_model_agent({"name": "c", "provider": "builtin", "agent": "careful"}, 0).name == "careful"
    assert isinstance(make_model_agent({"name": "s", "provider": "builtin", "agent": "sleep"}, 0), SleepAgent)
    once = make_model_agent({"name": "f", "provider": "builtin", "agent": "crash_once"}, 0, attempt=2)
    assert isinstance(once, CrashAgent) and not once.crash
    llm = make_model_agent({"name": "gpt", "provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"}, 0)
    assert isinstance(llm, LLMAgent) and llm.config.model == "gpt-4o-mini"


def test_the_dry_run_survives_a_closed_pipe(tmp_path):
    import subprocess

    cmd = f"{sys.executable} -m jeval_ray.sweep --dry-run | head -1"
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=str(ROOT),
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.startswith("{") and "Traceback" not in out.stderr


def test_a_condition_can_carry_knob_overrides_such_as_prompt_injection(tmp_path):
    injected = {"name": "injected", "knobs": {"prompt_injection": True}}
    cfg = validate_config(tiny_config(tmp_path, tasks=["JE-1", "JE-16"], conditions=["full", injected]))
    cells = list(Grid(cfg).cells())
    by_cond = {c: [x for x in cells if x.condition == c] for c in ("full", "injected")}
    assert len(by_cond["full"]) == len(by_cond["injected"]) == len(cells) // 2
    for cond, flag in (("full", False), ("injected", True)):
        for cell in by_cond[cond]:
            assert cell.knobs["prompt_injection"] is flag
            assert json.loads(cell.contract_json)["generator"]["prompt_injection"] is flag
    assert {c.episode_id for c in by_cond["full"]}.isdisjoint(c.episode_id for c in by_cond["injected"])


def test_a_bad_knob_in_a_condition_names_the_condition(tmp_path):
    bad = {"name": "odd", "knobs": {"prompt_injektion": True}}
    with pytest.raises(ConfigError, match=r"conditions\[1\]\.knobs.*unknown knob 'prompt_injektion'"):
        Grid(validate_config(tiny_config(tmp_path, conditions=["full", bad])))


def test_auto_batches_shrink_as_the_grid_runs_out_and_endpoint_models_go_one_at_a_time(tmp_path):
    from jeval_ray.sweep.driver import _BUILTIN_BATCH_MAX, _BUILTIN_BATCH_MIN, SweepDriver, _Slot

    models = [{"name": "careful", "provider": "builtin", "agent": "careful"},
              {"name": "remote", "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}]
    plan = plan_run(validate_config(tiny_config(tmp_path, models=models, seeds=200)))
    d = SweepDriver(plan)
    d.slots = [_Slot(handle=None, kind="episode"), _Slot(handle=None, kind="episode"), _Slot(handle=None, kind="judge")]
    cell = next(c for c in plan.grid.cells() if c.model == "careful")
    remote = next(c for c in plan.grid.cells() if c.model == "remote")
    sizes = []
    for left in (400, 128, 60, 20, 3, 0):
        d._undispatched = left
        sizes.append(d._batch_size(cell))
        assert d._batch_size(remote) == 1
    assert sizes[0] == _BUILTIN_BATCH_MAX and sizes[-1] == _BUILTIN_BATCH_MIN
    assert sizes == sorted(sizes, reverse=True) and sizes[2] == 60 // 4  # remaining / (2 x episode workers)
    d.ex = d.ex.model_copy(update={"batch_size": 5})
    assert d._batch_size(cell) == 5 and d._batch_size(remote) == 5
