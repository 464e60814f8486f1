"""Rate-limit utilisation: our limiter vs retry-on-429 alone, against a server enforcing R requests/window.

Issue 5's benchmark. A ``LocalModelServer`` on 127.0.0.1 enforces ``--rpm`` requests per sliding
``--window`` seconds (429 with the wait until a slot frees as ``Retry-After``/``retry-after-ms``)
and answers every admitted request after ``--latency-ms``. ``--callers`` concurrent callers (one
``OpenAICompatClient`` each, as one episode each would have) call it back to back for
``--duration`` seconds, once per arm, each arm against a fresh server:

- ``limiter``: the clients share one in-process ``TokenBucketLimiter(rpm=R, period_s=window)``;
- ``retry``:   no limiter, the retry loop alone (it honours Retry-After);
- ``actor``:   (``--actor``) the clients share the cluster-wide ``RateLimiter`` Ray actor.

Scaling: the provider window of 60 s is shortened to ``--window`` (default 10 s) so the run takes
under a minute; every other time constant of the retry policy is scaled by the same factor
(``backoff_base_s`` = 1 s x window/60, ``backoff_max_s`` = 60 s x window/60, ``max_total_wait_s``
= 300 s x window/60; ``max_attempts`` stays 6, the ModelConfig defaults). R is requests per window.

Printed per arm, from the server's request log over the measured span: the achieved rate of
answered (200) requests as a % of R per window, the % of requests the server answered 429, the
most 200s in any window and in any 1 s (burstiness), the calls that failed for good after the
bounded retries, and the median / longest call (limiter wait + retries + request).

Run:    python bench/bench_ratelimit.py                         (R=600 per 10 s, 64 callers, 50 ms, 20 s per arm)
        python bench/bench_ratelimit.py --actor                 (adds the Ray actor arm; starts a local Ray)
Target: limiter arm >= 95% of R achieved with <= 1% of requests answered 429.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from dataclasses import dataclass

from jeval_ray.models import ModelConfig, ModelError, TokenBucketLimiter, make_client
from jeval_ray.testserver import BrainReply, Faults, LocalModelServer, ScriptedBrain, ToolCall

MESSAGES = [{"role": "system", "content": "You are an auditor."}, {"role": "user", "content": "Begin."}]
TOOLS = [{"type": "function", "function": {"name": "list_documents", "description": "List documents.",
                                           "parameters": {"type": "object", "properties": {}}}}]


@dataclass
class ArmResult:
    name: str
    requests: int
    ok: int
    rejected_429: int
    other_errors: int
    calls_ok: int
    calls_failed: int
    span_s: float
    achieved_pct: float
    pct_429: float
    max_in_any_window: int
    peak_per_s: int
    call_p50_s: float
    call_max_s: float


class _Stop(Exception):
    """Raised by a wait that would end after the arm's deadline: the caller stops between requests."""


def _sleep_until(times: dict[str, float]):
    """An ``asyncio.sleep`` that refuses to sleep past ``times["deadline"]`` (no request is cut mid-flight)."""

    async def sleep(seconds: float) -> None:
        if time.monotonic() + seconds >= times["deadline"]:
            raise _Stop
        await asyncio.sleep(seconds)

    return sleep


def _config(url: str, args: argparse.Namespace) -> ModelConfig:
    scale = args.window / 60.0
    return ModelConfig(name="bench", model="bench", base_url=url, max_tokens=16, timeout_s=30,
                       max_attempts=6, backoff_base_s=1.0 * scale, backoff_max_s=60.0 * scale,
                       max_total_wait_s=300.0 * scale)


