"""Provider prompt caching, priced: cache breakpoints, cached and cache-write tokens, their prices and the
TPM limiter, against the test server's prefix cache over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json

import pytest

from jeval_ray.protocol import Observation
from jeval_ray.agents.llm import LLMAgent
from jeval_ray.episode import play_episode
from jeval_ray.env import JEEnv
from jeval_ray.models import ModelConfig, TokenBucketLimiter, make_client
from jeval_ray.models.config import Price
from jeval_ray.models.openai_compat import OpenAICompatClient
from jeval_ray.records.rows import EpisodeKeys, episode_row, steps_rows
from jeval_ray.testserver import BrainReply, LocalModelServer, ScriptedBrain, ToolCall, builtin_brain

BRIEF = "You are an auditor. Test the journal entries."
TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "A tool. " * 20,
                                           "parameters": {"type": "object", "properties": {}}}} for i in range(3)]
PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0, "cached_input_per_mtok": 0.3, "cache_write_per_mtok": 3.75}


def _cfg(server: LocalModelServer, **over) -> ModelConfig:
    return ModelConfig(**{"name": "m", "model": "m", "base_url": server.url, "max_attempts": 2, "timeout_s": 5,
                          "price": PRICE, **over})


def _three_turns(cfg: ModelConfig, limiter=None):
    """Three turns of one conversation: each request repeats the one before as its prefix."""
    agent = LLMAgent(cfg, limiter=limiter)
    agent.reset(BRIEF, TOOLS, seed=1)

    async def go():
        turns = [await agent.act([])]
        for _ in range(2):
            call = turns[-1].actions[0]
            turns.append(await agent.act([Observation(call.call_id, call.tool, "rows " * 50, False)]))
        await agent.aclose()
        return turns

    return asyncio.run(go()), agent


def _brain() -> ScriptedBrain:
    return ScriptedBrain([BrainReply(tool_calls=[ToolCall("tool_0", {}, f"call_{i}")]) for i in range(3)])


def test_the_price_bills_cache_reads_and_writes_at_their_own_prices():
    p = Price(**PRICE)
    assert p.cost(1000, 100, cached_in=600, cache_write=300) == pytest.approx(
        (100 * 3.0 + 600 * 0.3 + 300 * 3.75 + 100 * 15.0) / 1e6)
    assert Price(input_per_mtok=2.0).cost(1000, 0, cached_in=1000) == pytest.approx(2000 / 1e6)  # no cached price: input


def test_openai_compatible_cached_tokens_are_read_recorded_apart_and_priced():
    with LocalModelServer(_brain()) as srv:
        turns, _ = _three_turns(_cfg(srv))
        log = srv.requests
    assert [q.cache_markers for q in log] == [0, 0, 0]  # nothing to mark: the server caches on its own
    assert turns[0].tokens_cached_in == 0
    for t, q in zip(turns[1:], log[1:]):
        assert 0 < t.tokens_cached_in == q.cached_tokens < t.tokens_in and t.tokens_cache_write == 0
        assert t.cost_usd == pytest.approx(Price(**PRICE).cost(t.tokens_in, t.tokens_out, t.tokens_cached_in))
    assert turns[2].tokens_cached_in > turns[1].tokens_cached_in  # the shared prefix grows with the conversation


def test_deepseek_cache_hits_count_as_cached_input():
    with LocalModelServer() as srv:
        client = OpenAICompatClient(_cfg(srv))
    data = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 10, "prompt_cache_hit_tokens": 800,
                      "prompt_cache_miss_tokens": 100}}
    result = client._parse(data)
    assert (result.tokens_in, result.tokens_cached_in, result.tokens_cache_write) == (900, 800, 0)


def test_anthropic_requests_mark_breakpoints_and_cache_reads_are_priced_and_left_out_of_the_tpm():
    limiter = TokenBucketLimiter(tpm=10_000_000, clock=lambda: 0.0)
    with LocalModelServer(_brain()) as srv:
        turns, agent = _three_turns(_cfg(srv, provider="anthropic"), limiter=limiter)
        log = srv.requests
        srv.clear_log()
        plain, _ = _three_turns(_cfg(srv, provider="anthropic", prompt_caching=False))
        plain_log = srv.requests
    # system, last tool, latest turn; the agent's own history is never changed by the marking
    assert [q.cache_markers for q in log] == [3, 3, 3]
    assert "cache_control" not in json.dumps(agent.messages)
    assert turns[0].tokens_cached_in == 0 and turns[0].tokens_cache_write == turns[0].tokens_in
    for t in turns[1:]:
        assert 0 < t.tokens_cached_in < t.tokens_in and t.tokens_cached_in + t.tokens_cache_write == t.tokens_in
        assert t.cost_usd == pytest.approx(Price(**PRICE).cost(t.tokens_in, t.tokens_out, t.tokens_cached_in,
                                                               t.tokens_cache_write))
    # the limiter is charged what Anthropic counts against its input-token limit: cache reads left out
    charged = limiter._tokens.capacity - limiter._tokens.level
    assert charged == sum(t.tokens_in - t.tokens_cached_in + t.tokens_out for t in turns)
    # without breakpoints the provider caches nothing, and the same tokens cost more
    assert [q.cache_markers for q in plain_log] == [0, 0, 0] and {t.tokens_cached_in for t in plain} == {0}
    assert sum(t.cost_usd for t in plain) > sum(t.cost_usd for t in turns[1:])


def test_an_episode_records_cached_tokens_per_step_and_in_total():
    with LocalModelServer(builtin_brain("careful")) as srv:
        env = JEEnv("JE-1")
        agent = LLMAgent(_cfg(srv, model="careful"))
        outcome = asyncio.run(play_episode(env, agent, 0))
    keys = EpisodeKeys("r", "e", 1, "JE-1", "m", 0, "full")
    steps = steps_rows(keys, outcome)
    row = episode_row(keys, outcome, agent="openai:careful", tier="L1", run_config_json="", judge_agg={},
                      final_score=None)
    assert outcome.termination == "submitted" and row["tokens_cached_in"] > 0
    assert row["tokens_cached_in"] == sum(s["tokens_cached_in"] for s in steps) < row["tokens_in"]
    assert row["tokens_cache_write"] == 0 and all(s["tokens_cached_in"] is not None for s in steps)
