"""The one retry loop of the model clients: exponential backoff, full jitter, Retry-After.

No other layer retries (the HTTP client has none, the SDKs are not used): stacked retry layers
multiply under a 429 storm. What is retried is decided by each error's ``retryable`` flag
(``models.errors``): 408/409/429/5xx, transport errors, timeouts and malformed bodies.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, TypeVar

from jeval_ray.models.errors import ModelError

if TYPE_CHECKING:
    from jeval_ray.models.config import ModelConfig

T = TypeVar("T")
log = logging.getLogger("jeval_ray.models")


@dataclass(frozen=True)
class RetryPolicy:
    """How many times and how long to retry one call.

    ``max_total_wait_s`` bounds the sum of the waits between attempts, so a call ends within
    ``max_attempts * timeout + max_total_wait_s`` whatever the endpoint does.
    """

    max_attempts: int = 6
    max_total_wait_s: float = 300.0
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    @classmethod
    def from_config(cls, config: "ModelConfig") -> "RetryPolicy":
        """The policy a ``ModelConfig`` asks for."""
        return cls(
            max_attempts=config.max_attempts,
            max_total_wait_s=config.max_total_wait_s,
            base_delay_s=config.backoff_base_s,
            max_delay_s=config.backoff_max_s,
        )

    def backoff_s(self, retry_index: int, rng: random.Random) -> float:
        """The wait before retry number ``retry_index`` (1 = first retry), with full jitter.

        Full jitter (uniform in ``[0, cap]``) spreads a crowd of callers that failed together,
        which a fixed exponential schedule would keep in lockstep.
        """
        cap = min(self.max_delay_s, self.base_delay_s * 2 ** (retry_index - 1))
        return rng.uniform(0.0, cap)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait announced by ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date).

    ``now`` is the wall-clock time (epoch seconds) an HTTP date is measured from. Returns
    ``None`` when neither header is present or parseable; never a negative number.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


async def call_with_retries(
    attempt: Callable[[int], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: random.Random | None = None,
    describe: str = "model call",
) -> tuple[T, int]:
    """Run ``attempt(n)`` (n = 1, 2, ...) until it succeeds; return ``(result, attempts)``.

    A non-retryable ``ModelError`` is raised at once. A retryable one is retried after
    ``max(Retry-After, jittered backoff)`` until ``max_attempts`` is reached or the next wait
    would push the total wait past ``max_total_wait_s``; the last error is then raised with
    ``attempts`` and ``gave_up`` filled in. Other exceptions propagate untouched (bugs are not
    retried).
    """
    rng = rng or random.Random()
    waited = 0.0
    n = 0
    while True:
        n += 1
        try:
            return await attempt(n), n
        except ModelError as err:
            err.attempts = n
            if not err.retryable:
                raise
            if n >= policy.max_attempts:
                err.gave_up = f"gave up after max_attempts={policy.max_attempts}"
                raise
            delay = policy.backoff_s(n, rng)
            announced = getattr(err, "retry_after_s", None)
            if announced is not None:
                # Never earlier than the endpoint asked: an early retry is another 429.
                delay = max(delay, announced)
            if waited + delay > policy.max_total_wait_s:
                err.gave_up = (
                    f"next wait of {delay:.1f}s would exceed max_total_wait_s={policy.max_total_wait_s:g}"
                )
                raise
            log.warning("%s: attempt %d failed (%s); retrying in %.2fs", describe, n, err, delay)
            await sleep(delay)
            waited += delay


__all__ = ["RetryPolicy", "call_with_retries", "parse_retry_after"]