def _max_in_window(arrivals: list[float], window: float) -> int:
    """The largest number of admitted requests whose arrivals fall in one window (the server's rule)."""
    best, j = 0, 0
    for i, t in enumerate(arrivals):
        while arrivals[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


async def _run_arm(name: str, args: argparse.Namespace, make_limiter) -> ArmResult:
    faults = Faults(probabilities={"slow": 1.0}, delay_s=args.latency_ms / 1000.0, rpm_limit=args.rpm,
                    rpm_window_s=args.window, seed=0)
    brain = ScriptedBrain([BrainReply(tool_calls=[ToolCall("list_documents", {})])])
    with LocalModelServer(brain, faults) as server:
        config = _config(server.url, args)
        times = {"deadline": float("inf")}
        sleep = _sleep_until(times)
        limiter = make_limiter(config, sleep)
        # Clients first (each builds an httpx pool, ~25 ms apiece): the measured span starts after.
        clients = [make_client(config, limiter=limiter, sleep=sleep) for _ in range(args.callers)]
        calls = {"ok": 0, "failed": 0}
        durations: list[float] = []
        t0 = time.monotonic()
        deadline = times["deadline"] = t0 + args.duration

        async def caller(client) -> None:
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    await client.chat(MESSAGES, TOOLS)
                    if time.monotonic() <= deadline:  # the actor arm's last waiters may finish later
                        calls["ok"] += 1
                        durations.append(time.monotonic() - started)
                except ModelError:
                    calls["failed"] += 1
                except _Stop:
                    return

        tasks = [asyncio.create_task(caller(c)) for c in clients]
        # Callers stop at the deadline between requests; a request in flight is let finish.
        _, late = await asyncio.wait(tasks, timeout=args.duration + 2.0)
        for t in late:  # waiting on the actor limiter past the deadline: nothing is in flight
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        t1 = deadline  # callers whose next wait would pass the deadline stopped early: no request of theirs is lost
        await asyncio.gather(*(c.aclose() for c in clients))
        log = [r for r in server.requests if t0 <= r.arrived <= t1]
    ok = [r for r in log if r.status == 200]
    n429 = sum(1 for r in log if r.status == 429)
    span = t1 - t0
    allowed = args.rpm * span / args.window
    return ArmResult(
        name=name, requests=len(log), ok=len(ok), rejected_429=n429,
        other_errors=sum(1 for r in log if r.status not in (200, 429)),
        calls_ok=calls["ok"], calls_failed=calls["failed"], span_s=span,
        achieved_pct=100.0 * len(ok) / allowed, pct_429=100.0 * n429 / max(1, len(log)),
        max_in_any_window=_max_in_window(sorted(r.arrived for r in ok), args.window),
        peak_per_s=_max_in_window(sorted(r.arrived for r in ok), 1.0),
        call_p50_s=statistics.median(durations) if durations else float("nan"),
        call_max_s=max(durations, default=float("nan")),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rpm", type=int, default=600, help="R: requests the server admits per window (default 600)")
    ap.add_argument("--window", type=float, default=10.0, help="the server's sliding window in s (60 s scaled down)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds measured per arm")
    ap.add_argument("--callers", type=int, default=64, help="concurrent callers (episodes)")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="server answer latency")
    ap.add_argument("--actor", action="store_true", help="also measure the Ray RateLimiter actor (starts a local Ray)")
    args = ap.parse_args()
    logging.getLogger("jeval_ray.models").setLevel(logging.ERROR)  # one WARNING per retry otherwise

    arms = [("limiter (TokenBucketLimiter)", 
             lambda cfg, sleep: TokenBucketLimiter(rpm=args.rpm, period_s=args.window, sleep=sleep)),
            ("retry-on-429 alone", lambda cfg, sleep: None)]
    if args.actor:
        import ray

        from jeval_ray.models import get_rate_limiter

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                 object_store_memory=100 * 1024**2)
        arms.insert(1, ("limiter (RateLimiter actor)",
                        lambda cfg, sleep: get_rate_limiter(cfg.endpoint_key, args.rpm, None, None, period_s=args.window)))

    print(f"# rate-limit utilisation: server admits R={args.rpm} requests per {args.window:g} s sliding window "
          f"(a 60 s window scaled by {args.window / 60:.3g}; retry backoff/total-wait scaled alike), "
          f"{args.latency_ms:g} ms latency, {args.callers} concurrent callers, {args.duration:g} s per arm")
    results = [asyncio.run(_run_arm(name, args, make)) for name, make in arms]
    print(f"| arm | requests | answered 200 | answered 429 | achieved % of R | % answered 429 | "
          f"max 200s in one window | peak 200s in 1 s | calls ok | calls failed | call p50 s | call max s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.name} | {r.requests} | {r.ok} | {r.rejected_429} | {r.achieved_pct:.1f} | {r.pct_429:.2f} | "
              f"{r.max_in_any_window} | {r.peak_per_s} | {r.calls_ok} | {r.calls_failed} | {r.call_p50_s:.2f} | {r.call_max_s:.2f} |")
    lim = results[0]
    met = lim.achieved_pct >= 95.0 and lim.pct_429 <= 1.0
    print(f"target (limiter: >= 95% of R, <= 1% answered 429): {'MET' if met else 'MISSED'} "
          f"({lim.achieved_pct:.1f}% of R, {lim.pct_429:.2f}% 429)")


if __name__ == "__main__":
    main()
