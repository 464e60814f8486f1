"""Model endpoints: configuration, async HTTP clients, the retry loop and rate limiters.

``make_client(config)`` returns an ``OpenAICompatClient`` or an ``AnthropicClient``; both answer
``await client.chat(messages, tools, seed=...)`` with a provider-neutral ``ChatResult`` and
raise a ``ModelError`` subclass when a call fails for good. ``count_tokens`` and ``count_messages``
(``models.tokens``) count tokens as OpenAI's ``cl100k_base`` does. See docs/models.md.
"""

from jeval_ray.models._client import ChatClient, ChatResult, estimate_tokens
from jeval_ray.models.anthropic import AnthropicClient
from jeval_ray.models.config import ModelConfig, Price
from jeval_ray.models.errors import (
    ClientRequestError,
    MalformedResponseError,
    MissingAPIKeyError,
    ModelError,
    ModelHTTPError,
    ModelRequestError,
    RateLimitError,
    ResponseFormatRejected,
    ServerError,
)
from jeval_ray.models.factory import make_client
from jeval_ray.models.openai_compat import OpenAICompatClient
from jeval_ray.models.ratelimit import Permit, RateLimiter, TokenBucketLimiter, get_rate_limiter
from jeval_ray.models.retry import RetryPolicy, call_with_retries, parse_retry_after
from jeval_ray.models.tokens import count_messages, count_tokens

__all__ = [
    "ModelConfig",
    "Price",
    "ChatClient",
    "ChatResult",
    "OpenAICompatClient",
    "AnthropicClient",
    "make_client",
    "estimate_tokens",
    "count_tokens",
    "count_messages",
    "ModelError",
    "MissingAPIKeyError",
    "ModelRequestError",
    "ModelHTTPError",
    "RateLimitError",
    "ServerError",
    "ClientRequestError",
    "ResponseFormatRejected",
    "MalformedResponseError",
    "RetryPolicy",
    "call_with_retries",
    "parse_retry_after",
    "Permit",
    "TokenBucketLimiter",
    "RateLimiter",
    "get_rate_limiter",
]
