"""Reasoning models as first-class config: OpenAI-compatible reasoning_effort, Anthropic thinking budgets, the
temperature and token rules each provider enforces, and reasoning tokens per step (real loopback HTTP)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import tiny_config
from pydantic import ValidationError

from jeval_ray.agents.llm import LLMAgent
from jeval_ray.errors import ConfigError
from jeval_ray.models import ModelConfig
from jeval_ray.sweep import validate_config
from jeval_ray.testserver import BrainReply, LocalModelServer, ScriptedBrain, ToolCall

TOOLS = [{"type": "function", "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}}]
THOUGHTFUL = BrainReply(tool_calls=[ToolCall("submit", {}, "c1")], reasoning="Let me weigh the evidence first. " * 10)


def _turn(cfg: ModelConfig):
    agent = LLMAgent(cfg)
    agent.reset("Audit.", TOOLS, seed=4)

    async def go():
        try:
            return await agent.act([])
        finally:
            await agent.aclose()
    return asyncio.run(go())


def test_openai_reasoning_sends_the_effort_no_temperature_and_records_reasoning_tokens():
    with LocalModelServer(ScriptedBrain([THOUGHTFUL])) as srv:
        cfg = ModelConfig(name="o", model="o4-mini", base_url=srv.url, reasoning_effort="high", max_tokens=8000)
        turn = _turn(cfg)
        (req,) = srv.requests
    assert req.params["reasoning_effort"] == "high" and "temperature" not in req.params and "top_p" not in req.params
    assert req.params["max_completion_tokens"] == 8000 and "max_tokens" not in req.params
    assert 0 < turn.tokens_reasoning < turn.tokens_out and turn.reasoning_trace.startswith("Let me weigh")
    plain = ModelConfig(name="p", model="gpt", base_url="http://127.0.0.1:9/v1")
    assert plain.temperature == 0.0 and plain.max_tokens_param == "max_tokens"  # nothing changes without reasoning


def test_anthropic_thinking_sends_the_budget_omits_temperature_and_keeps_max_tokens_above_it():
    with LocalModelServer(ScriptedBrain([THOUGHTFUL])) as srv:
        cfg = ModelConfig(name="c", provider="anthropic", model="claude", base_url=srv.url, thinking_budget_tokens=2048)
        turn = _turn(cfg)
        (req,) = srv.requests
    assert req.params["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in req.params
    assert req.params["max_tokens"] == 2048 + 4096 and turn.tokens_reasoning is None  # folded into output_tokens
    assert turn.reasoning_trace.startswith("Let me weigh")


@pytest.mark.parametrize("fields, field, fix", [
    ({"reasoning_effort": "low", "temperature": 0.2}, "temperature", "remove temperature"),
    ({"reasoning_effort": "low", "top_p": 0.9}, "top_p", "remove top_p"),
    ({"reasoning_effort": "low", "provider": "anthropic"}, "reasoning_effort", "thinking_budget_tokens"),
    ({"thinking_budget_tokens": 2048, "provider": "anthropic", "temperature": 0.0}, "temperature", "remove temperature"),
    ({"thinking_budget_tokens": 4096, "provider": "anthropic", "max_tokens": 4096}, "max_tokens", "raise max_tokens"),
    ({"thinking_budget_tokens": 2048}, "thinking_budget_tokens", "reasoning_effort"),
    ({"thinking_budget_tokens": 2048, "provider": "anthropic", "extra_body": {"thinking": {}}}, "extra_body", "keep only"),
])
def test_a_config_breaking_the_provider_s_rules_is_an_error_naming_the_field_and_the_fix(tmp_path, fields, field, fix):
    entry = {"name": "r", "model": "m", "base_url": "http://127.0.0.1:9/v1", **fields}
    with pytest.raises(ValidationError, match=field):
        ModelConfig(**entry)
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config(tmp_path, models=[{**entry, "provider": fields.get("provider", "openai")}]))
    assert f"field 'models[0].{field}'" in str(err.value) and fix in str(err.value).split("Fix:")[1]
