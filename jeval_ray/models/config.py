"""``ModelConfig``: one model endpoint as a sweep config names it (provider, URL, limits, prices).

The config never holds a key: ``api_key_env`` is the *name* of an environment variable, read
at call time by ``resolve_api_key`` on the machine that makes the call.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from jeval_ray.models.errors import MissingAPIKeyError

Provider = Literal["openai", "anthropic"]

#: Where each provider lives when ``base_url`` is left out.
DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
}


class Price(BaseModel):
    """USD per one million tokens; zero for local models.

    ``cached_input_per_mtok`` prices prompt tokens read from the provider's prompt cache and
    ``cache_write_per_mtok`` those written to it (Anthropic bills writes above input); either left
    null is billed at ``input_per_mtok``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0, description="Cache reads; null = input price.")
    cache_write_per_mtok: float | None = Field(default=None, ge=0, description="Cache writes; null = input price.")

    def cost(self, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write: int = 0) -> float:
        """The USD cost of one call. ``tokens_in`` counts every prompt token, ``cached_in`` (cache reads)
        and ``cache_write`` included: those two are billed at their own prices, the rest at input."""
        cached_price = self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        write_price = self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        plain = max(0, tokens_in - cached_in - cache_write)
        return (plain * self.input_per_mtok + cached_in * cached_price + cache_write * write_price
                + tokens_out * self.output_per_mtok) / 1_000_000


