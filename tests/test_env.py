"""The episode environment: Gymnasium-style API, tools, withheld tools and error observations."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jeval_ray.agents import Action
from jeval_ray.env import JEEnv, TOOLS
from jeval_ray.errors import ConfigError
from jeval_ray.tasks import available_tasks, get_task
from jeval_ray.builder._hash import world_hash

AVAILABLE = [t.id for t in available_tasks()]


def _obs(env, tool, **args):
    text, *_rest, info = env.step(Action(tool, args))
    return json.loads(text), info


def test_reset_returns_brief_and_info_and_step_returns_five_values():
    env = JEEnv("JE-1")
    brief, info = env.reset(seed=2)
    assert "JE-1" in brief and "submit" in brief
    assert info["world_hash"] == env.world.world_hash and info["step_budget"] == get_task("JE-1").step_budget == 60
    assert [t["function"]["name"] for t in info["tools"]] == list(get_task("JE-1").tools)
    out = env.step(Action("list_documents", {}))
    assert len(out) == 5
    obs, reward, terminated, truncated, info = out
    assert isinstance(obs, str) and reward == 0.0 and not terminated and not truncated


def test_submit_terminates_and_scores():
    env = JEEnv("JE-1")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(Action("submit", {"summary": "nothing found"}))
    assert terminated and not truncated
    assert reward == pytest.approx(info["score"].score)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(Action("submit", {}))


def test_exhausting_the_step_budget_truncates():
    env = JEEnv("JE-1", step_budget=3)
    env.reset(seed=0)
    results = [env.step(Action("list_documents", {})) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert [r[2] for r in results] == [False, False, False]
    assert env.termination == "step_budget"


def _valid_calls(env):
    """One valid call of each of the env's tools, using ids found through the tools themselves."""
    docs, _ = _obs(env, "list_documents")
    eid = env.world.ledger.column("entry_id")[0].as_py()
    doc = docs["documents"][0]["doc_id"]
    return {
        "list_documents": {"limit": 5},
        "open_document": {"doc_id": doc},
        "search_documents": {"query": docs["documents"][0]["title"].split()[0]},
        "query_ledger": {"filters": [{"column": "source", "op": "eq", "value": "manual"}], "columns": ["entry_id", "debit"], "limit": 5},
        "get_entry": {"entry_id": eid},
        "get_master_data": {"table": "users"},
        "compute_stats": {"group_by": "source", "digits": "first"},
        "get_balances": {},
        "flag_entry": {"entry_id": eid, "criteria": env.spec.criteria_codes[0], "evidence": [eid], "rationale": "test"},
        "clear_entry": {"entry_id": eid, "evidence": [doc], "rationale": "test"},
        "submit": {"summary": "done"},
    }


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_every_tool_of_every_task_answers_a_valid_call(task_id):
    env = JEEnv(task_id)
    env.reset(seed=1)
    calls = _valid_calls(env)
    for tool in env.tools_enabled:
        obs, info = _obs(env, tool, **calls[tool])
        assert not info["is_error"], (tool, obs)
        assert "error" not in obs


def test_tools_record_what_was_opened_and_when():
    env = JEEnv("JE-1")
    env.reset(seed=0)
    eid = env.world.ledger.column("entry_id")[10].as_py()
    doc = env.world.documents[0].doc_id
    _obs(env, "list_documents")
    _obs(env, "open_document", doc_id=doc)
    _obs(env, "get_master_data", table="accounts")
    _obs(env, "get_entry", entry_id=eid)
    _obs(env, "open_document", doc_id=doc)
    assert env.state.opened == {doc: 1, "master:accounts": 2, eid: 3}


def test_withheld_tool_is_absent_from_schemas_and_dispatcher():
    env = JEEnv("JE-1", tools_withheld=["search_documents"])
    _, info = env.reset(seed=0)
    assert "search_documents" not in [t["function"]["name"] for t in info["tools"]]
    obs, step_info = _obs(env, "search_documents", query="policy")
    assert step_info["is_error"] and "unknown tool" in obs["error"]


@pytest.mark.parametrize("withheld, words", [(["get_balances_typo"], "cannot withhold"), (["submit"], "cannot withhold")])
def test_withholding_a_tool_the_task_lacks_or_needs_is_a_config_error(withheld, words):
    with pytest.raises(ConfigError, match=words):
        JEEnv("JE-1", tools_withheld=withheld)


@pytest.mark.parametrize("tool, args, words", [
    ("get_entry", {}, "entry_id: Field required"),
    ("get_entry", {"entry_id": "1", "extra": 1}, "extra: unexpected argument"),
    ("get_entry", {"entry_id": 5}, "entry_id"),
    ("get_entry", {"entry_id": "999"}, "no entry"),
    ("open_document", {"doc_id": "DOC-9999"}, "no document"),
    ("get_master_data", {"table": "salaries"}, "unknown table"),
    ("query_ledger", {"filters": [{"column": "nope", "op": "eq", "value": 1}]}, "unknown column"),
    ("query_ledger", {"filters": [{"column": "debit", "op": "gt", "value": "big"}]}, "cannot compare"),
    ("query_ledger", {"limit": 100000}, "limit"),
    ("search_documents", {"query": "x" * 100000}, "query"),
    ("flag_entry", {"entry_id": "1000000001", "criteria": "MADE_UP", "evidence": [], "rationale": "r"}, "unknown criteria"),
    ("flag_entry", {"entry_id": "abc", "criteria": "UNBALANCED", "evidence": [], "rationale": "r"}, "no entry"),
    ("teleport", {}, "unknown tool"),
    ("", {}, "no tool was called"),
])
def test_bad_tool_calls_give_error_observations_and_the_episode_goes_on(tool, args, words):
    env = JEEnv("JE-1")
    env.reset(seed=0)
    obs, info = _obs(env, tool, **args)
    assert info["is_error"] and words in obs["error"]
    assert env.steps[-1].is_error and not env.done
    obs, info = _obs(env, "list_documents")
    assert not info["is_error"]


