"""The player CLI: python -m jeval_ray.play."""

import json
import subprocess
import sys

import pytest


def _play(*args):
    return subprocess.run([sys.executable, "-m", "jeval_ray.play", *args], capture_output=True, text=True, timeout=120)


def test_play_prints_brief_steps_and_score_breakdown():
    r = _play("--task", "JE-1", "--seed", "3", "--agent", "careful")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Procedure asked for: JE-1" in out and "Tools:" in out
    assert "flag_entry(" in out and "submit(" in out and "->" in out
    for part in ("outcome", "process", "rationale", "score", "termination: submitted"):
        assert part in out


def test_play_json_prints_the_episode_record_with_its_run_config_contract():
    r = _play("--task", "JE-2", "--seed", "1", "--agent", "naive", "--json", "--knob", "n_entries=250")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    contract = rec["run_config"]
    assert set(contract) == {"task_id", "tier", "seed", "generator", "tools_enabled", "tools_withheld", "step_budget",
                             "scoring", "sweep"}
    assert contract["generator"]["n_entries"] == 250 and contract["generator"]["sources"][0] == "general_ledger"
    assert contract["scoring"] == {"weights": {"outcome": 0.7, "process": 0.2, "rationale": 0.1},
                                   "judge": "global_rubric_v1", "judges_per_episode": 1}
    assert rec["world_hash"] and rec["status"] == "completed" and rec["steps"] and rec["n_steps"] == len(rec["steps"])


def test_play_with_a_withheld_tool_records_the_condition():
    rec = json.loads(_play("--task", "JE-1", "--withhold", "search_documents", "--json").stdout)
    assert rec["condition"] == "withheld:search_documents"
    assert rec["run_config"]["tools_withheld"] == ["search_documents"]
    assert "search_documents" not in rec["run_config"]["tools_enabled"]


@pytest.mark.parametrize("args, words", [
    (["--task", "JE-42"], "unknown task id"),
    (["--task", "JE-1", "--knob", "colour=blue"], "unknown knob 'colour'"),
    (["--task", "JE-1", "--knob", "n_entries=ten"], "n_entries"),
    (["--task", "JE-1", "--knob", "n_entries=-1"], "n_entries"),
    (["--task", "JE-1", "--knob", "n_defects=80"], "impossible knobs"),
    (["--task", "JE-1", "--withhold", "compute_stats"], "cannot withhold"),
    (["--task", "JE-1", "--agent", "oracle"], "unknown built-in agent"),
    (["--task", "JE-1", "--knob", "noequals"], "name=value"),
])
def test_bad_input_exits_2_with_one_clear_message(args, words):
    r = _play(*args)
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr
