"""What every chat client shares: ``ChatResult``, the HTTP attempt, limiter use and retries.

A provider subclass only says how to build a request body and how to read a response body.
Conversations are kept in the OpenAI chat format (``system``/``user``/``assistant`` with
``tool_calls``/``tool`` messages) and tools in the OpenAI function format; the Anthropic client
converts both on the way out.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from jeval_ray.protocol import Action
from jeval_ray.models.config import ModelConfig
from jeval_ray.models.errors import (
    MalformedResponseError,
    ModelError,
    ModelRequestError,
    ContextLengthError,
    ResponseFormatRejected,
    http_error,
    redact,
    rejects_context_length,
    rejects_response_format,
)
from jeval_ray.models.ratelimit import as_async_limiter
from jeval_ray.models.tokens import count_messages, count_tokens
from jeval_ray.models.retry import RetryPolicy, call_with_retries, parse_retry_after

log = logging.getLogger("jeval_ray.models")

def estimate_tokens(*parts: Any) -> int:
    """The tokens of JSON-able parts (``models.tokens.count_tokens``: a string as it is, anything else
    as its compact JSON), for estimates made before the endpoint reports usage."""
    return sum(count_tokens(p) for p in parts)


@dataclass
class ChatResult:
    """One model reply, provider-neutral.

    ``actions`` carry each tool call's raw argument JSON text as the model wrote it (it may be
    invalid: the environment reports that as an error observation). ``assistant_message`` is
    the reply in the conversation format, ready to append to the history.

    ``tokens_in`` counts every prompt token of the request, those read from or written to the
    provider's prompt cache included; ``tokens_cached_in`` and ``tokens_cache_write`` are the parts
    of it that were cache reads and cache writes (priced apart, never counted twice).
    """

    actions: list[Action]
    text: str | None
    tokens_in: int
    tokens_out: int
    latency_ms: float
    cost_usd: float
    reasoning_trace: str | None
    finish_reason: str | None
    assistant_message: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1
    usage_reported: bool = True
    tokens_cached_in: int = 0
    tokens_cache_write: int = 0
    #: the model declined to answer (OpenAI ``message.refusal``, Anthropic ``stop_reason: refusal``)
    refusal: str | None = None
    #: the part of tokens_out spent reasoning, where the endpoint reports it (completion_tokens_details)
    tokens_reasoning: int | None = None
    #: answered from the response cache (no request sent, cost 0, the original answer's token counts)
    cache_hit: bool = False
    #: the endpoint's decoded JSON body (what the response cache stores)
    response_json: dict[str, Any] | None = field(default=None, repr=False)

    def limited_tokens(self, provider: str) -> int:
        """The tokens the provider counts against a tokens-per-minute limit: Anthropic leaves cache reads
        out of its input-token limit; OpenAI-compatible providers count every prompt token."""
        cached = self.tokens_cached_in if provider == "anthropic" else 0
        return self.tokens_in - cached + self.tokens_out


class ChatClient(ABC):
    """An async chat-completions client for one ``ModelConfig``.

    ``limiter`` is optional: a ``TokenBucketLimiter`` (in-process) or a ``RateLimiter`` actor
    handle (cluster-wide). ``http_client`` lets callers share a connection pool; the client
    closes only a pool it created. ``sleep`` and ``rng`` are the retry layer's seams for tests.
    ``cache`` (a ``jeval_ray.cache.ResponseCache``) answers a call it has seen (same request, same
    logical seed, same ``sample_index``) without sending it.
    """

    #: Path appended to ``config.base_url``.
    path: str = ""

    def __init__(
        self,
        config: ModelConfig,
        *,
        limiter: Any = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        cache: Any = None,
        sample_index: int = 0,
    ) -> None:
        self.config = config
        self.cache = cache
        self.sample_index = sample_index
        self._key = config.resolve_api_key()
        self._limiter = as_async_limiter(limiter)
        self._policy = RetryPolicy.from_config(config)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._owns_http = http_client is None
        # Passed on every request, so a shared pool still gets this model's per-call timeout.
        self._timeout = httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s))
        # No transport retries in httpx: the retry loop here is the only one.
        self._http = http_client or httpx.AsyncClient(timeout=self._timeout)
        self.url = f"{config.base_url}{self.path}"

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """Auth and protocol headers."""

    @abstractmethod
    def _body(self, messages: list[dict], tools: list[dict] | None, seed: int | None) -> dict[str, Any]:
        """The JSON request body."""

    @abstractmethod
    def _parse(self, data: dict[str, Any]) -> ChatResult:
        """A ``ChatResult`` from a decoded 200 body (latency and cost are filled in by the caller).

        A missing or mistyped field may raise ``KeyError``/``TypeError``/``ValueError``/
        ``IndexError``: the caller turns them into a (retryable) ``MalformedResponseError``.
        """

    async def chat(
        self, messages: list[dict], tools: list[dict] | None = None, *, seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One completion with retries; raises a ``ModelError`` subclass when it fails for good.

        ``extra_body``: request fields of this call only, merged last (e.g. the LLM judge's
        ``response_format``, whose JSON Schema names the entries of the episode it judges).
        """
        body = self._body(messages, tools, seed if self.config.send_seed else None)
        if extra_body:
            body.update(extra_body)
        key = None
        if self.cache is not None:
            from jeval_ray.cache import cache_key

            key = cache_key(self.config.provider, self.url, body, seed, self.sample_index)
            # file or object-store I/O off the event loop: a worker's other episodes go on meanwhile
            hit = await asyncio.to_thread(self._from_cache, key)
            if hit is not None:
                return hit
        est = count_messages(messages, tools) + self.config.max_tokens

        async def attempt(_n: int) -> ChatResult:
            return await self._attempt(body, est)

        result, attempts = await call_with_retries(
            attempt, self._policy, sleep=self._sleep, rng=self._rng, describe=f"model {self.config.name!r}"
        )
        result.attempts = attempts
        if key is not None and result.response_json is not None:
            await asyncio.to_thread(self.cache.put, key, result.response_json, provider=self.config.provider,
                                    model=self.config.model, base_url=self.url)
        return result

    def _from_cache(self, key: str) -> ChatResult | None:
        """The cached answer of ``key``: no limiter, no request, cost 0, the original token counts."""
        started = time.perf_counter()
        entry = self.cache.get(key)
        if entry is None:
            return None
        try:
            result = self._parse(entry["response"])
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            log.warning("response cache: entry %s does not parse (%s); calling the endpoint", key[:16], exc)
            return None
        result.latency_ms = (time.perf_counter() - started) * 1000.0
        result.cost_usd = 0.0
        result.cache_hit = True
        result.attempts = 0
        return result

    async def _attempt(self, body: dict[str, Any], est_tokens: int) -> ChatResult:
        permit = await self._limiter.acquire(est_tokens) if self._limiter else None
        actual: int | None = None
        try:
            started = time.perf_counter()
            try:
                response = await self._http.post(self.url, json=body, headers=self._headers(), timeout=self._timeout)
            except httpx.TimeoutException as exc:
                raise self._redacted(ModelRequestError, f"timeout after {self.config.timeout_s:g}s "
                                     f"calling {self.url} ({type(exc).__name__})") from None
            except httpx.TransportError as exc:
                raise self._redacted(ModelRequestError, f"transport error calling {self.url}: "
                                     f"{type(exc).__name__}: {exc}") from None
            latency_ms = (time.perf_counter() - started) * 1000.0
            if response.status_code >= 400:
                retry_after = parse_retry_after(response.headers)
                if response.status_code == 429 and self._limiter is not None:
                    await self._limiter.report_429(retry_after)
                excerpt = response.text[:300].replace("\n", " ")
                message = f"HTTP {response.status_code} from {self.url}: {excerpt}"
                # a request too long for the model's context is never a refusal of its response_format
                if rejects_context_length(response.status_code, response.text):
                    raise ContextLengthError(redact(message, [self._key]), response.status_code, retry_after)
                if "response_format" in body and rejects_response_format(response.status_code, response.text):
                    raise ResponseFormatRejected(redact(message, [self._key]), response.status_code, retry_after)
                raise http_error(response.status_code, redact(message, [self._key]), retry_after)
            try:
                data = response.json()
                if not isinstance(data, dict):
                    raise ValueError("top-level JSON is not an object")
                result = self._parse(data)
                result.response_json = data
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise self._redacted(MalformedResponseError, f"malformed response from {self.url}: "
                                     f"{type(exc).__name__}: {str(exc)[:200]}") from None
            result.latency_ms = latency_ms
            result.cost_usd = self.config.cost_usd(result.tokens_in, result.tokens_out, result.tokens_cached_in,
                                                   result.tokens_cache_write)
            if result.usage_reported:
                actual = result.limited_tokens(self.config.provider)
            return result
        finally:
            if permit is not None:
                await self._limiter.release(permit, actual)

    def _redacted(self, cls: type[ModelError], message: str) -> ModelError:
        return cls(redact(message, [self._key]))

    async def aclose(self) -> None:
        """Close the connection pool if this client created it."""
        if self._owns_http:
            await self._http.aclose()


__all__ = ["ChatResult", "ChatClient", "estimate_tokens"]