def test_malformed_json_arguments_are_an_error_observation():
    env = JEEnv("JE-1")
    env.reset(seed=0)
    text, _, _, _, info = env.step(Action("get_entry", '{"entry_id": '))
    assert info["is_error"] and "not valid JSON" in json.loads(text)["error"]
    text, _, _, _, info = env.step(Action("get_entry", "[1, 2]"))
    assert info["is_error"] and "JSON object" in json.loads(text)["error"]


def test_steps_log_tool_args_observation_hash_and_error_flag():
    env = JEEnv("JE-1")
    env.reset(seed=0)
    env.step(Action("list_documents", {"limit": 2}))
    env.step(Action("nope", {}))
    s0, s1 = env.steps
    assert (s0.step_idx, s0.tool, json.loads(s0.args), s0.is_error) == (0, "list_documents", {"limit": 2}, False)
    import hashlib
    assert s0.observation_hash == hashlib.sha256(s0.observation.encode()).hexdigest()
    assert s1.is_error and s1.step_idx == 1


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4), max_leaves=12)
_tool = st.sampled_from(sorted(TOOLS) + ["", "nope", "flag", "open_document "])


def _arg_dicts(tool):
    keys = list(TOOLS[tool].args.model_fields) if tool in TOOLS else ["x"]
    return st.dictionaries(st.sampled_from(keys + ["bogus"]), _json, max_size=5)


_call = _tool.flatmap(lambda t: st.tuples(st.just(t), _arg_dicts(t) | st.text(max_size=40)))


@pytest.fixture(scope="module")
def fuzz_envs():
    return {t: JEEnv(t) for t in AVAILABLE}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(task=st.sampled_from(AVAILABLE), calls=st.lists(_call, min_size=1, max_size=12))
def test_random_tool_calls_never_raise_and_never_change_the_world(fuzz_envs, task, calls):
    env = fuzz_envs[task]
    env.reset(seed=0)
    before = world_hash(env.world)
    for tool, args in calls:
        if env.done:
            break
        obs, reward, terminated, truncated, info = env.step(Action(tool, args))
        json.loads(obs)
        assert isinstance(info["is_error"], bool)
    assert world_hash(env.world) == before == env.world.world_hash


def test_compute_stats_robust_z_is_median_mad_within_each_group():
    import numpy as np

    from jeval_ray.tools._tools import _robust_z

    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0, 10.0, 10.0, 10.0])
    keys = np.array(["a"] * 5 + ["b"] * 3)
    z = _robust_z(x, keys)
    # group a: median 3, MAD 1 -> scale 1.4826; group b has no spread -> 0
    assert z[4] == pytest.approx(97 / 1.4826)
    assert z[0] == pytest.approx(-2 / 1.4826)
    assert list(z[5:]) == [0.0, 0.0, 0.0]


def test_compute_stats_answers_tiny_populations_with_a_message_not_a_number():
    env = JEEnv("JE-12")
    env.reset(seed=0)
    obs, info = _obs(env, "compute_stats", filters=[{"column": "entry_id", "op": "eq", "value": env.world.entry_ids[0]}])
    assert not info["is_error"] and "too small" in obs["message"]
    obs, _ = _obs(env, "compute_stats", group_by="account", robust=True, top_z=3)
    assert obs["z_method"].startswith("robust") and len(obs["top_z_scores"]) == 3
    assert all("account" in r for r in obs["top_z_scores"])


def test_an_episode_over_its_deadline_ends_as_a_failed_timeout_and_keeps_its_steps():
    import asyncio

    from jeval_ray.episode import play_episode
    from jeval_ray.sweep.agents import SleepAgent

    env = JEEnv("JE-1")
    out = asyncio.run(play_episode(env, SleepAgent(latency_ms=40, steps=50), 0, timeout_s=0.3))
    assert out.status == "failed" and out.termination.startswith("timeout: episode exceeded")
    assert out.error == out.termination
    assert 2 <= len(out.steps) < 50  # it played until the deadline, then stopped
    assert out.wall_s < 1.0
    quick = asyncio.run(play_episode(JEEnv("JE-1"), SleepAgent(latency_ms=1, steps=2), 0, timeout_s=5))
    assert quick.status == "completed" and quick.termination == "submitted"


def test_query_ledger_compares_date_columns_with_iso_text():
    env = JEEnv("JE-9")
    env.reset(seed=0)
    obs, *_rest, info = env.step(Action("query_ledger", {"filters": [{"column": "posting_date", "op": "ge",
                                                                       "value": "2025-12-24"}], "limit": 500}))
    rows = json.loads(obs)["rows"]
    assert not info["is_error"] and rows and all(r["posting_date"] >= "2025-12-24" for r in rows)
