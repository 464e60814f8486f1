"""The leaderboard: per condition and model, mean scores with their spread, from a run's Parquet.

``python -m jeval_ray.report <run_dir>`` prints it for any finished (or partial) run;
``--json`` prints the rows. Reads the deduplicated episodes dataset (see ``jeval_ray.store.reader``).
Withheld-tool conditions are a separate variant and are ranked separately, never mixed with ``full``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict

import pyarrow as pa

MIN_SEEDS_FOR_VARIANCE = 5
TIERS = ("L1", "L2", "L3", "L4")
_COLS = ["condition", "model", "agent", "task_id", "tier", "seed", "status", "score", "outcome", "process", "rationale",
         "fabrications", "n_steps", "tokens_in", "tokens_out", "cost_usd", "judge_cost_usd"]


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def leaderboard_rows(episodes: pa.Table) -> list[dict]:
    """One row per (condition, model): episodes, failures, mean score and 95% CI, parts, tiers, cost.

    The CI is 1.96 x the standard error of the per-seed mean scores (each seed averaged over
    tasks), so it reflects seed-to-seed variance; with fewer than 5 seeds it is left out.
    """
    cols = [c for c in _COLS if c in episodes.column_names]
    rows = episodes.select(cols).to_pylist()
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["condition"], r["model"])].append(r)
    out = []
    for (cond, model), rs in groups.items():
        done = [r for r in rs if r["status"] == "completed" and r["score"] is not None]
        by_seed: dict[int, list[float]] = defaultdict(list)
        for r in done:
            by_seed[r["seed"]].append(r["score"])
        seed_means = [sum(v) / len(v) for v in by_seed.values()]
        ci = None
        if len(seed_means) >= MIN_SEEDS_FOR_VARIANCE:
            m = sum(seed_means) / len(seed_means)
            sd = math.sqrt(sum((x - m) ** 2 for x in seed_means) / (len(seed_means) - 1))
            ci = 1.96 * sd / math.sqrt(len(seed_means))
        row = {
            "condition": cond, "model": model, "agent": rs[0].get("agent"), "episodes": len(rs), "completed": len(done),
            "failed": sum(r["status"] == "failed" for r in rs), "seeds": len(by_seed),
            "score": _mean([r["score"] for r in done]), "score_ci95": ci,
            "outcome": _mean([r["outcome"] for r in done]), "process": _mean([r["process"] for r in done]),
            "rationale": _mean([r["rationale"] for r in done if r["rationale"] is not None]),
            "fabrications": sum(r["fabrications"] or 0 for r in done),
            "steps": _mean([r["n_steps"] for r in done]),
            "tokens": sum((r.get("tokens_in") or 0) + (r.get("tokens_out") or 0) for r in rs),
            "cost_usd": sum((r.get("cost_usd") or 0) + (r.get("judge_cost_usd") or 0) for r in rs),
        }
        for tier in TIERS:
            row[tier] = _mean([r["score"] for r in done if r["tier"] == tier])
        out.append(row)
    out.sort(key=lambda r: (r["condition"] != "full", r["condition"], -(r["score"] if r["score"] is not None else -1)))
    return out


def variance_warning(rows: list[dict]) -> str | None:
    few = min((r["seeds"] for r in rows), default=0)
    if rows and few < MIN_SEEDS_FOR_VARIANCE:
        return (f"warning: only {few} seed(s) per model; variance is not measurable with fewer than "
                f"{MIN_SEEDS_FOR_VARIANCE} seeds (no confidence intervals shown)")
    return None


def _fmt(x, nd=3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def render(rows: list[dict], console=None, title: str = "jeval_ray leaderboard") -> None:
    """Print the leaderboard with rich, one table per condition."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal or console.width < 150:
            console = Console(width=160)  # logs and narrow terminals: wrap rather than truncate to "…"
    for cond in dict.fromkeys(r["condition"] for r in rows):
        t = Table(title=f"{title} - condition: {cond}")
        for c in ("rank", "model", "score", "±95%", "outcome", "process", "rationale", *TIERS, "episodes", "failed",
                  "fabrications", "steps", "tokens", "cost $"):
            t.add_column(c, justify="left" if c == "model" else "right")
        for i, r in enumerate((r for r in rows if r["condition"] == cond), 1):
            t.add_row(str(i), r["model"], _fmt(r["score"]), _fmt(r["score_ci95"]), _fmt(r["outcome"]), _fmt(r["process"]),
                      _fmt(r["rationale"]), *(_fmt(r[x], 2) for x in TIERS), str(r["episodes"]), str(r["failed"]),
                      str(r["fabrications"]), _fmt(r["steps"], 1), str(r["tokens"]), f"{r['cost_usd']:.4f}")
        console.print(t)
    warn = variance_warning(rows)
    if warn:
        console.print(f"[yellow]{warn}[/yellow]")


def load_rows(run_dir: str) -> list[dict]:
    from jeval_ray.store.reader import read_dataset

    return leaderboard_rows(read_dataset(run_dir, "episodes"))


def print_leaderboard(run_dir: str, console=None) -> list[dict]:
    """Read a run's episodes, print the leaderboard, and return its rows."""
    rows = load_rows(run_dir)
    if not rows:
        (console.print if console else print)(f"no episodes in {run_dir}")
        return rows
    render(rows, console)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jeval_ray.report",
                                 description="Print the leaderboard of a sweep run from its Parquet output.")
    ap.add_argument("run_dir", help="the run's directory: <out>/<run_id> (local path or filesystem URI)")
    ap.add_argument("--json", action="store_true", help="print the leaderboard rows as JSON")
    args = ap.parse_args(argv)
    try:
        rows = load_rows(args.run_dir)
    except (OSError, ValueError, pa.ArrowException) as exc:
        print(f"error: cannot read {args.run_dir}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
    elif rows:
        render(rows)
    else:
        print(f"no episodes in {args.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
