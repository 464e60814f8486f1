"""Model quirks, each a fault mode of the test server, played through a whole episode over real loopback HTTP:
a tool call cut off at max_tokens, empty replies, refusals, reasoning-only replies, too many calls in one reply;
and the per-episode budget, which ends an episode the same way."""

from __future__ import annotations

import asyncio

import pytest

from jeval_ray.agents.llm import CUT_MARK, MAX_IDLE_REPLIES, LLMAgent
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.models import ModelConfig
from jeval_ray.testserver import MANY_TOOL_CALLS, BrainRequest, LocalModelServer, ScriptedBrain

WHOLE = {"max_observation_chars": 1_000_000, "context_window": 10_000_000}


class Recording(ScriptedBrain):
    """The default script (list documents, then submit), keeping every request."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[BrainRequest] = []

    def __call__(self, request: BrainRequest):
        self.seen.append(request)
        return super().__call__(request)


def _play(faults: dict[str, int], provider: str = "openai", step_budget: int | None = None):
    with LocalModelServer(Recording()) as srv:
        for kind, n in faults.items():
            srv.faults.queue(kind, n)
        cfg = ModelConfig(name="q", provider=provider, model="q", base_url=srv.url, max_attempts=2, timeout_s=5,
                          max_tokens=512, **WHOLE)
        outcome = asyncio.run(play_episode(JEEnv("JE-1", step_budget=step_budget), LLMAgent(cfg), 0))
        return outcome, srv.brain.seen


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_call_cut_off_at_max_tokens_is_not_run_and_its_observation_says_why(provider):
    outcome, seen = _play({"length_in_tool_call": 1}, provider)
    first = outcome.steps[0]
    assert first.is_error and first.tool == "list_documents" and first.args.startswith(CUT_MARK.strip()[:10])
    tool_message = next(m for m in seen[1].messages if m["role"] == "tool")
    assert "reached max_tokens (512)" in tool_message["content"] and "not run" in tool_message["content"]
    assert outcome.termination == "submitted"  # the model recovers on its next reply


@pytest.mark.parametrize("kind, label", [("empty_reply", "empty reply"), ("reasoning_only", "reasoning only")])
def test_replies_without_a_tool_call_are_error_steps_and_named_to_the_model_then_stop_the_episode(kind, label):
    once, seen = _play({kind: 1})
    assert once.steps[0].tool == "" and once.steps[0].is_error and once.termination == "submitted"
    reminder = seen[1].messages[-1]
    assert reminder["role"] == "user" and reminder["content"].startswith("Your last reply was empty" if kind ==
                                                                         "empty_reply" else "Your last reply held reasoning only")
    if kind == "reasoning_only":
        assert once.steps[0].reasoning_trace  # the reasoning is kept on the step
    stuck, _ = _play({kind: MAX_IDLE_REPLIES})
    assert stuck.termination == f"no_tool_call: {MAX_IDLE_REPLIES} replies in a row without a tool call (last: {label})"
    assert stuck.status == "completed" and len(stuck.steps) == MAX_IDLE_REPLIES - 1
    assert all(s.is_error for s in stuck.steps) and stuck.tokens_in > 0  # the replies' tokens are still counted


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refusal_ends_the_episode_with_a_clear_stop_reason(provider):
    outcome, seen = _play({"refusal": 1}, provider)
    assert outcome.termination.startswith("refusal: I'm sorry") and outcome.steps == [] and len(seen) == 1
    assert outcome.status == "completed" and outcome.tokens_in > 0


def test_more_tool_calls_in_one_reply_than_the_budget_leaves_end_at_the_budget_unrun():
    outcome, seen = _play({"many_tool_calls": 1}, step_budget=5)
    assert outcome.termination == "step_budget" and len(outcome.steps) == 5 < MANY_TOOL_CALLS
    assert len(seen) == 1  # no request after the budget: the other calls were never run
    assert {s.tool for s in outcome.steps} == {"list_documents"} and not any(s.is_error for s in outcome.steps)


def test_an_episode_budget_ends_the_episode_before_a_call_could_pass_it():
    # output dominates: a call's worst case is 512 x 1000 / 1e6 = 0.512 USD plus its prompt at 1 USD/Mtok
    price = {"input_per_mtok": 1.0, "output_per_mtok": 1000.0}
    with LocalModelServer(ScriptedBrain()) as srv:
        cfg = ModelConfig(name="b", model="b", base_url=srv.url, price=price, max_tokens=512, episode_budget_usd=0.52,
                          **WHOLE)
        outcome = asyncio.run(play_episode(JEEnv("JE-1"), LLMAgent(cfg), 0))
        calls = len(srv.requests)
    # the first call (worst 0.512 + under 0.008 for its prompt) fits; the second's worst on top of it would not
    assert outcome.steps[0].tokens_in < 8000 and calls == 1
    assert outcome.termination.startswith("budget: episode_budget_usd=0.52 would be passed by the next call")
    assert 0 < outcome.cost_usd <= 0.52 and outcome.status == "completed"
