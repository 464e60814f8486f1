"""Context management (issue 27, point 5) and the agent-side cut as a counted safety net (point 1),
played through the local test server with the careful brain."""

from __future__ import annotations

import asyncio
import json

import pytest

from jeval_ray.agents.llm import ELIDED_STUB, KEEP_RESULTS, LLMAgent
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.models import ModelConfig
from jeval_ray.protocol import Observation
from jeval_ray.records import EpisodeKeys, steps_table
from jeval_ray.tasks import TASK_IDS
from jeval_ray.testserver import Faults, LocalModelServer, ScriptedBrain, builtin_brain

STUB_HEAD = ELIDED_STUB.split("(")[0]


def careful_config(server: LocalModelServer, **overrides) -> ModelConfig:
    return ModelConfig(**{"name": "careful-http", "model": "careful", "base_url": server.url, "max_attempts": 2,
                          "backoff_base_s": 0.01, "timeout_s": 30.0, **overrides})


async def play_all(server: LocalModelServer, runs: list[tuple[str, int, dict]]):
    """Play ``(task, seed, config overrides)`` episodes concurrently; their (outcome, agent) pairs."""
    async def one(task: str, seed: int, overrides: dict):
        agent = LLMAgent(careful_config(server, **overrides))
        return await play_episode(JEEnv(task), agent, seed), agent

    return await asyncio.gather(*(one(*run) for run in runs))


@pytest.fixture(scope="module")
def careful_server():
    with LocalModelServer(builtin_brain("careful")) as server:
        yield server


def test_the_agent_side_cut_is_counted():
    with LocalModelServer(ScriptedBrain()) as server:
        agent = LLMAgent(ModelConfig(name="m", model="m", base_url=server.url, max_attempts=1), max_observation_chars=500)
        agent.reset("Brief.", [{"type": "function", "function": {"name": "query_ledger", "parameters": {}}}], seed=0)

        async def episode():
            await agent.act([])
            return await agent.act([Observation("c1", "query_ledger", "x" * 5000, False),
                                    Observation("c2", "query_ledger", "short", False)])

        turn = asyncio.run(episode())
    assert turn.observations_cut == 1 and agent.observations_cut == 1


def test_careful_through_the_server_is_never_cut_on_any_task(careful_server):
    """At the LLM agent's defaults (20,000 characters) the environment pages every result: the cut fires 0 times."""
    played = asyncio.run(play_all(careful_server, [(task, 0, {}) for task in TASK_IDS]))
    for outcome, agent in played:
        assert agent.max_observation_chars == 20_000
        assert agent.observations_cut == 0, outcome.task_id
        assert sum(s.observations_cut or 0 for s in outcome.steps) == 0
        assert max(len(s.observation) for s in outcome.steps) <= 20_000
        assert outcome.status == "completed", (outcome.task_id, outcome.termination)
        # the careful brain makes parallel tool calls: fewer requests than calls, and it still solves the task
        requests = sum(bool(s.tokens_in) for s in outcome.steps)  # a reply's counts land on its first step
        assert requests < len(outcome.steps), outcome.task_id
        assert outcome.score.verification.outcome >= 0.95, outcome.task_id


def test_careful_in_a_32k_window_elides_and_still_solves(careful_server):
    played = asyncio.run(play_all(careful_server, [("JE-9", 0, {"context_window": 32_768}),
                                                   ("JE-16", 0, {"context_window": 32_768})]))
    # JE-16's careful needs more than 32k (its largest request is about 42k): it must elide; JE-9's fits
    assert dict((o.task_id, a.results_elided > 0) for o, a in played)["JE-16"]
    for outcome, agent in played:
        assert outcome.termination == "submitted"
        assert outcome.score.verification.outcome >= 0.95, outcome.task_id
        if not agent.results_elided:
            continue
        elided = [s.elided for s in outcome.steps if s.elided]
        assert sum(elided) == agent.results_elided > 0
        assert len(elided) < agent.results_elided  # in chunks, not one result per turn
        table = steps_table(EpisodeKeys("r", "e", 1, outcome.task_id, "m", 0, "full"), outcome)
        assert sum(table.column("elided_results").to_pylist()) == agent.results_elided
        assert set(table.column("observations_cut").to_pylist()) == {0}
        # kept: the brief, the kickoff, every call the model made, the dispositions' results
        assert agent.messages[0]["role"] == "system" and "JE-" in agent.messages[0]["content"]
        calls = {c["id"]: c["function"] for m in agent.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        stubs = 0
        for m in agent.messages:
            if m["role"] != "tool":
                continue
            fn = calls[m["tool_call_id"]]
            if m["content"].startswith(STUB_HEAD):
                stubs += 1
                assert fn["name"] not in KEEP_RESULTS and "\n" not in m["content"]
                assert f"call {fn['name']} with {fn['arguments']}" in m["content"]
            elif fn["name"] in KEEP_RESULTS:
                assert json.loads(m["content"])["ok"]
        assert stubs == agent.results_elided


def test_the_stop_strategy_ends_the_episode_at_the_window(careful_server):
    [(outcome, agent)] = asyncio.run(play_all(careful_server, [("JE-16", 0, {"context_window": 32_768,
                                                                              "context_strategy": "stop"})]))
    assert outcome.termination == "context_overflow" and agent.results_elided == 0


def test_a_context_length_rejection_elides_once_and_retries():
    """The model's real window (the server's) is smaller than the agent believes: each 400 context_length_exceeded
    gets one elision and one retry, never a model_error."""
    with LocalModelServer(builtin_brain("careful"), Faults(context_window=32_000)) as server:
        [(outcome, agent)] = asyncio.run(play_all(server, [("JE-16", 0, {})]))
        rejected = [r for r in server.requests if r.status == 400]
    assert outcome.termination == "submitted" and outcome.score.verification.outcome >= 0.95
    assert rejected and agent.results_elided > 0
    assert sum(1 for s in outcome.steps if s.elided) == len(rejected)


def test_a_rejection_with_nothing_to_elide_is_a_model_error():
    with LocalModelServer(builtin_brain("careful"), Faults(context_window=100)) as server:
        [(outcome, agent)] = asyncio.run(play_all(server, [("JE-1", 0, {})]))
    assert outcome.termination.startswith("model_error: ContextLengthError: HTTP 400")
    assert "maximum context length is 100 tokens" in outcome.termination and "context_length_exceeded" in outcome.termination
