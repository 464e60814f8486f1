"""The retry schedule, Retry-After parsing, error typing and ModelConfig, without a server."""

from __future__ import annotations

import asyncio
import random
from email.utils import formatdate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jeval_ray.errors import ConfigError
from jeval_ray.models import (
    ClientRequestError,
    MalformedResponseError,
    MissingAPIKeyError,
    ModelConfig,
    ModelHTTPError,
    ModelRequestError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    call_with_retries,
    parse_retry_after,
)
from jeval_ray.models.errors import http_error, redact


class FakeSleep:
    """Records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def failing(errors: list[Exception], result: str = "ok"):
    """An attempt function raising ``errors`` in order, then returning ``result``."""
    calls: list[int] = []

    async def attempt(n: int) -> str:
        calls.append(n)
        if errors:
            raise errors.pop(0)
        return result

    return attempt, calls


def run_retries(attempt, policy: RetryPolicy, seed: int = 0):
    sleep = FakeSleep()
    result = asyncio.run(call_with_retries(attempt, policy, sleep=sleep, rng=random.Random(seed)))
    return result, sleep.waits


def test_backoff_is_full_jitter_under_an_exponential_cap():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(1)
    for retry in range(1, 8):
        cap = min(8.0, 2 ** (retry - 1))
        draws = [policy.backoff_s(retry, rng) for _ in range(200)]
        assert all(0.0 <= d <= cap for d in draws)
        # Full jitter spreads over the whole range, not just near the cap.
        assert min(draws) < cap * 0.2 and max(draws) > cap * 0.8


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), attempts=st.integers(1, 8), budget=st.floats(0, 20))
def test_waits_never_exceed_the_total_budget_nor_the_attempts(seed, attempts, budget):
    policy = RetryPolicy(max_attempts=attempts, max_total_wait_s=budget, base_delay_s=0.5, max_delay_s=4.0)
    attempt, calls = failing([ServerError("boom", 503) for _ in range(20)])
    sleep = FakeSleep()
    with pytest.raises(ServerError):
        asyncio.run(call_with_retries(attempt, policy, sleep=sleep, rng=random.Random(seed)))
    assert len(calls) <= attempts
    assert sum(sleep.waits) <= budget + 1e-9
    assert len(sleep.waits) == len(calls) - 1


def test_transient_errors_are_retried_until_success():
    errors = [ServerError("503", 503), ModelRequestError("dropped"), MalformedResponseError("half a body"),
              http_error(408, "timeout"), http_error(409, "conflict")]
    attempt, calls = failing(errors)
    (result, attempts), waits = run_retries(attempt, RetryPolicy(max_attempts=6, base_delay_s=0.1))
    assert result == "ok" and attempts == 6 and calls == [1, 2, 3, 4, 5, 6]
    assert len(waits) == 5


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_fail_at_once(status):
    attempt, calls = failing([http_error(status, f"HTTP {status}")])
    sleep = FakeSleep()
    with pytest.raises(ClientRequestError) as info:
        asyncio.run(call_with_retries(attempt, RetryPolicy(), sleep=sleep))
    assert calls == [1] and sleep.waits == []
    assert info.value.status == status and info.value.attempts == 1


def test_retry_after_is_never_undercut():
    attempt, _ = failing([RateLimitError("429", 429, retry_after_s=7.5)])
    (_, attempts), waits = run_retries(attempt, RetryPolicy(base_delay_s=0.1, max_total_wait_s=60))
    assert attempts == 2 and waits[0] >= 7.5


def test_gives_up_after_max_attempts_with_the_count_in_the_message():
    attempt, calls = failing([ServerError("HTTP 503", 503) for _ in range(10)])
    with pytest.raises(ServerError) as info:
        run_retries(attempt, RetryPolicy(max_attempts=3, base_delay_s=0.01))
    assert len(calls) == 3 and info.value.attempts == 3
    assert "after 3 attempts" in str(info.value) and "max_attempts=3" in str(info.value)


def test_gives_up_when_retry_after_exceeds_the_wait_budget():
    attempt, calls = failing([RateLimitError("429", 429, retry_after_s=3600)])
    sleep = FakeSleep()
    with pytest.raises(RateLimitError) as info:
        asyncio.run(call_with_retries(attempt, RetryPolicy(max_total_wait_s=30), sleep=sleep))
    assert calls == [1] and sleep.waits == []
    assert "max_total_wait_s" in str(info.value)


def test_bugs_are_not_retried():
    async def attempt(n: int) -> str:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_retries(attempt, RetryPolicy())


def test_http_errors_are_typed_by_status():
    assert isinstance(http_error(429, "x"), RateLimitError)
    assert isinstance(http_error(500, "x"), ServerError) and isinstance(http_error(529, "x"), ServerError)
    assert type(http_error(408, "x")) is ModelHTTPError and http_error(408, "x").retryable
    assert not http_error(401, "x").retryable


def test_parse_retry_after_prefers_milliseconds():
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "3"}) == pytest.approx(0.25)


def test_parse_retry_after_seconds_and_http_date():
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    now = 1_700_000_000.0
    date = formatdate(now + 42, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(42, abs=1)
    assert parse_retry_after({"Retry-After": formatdate(now - 100, usegmt=True)}, now=now) == 0.0


def test_parse_retry_after_ignores_garbage():
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "2"}) == 2.0


def test_redact_removes_the_secret_everywhere():
    assert redact("key sk-abcdef123 and again sk-abcdef123", ["sk-abcdef123"]) == "key [REDACTED] and again [REDACTED]"
    assert redact("nothing", [None, ""]) == "nothing"


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("JEVAL_TEST_KEY", raising=False)
    config = ModelConfig(name="m", model="gpt", api_key_env="JEVAL_TEST_KEY")
    with pytest.raises(MissingAPIKeyError) as info:
        config.resolve_api_key()
    assert "JEVAL_TEST_KEY" in str(info.value) and isinstance(info.value, ConfigError)
    monkeypatch.setenv("JEVAL_TEST_KEY", "sk-live-value-123")
    assert config.resolve_api_key() == "sk-live-value-123"
    assert "sk-live-value-123" not in repr(config) and "sk-live-value-123" not in config.model_dump_json()


def test_config_refuses_a_key_in_place_of_a_variable_name():
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        ModelConfig(name="m", model="gpt", api_key_env="sk-proj-abc123")


def test_config_rejects_unknown_fields_and_normalises_the_url():
    with pytest.raises(ValueError):
        ModelConfig(name="m", model="gpt", temprature=0.2)
    assert ModelConfig(name="m", model="x", base_url="http://localhost:11434").base_url == "http://localhost:11434/v1"
    assert ModelConfig(name="m", model="x", base_url="http://h:8000/v1/").base_url == "http://h:8000/v1"
    assert ModelConfig(name="m", model="x", provider="anthropic").base_url == "https://api.anthropic.com/v1"


def test_cost_comes_from_the_price_table():
    config = ModelConfig(name="m", model="x", price={"input_per_mtok": 3.0, "output_per_mtok": 15.0})
    assert config.cost_usd(1_000_000, 200_000) == pytest.approx(6.0)
