"""A sweep judged by a jury of LLM judges on the local test server (real Ray, real HTTP, Parquet read
back), then re-scored with another jury through ``python -m jeval_ray.rescore``.

The judge endpoint requires a key: no output of the sweep or the re-score may contain it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.rescore import RescoreConfig, rescore
from jeval_ray.store import read_dataset
from jeval_ray.store.reader import read_raw
from jeval_ray.sweep import load_sweep_config, run_sweep, validate_config
from jeval_ray.testserver import JudgeBrain, LocalModelServer

KEY_ENV = "JEVAL_TEST_JUDGE_KEY"
KEY = "sk-judge-test-5f8a1c9e0b7d4e2a"
TASKS = ["JE-1", "JE-13"]  # L1: one judgment; L4: three
PRICE = {"input_per_mtok": 0.5, "output_per_mtok": 1.5}
FAST = {"timeout_s": 10, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_attempts": 3}


def _judge(name: str, url: str, provider: str = "openai", **over) -> dict:
    return {"name": name, "provider": provider, "model": name, "base_url": url, "api_key_env": KEY_ENV,
            "price": PRICE, **FAST, **over}


# Set before the module's Ray starts, so its worker processes (the judge pool) inherit it, as on a real
# cluster where the variable is set on every node.
os.environ[KEY_ENV] = KEY


def _files_text(root: Path) -> str:
    """Every file's bytes, and every Parquet file decoded (compressed pages could hide a string)."""
    import pyarrow.parquet as pq

    parts = []
    for p in root.rglob("*"):
        if p.is_file():
            parts.append(p.read_bytes().decode("latin-1"))
            if p.suffix == ".parquet":
                parts.append(json.dumps(pq.read_table(p).to_pylist(), default=str))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def judged(ray_local, tmp_path_factory):
    # judge-c always answers prose: its judgments end unscored after the re-asks
    brain = JudgeBrain(levels={"judge-a": 2, "judge-b": 3, "judge-c": 1}, modes={"judge-c": "malformed"})
    with LocalModelServer(api_key=KEY, judge=brain) as server:
        tmp = tmp_path_factory.mktemp("judged")
        scoring = {"judges": ["judge-a", "judge-b", "judge-c"], "judge_max_reasks": 1,
                   "judge_models": [_judge("judge-a", server.url), _judge("judge-b", server.url),
                                    _judge("judge-c", server.url, provider="anthropic")]}
        models = [{"name": "careful", "provider": "builtin", "agent": "careful"},
                  {"name": "random", "provider": "builtin", "agent": "random"}]  # wrong and void dispositions too
        cfg = validate_config(tiny_config(tmp, tasks=TASKS, models=models, seeds=[0, 1, 2], scoring=scoring))
        result = run_sweep(cfg)
        run = Path(result.run_dir)
        before = read_raw(str(run), "judgments").to_pylist()
        # another jury: judge-a alone, asked three times (three seeds) for L4 episodes
        jury = {"judge": "global_rubric_v1", "judges": ["judge-a"], "judge_models": [_judge("judge-a", server.url)]}
        (tmp / "judges.yaml").write_text(yaml.safe_dump(jury))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
        cli = [sys.executable, "-m", "jeval_ray.rescore", str(run), "--config", str(tmp / "judges.yaml")]
        first = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
        after_first = read_raw(str(run), "judgments").to_pylist()
        second = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
        after_second = read_raw(str(run), "judgments").to_pylist()
        requests = server.requests
    return {"result": result, "run": run, "before": before, "first": first, "second": second,
            "after_first": after_first, "after_second": after_second, "requests": requests}


def _rows(judged):
    return read_dataset(str(judged["run"]), "judgments").to_pylist()


