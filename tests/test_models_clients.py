"""The OpenAI-compatible and Anthropic clients and the LLM agent, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from jeval_ray.protocol import Observation
from jeval_ray.agents.llm import MISSING_RESULT, LLMAgent
from jeval_ray.models import (
    ClientRequestError,
    MalformedResponseError,
    MissingAPIKeyError,
    ModelConfig,
    ModelRequestError,
    RateLimitError,
    ServerError,
    make_client,
)
from jeval_ray.testserver import BrainReply, BrainRequest, Faults, LocalModelServer, ScriptedBrain, ToolCall

SECRET = "sk-test-SUPERSECRET-0042"
BRIEF = "You are an auditor. Test the journal entries."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_ledger",
            "description": "Query the ledger.",
            "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}, "offset": {"type": "integer"}}},
        },
    },
    {
        "type": "function",
        "function": {"name": "submit", "description": "Finish.", "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}}},
    },
]
MESSAGES = [{"role": "system", "content": BRIEF}, {"role": "user", "content": "Begin."}]

TWO_CALLS = BrainReply(
    text="Two things at once.",
    tool_calls=[ToolCall("query_ledger", {"limit": 5}, "c1"), ToolCall("submit", '{"summary": "raw text"}', "c2")],
    reasoning="I should look first.",
)


class RecordingBrain(ScriptedBrain):
    """A scripted brain that keeps every request it answers."""

    def __init__(self, script=None) -> None:
        super().__init__(script)
        self.seen: list[BrainRequest] = []

    def __call__(self, request: BrainRequest) -> BrainReply:
        self.seen.append(request)
        return super().__call__(request)


@pytest.fixture
def server():
    with LocalModelServer(RecordingBrain([TWO_CALLS]), Faults(retry_after_s=None, retry_after_ms=50, delay_s=1.0)) as srv:
        yield srv


def config(server: LocalModelServer, **overrides) -> ModelConfig:
    base = dict(
        name="local", model="test-model", base_url=server.url, max_attempts=3, backoff_base_s=0.02,
        backoff_max_s=0.1, timeout_s=5.0, price={"input_per_mtok": 2.0, "output_per_mtok": 8.0},
    )
    base.update(overrides)
    return ModelConfig(**base)


async def one_call(cfg: ModelConfig, messages=MESSAGES, tools=TOOLS, seed: int | None = 7):
    client = make_client(cfg)
    try:
        return await client.chat(messages, tools, seed=seed)
    finally:
        await client.aclose()


# -- OpenAI-compatible ---------------------------------------------------------------------------


def test_openai_reply_becomes_actions_with_usage_cost_and_reasoning(server):
    result = asyncio.run(one_call(config(server)))
    assert [(a.tool, a.args, a.call_id) for a in result.actions] == [
        ("query_ledger", '{"limit": 5}', "c1"),
        ("submit", '{"summary": "raw text"}', "c2"),
    ]
    assert result.text == "Two things at once." and result.reasoning_trace == "I should look first."
    assert result.finish_reason == "tool_calls" and result.attempts == 1
    assert result.tokens_in > 0 and result.tokens_out > 0 and result.latency_ms > 0
    assert result.cost_usd == pytest.approx((result.tokens_in * 2.0 + result.tokens_out * 8.0) / 1e6)
    sent = server.brain.seen[-1]
    assert sent.system == BRIEF and [t["function"]["name"] for t in sent.tools] == ["query_ledger", "submit"]


def test_seed_is_forwarded_only_when_send_seed(server):
    asyncio.run(one_call(config(server), seed=11))
    asyncio.run(one_call(config(server, send_seed=False), seed=11))
    assert [r.seed for r in server.requests] == [11, None]


def test_bad_tool_arguments_and_unknown_tools_reach_the_caller_verbatim(server):
    server.faults.queue("bad_tool_args")
    server.faults.queue("unknown_tool")
    bad = asyncio.run(one_call(config(server)))
    unknown = asyncio.run(one_call(config(server)))
    with pytest.raises(ValueError):
        json.loads(bad.actions[0].args)
    assert unknown.actions[0].tool == "no_such_tool"


# -- faults: survived, or a typed error after bounded retries --------------------------------------


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "drop", "malformed_json"])
def test_transient_faults_are_survived(server, kind):
    server.faults.queue(kind, 2)
    result = asyncio.run(one_call(config(server)))
    assert result.attempts == 3 and len(result.actions) == 2
    assert [r.fault for r in server.requests] == [kind, kind, None]


def test_a_slow_answer_times_out_and_is_retried(server):
    server.faults.queue("slow")
    result = asyncio.run(one_call(config(server, timeout_s=0.3)))
    assert result.attempts == 2


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("rate_limit", RateLimitError),
        ("server_error", ServerError),
        ("drop", ModelRequestError),
        ("malformed_json", MalformedResponseError),
        ("slow", ModelRequestError),
    ],
)
def test_persistent_faults_end_in_a_typed_error_not_a_hang(server, kind, error):
    server.faults.set_probability(kind, 1.0)
    started = time.monotonic()
    with pytest.raises(error) as info:
        asyncio.run(one_call(config(server, timeout_s=0.15)))
    assert time.monotonic() - started < 3.0
    assert info.value.attempts == 3 and len(server.requests) == 3
    assert "after 3 attempts" in str(info.value)


@pytest.mark.parametrize(("kind", "status"), [("bad_request", 400), ("unauthorized", 401)])
def test_client_errors_fail_at_once(server, kind, status):
    server.faults.set_probability(kind, 1.0)
    with pytest.raises(ClientRequestError) as info:
        asyncio.run(one_call(config(server)))
    assert info.value.status == status and len(server.requests) == 1


def test_no_request_is_sent_before_retry_after_seconds(server):
    server.faults.retry_after_ms = None
    server.faults.retry_after_s = 1
    server.faults.queue("rate_limit")
    result = asyncio.run(one_call(config(server)))
    first, second = server.requests
    assert result.attempts == 2 and first.retry_after_s == 1.0
    assert second.arrived >= first.answered + 1.0
    assert server.retry_after_violations() == []


def test_no_request_is_sent_before_retry_after_ms(server):
    server.faults.retry_after_ms = 300
    server.faults.queue("rate_limit", 2)
    asyncio.run(one_call(config(server)))
    log = server.requests
    assert [r.status for r in log] == [429, 429, 200]
    assert all(b.arrived >= a.answered + 0.3 for a, b in zip(log, log[1:]))


# -- the key never leaks ---------------------------------------------------------------------------


def test_the_api_key_never_appears_in_errors_or_logs(monkeypatch, caplog):
    monkeypatch.setenv("JEVAL_TEST_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    with LocalModelServer(api_key="a-different-key", faults=Faults(retry_after_s=None, retry_after_ms=20)) as srv:
        cfg = config(srv, api_key_env="JEVAL_TEST_SECRET")
        with pytest.raises(ClientRequestError) as info:
            asyncio.run(one_call(cfg))  # the server's 401 echoes the key it received
        assert "[REDACTED]" in str(info.value)
        srv.api_key = SECRET
        srv.faults.queue("server_error")
        srv.faults.queue("rate_limit")
        assert asyncio.run(one_call(cfg)).attempts == 3
        srv.api_key = "rotated"
        agent = LLMAgent(cfg)
        agent.reset(BRIEF, TOOLS, seed=1)
        turn = asyncio.run(agent.act([]))
    assert turn.stop_reason.startswith("model_error: ClientRequestError")
    assert "retrying" in caplog.text  # the retries were logged...
    for text in (str(info.value), turn.stop_reason, caplog.text):
        assert SECRET not in text  # ...without the key


def test_a_missing_key_is_reported_by_variable_name(monkeypatch, server):
    monkeypatch.delenv("JEVAL_UNSET_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="JEVAL_UNSET_KEY"):
        make_client(config(server, api_key_env="JEVAL_UNSET_KEY"))


# -- Anthropic -------------------------------------------------------------------------------------


def test_anthropic_client_speaks_the_messages_api(monkeypatch):
    monkeypatch.setenv("JEVAL_TEST_SECRET", SECRET)
    brain = RecordingBrain([TWO_CALLS])
    with LocalModelServer(brain, api_key=SECRET) as srv:
        cfg = config(srv, provider="anthropic", api_key_env="JEVAL_TEST_SECRET")
        first = asyncio.run(one_call(cfg))
        history = MESSAGES + [
            first.assistant_message,
            {"role": "tool", "tool_call_id": "c1", "content": "3 rows"},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: not yet"},
        ]
        second = asyncio.run(one_call(cfg, messages=history))
        log = srv.requests
    assert [r.path for r in log] == ["/v1/messages", "/v1/messages"]
    assert log[0].headers["anthropic-version"] == "2023-06-01"
    assert [(a.tool, json.loads(a.args), a.call_id) for a in first.actions] == [
        ("query_ledger", {"limit": 5}, "c1"),
        ("submit", {"summary": "raw text"}, "c2"),
    ]
    assert first.reasoning_trace == "I should look first." and first.finish_reason == "tool_use"
    assert first.tokens_in > 0 and first.cost_usd > 0
    assert brain.seen[0].system == BRIEF  # top-level system, not a message
    assert [t["function"]["name"] for t in brain.seen[0].tools] == ["query_ledger", "submit"]
    results = [m for m in brain.seen[1].messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [("c1", "3 rows"), ("c2", "Error: not yet")]
    assert second.attempts == 1


def test_anthropic_client_retries_like_the_openai_one():
    with LocalModelServer(RecordingBrain([TWO_CALLS]), Faults(retry_after_s=None, retry_after_ms=30)) as srv:
        srv.faults.queue("rate_limit")
        srv.faults.queue("drop")
        result = asyncio.run(one_call(config(srv, provider="anthropic")))
    assert result.attempts == 3 and len(result.actions) == 2


# -- the LLM agent ---------------------------------------------------------------------------------


def test_llm_agent_plays_turns_and_returns_observations_as_tool_messages(server):
    server.brain.script = [TWO_CALLS, BrainReply(text="Thinking aloud, no call."), BrainReply(tool_calls=[ToolCall("submit", {}, "c9")])]
    agent = LLMAgent(config(server))
    agent.reset(BRIEF, TOOLS, seed=3)

    async def episode():
        first = await agent.act([])
        second = await agent.act(
            [Observation("c1", "query_ledger", "3 rows", False), Observation("c2", "submit", "Error: too early", True)]
        )
        third = await agent.act([Observation(None, "", "Reminder: call a tool.", False)])
        await agent.aclose()
        return first, second, third

    first, second, third = asyncio.run(episode())
    assert [a.tool for a in first.actions] == ["query_ledger", "submit"] and first.actions[0].call_id == "c1"
    assert first.tokens_in > 0 and first.cost_usd > 0 and first.reasoning_trace == "I should look first."
    assert second.actions == [] and second.text == "Thinking aloud, no call." and second.stop_reason is None
    assert [a.tool for a in third.actions] == ["submit"]
    seen = server.brain.seen
    assert seen[0].seed == 3 and seen[0].messages[0]["role"] == "user"
    assert [(m["role"], m.get("tool_call_id")) for m in seen[1].messages[-2:]] == [("tool", "c1"), ("tool", "c2")]
    assert seen[2].messages[-1] == {"role": "user", "content": "Reminder: call a tool."}


def test_llm_agent_truncates_long_observations_with_paging_advice(server):
    agent = LLMAgent(config(server), max_observation_chars=500)
    agent.reset(BRIEF, TOOLS, seed=0)

    async def episode():
        await agent.act([])
        await agent.act([Observation("c1", "query_ledger", "x" * 5000, False), Observation("c2", "submit", "ok", False)])

    asyncio.run(episode())
    tool_message = server.brain.seen[1].messages[-2]
    assert tool_message["content"].startswith("x" * 500) and "x" * 501 not in tool_message["content"]
    assert "truncated" in tool_message["content"] and "`offset`" in tool_message["content"]


def test_llm_agent_answers_calls_the_loop_did_not_run(server):
    agent = LLMAgent(config(server))
    agent.reset(BRIEF, TOOLS, seed=0)

    async def episode():
        await agent.act([])
        await agent.act([Observation("c1", "query_ledger", "3 rows", False)])

    asyncio.run(episode())
    last = server.brain.seen[1].messages[-1]
    assert last == {"role": "tool", "tool_call_id": "c2", "content": MISSING_RESULT}


def test_llm_agent_stops_before_overflowing_its_context(server):
    agent = LLMAgent(config(server, max_tokens=100), context_window=1200)
    agent.reset(BRIEF + " " + "policy text " * 600, TOOLS, seed=0)
    turn = asyncio.run(agent.act([]))
    assert turn.stop_reason == "context_overflow" and turn.actions == []
    assert server.requests == []


def test_llm_agent_reports_a_final_model_failure_as_a_stop_reason(server):
    server.faults.set_probability("server_error", 1.0)
    agent = LLMAgent(config(server))
    agent.reset(BRIEF, TOOLS, seed=0)
    turn = asyncio.run(agent.act([]))
    assert turn.stop_reason.startswith("model_error: ServerError: HTTP 503")
    assert "after 3 attempts" in turn.stop_reason and turn.latency_ms > 0
