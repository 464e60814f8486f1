"""Generate the per-task token profile (``jeval_ray/sweep/data/token_profile.json``) the forecast reads.

The reference solver (the built-in ``careful`` agent, played by the test server's ``careful`` brain
over the OpenAI wire, exactly as a sweep plays an endpoint model) plays every task and condition of
the default grid (``configs/local.yaml``: every available task x {full, withheld}) over profile
seeds, in this process (no Ray), and the profile keeps, per task and condition, the mean, median,
p90 and max per episode of requests, input tokens, cached input tokens, output tokens and the
largest single request. Its ``meta`` records the code commit, the seeds and the solver: the paging
careful solver at the LLM agent's defaults (every result paged to 20,000 characters, a 128k window).

Seeds: the profile takes seeds from 40000 up (``--seed-base``); ``bench/bench_forecast.py`` holds
out other seeds from 40000 up (from 40100 by default) to measure the forecast.

    python bench/bench_profile.py --seeds 3                  # writes the shipped profile
    python bench/bench_profile.py --seeds 2 --tasks JE-1 --out /tmp/p.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The LLM agent's defaults, as a sweep runs an endpoint model: the environment pages every result to 20,000
#: characters (valid JSON the brain parses) and the agent elides old results past a 128k window.
WHOLE = {"max_observation_chars": 20_000, "context_window": 128_000}
DEFAULT_OUT = ROOT / "jeval_ray" / "sweep" / "data" / "token_profile.json"


def grid_config(seeds: list[int], tasks: list[str] | None, models: list[dict]):
    """The embedded default grid's tasks and conditions, with these seeds and models."""
    from jeval_ray.sweep.config import load_sweep_config

    cfg = load_sweep_config(None)
    update = {"seeds": seeds, "models": [cfg.models[0].__class__.model_validate(m) for m in models]}
    if tasks:
        update["tasks"] = tasks
    return cfg.model_copy(update=update)


def endpoint(name: str, url: str, provider: str = "openai", **over) -> dict:
    return {"name": name, "provider": provider, "model": f"{name}-model", "base_url": url, **WHOLE,
            "timeout_s": 60, **over}


async def _play_cell(cell, entry: dict) -> dict:
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.sweep.agents import make_model_agent

    env = JEEnv(cell.task_id, cell.knobs, tuple(cell.tools_withheld), step_budget=cell.step_budget,
                keep_observations=False)
    agent = make_model_agent(entry, cell.seed)
    out = await play_episode(env, agent, cell.seed, timeout_s=600)
    reqs = [s.tokens_in for s in out.steps if s.tokens_in]
    return {"task_id": cell.task_id, "condition": cell.condition, "model": cell.model, "seed": cell.seed,
            "status": out.status, "termination": out.termination, "requests": len(reqs),
            "tokens_in": out.tokens_in or 0, "tokens_cached_in": out.tokens_cached_in or 0,
            "tokens_out": out.tokens_out or 0, "largest_request": max(reqs, default=0), "cost_usd": out.cost_usd,
            "outcome": out.score.outcome}


def play_cells(cells, entries: dict[str, dict], concurrency: int = 2, log=print) -> list[dict]:
    """Play ``cells`` in this process, ``concurrency`` at a time per model; one measure dict per episode.
    Anthropic-route models play one episode at a time (the Messages API carries no seed, and the
    test server tells concurrent conversations of one task apart by seed)."""

    async def main():
        sems = {m: asyncio.Semaphore(1 if e.get("provider") == "anthropic" else concurrency) for m, e in entries.items()}
        done = []
        t0 = time.monotonic()

        async def one(c):
            async with sems[c.model]:
                r = await _play_cell(c, entries[c.model])
                done.append(r)
                if len(done) % 10 == 0:
                    log(f"  {len(done)} episodes in {time.monotonic() - t0:.0f} s")
                return r

        return await asyncio.gather(*(one(c) for c in cells))

    return asyncio.run(main())


def code_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "jeval_ray"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build_profile(measures: list[dict], seeds: list[int], elapsed_s: float, commit: str):
    from jeval_ray.models.tokens import tokenizer_name
    from jeval_ray.sweep.forecast import Profile, profile_entry

    groups: dict[tuple[str, str], list[dict]] = {}
    for m in measures:
        groups.setdefault((m["task_id"], m["condition"]), []).append(m)
    entries = {k: profile_entry(v) for k, v in groups.items()}
    meta = {
        "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "code_commit": commit,
        "generator": "python bench/bench_profile.py " + " ".join(sys.argv[1:]),
        "solver": "the paging careful solver: the test server's careful brain over the OpenAI wire at the LLM "
                  "agent's defaults (every result paged to 20,000 characters, a 128k window)",
        "solver_short": "careful, paged at 20,000 characters",
        "seeds": seeds,
        "grid": "the embedded default (configs/local.yaml): every available task x {full, withheld}, default knobs",
        "tokenizer": tokenizer_name(),
        "cached": "the test server's prefix cache: the prompt tokens a request shares with the conversation's previous one",
        "episodes": len(measures),
        "not_completed": sum(1 for m in measures if m["status"] != "completed"),
        "elapsed_s": round(elapsed_s, 1),
    }
    return Profile(entries, meta)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=3, help="seeds per task and condition (default 3)")
    p.add_argument("--seed-base", type=int, default=40000, help="first profile seed (default 40000)")
    p.add_argument("--tasks", help="comma list of task ids (default: every available task)")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    from jeval_ray.sweep.grid import Grid
    from jeval_ray.testserver import LocalModelServer, builtin_brain

    seeds = list(range(args.seed_base, args.seed_base + args.seeds))
    commit = code_commit()  # the code that plays, before anything else changes the tree
    t0 = time.monotonic()
    with LocalModelServer(builtin_brain("careful")) as server:
        entry = endpoint("careful-profile", server.url)
        cfg = grid_config(seeds, args.tasks.split(",") if args.tasks else None, [entry])
        cells = list(Grid(cfg).cells())
        print(f"profile: {len(cells)} episodes ({len(seeds)} seeds)", file=sys.stderr)
        measures = play_cells(cells, {entry["name"]: entry}, args.concurrency,
                              log=lambda s: print(s, file=sys.stderr))
    profile = build_profile(measures, seeds, time.monotonic() - t0, commit)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(profile.to_dict(), f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {args.out}: {len(profile.entries)} (task, condition) entries from {len(measures)} episodes in "
          f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