def test_l4_episodes_carry_three_judgments_and_others_one(judged):
    r = judged["result"]
    assert (r.total, r.done, r.failed) == (12, 12, 0)
    sweep_rows = [j for j in judged["before"] if j["scored_by"] == "sweep"]
    per = {}
    for j in sweep_rows:
        per.setdefault((j["task_id"], j["episode_id"]), []).append(j)
    assert sorted(len(v) for (t, _), v in per.items() if t == "JE-1") == [1] * 6
    for (task, _), rows in per.items():
        if task == "JE-13":
            assert sorted(r["judge_idx"] for r in rows) == [0, 1, 2]
            assert sorted(r["judge_model"] for r in rows) == ["judge-a", "judge-b", "judge-c"]  # three entries
    assert all(j["jury"] == sweep_rows[0]["jury"] for j in sweep_rows)


def test_every_judge_row_keeps_item_scores_and_its_own_accounting(judged):
    for j in judged["before"]:
        if j["status"] == "ok" and j["calls"] == 0:  # nothing disposed of: the rubric's 0, no call
            assert (j["item_scores"], j["rationale_score"], j["tokens_in"]) == ("[]", 0.0, 0)
            continue
        if j["status"] == "ok":
            scores = json.loads(j["item_scores"])
            assert scores and all(set(s["scores"]) == {"criterion_identified", "evidence_specific", "scepticism",
                                                       "quantification", "clarity"} for s in scores)
            assert j["reference_item_scores"] and j["calls"] == 1
        assert j["tokens_in"] > 0 and j["tokens_out"] > 0 and j["latency_ms"] > 0 and j["prompt_hash"]
        assert j["cost_usd"] == pytest.approx((j["tokens_in"] * 0.5 + j["tokens_out"] * 1.5) / 1e6)


def test_unscored_judgments_are_kept_counted_and_left_out_of_the_median(judged):
    rows = [j for j in judged["before"] if j["scored_by"] == "sweep"]
    unscored = [j for j in rows if j["status"] == "unscored"]
    assert unscored and all(j["judge_model"] == "judge-c" and j["reasks"] == 1 and j["calls"] == 2 for j in unscored)
    assert all(j["error"].startswith("invalid_output") and j["rationale_score"] is None for j in unscored)
    eps = {e["episode_id"]: e for e in read_dataset(str(judged["run"]), "episodes").to_pylist()}
    for eid, e in eps.items():
        mine = [j for j in rows if j["episode_id"] == eid]
        ok = [j["rationale_score"] for j in mine if j["status"] == "ok"]
        assert e["judges_unscored"] == sum(j["status"] == "unscored" for j in mine)
        assert e["rationale"] == (statistics.median(ok) if ok else None)
        assert e["judge_cost_usd"] == pytest.approx(sum(j["cost_usd"] for j in mine))
        assert e["judge_tokens_in"] == sum(j["tokens_in"] for j in mine)
        assert not e["tokens_in"]  # the agent (built-in) spent nothing: judge tokens are kept apart
    manifest = json.loads((judged["run"] / "manifest.json").read_text())["judging"]
    jury = manifest["juries"][manifest["sweep_jury"]]
    assert jury["unscored"] == len(unscored) and jury["unscored_reasons"] == {"invalid_output": len(unscored)}
    assert jury["ok"] + jury["unscored"] == jury["judgments"] == len(rows)


def test_the_manifest_holds_agreement_per_item_and_the_reference_confusion_per_judge(judged):
    manifest = json.loads((judged["run"] / "manifest.json").read_text())["judging"]
    jury = manifest["juries"][manifest["sweep_jury"]]
    assert jury["scored_by"] == "sweep" and jury["judges"] == ["judge-a", "judge-b", "judge-c"]
    agreement = jury["agreement"]
    assert agreement["episodes"] == 6  # the L4 episodes
    crit = agreement["items"]["criterion_identified"]
    assert crit["alpha"] == 1.0 and crit["level"] == "ordinal" and crit["groups"] == 6  # both read the facts
    assert crit["ci_low"] <= crit["alpha"] <= crit["ci_high"]
    assert agreement["items"]["clarity"]["alpha"] < crit["alpha"]  # judges a and b differ on style only
    confusion = jury["reference_confusion"]
    assert set(confusion) == {"judge-a", "judge-b"}  # judge-c never scored
    table = confusion["judge-a"]["criterion_identified"]
    assert table["n"] == sum(map(sum, table["table"])) > 0 and 0 <= table["agreement"] <= 1


