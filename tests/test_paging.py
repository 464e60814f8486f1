"""Paging (issue 27, point 1): the environment fits every tool result to the agent's character budget
as valid JSON that says how to get the rest; following ``next_offset`` gives the whole result."""

from __future__ import annotations

import asyncio
import json

import pytest

from jeval_ray.agents import make_agent
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.errors import ConfigError
from jeval_ray.tools import MIN_BUDGET, PAGE_FIELDS, TOOLS, fit_result
from jeval_ray.tools._tools import MASTER_TABLES

TASK = "JE-16"  # the task with every tool


@pytest.fixture(scope="module")
def world():
    env = JEEnv(TASK)
    env.reset(0)
    return env.world


def env_at(world, budget: int | None) -> JEEnv:
    env = JEEnv(TASK, step_budget=10_000)
    env.reset(0, world=world, max_observation_chars=budget)
    return env


def call(env: JEEnv, tool: str, **args) -> tuple[str, dict]:
    text, *_ = env.step({"tool": tool, "args": args})
    return text, json.loads(text)


def every_call(world) -> list[tuple[str, dict]]:
    """A call of every tool (and of every master table) at its largest, then an error and the dispositions."""
    longest = max(world.documents, key=lambda d: len(d.body)).doc_id
    entry = world.ledger.column("entry_id")[0].as_py()
    return [
        ("list_documents", {"limit": 200}),
        ("open_document", {"doc_id": longest}),
        ("search_documents", {"query": "e", "limit": 50}),
        ("query_ledger", {"limit": 500}),
        ("get_entry", {"entry_id": entry}),
        *[("get_master_data", {"table": t, "limit": 500}) for t in MASTER_TABLES],
        ("compute_stats", {"group_by": "account", "digits": "last_two", "top_z": 50}),
        ("compute_stats", {"group_by": "entry_id", "top_z": 50, "robust": True}),
        ("get_balances", {}),
        ("query_ledger", {"filters": [{"column": "no_such_column", "value": 1}]}),
        ("flag_entry", {"entry_id": entry, "criteria": "X", "evidence": [], "rationale": "r" * 3000}),
        ("clear_entry", {"entry_id": entry, "evidence": [entry], "rationale": "seen"}),
    ]


@pytest.mark.parametrize("budget", [MIN_BUDGET, 2_000, 20_000])
def test_every_tool_result_fits_the_budget_as_valid_json(world, budget):
    env = env_at(world, budget)
    tools_called, paged = set(), 0
    for tool, args in every_call(world):
        text, obs = call(env, tool, **args)
        assert len(text) <= budget, (tool, len(text))
        tools_called.add(tool)
        if obs.get("truncated"):
            assert "limit on one tool result" in obs["note"]
            if "page_field" in obs:
                paged += 1
                assert obs["page_field"] == PAGE_FIELDS[tool]
                assert obs["next_offset"] == obs["offset"] + obs["returned"] and obs["total"] >= obs["next_offset"]
                assert f"offset={obs['next_offset']}" in obs["note"]
    assert tools_called == set(TOOLS) - {"submit"}
    assert paged >= (2 if budget >= 20_000 else 5)


def test_results_within_the_budget_or_unpaged_are_unchanged(world):
    payload = {"rows": [{"a": 1}] * 10, "total": 10}
    assert fit_result("query_ledger", 0, payload, None) is payload
    assert fit_result("query_ledger", 0, payload, 10_000) is payload
    unpaged, paged = env_at(world, None), env_at(world, 10**9)
    for tool, args in every_call(world)[:8]:
        assert call(unpaged, tool, **args)[0] == call(paged, tool, **args)[0]


