"""Agents' budgets and the cost forecast (issue 28, point 5): ``budget_usd`` per model and per sweep,
admitted in the limiter actors; skipped-for-budget rows; a resume with a higher budget; the report
on shared cells; the forecast on ``--dry-run``'s stderr and ``--forecast-from``.

One test server and one Ray for the module; the sweep plays JE-4 (the cheapest task of the profile:
about 14 requests an episode) so the whole module stays within a few seconds of episodes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from conftest import run_cli, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.models.ratelimit import SpendLedger
from jeval_ray.store import read_dataset
from jeval_ray.sweep import run_sweep, validate_config
from jeval_ray.testserver import LocalModelServer, builtin_brain

TASK = "JE-4"
SEEDS = [0, 1, 2, 3]
WHOLE = {"max_observation_chars": 1_000_000, "context_window": 10_000_000}
FAST_RETRY = {"timeout_s": 10, "backoff_base_s": 0.02, "backoff_max_s": 0.2}
#: At 10 USD per million input tokens the profile forecasts JE-4 at about 0.85 USD an episode.
PRICE = {"input_per_mtok": 10.0, "output_per_mtok": 30.0}
CAREFUL = {"name": "careful", "provider": "builtin", "agent": "careful"}


def _endpoint(url: str, **over) -> dict:
    return {"name": "careful-openai", "provider": "openai", "model": "careful-model", "base_url": url, "price": PRICE,
            **WHOLE, **FAST_RETRY, **over}


def _config(tmp_path: Path, url: str, **over) -> dict:
    return tiny_config(tmp_path, **{"tasks": [TASK], "seeds": SEEDS,
                                     "models": [CAREFUL, _endpoint(url, **over.pop("endpoint", {}))], **over})


def _forecast_usd() -> float:
    from jeval_ray.models.config import Price
    from jeval_ray.sweep.forecast import cell_cost, load_profile

    use, exact = load_profile().per_episode(TASK, "full")
    assert exact
    return cell_cost(Price(**PRICE), use)


def _rows(run_dir: str, model: str) -> list[dict]:
    return [e for e in read_dataset(run_dir, "episodes").to_pylist() if e["model"] == model]


# ------------------------------------------------------------------------------------------------ ledger
def test_the_ledger_admits_while_spent_plus_in_flight_forecast_fits_and_settles_real_costs():
    led = SpendLedger()
    led.open("run|budget_usd", spent=1.0)
    assert led.admit("a", 1.0, {"run|budget_usd": 3.0}) is None  # 1 spent + 1 held
    assert led.admit("b", 1.0, {"run|budget_usd": 3.0}) is None  # 1 + 2 held = 3: fits exactly
    why = led.admit("c", 0.5, {"run|budget_usd": 3.0})
    assert why.startswith("run|budget_usd: spent 1.0000 + in flight (forecast) 2.0000 + this episode's forecast 0.5000")
    led.settle("a", 0.2, ["run|budget_usd"])  # a cost less than forecast: room again
    assert led.state("run|budget_usd") == pytest.approx({"spent": 1.2, "held": 1.0, "in_flight": 1})
    assert led.admit("c", 0.5, {"run|budget_usd": 3.0}) is None
    led.open("run|budget_usd", spent=0.0)  # a resume reopens at what the run spent, nothing held
    assert led.state("run|budget_usd") == {"spent": 0.0, "held": 0.0, "in_flight": 0}
    # a ledger never opened (its actor restarted) admits nothing and ignores settlements
    led.settle("x", 5.0, ["lost|budget_usd"])
    assert led.admit("x", 0.1, {"lost|budget_usd": 3.0}) == SpendLedger.NOT_OPEN
    assert led.state("lost|budget_usd") == {"spent": 0.0, "held": 0.0, "in_flight": 0}


def test_the_shipped_profile_covers_the_default_grid_and_says_what_made_it():
    from jeval_ray.sweep.forecast import QUANTITIES, load_profile
    from jeval_ray.tasks import available_tasks

    prof = load_profile()
    want = {(t.id, c) for t in available_tasks() for c in ("full", "withheld")}
    assert want <= set(prof.entries)
    for e in prof.entries.values():
        assert e["episodes"] >= 3
        for q in (*QUANTITIES, "largest_request"):
            assert 0 <= e[q]["median"] <= e[q]["p90"] <= e[q]["max"] and e[q]["mean"] <= e[q]["max"]
        assert e["tokens_cached_in"]["mean"] <= e["tokens_in"]["mean"]
    meta = prof.meta
    assert len(meta["code_commit"]) >= 7 and "paged to 20,000 characters" in meta["solver"]
    assert min(meta["seeds"]) >= 40000  # the profile's seeds; the benchmark holds out others from 40000 up


# ------------------------------------------------------------------------------------------------ config
@pytest.mark.parametrize("over, field", [
    ({"budget_usd": -1}, "budget_usd"),
    ({"budget_usd": 0}, "budget_usd"),
    ({"endpoint": {"budget_usd": 0}}, "models[1].budget_usd"),
    ({"endpoint": {"budget_usd": 1.0, "price": {}}}, "models[1].budget_usd"),
    ({"budget_usd": 1.0, "endpoint": {"price": {}}}, "budget_usd"),
    ({"scoring": {"judges": ["j"], "judge_models": [{"name": "j", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                                                     "budget_usd": 1.0}]}}, "scoring.judge_models[0].budget_usd"),
])
def test_a_bad_budget_is_a_config_error_naming_the_field(tmp_path, over, field):
    with pytest.raises(ConfigError) as err:
        validate_config(_config(tmp_path, "http://127.0.0.1:9/v1", **over))
    assert f"field '{field}'" in str(err.value) and "Fix:" in str(err.value)


def test_the_cli_exits_2_naming_the_budget_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path, "http://127.0.0.1:9/v1", endpoint={"budget_usd": -5})))
    out = run_cli("--config", str(path), "--dry-run", timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert "field 'models[1].budget_usd'" in out.stderr


# ------------------------------------------------------------------------------------------------ dry run
def test_dry_run_prints_the_forecast_on_stderr_and_only_contracts_on_stdout(tmp_path):
    path = tmp_path / "c.yaml"
    budget = round(0.5 * len(SEEDS) * _forecast_usd(), 4)  # half the grid's forecast: it does not fit
    path.write_text(yaml.safe_dump(_config(tmp_path, "http://127.0.0.1:9/v1", budget_usd=budget)))
    out = run_cli("--config", str(path), "--dry-run", timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 * len(SEEDS)  # two models x the seeds: contracts only
    assert all(set(json.loads(line)) == {"episode_id", "task_id", "model", "seed", "condition", "run_config"}
               for line in lines)
    err = out.stderr
    assert "# forecast" in err and "caveat: the profile is the reference solver's" in err
    row = next(line for line in err.splitlines() if line.startswith("# careful-openai"))
    episodes, requests, tin, cached, tout, usd = row.split()[2:8]
    assert episodes == str(len(SEEDS)) and float(usd) == pytest.approx(len(SEEDS) * _forecast_usd(), abs=0.01)
    assert next(line for line in err.splitlines() if line.startswith("# careful ")).endswith("built-in agent, no model")
    assert f"# budget_usd={budget:g}: the forecast does NOT fit" in err


# ------------------------------------------------------------------------------------------------ a real sweep
@pytest.fixture(scope="module")
def server():
    with LocalModelServer(builtin_brain("careful")) as srv:
        yield srv


@pytest.fixture(scope="module")
def budget_run(ray_local, server, tmp_path_factory):
    """careful and careful-openai on JE-4 x 4 seeds; careful-openai's budget fits two episodes' forecast."""
    tmp = tmp_path_factory.mktemp("budget")
    budget = 2.5 * _forecast_usd()
    cfg = validate_config(_config(tmp, server.url, endpoint={"budget_usd": round(budget, 4)}))
    result = run_sweep(cfg)
    return {"tmp": tmp, "result": result, "run_dir": result.run_dir, "budget": budget,
            "rows": _rows(result.run_dir, "careful-openai"), "builtin": _rows(result.run_dir, "careful")}


def test_the_budget_stops_new_episodes_partway_and_the_rest_are_skipped_rows(budget_run, server):
    r, rows = budget_run["result"], budget_run["rows"]
    played = [e for e in rows if e["status"] == "completed"]
    skipped = [e for e in rows if e["status"] == "skipped"]
    assert (len(played), len(skipped), r.budget_skipped, r.failed) == (2, 2, 2, 0)
    for e in skipped:
        assert e["termination"].startswith(f"budget: models[1].budget_usd={round(budget_run['budget'], 4):g} (spent ")
        assert "would pass" in e["termination"] and e["error"] is None and e["n_steps"] == 0
        assert e["tokens_in"] is None and not e["cost_usd"]
    assert all(e["status"] == "completed" for e in budget_run["builtin"]) and len(budget_run["builtin"]) == 4
    manifest = json.loads(Path(r.run_dir, "manifest.json").read_text())
    assert manifest["budgets"]["models[1].budget_usd"]["shut"].startswith("budget: models[1].budget_usd=")
    assert manifest["invocations"][-1]["budget_skipped"] == 2
    # every call of the budgeted model passed the actor that admitted its episodes (it has no rate limits)
    import ray

    from jeval_ray.models.config import ModelConfig
    from jeval_ray.models.ratelimit import get_rate_limiter

    key = ModelConfig.model_validate(_endpoint(server.url)).endpoint_key
    granted = ray.get(get_rate_limiter(key, None, None, None).stats.remote())["granted"]
    steps = read_dataset(r.run_dir, "steps").to_pylist()
    assert granted == sum(1 for s in steps if s["model"] == "careful-openai" and s["tokens_in"]) > 0


def test_the_report_compares_models_on_the_cells_both_played_and_says_so(budget_run):
    from jeval_ray.report import load_report

    rep = load_report(budget_run["run_dir"])
    board = next(t for t in rep.tables if t.name == "leaderboard")
    assert {(b["model"], b["episodes"], b["skipped"]) for b in board.rows} == {("careful", 2, 0), ("careful-openai", 2, 2)}
    assert any("skipped for budget" in n and "compared on the 2 (condition, task, seed) cell(s)" in n for n in board.notes)
    pairs = next(t for t in rep.tables if t.name == "pairs")
    assert [p["cells"] for p in pairs.rows] == [2]


def test_a_restarted_limiter_actor_gets_its_ledger_back_from_the_drivers_accounts(ray_local, tmp_path):
    import ray

    from jeval_ray.sweep.budget import Budgets

    class Flat:  # every episode forecast at 1 USD
        def usd(self, *a):
            return 1.0

    cfg = validate_config(_config(tmp_path, "http://127.0.0.1:9/v1", budget_usd=3.0))
    b = Budgets(cfg, "restart-test", Flat(), {"careful-openai": 0.5})
    b.open()
    assert b.admit("e1", "careful-openai", TASK, "full") is None  # 0.5 spent + 1 held
    b.settle("e1", 0.25)
    assert b.admit("e2", "careful-openai", TASK, "full") is None  # 0.75 spent + 1 held
    actor = b._actor(None)
    ray.kill(actor, no_restart=False)  # the actor comes back empty
    from jeval_ray.sweep.budget import _call

    ledger = b._ledger("budget_usd")
    for _ in range(150):  # until the restarted actor answers (its ledger gone)
        if _call(lambda: actor.budget_state.remote(ledger))["spent"] == 0.0:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the limiter actor did not restart")
    assert b.admit("e3", "careful-openai", TASK, "full") is None  # reopened: 0.75 + e2's 1 + 1 = 2.75
    why = b.admit("e4", "careful-openai", TASK, "full")
    assert why.startswith("budget: budget_usd=3 (spent 0.7500 + in flight (forecast) 2.0000")
    b.close()


def test_forecast_from_calibrates_on_an_earlier_run_of_the_model(budget_run):
    from jeval_ray.sweep.forecast import forecaster_for, load_profile

    cfg = validate_config(_config(budget_run["tmp"], "http://127.0.0.1:9/v1"))
    fc = forecaster_for(cfg, budget_run["run_dir"])
    cal = fc.calibration["careful-openai"]
    played = [e for e in budget_run["rows"] if e["status"] == "completed"]
    assert cal.episodes == len(played)
    mean_in = sum(e["tokens_in"] for e in played) / len(played)
    assert fc.episode("careful-openai", TASK, "full").tokens_in == pytest.approx(mean_in)
    # a condition the run did not play: the profile scaled by what the model used against it
    base, _ = load_profile().per_episode(TASK, "withheld")
    assert fc.episode("careful-openai", TASK, "withheld").tokens_in == pytest.approx(
        base["tokens_in"] * cal.ratio["tokens_in"])
    path = budget_run["tmp"] / "c.yaml"
    path.write_text(yaml.safe_dump(_config(budget_run["tmp"], "http://127.0.0.1:9/v1")))
    out = run_cli("--config", str(path), "--dry-run", "--forecast-from", budget_run["run_dir"], timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"calibrated on {len(played)} episode(s) of {budget_run['run_dir']}" in out.stderr
    bad = run_cli("--config", str(path), "--dry-run", "--forecast-from", str(budget_run["tmp"]), timeout=120)
    assert bad.returncode == 2 and "--forecast-from" in bad.stderr


def test_a_resume_counts_what_the_run_spent_and_a_higher_budget_plays_the_skipped(budget_run, server, capsys):
    tmp, run_id = budget_run["tmp"], budget_run["result"].run_id
    spent = sum(e["cost_usd"] or 0.0 for e in budget_run["rows"])
    # a dry run of the resume forecasts what is left and counts what the run already spent
    path = tmp / "resume.yaml"
    path.write_text(yaml.safe_dump(_config(tmp, server.url, endpoint={"budget_usd": 100.0})))
    dry = run_cli("--config", str(path), "--dry-run", "--run-id", run_id, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert "# resume: the forecast covers the 2 episode(s) not yet completed" in dry.stderr
    assert f"# models[1].budget_usd=100: the forecast fits ({2 * _forecast_usd():.2f} USD for careful-openai + " \
           f"{spent:.2f} already spent by the run)" in dry.stderr
    # room for less than one more episode beyond what the run already spent: nothing more is played
    # (through the CLI's main, in this process's Ray: its last lines say what the budget kept back)
    from jeval_ray.sweep.__main__ import main

    path.write_text(yaml.safe_dump(_config(tmp, server.url,
                                           endpoint={"budget_usd": round(spent + 0.5 * _forecast_usd(), 4)})))
    assert main(["--config", str(path), "--run-id", run_id, "--quiet", "--no-leaderboard"]) == 0
    out = capsys.readouterr().out
    assert f"budget: 2 episode(s) not started (status skipped, termination budget: ...); a resume with a higher " \
           f"budget_usd plays them (--run-id {run_id})" in out
    assert "episodes: 0 completed, 0 failed, 6 skipped (already complete)" in out
    cfg = validate_config(_config(tmp, server.url, endpoint={"budget_usd": 100.0}))
    more = run_sweep(cfg, run_id=run_id)
    assert (more.skipped, more.done, more.budget_skipped, more.failed) == (6, 2, 0, 0)
    rows = _rows(more.run_dir, "careful-openai")  # deduplicated: the completed attempt wins
    assert sorted(e["status"] for e in rows) == ["completed"] * 4 and {e["seed"] for e in rows} == set(SEEDS)
    from jeval_ray.report import load_report

    board = next(t for t in load_report(more.run_dir).tables if t.name == "leaderboard")
    assert {b["episodes"] for b in board.rows} == {4} and not any("skipped for budget" in n for n in board.notes)


def test_the_sweep_budget_bounds_every_endpoint_model_together(ray_local, server, tmp_path):
    cfg = validate_config(_config(tmp_path, server.url, seeds=[0, 1], budget_usd=round(1.5 * _forecast_usd(), 4)))
    r = run_sweep(cfg)
    rows = _rows(r.run_dir, "careful-openai")
    assert sorted(e["status"] for e in rows) == ["completed", "skipped"] and r.budget_skipped == 1
    assert next(e for e in rows if e["status"] == "skipped")["termination"].startswith("budget: budget_usd=")


def test_a_condition_the_profile_lacks_is_forecast_from_the_tasks_full_and_the_forecast_says_so():
    from types import SimpleNamespace

    from jeval_ray.models.config import ModelConfig
    from jeval_ray.sweep.forecast import Forecaster, format_forecast, load_profile

    prof = load_profile()
    fc = Forecaster(prof, {"m": ModelConfig(name="m", model="m", price=PRICE)})
    cells = [SimpleNamespace(model="m", task_id=TASK, condition=c) for c in ("full", "injected")]
    by = fc.grid(cells)
    assert by["m"].tokens_in == pytest.approx(2 * prof.entries[(TASK, "full")]["tokens_in"]["mean"])
    lines = format_forecast(by, prof, {}, approximated=fc.approximated)
    assert any(line.startswith("# not in the profile") and f"{TASK} injected" in line for line in lines)


def test_an_episode_forecast_above_its_episode_cap_is_forecast_at_the_cap():
    from jeval_ray.models.config import ModelConfig
    from jeval_ray.sweep.forecast import Forecaster, load_profile

    prof = load_profile()
    free = Forecaster(prof, {"m": ModelConfig(name="m", model="m", price=PRICE)}).episode("m", TASK, "full")
    cap = round(free.usd / 2, 4)
    capped = Forecaster(prof, {"m": ModelConfig(name="m", model="m", price=PRICE, episode_budget_usd=cap)}).episode(
        "m", TASK, "full")
    assert capped.usd == pytest.approx(cap) and capped.tokens_in == pytest.approx(free.tokens_in * cap / free.usd)


def test_the_forecast_notes_where_the_solvers_largest_request_passes_a_models_context():
    from jeval_ray.models.config import ModelConfig
    from jeval_ray.sweep.forecast import Forecaster, context_notes, load_profile

    prof = load_profile()
    largest = prof.entries[(TASK, "full")]["largest_request"]["max"]
    small = ModelConfig(name="small", model="m", context_window=int(largest), max_tokens=1024)
    roomy = ModelConfig(name="roomy", model="m", context_window=int(largest) + 2048, max_tokens=1024)
    notes = context_notes(Forecaster(prof, {"small": small, "roomy": roomy}), [(TASK, "full")])
    assert len(notes) == 1 and "small's context_window" in notes[0] and f"{TASK} full" in notes[0]
