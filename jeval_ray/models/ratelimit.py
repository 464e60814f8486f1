"""Client-side rate limiting: requests/min and tokens/min buckets, a concurrency cap, 429 pauses.

``TokenBucketLimiter`` is the plain in-process limiter (its clock and sleep are injectable, so
tests drive it with a fake clock). ``RateLimiter`` is the same limiter inside a Ray actor, one
named actor per endpoint (``get_rate_limiter``), so every episode worker and judge in the cluster
draws from one budget and pauses together when any of them is told to back off.

Clients accept either through ``as_async_limiter``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import ray

from jeval_ray.models.errors import ModelRequestError

log = logging.getLogger("jeval_ray.models")
#: Ray namespace of the limiter actors, so drivers and workers of any job find the same actor.
NAMESPACE = "jeval_ray"


@dataclass(frozen=True)
class Permit:
    """The right to send one request; hand it back with ``release``."""

    permit_id: int
    est_tokens: int


class _Bucket:
    """A token bucket of ``amount`` units per ``period_s`` that may go into debt for big costs.

    Capacity is a small burst (``burst_fraction`` of the amount, at least 1); the refill rate
    is chosen so that capacity + one period of refill equals ``amount``: at most ``amount``
    units are granted in any window of ``period_s`` (for unit costs and ``amount >= 2``).
    A cost larger than the capacity is granted once the bucket is full and leaves it in debt,
    so a single large prompt never blocks forever.
    """

    def __init__(self, amount: int, period_s: float, burst_fraction: float, now: float) -> None:
        self.capacity = max(1.0, amount * burst_fraction)
        spare = amount - self.capacity
        self.rate = (spare if spare > 0 else amount) / period_s
        self.level = self.capacity
        self.updated = now

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait_s(self, cost: float, now: float) -> float:
        """Seconds until ``cost`` may be taken (0 = now)."""
        self._refill(now)
        need = min(cost, self.capacity) - self.level
        return 0.0 if need <= 1e-9 else need / self.rate

    def take(self, cost: float) -> None:
        self.level -= cost

    def adjust(self, delta: float) -> None:
        """Charge ``delta`` more units (negative gives units back), never above capacity."""
        self.level = min(self.capacity, self.level - delta)


class TokenBucketLimiter:
    """Requests-per-period and tokens-per-period buckets, a concurrency cap and a shared pause.

    ``rpm``/``tpm`` are per ``period_s`` (60 s in production; tests shorten it). ``None`` turns
    a limit off. ``clock`` is monotonic seconds; ``sleep`` is awaited while waiting. A permit not
    released within ``permit_ttl_s`` (its holder died or was cancelled mid-call) stops counting
    against the concurrency cap.
    """

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        max_concurrency: int | None = None,
        *,
        period_s: float = 60.0,
        burst_fraction: float = 1 / 60,
        permit_ttl_s: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        now = clock()
        self._clock = clock
        self._sleep = sleep
        self._requests = _Bucket(rpm, period_s, burst_fraction, now) if rpm else None
        self._tokens = _Bucket(tpm, period_s, burst_fraction, now) if tpm else None
        self._max_concurrency = max_concurrency
        self._permit_ttl_s = permit_ttl_s
        self._in_flight: dict[int, tuple[int, float]] = {}  # permit id -> (estimate, granted at)
        self._ids = itertools.count(1)
        self._paused_until = -math.inf
        self._waiters: list[asyncio.Future] = []
        # Callers of ``acquire`` in arrival order: only the head competes for a permit, so a
        # crowd of waiters is served first come, first served (no caller starves behind luckier ones).
        self._line: deque[asyncio.Future] = deque()
        self.granted = 0
        self.pauses = 0

    @property
    def paused_until(self) -> float:
        """The clock time before which nothing is granted (``-inf`` when not paused)."""
        return self._paused_until

    def try_acquire(self, est_tokens: int = 0) -> Permit | float:
        """A ``Permit`` if a request may go now, else the seconds to wait (``inf``: until a release)."""
        now = self._clock()
        waits = [self._paused_until - now]
        if self._max_concurrency is not None and len(self._in_flight) >= self._max_concurrency:
            self._reclaim_expired(now)
            if len(self._in_flight) >= self._max_concurrency:
                waits.append(math.inf)
        if self._requests is not None:
            waits.append(self._requests.wait_s(1, now))
        if self._tokens is not None:
            waits.append(self._tokens.wait_s(est_tokens, now))
        wait = max(waits)
        if wait > 0:
            return wait
        if self._requests is not None:
            self._requests.take(1)
        if self._tokens is not None:
            self._tokens.take(est_tokens)
        permit = Permit(next(self._ids), int(est_tokens))
        self._in_flight[permit.permit_id] = (permit.est_tokens, now)
        self.granted += 1
        return permit

    async def acquire(self, est_tokens: int = 0) -> Permit:
        """Wait until a request of about ``est_tokens`` tokens may be sent; return its permit.

        Waiting callers are served in arrival order (FIFO): without it, every waiter wakes at
        the same refill and a random one wins, so under a crowd some callers wait many times longer
        than others (and a large token estimate could starve behind small ones).
        """
        turn = asyncio.get_running_loop().create_future()
        self._line.append(turn)
        try:
            if self._line[0] is not turn:
                await turn  # set when every caller ahead of this one has its permit (or gave up)
            while True:
                got = self.try_acquire(est_tokens)
                if isinstance(got, Permit):
                    return got
                if math.isinf(got):
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    # Woken by a release; the timeout re-checks for permits whose holder vanished.
                    await asyncio.wait({waiter}, timeout=self._permit_ttl_s)
                else:
                    await self._sleep(got)
        finally:
            self._line.remove(turn)
            if self._line and not self._line[0].done():
                self._line[0].set_result(None)  # the next in line competes now

    def release(self, permit: Permit, actual_tokens: int | None = None) -> None:
        """End a request; ``actual_tokens`` (reported usage) replaces the estimate in the bucket."""
        held = self._in_flight.pop(permit.permit_id, None)
        if held is None:
            return  # unknown, expired or already released (e.g. an actor restart): nothing to give back
        if self._tokens is not None and actual_tokens is not None:
            self._tokens.adjust(actual_tokens - held[0])
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _reclaim_expired(self, now: float) -> None:
        expired = [pid for pid, (_, granted) in self._in_flight.items() if now - granted > self._permit_ttl_s]
        for pid in expired:
            del self._in_flight[pid]

    def pause_until(self, t: float) -> None:
        """Grant nothing before clock time ``t`` (a later pause is never shortened)."""
        if t > self._paused_until:
            self._paused_until = t
            self.pauses += 1

    def report_429(self, retry_after_s: float | None) -> None:
        """A caller got 429 with this Retry-After: pause every caller for that long."""
        if retry_after_s is not None and retry_after_s > 0:
            self.pause_until(self._clock() + retry_after_s)

    def stats(self) -> dict[str, Any]:
        """In-flight requests, grants, pauses and the seconds of pause left (for logs and tests)."""
        return {
            "in_flight": len(self._in_flight),
            "granted": self.granted,
            "pauses": self.pauses,
            "paused_for_s": max(0.0, self._paused_until - self._clock()),
        }


class SpendLedger:
    """Dollars spent and held per ledger (a budget's name), and admission against budgets.

    A sweep admits an episode with ``admit``: it holds the episode's forecast on each ledger named
    in ``caps`` if, on every one, spent + every forecast still held (episodes in flight) + this one
    stays within the cap; else nothing is held and the refusal says which budget and by how much.
    ``settle`` drops the episode's hold and adds what it really cost. ``open`` (re)starts a ledger at
    what a run already spent (a resume) with the holds given (none: those of an earlier invocation go).
    A ledger that was never opened (its actor restarted and lost it) admits nothing: ``admit`` answers
    ``NOT_OPEN`` so that the caller opens it again from its own accounts, and ``settle`` ignores it.
    """

    NOT_OPEN = "ledger not open"

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}
        self._held: dict[str, dict[str, float]] = {}

    def open(self, ledger: str, spent: float = 0.0, held: dict[str, float] | None = None) -> None:
        self._spent[ledger] = float(spent)
        self._held[ledger] = {k: float(v) for k, v in (held or {}).items()}

    def admit(self, ticket: str, usd: float, caps: dict[str, float]) -> str | None:
        """None when admitted (``usd`` now held on every ledger of ``caps``), ``NOT_OPEN`` when a ledger
        is not open, else why not."""
        if any(ledger not in self._spent for ledger in caps):
            return self.NOT_OPEN
        for ledger, cap in caps.items():
            spent = self._spent.get(ledger, 0.0)
            held = sum(v for k, v in self._held.get(ledger, {}).items() if k != ticket)
            if spent + held + usd > cap * (1 + 1e-9):
                return (f"{ledger}: spent {spent:.4f} + in flight (forecast) {held:.4f} + this episode's forecast "
                        f"{usd:.4f} USD would pass {cap:g}")
        for ledger in caps:
            self._held.setdefault(ledger, {})[ticket] = float(usd)
        return None

    def settle(self, ticket: str, usd: float, ledgers: list[str]) -> None:
        """The episode ``ticket`` ended having cost ``usd``: its hold goes, its cost is spent."""
        for ledger in ledgers:
            if ledger in self._spent:
                self._held[ledger].pop(ticket, None)
                self._spent[ledger] += float(usd)

    def close(self, ledger: str) -> None:
        self._spent.pop(ledger, None)
        self._held.pop(ledger, None)

    def state(self, ledger: str) -> dict[str, float]:
        """``spent``, ``held`` (forecast of episodes in flight) and ``in_flight`` (their number)."""
        held = self._held.get(ledger, {})
        return {"spent": self._spent.get(ledger, 0.0), "held": sum(held.values()), "in_flight": len(held)}


@ray.remote(num_cpus=0, max_concurrency=10_000, max_restarts=-1)
class RateLimiter:
    """A ``TokenBucketLimiter`` shared cluster-wide: one named async actor per endpoint.

    It needs no CPU (it only keeps counters), so it never competes with episode workers for
    scheduling. A restart loses the buckets, which only makes the next minute less smooth.

    It also keeps the endpoint's spend ledgers (``SpendLedger``): a sweep admits each episode of a
    model with a ``budget_usd`` here before it starts it (``budget_admit``) and settles its cost here
    when it ends. A restart loses them: the next admission finds its ledger not open, and the sweep
    opens it again from its own accounts (spent, and the forecast of each episode in flight).
    """

    def __init__(
        self, rpm: int | None, tpm: int | None, max_concurrency: int | None, period_s: float = 60.0
    ) -> None:
        self._limiter = TokenBucketLimiter(rpm, tpm, max_concurrency, period_s=period_s)
        self._ledger = SpendLedger()

    async def budget_open(self, ledger: str, spent: float = 0.0, held: dict[str, float] | None = None) -> None:
        """Start ``ledger`` at ``spent`` USD (what the run already spent) holding ``held`` (episode -> forecast)."""
        self._ledger.open(ledger, spent, held)

    async def budget_admit(self, ticket: str, usd: float, caps: dict[str, float]) -> str | None:
        """Hold ``usd`` (an episode's forecast) on each ledger of ``caps``; None, or why not."""
        return self._ledger.admit(ticket, usd, caps)

    async def budget_settle(self, ticket: str, usd: float, ledgers: list[str]) -> None:
        """Drop ``ticket``'s hold and spend ``usd`` on ``ledgers``."""
        self._ledger.settle(ticket, usd, ledgers)

    async def budget_close(self, ledger: str) -> None:
        self._ledger.close(ledger)

    async def budget_state(self, ledger: str) -> dict[str, float]:
        return self._ledger.state(ledger)

    async def acquire(self, est_tokens: int = 0) -> Permit:
        """Wait for a permit (the actor's event loop serves other callers meanwhile)."""
        return await self._limiter.acquire(est_tokens)

    async def release(self, permit: Permit, actual_tokens: int | None = None) -> None:
        """Hand a permit back with the tokens the call really used."""
        self._limiter.release(permit, actual_tokens)

    async def report_429(self, retry_after_s: float | None) -> None:
        """Pause every caller of this endpoint for ``retry_after_s`` (measured on the actor's clock)."""
        self._limiter.report_429(retry_after_s)

    async def stats(self) -> dict[str, Any]:
        """The limiter's counters."""
        return self._limiter.stats()


def get_rate_limiter(
    endpoint_key: str,
    rpm: int | None,
    tpm: int | None,
    max_concurrency: int | None,
    *,
    period_s: float = 60.0,
) -> "ray.actor.ActorHandle":
    """The cluster's ``RateLimiter`` actor for ``endpoint_key`` and these limits, created on first use.

    Named ``ratelimit:<endpoint_key>:<limits>`` in namespace ``jeval_ray`` with ``get_if_exists``,
    so every worker, judge and concurrent sweep calling the same endpoint shares one budget.
    It is detached: it must not die with whichever worker happened to create it (that would
    break every other caller mid-sweep); it costs no CPU and ends with the cluster (or
    ``ray.kill``). The limits are part of the name, so changed limits get a new actor.
    """
    limits = f"{rpm}-{tpm}-{max_concurrency}-{period_s:g}"
    return RateLimiter.options(
        name=f"ratelimit:{endpoint_key}:{limits}", namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
    ).remote(rpm, tpm, max_concurrency, period_s)


class AsyncLimiter(Protocol):
    """What a client needs from a limiter, local or remote."""

    async def acquire(self, est_tokens: int) -> Permit: ...

    async def release(self, permit: Permit, actual_tokens: int | None) -> None: ...

    async def report_429(self, retry_after_s: float | None) -> None: ...


class _LocalAdapter:
    def __init__(self, limiter: TokenBucketLimiter) -> None:
        self._limiter = limiter

    async def acquire(self, est_tokens: int) -> Permit:
        return await self._limiter.acquire(est_tokens)

    async def release(self, permit: Permit, actual_tokens: int | None) -> None:
        self._limiter.release(permit, actual_tokens)

    async def report_429(self, retry_after_s: float | None) -> None:
        self._limiter.report_429(retry_after_s)


class _ActorAdapter:
    # Awaiting the ObjectRefs keeps the caller's event loop free; ray.get here would block it.
    def __init__(self, handle: "ray.actor.ActorHandle") -> None:
        self._handle = handle

    async def acquire(self, est_tokens: int) -> Permit:
        try:
            return await self._handle.acquire.remote(est_tokens)
        except ray.exceptions.RayError as exc:
            # Retryable: the actor restarts after a node failure, and the retry loop waits for it.
            raise ModelRequestError(f"rate limiter actor unavailable: {type(exc).__name__}") from None

    async def release(self, permit: Permit, actual_tokens: int | None) -> None:
        try:
            await self._handle.release.remote(permit, actual_tokens)
        except ray.exceptions.RayError as exc:  # a lost release only delays others until the permit TTL
            log.warning("rate limiter release failed: %s", type(exc).__name__)

    async def report_429(self, retry_after_s: float | None) -> None:
        try:
            await self._handle.report_429.remote(retry_after_s)
        except ray.exceptions.RayError as exc:
            log.warning("rate limiter pause not shared: %s", type(exc).__name__)


def as_async_limiter(limiter: Any) -> AsyncLimiter | None:
    """Wrap a ``TokenBucketLimiter`` or a ``RateLimiter`` actor handle for a client (None stays None)."""
    if limiter is None:
        return None
    if isinstance(limiter, TokenBucketLimiter):
        return _LocalAdapter(limiter)
    if isinstance(limiter, ray.actor.ActorHandle):
        return _ActorAdapter(limiter)
    return limiter


__all__ = [
    "Permit",
    "SpendLedger",
    "TokenBucketLimiter",
    "RateLimiter",
    "get_rate_limiter",
    "as_async_limiter",
    "AsyncLimiter",
    "NAMESPACE",
]