def follow(env: JEEnv, tool: str, args: dict, limit: int | None):
    """The pages of one call joined, following ``next_offset`` for the rest of ``limit``; and the page count."""
    _, obs = call(env, tool, **args)
    field = PAGE_FIELDS[tool]
    parts, got, pages = [obs[field]], len(obs[field]), 1
    while obs.get("truncated"):
        more = {**args, "offset": obs["next_offset"]}
        if limit is not None:
            more["limit"] = limit - got
        _, obs = call(env, tool, **more)
        parts.append(obs[field])
        got += len(obs[field])
        pages += 1
    if isinstance(parts[0], str):
        return "".join(parts), pages
    if isinstance(parts[0], dict):
        return {k: v for p in parts for k, v in p.items()}, pages
    return [x for p in parts for x in p], pages


def test_pages_join_to_the_whole_result(world):
    longest = max(world.documents, key=lambda d: len(d.body)).doc_id
    biggest_table = max(MASTER_TABLES, key=lambda t: world.master[t].num_rows)
    cases = [
        ("query_ledger", {"limit": 500}, 500),
        ("query_ledger", {"limit": 300, "offset": 250, "columns": ["entry_id", "debit", "description"]}, 300),
        ("list_documents", {"limit": 200}, 200),
        ("search_documents", {"query": "e", "limit": 50}, 50),
        ("get_master_data", {"table": biggest_table, "limit": 500}, 500),
        ("get_balances", {}, None),
        ("compute_stats", {"group_by": "entry_id", "top_z": 0}, 60),
        ("open_document", {"doc_id": longest}, None),
    ]
    unpaged = env_at(world, None)
    paged = env_at(world, 2_000)
    long = 0
    for tool, args, limit in cases:
        text, obs = call(unpaged, tool, **args)
        joined, pages = follow(paged, tool, args, limit)
        assert joined == obs[PAGE_FIELDS[tool]], tool
        assert (pages > 1) == (len(text) > 2_000), tool
        long += len(text) > 2_000
    assert long >= 6


def test_documents_page_by_characters_at_line_breaks(world):
    doc = max(world.documents, key=lambda d: len(d.body))
    env = env_at(world, 1_000)
    _, first = call(env, "open_document", doc_id=doc.doc_id)
    assert first["truncated"] and first["page_field"] == "body" and first["total"] == len(doc.body)
    assert first["body"] == doc.body[: first["next_offset"]]
    if "\n" in doc.body[first["next_offset"] // 2 : first["next_offset"]]:
        assert first["body"].endswith("\n")  # a window ends at a line break when one falls in its second half
    _, second = call(env, "open_document", doc_id=doc.doc_id, offset=first["next_offset"])
    assert second["offset"] == first["next_offset"] and doc.body[second["offset"] :].startswith(second["body"])
    assert doc.doc_id in env.state.opened


def test_a_result_nothing_pages_is_cut_generically():
    payload = {"entry_id": "1", "description": "x" * 5_000, "lines": [{"line_no": i, "debit": 1.0} for i in range(300)]}
    out = fit_result("get_entry", 0, payload, 1_000)
    assert len(json.dumps(out, separators=(",", ":"))) <= 1_000
    assert out["truncated"] and "narrow the call" in out["note"] and "next_offset" not in out


def test_reset_takes_the_budget(world):
    env = JEEnv(TASK)
    with pytest.raises(ConfigError):
        env.reset(0, world=world, max_observation_chars=0)
    env.reset(0, world=world, max_observation_chars=5_000)
    assert env.max_observation_chars == 5_000
    env.reset(0, world=world)
    assert env.max_observation_chars is None


def test_the_kit_follows_pages_transparently():
    """careful at 20,000 characters: the same dispositions as unpaged, more calls, no result over the budget."""
    plays = {}
    for budget in (None, 20_000):
        env = JEEnv("JE-6")
        plays[budget] = asyncio.run(play_episode(env, make_agent("careful", 0, max_observation_chars=budget), 0))
    whole, paged = plays[None], plays[20_000]
    assert [(d["entry_id"], d["decision"]) for d in paged.dispositions] == \
        [(d["entry_id"], d["decision"]) for d in whole.dispositions]
    assert paged.score.score == whole.score.score
    assert max(len(s.observation) for s in paged.steps) <= 20_000 < max(len(s.observation) for s in whole.steps)
    assert any('"truncated":true' in s.observation for s in paged.steps)
