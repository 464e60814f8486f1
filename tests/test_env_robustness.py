"""Bad input never crashes an episode: whatever an agent sends, ``step`` answers with an observation."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jeval_ray.agents import Action
from jeval_ray.env import JEEnv
from jeval_ray.env._env import MAX_ARGS_CHARS, MAX_ARGS_DEPTH
from jeval_ray.tasks import get_task

TASK = "JE-16"  # every tool but get_balances' siblings: the widest tool set
TOOLS = [t for t in get_task(TASK).tools if t != "submit"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30,
)
# arguments shaped like the tools' own (right names, wrong or odd values), and anything at all
shaped = st.fixed_dictionaries({}, optional={
    "entry_id": st.text(max_size=24) | st.integers(), "doc_id": st.text(max_size=24), "query": st.text(max_size=30),
    "table": st.text(max_size=20), "filters": json_values, "columns": json_values, "limit": json_values,
    "offset": json_values, "criteria": st.text(max_size=20), "evidence": json_values, "rationale": st.text(max_size=50),
    "amount": json_values, "measure": json_values, "group_by": json_values, "digits": json_values, "account": json_values,
})
arguments = shaped | json_values | st.text(max_size=200)


def _env() -> JEEnv:
    env = JEEnv(TASK, step_budget=10**6)
    env.reset(seed=0)
    return env


ENV = _env()


def _check(text: str, info: dict) -> None:
    payload = json.loads(text)
    assert isinstance(payload, dict)
    assert info["is_error"] == ("error" in payload)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(TOOLS) | st.text(max_size=20), args=arguments)
def test_any_tool_call_gets_an_observation_never_an_exception(tool, args):
    text, reward, terminated, truncated, info = ENV.step(Action(tool, args))
    _check(text, info)


@settings(max_examples=60, deadline=None)
@given(tool=st.sampled_from(TOOLS), depth=st.integers(MAX_ARGS_DEPTH + 1, 3_000), opener=st.sampled_from("[{"))
def test_deeply_nested_argument_text_is_an_error_observation(tool, depth, opener):
    raw = opener * depth if opener == "[" else '{"a":' * depth
    text, *_rest, info = ENV.step(Action(tool, raw))
    assert info["is_error"] and "nested too deeply" in json.loads(text)["error"]


def test_deeply_nested_argument_objects_and_huge_arguments_are_error_observations():
    nested: dict = {}
    cur = nested
    for _ in range(10_000):
        cur["a"] = {}
        cur = cur["a"]
    text, *_rest, info = ENV.step(Action("query_ledger", nested))
    assert info["is_error"] and "nested too deeply" in text
    text, *_rest, info = ENV.step(Action("search_documents", json.dumps({"query": "x" * (MAX_ARGS_CHARS + 1)})))
    assert info["is_error"] and "too long" in text


def test_a_blank_search_query_is_an_error_observation():
    text, *_rest, info = ENV.step(Action("search_documents", {"query": "   \t "}))
    assert info["is_error"] and "no words" in text


def test_odd_entry_ids_are_not_taken_for_journal_ids():
    real = ENV.world.ledger.column("entry_id")[0].as_py()
    for odd in ("0" + real, real.translate(str.maketrans("0123456789", "０１２３４５６７８９")), f" {real}x", "+" + real):
        text, *_rest, info = ENV.step(Action("flag_entry", {"entry_id": odd, "criteria": "UNBALANCED", "evidence": [],
                                                             "rationale": "x"}))
        assert info["is_error"], odd
    text, *_rest, info = ENV.step(Action("clear_entry", {"entry_id": real, "evidence": [], "rationale": "fine"}))
    assert not info["is_error"]


def test_an_empty_master_table_lists_no_rows():
    """A world whose year has no vendor changes (JE-3, seed 0) has an empty ``vendor_changes`` table: the tool says
    total 0 and lists no rows (not a page of empty objects)."""
    env = JEEnv("JE-3")
    env.reset(seed=0)
    assert env.world.master["vendor_changes"].num_rows == 0
    text, *_rest, info = env.step(Action("get_master_data", {"table": "vendor_changes"}))
    payload = json.loads(text)
    assert not info["is_error"] and payload["total"] == 0 and payload["rows"] == [] and "next_offset" not in payload
