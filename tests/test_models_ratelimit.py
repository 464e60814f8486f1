"""The token-bucket limiter (fake clock), its effect on a real server, and the Ray actor wrapper."""

from __future__ import annotations

import asyncio
import math
import time

import pytest
import ray

from jeval_ray.models import ModelConfig, Permit, TokenBucketLimiter, get_rate_limiter, make_client
from jeval_ray.models.errors import ModelRequestError, RateLimitError
from jeval_ray.models.ratelimit import as_async_limiter
from jeval_ray.testserver import Faults, LocalModelServer

MESSAGES = [{"role": "system", "content": "brief"}, {"role": "user", "content": "go"}]


class FakeClock:
    """A clock that only moves when the limiter sleeps (or a test advances it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def limiter(clock: FakeClock, **kwargs) -> TokenBucketLimiter:
    return TokenBucketLimiter(clock=clock, sleep=clock.sleep, **kwargs)


# -- pure: fake clock -------------------------------------------------------------------------


def test_a_burst_never_exceeds_rpm_in_any_window():
    clock = FakeClock()
    lim = limiter(clock, rpm=120)
    grants = []

    async def burst() -> None:
        for _ in range(400):
            permit = await lim.acquire(0)
            grants.append(clock())
            lim.release(permit)

    asyncio.run(burst())
    for i, start in enumerate(grants):
        in_window = sum(1 for t in grants[i:] if t < start + 60.0)
        assert in_window <= 120
    # ...and it is not needlessly slow: 400 requests at ~120/min take a bit over 3 minutes.
    assert grants[-1] - grants[0] < 60 * 400 / 118 + 1


def test_first_requests_go_at_once_then_are_paced():
    clock = FakeClock()
    lim = limiter(clock, rpm=600, burst_fraction=0.01)  # capacity 6, refill 594/min
    first = [lim.try_acquire() for _ in range(6)]
    assert all(isinstance(p, Permit) for p in first)
    wait = lim.try_acquire()
    assert isinstance(wait, float) and wait == pytest.approx(60 / 594, rel=1e-6)


def test_tokens_are_estimated_then_reconciled():
    clock = FakeClock()
    lim = limiter(clock, tpm=1000, burst_fraction=0.1)  # capacity 100 tokens
    permit = lim.try_acquire(100)
    assert isinstance(permit, Permit)
    assert lim.try_acquire(80) > 0  # the estimate holds the budget...
    lim.release(permit, actual_tokens=20)  # ...until usage shows the call was small
    assert isinstance(lim.try_acquire(80), Permit)


def test_a_request_bigger_than_the_burst_is_granted_and_leaves_debt():
    clock = FakeClock()
    lim = limiter(clock, tpm=600, burst_fraction=1 / 60)  # capacity 10, refill 590/min
    assert isinstance(lim.try_acquire(50), Permit)
    wait = lim.try_acquire(1)
    assert wait == pytest.approx(41 / (590 / 60), rel=1e-6)


def test_pause_blocks_everyone_until_its_end():
    clock = FakeClock()
    lim = limiter(clock, rpm=1000)
    lim.report_429(2.0)
    assert lim.try_acquire() == pytest.approx(2.0)
    lim.pause_until(clock() + 1.0)  # a shorter pause does not shorten the running one
    assert lim.try_acquire() == pytest.approx(2.0)
    clock.now += 2.0
    assert isinstance(lim.try_acquire(), Permit)


def test_concurrency_cap_waits_for_a_release():
    clock = FakeClock()
    lim = limiter(clock, max_concurrency=2)

    async def scenario() -> None:
        a = await lim.acquire()
        await lim.acquire()
        assert math.isinf(lim.try_acquire())
        third = asyncio.create_task(lim.acquire())
        await asyncio.sleep(0.01)
        assert not third.done()
        lim.release(a)
        permit = await asyncio.wait_for(third, 1.0)
        assert isinstance(permit, Permit)

    asyncio.run(scenario())
    assert lim.stats()["in_flight"] == 2


def test_a_permit_never_released_stops_counting_after_its_ttl():
    clock = FakeClock()
    lim = limiter(clock, max_concurrency=1, permit_ttl_s=60)
    assert isinstance(lim.try_acquire(), Permit)  # its holder is cancelled and never releases
    assert math.isinf(lim.try_acquire())
    clock.now += 61
    assert isinstance(lim.try_acquire(), Permit)


def test_releasing_an_unknown_permit_is_harmless():
    lim = limiter(FakeClock(), rpm=10, max_concurrency=1)
    lim.release(Permit(999, 5), actual_tokens=5)
    assert isinstance(lim.try_acquire(), Permit)


# -- real loopback HTTP ------------------------------------------------------------------------


def config_for(server: LocalModelServer, **overrides) -> ModelConfig:
    base = dict(name="local", model="m", base_url=server.url, max_attempts=1, backoff_base_s=0.05, timeout_s=5)
    base.update(overrides)
    return ModelConfig(**base)


async def burst(server: LocalModelServer, n: int, lim=None) -> list:
    client = make_client(config_for(server), limiter=lim)
    try:
        return await asyncio.gather(*(client.chat(MESSAGES) for _ in range(n)), return_exceptions=True)
    finally:
        await client.aclose()


def test_without_a_limiter_a_burst_trips_the_server_rpm():
    with LocalModelServer(faults=Faults(rpm_limit=10, rpm_window_s=1.0)) as server:
        results = asyncio.run(burst(server, 14))
    assert server.rpm_rejections > 0
    assert any(isinstance(r, RateLimitError) for r in results)


def test_the_limiter_keeps_a_burst_under_the_servers_rpm():
    # The server allows 10 per second; the limiter promises at most 7 (the margin absorbs
    # requests that a busy test machine delays between the limiter and the server).
    with LocalModelServer(faults=Faults(rpm_limit=10, rpm_window_s=1.0)) as server:
        lim = TokenBucketLimiter(rpm=7, period_s=1.0, burst_fraction=0.2)
        results = asyncio.run(burst(server, 12, lim))
    assert server.rpm_rejections == 0
    assert all(not isinstance(r, Exception) for r in results)


def test_a_429_pauses_every_client_sharing_the_limiter():
    faults = Faults(retry_after_s=None, retry_after_ms=400)
    with LocalModelServer(faults=faults) as server:
        lim = TokenBucketLimiter(rpm=10_000)
        faults.queue("rate_limit", 1)

        async def scenario() -> None:
            a = make_client(config_for(server, max_attempts=3), limiter=lim)
            b = make_client(config_for(server, max_attempts=3), limiter=lim)
            first = asyncio.create_task(a.chat(MESSAGES))
            deadline = time.monotonic() + 5
            while lim.paused_until < time.monotonic() and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            await b.chat(MESSAGES)  # started during the pause: must wait it out
            await first
            await a.aclose()
            await b.aclose()

        asyncio.run(scenario())
        log = server.requests
    rejected = next(r for r in log if r.status == 429)
    later = [r for r in log if r.arrived > rejected.answered]
    assert len(later) == 2
    assert all(r.arrived >= rejected.answered + 0.4 for r in later)
    assert server.retry_after_violations() == []


# -- the Ray actor -------------------------------------------------------------------------------
# Each actor is a worker process: the tests share one endpoint's actor to stay fast.

ENDPOINT = ("test-endpoint-a", 100, 10_000, 4)


def test_one_named_limiter_per_endpoint_and_limits(ray_local):
    a = get_rate_limiter(*ENDPOINT, period_s=1.0)
    again = get_rate_limiter(*ENDPOINT, period_s=1.0)
    stricter = get_rate_limiter("test-endpoint-a", 50, 10_000, 4, period_s=1.0)
    assert a._actor_id == again._actor_id
    assert a._actor_id != stricter._actor_id  # changed limits are never served by a stale actor


def test_the_actor_pauses_all_callers_after_a_429(ray_local):
    handle = get_rate_limiter(*ENDPOINT, period_s=1.0)
    remote = as_async_limiter(handle)

    async def scenario() -> float:
        await remote.report_429(0.3)
        started = time.monotonic()
        permit = await remote.acquire(10)
        await remote.release(permit, 5)
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 0.25
    assert ray.get(handle.stats.remote())["in_flight"] == 0


def test_a_client_can_share_the_cluster_limiter(ray_local):
    handle = get_rate_limiter(*ENDPOINT, period_s=1.0)
    granted_before = ray.get(handle.stats.remote())["granted"]
    with LocalModelServer() as server:

        async def scenario() -> list:
            client = make_client(config_for(server), limiter=handle)
            try:
                return await asyncio.gather(*(client.chat(MESSAGES) for _ in range(3)))
            finally:
                await client.aclose()

        results = asyncio.run(scenario())
    assert [r.text for r in results] == ["Done."] * 3
    stats = ray.get(handle.stats.remote())
    assert stats["granted"] == granted_before + 3 and stats["in_flight"] == 0


def test_an_unreachable_limiter_actor_is_a_retryable_error(ray_local):
    handle = get_rate_limiter(*ENDPOINT, period_s=1.0)
    ray.kill(handle, no_restart=True)
    # ray.kill returns before the actor is gone: a call sent at once can still be served (seen under load)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(handle.__ray_ready__.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.05)
    with pytest.raises(ModelRequestError, match="rate limiter actor unavailable") as info:
        asyncio.run(as_async_limiter(handle).acquire(1))
    assert info.value.retryable

def test_a_large_request_is_not_starved_by_a_stream_of_small_ones():
    clock = FakeClock()
    lim = limiter(clock, tpm=600)  # burst 10 tokens, refill 590/min
    order = []

    async def small(i: int) -> None:
        for _ in range(30):
            lim.release(await lim.acquire(2))
            order.append(f"s{i}")

    async def large() -> None:
        await asyncio.sleep(0)  # arrives after the small callers started
        lim.release(await lim.acquire(10))
        order.append("L")

    async def main() -> None:
        await asyncio.gather(small(0), small(1), small(2), large())

    asyncio.run(main())
    assert order.index("L") < 10  # served in its turn, not after every small request


def test_waiting_callers_are_served_in_arrival_order():
    clock = FakeClock()
    lim = limiter(clock, rpm=60)  # one request per ~second once the burst is spent
    order = []

    async def caller(i: int) -> None:
        await asyncio.sleep(0.001 * i)  # real time: arrival order 0, 1, 2, ...
        lim.release(await lim.acquire(0))
        order.append(i)

    async def main() -> None:
        await asyncio.gather(*(caller(i) for i in range(8)))

    asyncio.run(main())
    assert order == list(range(8))
