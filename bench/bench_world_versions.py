"""World versions on more seeds than the golden pins: did a change alter worlds without a version bump?

Run: python bench/bench_world_versions.py [--seeds 50-549] [--big-seeds 3-9] [--write F | --against F]

The golden (``tests/golden/worlds.json``, checked by ``tests/test_world_versions.py``) pins seeds
0-49 at default knobs and 0-2 at 1e5 entries. This script first checks that golden, then hashes the
worlds, briefs, tool schemas and keys (``jeval_ray.golden``) of more seeds: ``--seeds`` at default
knobs, ``--big-seeds`` at 1e5 entries (seeds stay below 7000). ``--write F`` saves them with the
current ``WORLD_VERSION``; ``--against F`` compares with a file written before a change and exits 1
when a task's worlds changed while its version did not. The workflow: ``--write /tmp/before.json``
on the commit before the change, ``--against /tmp/before.json`` after it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

MAX_SEED = 7000


def _range(text: str, flag: str) -> tuple[int, ...]:
    lo, _, hi = text.partition("-")
    try:
        seeds = tuple(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise SystemExit(f"error: {flag}: expected A-B (e.g. 50-549), got {text!r}") from None
    if not seeds or seeds[-1] >= MAX_SEED or seeds[0] < 0:
        raise SystemExit(f"error: {flag}: seeds must lie in 0-{MAX_SEED - 1}, got {text!r}")
    return seeds


def main() -> int:
    from jeval_ray import golden as G
    from jeval_ray.tasks import TASK_IDS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="50-549", help="seeds at default knobs (default 50-549)")
    ap.add_argument("--big-seeds", default="3-5", help="seeds at 1e5 entries (default 3-5; '' for none)")
    ap.add_argument("--task", action="append", metavar="ID", help="only this task (repeatable)")
    ap.add_argument("--write", metavar="FILE", help="save the hashes (before a change)")
    ap.add_argument("--against", metavar="FILE", help="compare with hashes saved before a change")
    ap.add_argument("--skip-golden", action="store_true", help="do not check the golden first")
    args = ap.parse_args()
    tasks = args.task or list(TASK_IDS)
    if not args.skip_golden:
        t0 = time.perf_counter()
        golden = G.read_json(G.GOLDEN)
        diff = G.differences(golden, G.compute(tasks, G.pins_of(golden)))
        print(f"# golden: {'ok' if not diff else 'DIFFERS'} ({time.perf_counter() - t0:.1f} s)")
        if diff:
            print(G.changed_message(diff, golden), file=sys.stderr)
    pins = {"default": ({}, _range(args.seeds, "--seeds"))}
    if args.big_seeds:
        pins["1e5"] = ({"n_entries": 100_000}, _range(args.big_seeds, "--big-seeds"))
    t0 = time.perf_counter()
    blocks = G.compute(tasks, pins)
    n = sum(len(w) for b in blocks.values() for w in b["worlds"].values())
    took = time.perf_counter() - t0
    print(f"# {n} worlds of {len(blocks)} tasks hashed in {took:.1f} s ({1000 * took / max(n, 1):.1f} ms a world)")
    if args.write:
        Path(args.write).write_text(G.golden_text(blocks, pins))
        print(f"# wrote {args.write}")
    if not args.against:
        return 0
    before = G.read_json(Path(args.against))
    if G.pins_of(before) != pins:
        print(f"error: {args.against} was written with other seeds; pass the same --seeds and --big-seeds",
              file=sys.stderr)
        return 2
    diff = G.differences(before, blocks)
    unbumped = []
    for t in tasks:
        old_v, new_v = before["tasks"].get(t, {}).get("version"), blocks[t]["version"]
        if t in diff:
            state = f"CHANGED, version {old_v} -> {new_v}" if old_v != new_v else f"CHANGED under version {new_v}"
            print(f"{t}: {state}: " + "; ".join(diff[t]))
            if old_v == new_v:
                unbumped.append(t)
        else:
            print(f"{t}: unchanged (version {new_v}" + (f", bumped from {old_v} without a change)" if old_v != new_v else ")"))
    if unbumped:
        print(f"error: the worlds of {', '.join(unbumped)} changed without a version bump. Fix: bump WORLD_VERSION for "
              f"them in {G.VERSION_FILE} and run `{G.REPIN}`.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