def test_judge_requests_go_to_the_judge_route_with_the_right_structured_output(judged):
    judge_requests = [q for q in judged["requests"] if q.judge]
    assert judge_requests and {q.status for q in judge_requests} == {200}
    assert {q.response_format for q in judge_requests if q.path == "/v1/chat/completions"} == {"json_schema"}
    assert {q.response_format for q in judge_requests if q.path == "/v1/messages"} == {None}
    manifest = json.loads((judged["run"] / "manifest.json").read_text())["judging"]
    assert manifest["structured_output"] == {"judge-a": ["json_schema"], "judge-b": ["json_schema"],
                                             "judge-c": ["instructions"]}


def test_rescoring_appends_a_new_jury_resumably_and_a_second_run_adds_nothing(judged):
    first, second = judged["first"], judged["second"]
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    before, after1, after2 = judged["before"], judged["after_first"], judged["after_second"]
    added = [j for j in after1 if j["scored_by"] == "rescore"]
    assert len(added) == 6 * 1 + 6 * 3 and "24 judgments added" in first.stdout  # L1 once, L4 three seeds
    assert len(after2) == len(after1) and "0 judgments added" in second.stdout and "24 already present" in second.stdout
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    assert sorted(map(key, before)) == sorted(key(j) for j in after2 if j["scored_by"] == "sweep")  # no row changed
    l4 = [j for j in added if j["task_id"] == "JE-13"]
    assert {j["judge_model"] for j in l4} == {"judge-a"} and len({j["judge_seed"] for j in l4}) == 18
    assert len({j["jury"] for j in added}) == 1 and added[0]["jury"] != before[0]["jury"]
    # the same judge model on the same packet and seed writes the same prompt: its hash matches the sweep's row
    sweep_a = {(j["episode_id"], j["judge_idx"]): j["prompt_hash"] for j in before if j["judge_model"] == "judge-a"}
    same = [j for j in added if (j["episode_id"], j["judge_idx"]) in sweep_a]
    assert all(j["prompt_hash"] == sweep_a[(j["episode_id"], j["judge_idx"])] for j in same)
    manifest = json.loads((judged["run"] / "manifest.json").read_text())["judging"]
    assert [r["added"] for r in manifest["rescores"]] == [24, 0]
    assert manifest["juries"][added[0]["jury"]]["scored_by"] == "rescore"
    assert manifest["juries"][added[0]["jury"]]["agreement"]["episodes"] == 6


def test_the_judge_key_never_appears_in_any_output(judged):
    assert any(q.judge and q.status == 200 for q in judged["requests"])  # the key was sent and accepted
    assert KEY not in _files_text(judged["run"])
    for proc in (judged["first"], judged["second"]):
        assert KEY not in proc.stdout + proc.stderr


def test_a_rescore_budget_stops_judging_and_a_higher_budget_continues(judged, tmp_path):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(judged["run"], run)
    with LocalModelServer(api_key=KEY) as server:
        def jury(budget):
            return RescoreConfig.model_validate({"judges": ["judge-z"], "judge_budget_usd": budget, "concurrency": 1,
                                                 "judge_models": [_judge("judge-z", server.url)]})
        tight = rescore(str(run), jury(1e-9))
        assert tight["added"] >= 1 and tight["added"] + tight["left_budget"] == 24  # the first spend reaches the cap
        assert tight["cost_usd"] > 0 and tight["left_budget"] > 0
        rest = rescore(str(run), jury(100.0))
        assert (rest["added"], rest["skipped"], rest["left_budget"]) == (tight["left_budget"], tight["added"], 0)


