"""Do default-knob worlds always generate, and balance? Failures, defect and decoy counts, time per world.

    python bench/bench_generate.py --tasks JE-13,JE-9 --seeds 40000-41999
    python bench/bench_generate.py --seeds 40000-40999 --jobs 2        # every task, two processes
    python bench/bench_generate.py --tasks JE-9 --seeds 40000-40099 --knobs '{"n_defects": 8}'

For each task: the worlds generated, the failures (a ``ConfigError`` or any other exception, or a
world whose year, an entry or the closing trial balance is out of balance by more than USD 0.005,
``jeval_ray.world.out_of_balance``; the first few seeds and their messages are printed), the min /
median / max number of defects and of decoys over the worlds that generated, and the mean milliseconds per world (generation alone, in
the process that made it). ``--knobs`` is a JSON object of knobs applied to every task (default:
none, the default knobs). ``--jobs N`` spreads the seeds over N processes (default 1). Seeds are a
range ``A-B`` or one seed; seeds 7000-39999 are held out: measure on them, do not tune on them.
Exits 1 when any world failed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jeval_ray.tasks import TASK_IDS  # noqa: E402
from jeval_ray.world import generate_world, out_of_balance  # noqa: E402

SHOWN_FAILURES = 5


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    try:
        seeds = list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise SystemExit(f"error: --seeds: expected A-B (e.g. 40000-40999) or one seed, got {text!r}") from None
    if not seeds:
        raise SystemExit(f"error: --seeds: the range {text!r} is empty")
    return seeds


def _tasks(text: str | None) -> list[str]:
    if not text:
        return list(TASK_IDS)
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASK_IDS]
    if unknown:
        raise SystemExit(f"error: --tasks: unknown task ids {', '.join(unknown)}; known: {', '.join(TASK_IDS)}")
    return tasks


Result = tuple[str, int, int, int, float, str | None]


def one_world(job: tuple[str, int, dict]) -> Result:
    """``(task, seed, n_defects, n_decoys, seconds, error)`` of one world; error is None when it generated
    and balances (the balance check is not timed)."""
    task, seed, knobs = job
    t0 = time.perf_counter()
    try:
        w = generate_world(task, seed, knobs or None)
    except Exception as exc:  # a failure is what this script counts, whatever its class
        return task, seed, -1, -1, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
    took = time.perf_counter() - t0
    off = out_of_balance(w)
    return task, seed, len(w.defects), len(w.decoys), took, f"out of balance: {off}" if off else None


def _range_text(values: list[int]) -> str:
    if not values:
        return "-"
    return f"{min(values)} / {statistics.median(values):g} / {max(values)}"


def table(results: list[Result], tasks: list[str]) -> tuple[str, int]:
    """The markdown table of ``results`` and the number of failures."""
    lines = ["| task | worlds | failures | defects min / median / max | decoys min / median / max | ms / world |",
             "|---|---:|---:|---|---|---:|"]
    notes: list[str] = []
    failed = 0
    for task in tasks:
        rows = [r for r in results if r[0] == task]
        ok = [r for r in rows if r[5] is None]
        bad = [r for r in rows if r[5] is not None]
        failed += len(bad)
        ms = 1000 * statistics.fmean(r[4] for r in rows) if rows else 0.0
        lines.append(f"| {task} | {len(rows)} | {len(bad)} | {_range_text([r[2] for r in ok])} | "
                     f"{_range_text([r[3] for r in ok])} | {ms:.1f} |")
        for r in bad[:SHOWN_FAILURES]:
            notes.append(f"- {task} seed {r[1]}: {r[5]}")
        if len(bad) > SHOWN_FAILURES:
            notes.append(f"- {task}: {len(bad) - SHOWN_FAILURES} more failures (seeds "
                         f"{', '.join(str(r[1]) for r in bad[SHOWN_FAILURES:SHOWN_FAILURES + 20])}"
                         f"{' ...' if len(bad) > SHOWN_FAILURES + 20 else ''})")
    text = "\n".join(lines)
    if notes:
        text += "\n\nFailures (first seeds of each task):\n" + "\n".join(notes)
    return text, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: every task)")
    ap.add_argument("--seeds", default="40000-40999", help="seed range A-B or one seed (default 40000-40999)")
    ap.add_argument("--knobs", default="", help="a JSON object of knobs for every task (default: default knobs)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    args = ap.parse_args(argv)
    tasks, seeds = _tasks(args.tasks), _seeds(args.seeds)
    try:
        knobs = json.loads(args.knobs) if args.knobs else {}
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: --knobs: not JSON ({exc}); write e.g. '{{\"n_defects\": 8}}'") from None
    if not isinstance(knobs, dict):
        raise SystemExit("error: --knobs: expected a JSON object such as '{\"n_defects\": 8}'")
    if args.jobs < 1:
        raise SystemExit(f"error: --jobs: expected at least 1, got {args.jobs}")
    jobs = [(t, s, knobs) for t in tasks for s in seeds]
    t0 = time.perf_counter()
    if args.jobs == 1:
        results = [one_world(j) for j in jobs]
    else:
        with Pool(args.jobs) as pool:
            results = pool.map(one_world, jobs, chunksize=max(1, len(jobs) // (args.jobs * 16)))
    text, failed = table(results, tasks)
    print(f"# seeds {seeds[0]}-{seeds[-1]}, knobs {json.dumps(knobs, sort_keys=True) if knobs else 'default'}, "
          f"{len(jobs)} worlds in {time.perf_counter() - t0:.1f} s ({args.jobs} process{'es' if args.jobs > 1 else ''})")
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
