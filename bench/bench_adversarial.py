"""The adversarial table: built-in and score-gaming agents on every task, plus the leak probe.

    python bench/bench_adversarial.py                       # all tasks, play seeds 500-507
    python bench/bench_adversarial.py --tasks JE-5,JE-7 --seeds 500-503 --no-probe

For each task: the mean score (and outcome) of ``random``, ``naive``, ``careful`` and each
adversary of ``jeval_ray.agents.adversarial`` over the play seeds, and the listing-only probe's
held-out decoy-vs-defect ROC AUC (trained on seeds 1000-1029, scored on 2000-2029). The
``surface_rule`` adversary plays the forest probe trained on the training seeds; ``flag_key``
plays with equal numbers of defects and decoys (3 + 3). Ends with the means over tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jeval_ray.agents import make_agent  # noqa: E402
from jeval_ray.agents.adversarial import SurfaceModel, make_adversary  # noqa: E402
from jeval_ray.env import JEEnv  # noqa: E402
from jeval_ray.episode import play_episode  # noqa: E402
from jeval_ray.tasks import TASK_IDS  # noqa: E402
from jeval_ray.world import generate_world  # noqa: E402

AGENTS = ("random", "naive", "careful", "submit_now", "farmer", "never_flag", "laundered_naive", "surface_rule",
          "flag_key")
TRAIN_SEEDS = range(1000, 1030)
TEST_SEEDS = range(2000, 2030)
FLAG_KEY_KNOBS = {"n_defects": 3, "n_decoys": 3}


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]


def play_one(task: str, agent: str, seed: int, probe=None) -> tuple[float, float]:
    knobs = FLAG_KEY_KNOBS if agent == "flag_key" else None
    env = JEEnv(task, knobs)
    if agent in ("random", "naive", "careful"):
        a = make_agent(agent, seed)
    elif agent == "flag_key":
        a = make_adversary(agent, seed, world=generate_world(task, seed, knobs))
    elif agent == "surface_rule":
        a = make_adversary(agent, seed, model=SurfaceModel(probe.world_scores(generate_world(task, seed))))
    else:
        a = make_adversary(agent, seed)
    out = asyncio.run(play_episode(env, a, seed))
    return out.score.score, out.score.outcome


def task_row(task: str, seeds: list[int], agents: tuple[str, ...], probe: bool) -> dict:
    from jeval_ray.agents.surface import Probe, probe_auc

    row: dict = {"task": task}
    train = [generate_world(task, s) for s in TRAIN_SEEDS]
    forest = Probe("forest", train) if ("surface_rule" in agents or probe) else None
    if probe:
        row["auc"] = probe_auc(train, [generate_world(task, s) for s in TEST_SEEDS])
    for a in agents:
        res = [play_one(task, a, s, forest) for s in seeds]
        row[a] = (statistics.fmean(r[0] for r in res), statistics.fmean(r[1] for r in res))
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(TASK_IDS))
    p.add_argument("--seeds", default="500-507", help="play seeds, e.g. 500-507")
    p.add_argument("--agents", default=",".join(AGENTS))
    p.add_argument("--no-probe", action="store_true", help="skip the leak probe's AUC")
    args = p.parse_args(argv)
    agents = tuple(args.agents.split(","))
    seeds = _seeds(args.seeds)
    t0 = time.perf_counter()
    rows = []
    print("score (outcome) per agent; auc = held-out decoy-vs-defect ROC AUC of the listing-only probe")
    print("| task | " + " | ".join(agents) + (" | auc logistic / forest |" if not args.no_probe else " |"))
    print("|---" * (len(agents) + 1 + (not args.no_probe)) + "|")
    for t in args.tasks.split(","):
        r = task_row(t, seeds, agents, not args.no_probe)
        rows.append(r)
        cells = [f"{r[a][0]:.3f} ({r[a][1]:.2f})" for a in agents]
        if not args.no_probe:
            cells.append(" / ".join("-" if v is None else f"{v:.2f}" for v in r["auc"].values()))
        print(f"| {t} | " + " | ".join(cells) + " |", flush=True)
    means = [f"{statistics.fmean(r[a][0] for r in rows):.3f} ({statistics.fmean(r[a][1] for r in rows):.2f})"
             for a in agents]
    print("| mean | " + " | ".join(means) + (" | |" if not args.no_probe else " |"))
    print(f"\n{len(rows)} tasks x {len(seeds)} seeds x {len(agents)} agents in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