def test_the_sweep_budget_caps_llm_judgments_and_counts_the_rest_unscored(ray_local, tmp_path):
    from jeval_ray.testserver import LLAMA_CPP_RESPONSE_FORMATS, Faults

    # served as llama.cpp serves: json_schema is refused, the judge falls back to json_object
    with LocalModelServer(faults=Faults(response_formats=list(LLAMA_CPP_RESPONSE_FORMATS))) as server:
        scoring = {"judges": ["judge-a"], "judge_budget_usd": 1e-9,
                   "judge_models": [{**_judge("judge-a", server.url), "api_key_env": None}]}
        cfg = validate_config(tiny_config(tmp_path, tasks=["JE-1"], seeds=[0, 1, 2, 3], scoring=scoring,
                                          execution={"judges_in_flight": 1}))
        result = run_sweep(cfg)
    rows = read_dataset(result.run_dir, "judgments").to_pylist()
    assert len(rows) == 4 and sum(r["status"] == "ok" for r in rows) == 1
    assert [r["error"].split(":")[0] for r in rows if r["status"] != "ok"] == ["budget"] * 3
    jury = json.loads((Path(result.run_dir) / "manifest.json").read_text())["judging"]["juries"]
    assert list(jury.values())[0]["unscored_reasons"] == {"budget": 3}
    assert [r["structured_output"] for r in rows if r["status"] == "ok"] == ["json_object"]
    manifest = json.loads((Path(result.run_dir) / "manifest.json").read_text())["judging"]
    assert manifest["structured_output"] == {"judge-a": ["json_object"]}


def test_bad_judge_configs_name_the_field_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    base = tiny_config(tmp_path)
    cases = [
        ({"judges": ["judge-x"]}, "scoring.judges", "judge_models"),
        ({"judges": ["j"], "judge_models": [{"name": "j", "model": "m", "api_key_env": KEY_ENV}]},
         "scoring.judge_models[0].api_key_env", f"export {KEY_ENV}"),
        ({"judges": ["j"], "judge_models": [{"name": "j", "model": "m", "rpm": 0}]}, "scoring.judge_models[0].rpm", "raise"),
        ({"judges": ["reference"], "judge_budget_usd": 1.0}, "scoring.judge_budget_usd", "remove"),
        ({"judges": ["j"], "judge_models": [{"name": "j", "model": "m", "provider": "anthropic",
                                             "structured_output": "json_schema"}]},
         "scoring.judge_models[0].structured_output", "instructions"),
        ({"judges": ["reference"], "judge_models": [{"name": "reference", "model": "m"}]},
         "scoring.judge_models[0].name", "another name"),
    ]
    for scoring, field, fix in cases:
        with pytest.raises(ConfigError) as err:
            validate_config({**base, "scoring": scoring})
        assert field in str(err.value) and fix in str(err.value)


def test_the_judged_example_configs_validate():
    for name in ("judged_local.yaml", "judged_openai.yaml"):
        cfg = load_sweep_config(ROOT / "configs" / name, check_env=False)
        assert cfg.scoring.judge_models and set(cfg.scoring.judges) <= {m.name for m in cfg.scoring.judge_models}
    assert RescoreConfig.model_validate(yaml.safe_load((ROOT / "configs" / "rescore_judges.yaml").read_text()))


def test_rescore_cli_exits_2_on_bad_input(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    (tmp_path / "j.yaml").write_text("judges: [reference]\n")
    bad_run = subprocess.run([sys.executable, "-m", "jeval_ray.rescore", str(tmp_path), "--config",
                              str(tmp_path / "j.yaml")], capture_output=True, text=True, env=env, timeout=120)
    assert bad_run.returncode == 2 and "not a jeval_ray sweep run" in bad_run.stderr
    (tmp_path / "k.yaml").write_text("judges: [reference]\nweights: {outcome: 1, process: 0, rationale: 0}\n")
    bad_cfg = subprocess.run([sys.executable, "-m", "jeval_ray.rescore", str(tmp_path), "--config",
                              str(tmp_path / "k.yaml")], capture_output=True, text=True, env=env, timeout=120)
    assert bad_cfg.returncode == 2 and "weights" in bad_cfg.stderr
