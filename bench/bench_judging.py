"""LLM judging throughput under an RPM limit, and the jury's cost per 1,000 episodes (issue 16).

Packets: ``--seeds`` episodes of every task by each of ``--agents`` (built-in agents, played
in-process), so prompts have the sizes real dispositions give (an L4 careful episode carries
dozens of dispositions and the cited documents).

Throughput: a ``LocalModelServer`` on 127.0.0.1 admits R = ``--rpm`` requests per sliding
``--window`` seconds (429 with the wait until a slot frees) and answers each judge request after
``--latency-ms`` (the judge route scores it). ``--callers`` concurrent judgments (``LLMJudge``,
one client each, sharing one ``TokenBucketLimiter(rpm=R, period_s=window)`` as the judge pool's
judges share the endpoint's limiter) run back to back for ``--duration`` seconds over the packets.
As in ``bench_ratelimit.py``, the 60 s provider window is scaled to ``--window`` and the retry
policy's time constants by the same factor. Printed: judge requests answered 200 per window as a %
of R (goodput), the % answered 429, judgments completed (ok / unscored) and their median time.

Cost: every packet is judged once through the server (no limit); the prompt and completion
tokens the server reports (cl100k_base, ``jeval_ray.models.tokens``) per judgment, by task, give the cost
of one judgment at each judge model's configured price in ``--config`` (default
configs/judged_openai.yaml), and the jury's cost per 1,000 episodes for a grid that plays every
task equally often, with 3 judgments per L4 episode and 1 otherwise, spread evenly over the jury.
The test server's answers carry one short comment per disposition; a real judge writing longer
comments costs more output tokens (the output share is printed).

Run:    python bench/bench_judging.py                  (R=120 per 10 s, 32 callers, 200 ms, 20 s)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict

import yaml

from jeval_ray.episode import play
from jeval_ray.models import ModelConfig, TokenBucketLimiter
from jeval_ray.scoring.llm_judge import LLMJudge
from jeval_ray.tasks import TASK_IDS, get_task
from jeval_ray.testserver import Faults, LocalModelServer

RUBRIC = "global_rubric_v1"


def packets(agents: list[str], seeds: int) -> list[tuple[str, dict]]:
    out = []
    for task in TASK_IDS:
        for agent in agents:
            for seed in range(seeds):
                out.append((task, play(task, agent, seed=seed).judge_packet))
    return out


def scaled(window: float) -> dict:
    f = window / 60.0
    return {"backoff_base_s": 1.0 * f, "backoff_max_s": 60.0 * f, "max_total_wait_s": 300.0 * f, "timeout_s": 30.0}


async def throughput(pks: list[tuple[str, dict]], rpm: int, window: float, callers: int, latency_ms: float,
                     duration: float) -> dict:
    faults = Faults(probabilities={"slow": 1.0}, delay_s=latency_ms / 1000.0, rpm_limit=rpm, rpm_window_s=window)
    with LocalModelServer(faults=faults) as server:
        limiter = TokenBucketLimiter(rpm=rpm, period_s=window)
        cfg = ModelConfig(name="judge", model="judge-a", base_url=server.url, **scaled(window))
        judges = [LLMJudge("judge", cfg, limiter=limiter) for _ in range(callers)]
        results: list[tuple[str, float]] = []
        start = time.monotonic()
        stop = start + duration

        async def caller(i: int) -> None:
            k = i
            while time.monotonic() < stop:
                _task, packet = pks[k % len(pks)]
                k += callers
                t0 = time.monotonic()
                j = await judges[i].judge(packet, rubric=RUBRIC, seed=k)
                results.append((j.status, time.monotonic() - t0))

        await asyncio.gather(*(caller(i) for i in range(callers)))
        end = time.monotonic()
        for j in judges:
            await j.aclose()
        log = [r for r in server.requests if start <= r.arrived <= end]
    ok200 = [r for r in log if r.status == 200]
    span = end - start
    return {"requests": len(log), "ok200": len(ok200), "r429": sum(r.status == 429 for r in log), "span": span,
            "goodput_pct": 100.0 * len(ok200) / (rpm * span / window),
            "judgments_ok": sum(s == "ok" for s, _ in results), "unscored": sum(s != "ok" for s, _ in results),
            "p50": statistics.median(t for _, t in results) if results else 0.0,
            "per_min": 60.0 * sum(s == "ok" for s, _ in results) / span}


async def token_costs(pks: list[tuple[str, dict]]) -> dict[str, tuple[float, float]]:
    """task -> mean (prompt tokens, completion tokens) of one judgment."""
    per: dict[str, list[tuple[int, int]]] = defaultdict(list)
    with LocalModelServer() as server:
        judge = LLMJudge("judge", ModelConfig(name="judge", model="judge-a", base_url=server.url))
        for i, (task, packet) in enumerate(pks):
            j = await judge.judge(packet, rubric=RUBRIC, seed=i)
            per[task].append((j.tokens_in, j.tokens_out))
        await judge.aclose()
    return {t: (statistics.fmean(a for a, _ in v), statistics.fmean(b for _, b in v)) for t, v in per.items()}


def jury_cost(tokens: dict[str, tuple[float, float]], config: str) -> tuple[list[dict], float, float]:
    cfg = yaml.safe_load(open(config, encoding="utf-8"))
    scoring = cfg["scoring"]
    models = {m["name"]: m for m in scoring["judge_models"]}
    jury = [models[n] for n in scoring["judges"]]
    rows, total, out_share = [], 0.0, []
    for task in TASK_IDS:
        n = 3 if get_task(task).tier == "L4" else 1
        tin, tout = tokens[task]
        per_judgment = statistics.fmean(
            (tin * m["price"]["input_per_mtok"] + tout * m["price"]["output_per_mtok"]) / 1e6 for m in jury)
        out_share.append(statistics.fmean(tout * m["price"]["output_per_mtok"] / (
            tin * m["price"]["input_per_mtok"] + tout * m["price"]["output_per_mtok"]) for m in jury))
        rows.append({"task": task, "judgments": n, "tokens_in": tin, "tokens_out": tout, "usd_per_episode": n * per_judgment})
        total += n * per_judgment
    per_1000 = 1000.0 * total / len(TASK_IDS)
    return rows, per_1000, statistics.fmean(out_share)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rpm", type=int, default=120, help="requests per window the server admits (R)")
    p.add_argument("--window", type=float, default=10.0)
    p.add_argument("--callers", type=int, default=32)
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--agents", default="careful,naive")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--config", default="configs/judged_openai.yaml")
    args = p.parse_args()
    t0 = time.perf_counter()
    pks = packets(args.agents.split(","), args.seeds)
    print(f"{len(pks)} packets ({args.agents} x {len(TASK_IDS)} tasks x {args.seeds} seeds) in {time.perf_counter() - t0:.1f} s")
    r = asyncio.run(throughput(pks, args.rpm, args.window, args.callers, args.latency_ms, args.duration))
    print(f"throughput: R={args.rpm}/{args.window:g}s, {args.callers} callers, {args.latency_ms:g} ms, {r['span']:.1f} s: "
          f"{r['requests']} requests, {r['ok200']} answered 200 ({r['goodput_pct']:.1f}% of R), {r['r429']} answered 429 "
          f"({100.0 * r['r429'] / max(1, r['requests']):.2f}%); judgments ok {r['judgments_ok']} "
          f"({r['per_min']:.0f}/min), unscored {r['unscored']}, p50 {r['p50']:.2f} s")
    tokens = asyncio.run(token_costs(pks))
    rows, per_1000, out_share = jury_cost(tokens, args.config)
    print("| task | judgments | prompt tokens | completion tokens | jury USD per episode |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['task']} | {row['judgments']} | {row['tokens_in']:.0f} | {row['tokens_out']:.0f} | "
              f"{row['usd_per_episode']:.5f} |")
    print(f"jury cost per 1,000 episodes ({args.config}, every task equally often): {per_1000:.2f} USD "
          f"(output tokens {100 * out_share:.0f}% of it)")


if __name__ == "__main__":
    main()
