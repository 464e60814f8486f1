"""The year's balance of every task's worlds: sum of debits less sum of credits over the listing.

    python bench/bench_balance.py                    # every task, seeds 0-29
    python bench/bench_balance.py --tasks JE-1,JE-16 --seeds 0-99

Prints, per task, the largest and the mean absolute imbalance (USD) over the seeds and how many
worlds are out of balance by more than USD 0.005, then the worst world. The ERP posts only balanced
entries and the upload tools post each residual to a rounding or suspense account, so every figure
should be 0.00 (``tests/test_rounding_balance.py`` asserts it on fewer seeds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.compute as pc  # noqa: E402

from jeval_ray.tasks import TASK_IDS  # noqa: E402
from jeval_ray.world import generate_world  # noqa: E402


def imbalance(task_id: str, seed: int) -> float:
    """|sum of debits - sum of credits| of the world's listing, USD."""
    led = generate_world(task_id, seed).ledger
    return abs(round(pc.sum(led["debit"]).as_py() - pc.sum(led["credit"]).as_py(), 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default=",".join(TASK_IDS))
    ap.add_argument("--seeds", default="0-29")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    t0 = time.perf_counter()
    worst = (0.0, "", -1)
    print("| task | max imbalance | mean imbalance | worlds > 0.005 |\n|---|---|---|---|")
    for tid in a.tasks.split(","):
        got = [imbalance(tid, s) for s in seeds]
        worst = max(worst, max((v, tid, s) for s, v in zip(seeds, got)))
        print(f"| {tid} | {max(got):,.2f} | {statistics.mean(got):,.2f} | {sum(v > 0.005 for v in got)} |")
    where = f"{worst[1]} seed {worst[2]}: {worst[0]:,.2f}" if worst[0] > 0.005 else "none out of balance"
    print(f"\nworst: {where}; {len(seeds)} seeds per task in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