class ModelConfig(BaseModel):
    """One model endpoint: how to reach it, how to sample, how fast it may be called, what it costs.

    ``base_url`` is the API root *including* the version segment, as the OpenAI SDK expects
    (``https://api.openai.com/v1``, ``http://localhost:8000/v1``); a bare host gets ``/v1``.
    The OpenAI client posts to ``{base_url}/chat/completions``, the Anthropic client to
    ``{base_url}/messages``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Label used in records and the leaderboard.")
    provider: Provider = "openai"
    base_url: str | None = None
    model: str = Field(min_length=1, description="The model id the API expects.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the key; null for no auth."
    )

    # Sampling. None means "do not send": the endpoint's default applies.
    temperature: float | None = Field(default=0.0, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=4096, ge=1)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    send_seed: bool = True
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Provider-specific request fields merged into every body."
    )
    anthropic_version: str = "2023-06-01"
    # Reasoning. OpenAI-compatible reasoning models take reasoning_effort and refuse temperature/top_p;
    # Anthropic's extended thinking takes a token budget, temperature 1 (omitted here) and max_tokens above it.
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = Field(
        default=None, description="OpenAI-compatible reasoning models: sent as reasoning_effort; temperature and "
        "top_p are then not sent, and max_completion_tokens is used unless max_tokens_param is set.")
    thinking_budget_tokens: int | None = Field(
        default=None, ge=1024, description="Anthropic extended thinking: sent as thinking {type: enabled, "
        "budget_tokens}; temperature is then omitted (the API requires 1) and max_tokens must exceed the budget "
        "(left unset, it becomes budget + 4096).")
    prompt_caching: bool = Field(
        default=True, description="Anthropic: mark cache breakpoints (system and tools, the latest turn) so repeated "
        "prefixes are billed as cache reads. OpenAI-compatible servers cache on their own; no effect there.")

    # Limits. rpm/tpm None = unlimited on our side (the endpoint may still answer 429).
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)

    price: Price = Field(default_factory=Price)
    episode_budget_usd: float | None = Field(
        default=None, gt=0, description="Spending cap of one episode of this model (USD at its price). The agent makes "
        "no call whose worst case (the prompt estimate at the input price plus max_tokens at the output price) would "
        "pass it: the episode ends with termination 'budget: ...' and is scored as it stands. null = no cap.")
    budget_usd: float | None = Field(
        default=None, gt=0, description="Spending cap of this model's agent episodes in one sweep run, over all its "
        "invocations (resumes included; USD at its price). The sweep admits an episode through the endpoint's limiter "
        "actor only while spent + the forecast of the episodes in flight + this one's forecast stays within it; the "
        "rest are written as status 'skipped' (termination 'budget: ...'). A resume with a higher budget plays them. "
        "Agents only: the judges' spend is scoring.judge_budget_usd. null = no cap.")

    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout.")
    max_attempts: int = Field(default=6, ge=1)
    max_total_wait_s: float = Field(default=300.0, ge=0, description="Cap on the sum of retry waits per call.")
    backoff_base_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=60.0, gt=0)

    # What the LLM agent needs to know about the model.
    context_window: int = Field(default=128_000, ge=1024)
    max_observation_chars: int = Field(default=20_000, ge=200)
    context_strategy: Literal["elide_oldest", "stop"] = Field(
        default="elide_oldest", description="What the LLM agent does when the next request would pass context_window: "
        "elide the oldest tool results in one chunk (down to elide_to of the window), or stop the episode "
        "(termination context_overflow).")
    elide_to: float = Field(default=0.6, gt=0, lt=1, description="The fraction of context_window an elision brings the "
                            "prompt down to (one chunk, so a provider's prefix cache breaks once, not every turn).")

    @field_validator("api_key_env")
    @classmethod
    def _looks_like_a_name(cls, value: str | None) -> str | None:
        # A pasted key in this field would be stored with every record: refuse it early.
        if value is not None and (not value.replace("_", "").isalnum() or value.startswith(("sk-", "sk_"))):
            raise ValueError(
                "api_key_env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not a key"
            )
        return value

    @model_validator(mode="after")
    def _normalise_base_url(self) -> "ModelConfig":
        url = (self.base_url or DEFAULT_BASE_URLS[self.provider]).rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        if parts.path in ("", "/"):
            url += "/v1"
        object.__setattr__(self, "base_url", url)
        return self

    @model_validator(mode="after")
    def _reasoning_rules(self) -> "ModelConfig":
        """The temperature and token rules each provider enforces for reasoning (errors name the field)."""
        explicit = self.model_fields_set
        if self.reasoning_effort is not None:
            if self.provider != "openai":
                raise ValueError("reasoning_effort: Anthropic takes a thinking budget, not an effort. Fix: use "
                                 "thinking_budget_tokens instead")
            for name in ("temperature", "top_p"):
                if name in explicit and getattr(self, name) is not None:
                    raise ValueError(f"{name}: OpenAI reasoning models (reasoning_effort) reject {name}. Fix: remove "
                                     f"{name} (or set it to null)")
            object.__setattr__(self, "temperature", None)
            if "max_tokens_param" not in explicit:
                object.__setattr__(self, "max_tokens_param", "max_completion_tokens")
            if "reasoning_effort" in self.extra_body:
                raise ValueError("extra_body: reasoning_effort is set twice. Fix: keep only the reasoning_effort field")
        if self.thinking_budget_tokens is not None:
            budget = self.thinking_budget_tokens
            if self.provider != "anthropic":
                raise ValueError("thinking_budget_tokens: only the Anthropic Messages API takes a thinking budget. Fix: "
                                 "use reasoning_effort for an OpenAI-compatible reasoning model")
            if "temperature" in explicit and self.temperature not in (None, 1):
                raise ValueError("temperature: Anthropic extended thinking requires temperature 1. Fix: remove "
                                 "temperature (or set it to null or 1)")
            if self.top_p is not None and self.top_p < 0.95:
                raise ValueError("top_p: Anthropic extended thinking takes top_p between 0.95 and 1 only. Fix: remove "
                                 "top_p or raise it to 0.95")
            object.__setattr__(self, "temperature", None if self.temperature != 1 else 1.0)
            if "max_tokens" not in explicit:
                object.__setattr__(self, "max_tokens", budget + 4096)
            elif self.max_tokens <= budget:
                raise ValueError(f"max_tokens: must exceed thinking_budget_tokens ({budget}), which it includes. "
                                 f"Fix: raise max_tokens above {budget} (e.g. {budget + 4096}) or lower the budget")
            if "thinking" in self.extra_body:
                raise ValueError("extra_body: thinking is set twice. Fix: keep only thinking_budget_tokens")
        return self

    def resolve_api_key(self) -> str | None:
        """The key from the environment; ``None`` when no auth is configured.

        Raises ``MissingAPIKeyError`` naming the variable (never a value) when it is unset.
        """
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise MissingAPIKeyError(self.name, self.api_key_env)
        return key

    def cost_usd(self, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write: int = 0) -> float:
        """The USD cost of a call with these token counts, from the price table (``Price.cost``)."""
        return self.price.cost(tokens_in, tokens_out, cached_in, cache_write)

    @property
    def endpoint_key(self) -> str:
        """A stable id of the endpoint (provider + URL + model): callers sharing it share one limiter."""
        digest = hashlib.sha256(f"{self.provider}|{self.base_url}|{self.model}".encode()).hexdigest()[:16]
        return f"{self.provider}-{digest}"


__all__ = ["ModelConfig", "Price", "Provider", "DEFAULT_BASE_URLS"]
