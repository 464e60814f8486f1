"""The forecast against what episodes really use, on held-out seeds, and what provider caching saves.

The shipped token profile (``jeval_ray/sweep/data/token_profile.json``, seeds 40000-40004) forecasts
the default grid (every available task x {full, withheld}) on held-out seeds (40100 up by default:
never a profile seed) for two endpoint models at list-like prices, both played by the test
server's ``careful`` brain (the reference solver), in this process without Ray:

- ``gpt-4o-like`` over the OpenAI wire: 2.50 USD / M input, 1.25 cached input, 10.00 output;
- ``claude-sonnet-like`` over the Anthropic wire (cache breakpoints on): 3.00 input, 0.30 cache
  reads, 3.75 cache writes, 15.00 output.

Per model it prints forecast and actual requests, input, cached and output tokens and dollars,
the error of each (forecast / actual - 1; the target is within +-25%), the worst (task, condition)
error of input tokens, and the cost with provider caching against the same tokens with every input
token at the input price (the saving of caching).

    python bench/bench_forecast.py                    # 3 held-out seeds: 192 episodes, about 4 minutes
    python bench/bench_forecast.py --seeds 2 --tasks JE-1,JE-4 --json /tmp/f.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_profile import endpoint, grid_config, play_cells  # noqa: E402

MODELS = {
    "gpt-4o-like": ("openai", {"input_per_mtok": 2.50, "cached_input_per_mtok": 1.25, "output_per_mtok": 10.0}),
    "claude-sonnet-like": ("anthropic", {"input_per_mtok": 3.00, "cached_input_per_mtok": 0.30,
                                         "cache_write_per_mtok": 3.75, "output_per_mtok": 15.0}),
}
QUANTITIES = ("requests", "tokens_in", "tokens_cached_in", "tokens_out")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=3, help="held-out seeds per task and condition (default 3)")
    p.add_argument("--seed-base", type=int, default=40100, help="first held-out seed (default 40100)")
    p.add_argument("--tasks", help="comma list of task ids (default: every available task)")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args(argv)

    from jeval_ray.models.config import Price
    from jeval_ray.sweep.forecast import Forecaster, endpoint_configs, load_profile
    from jeval_ray.sweep.grid import Grid
    from jeval_ray.testserver import LocalModelServer, builtin_brain

    profile = load_profile()
    held_out = list(range(args.seed_base, args.seed_base + args.seeds))
    overlap = set(held_out) & set(profile.meta.get("seeds") or [])
    if overlap:
        raise SystemExit(f"seeds {sorted(overlap)} made the profile: choose others (--seed-base)")
    t0 = time.monotonic()
    with LocalModelServer(builtin_brain("careful")) as server:
        entries = {name: endpoint(name, server.url, provider=prov, price=price) for name, (prov, price) in MODELS.items()}
        cfg = grid_config(held_out, args.tasks.split(",") if args.tasks else None, list(entries.values()))
        cells = list(Grid(cfg).cells())
        print(f"forecast benchmark: {len(cells)} episodes on held-out seeds {held_out}", file=sys.stderr)
        measures = play_cells(cells, entries, args.concurrency, log=lambda s: print(s, file=sys.stderr))
    elapsed = time.monotonic() - t0
    fc = Forecaster(profile, endpoint_configs(cfg))
    forecast = fc.grid(cells)
    out = {"held_out_seeds": held_out, "profile_seeds": profile.meta.get("seeds"), "episodes": len(measures),
           "not_completed": sum(m["status"] != "completed" for m in measures), "elapsed_s": round(elapsed, 1),
           "models": {}}
    for name, (prov, price_d) in MODELS.items():
        ms = [m for m in measures if m["model"] == name]
        price = Price(**price_d)
        act = {q: float(sum(m[q] for m in ms)) for q in QUANTITIES}
        act["usd"] = sum(m["cost_usd"] for m in ms)
        f = forecast[name]
        fore = {"requests": f.requests, "tokens_in": f.tokens_in, "tokens_cached_in": f.tokens_cached_in,
                "tokens_out": f.tokens_out, "usd": f.usd}
        err = {q: (fore[q] / act[q] - 1) if act[q] else None for q in fore}
        per_cell = {}
        for m in ms:
            per_cell.setdefault((m["task_id"], m["condition"]), []).append(m["tokens_in"])
        cell_err = {k: fc.episode(name, *k).tokens_in / (sum(v) / len(v)) - 1 for k, v in per_cell.items()}
        worst = max(cell_err, key=lambda k: abs(cell_err[k]))
        flat = Price(input_per_mtok=price.input_per_mtok, output_per_mtok=price.output_per_mtok)
        no_cache = sum(flat.cost(m["tokens_in"], m["tokens_out"]) for m in ms)
        out["models"][name] = {"wire": prov, "price": price_d, "episodes": len(ms), "actual": act, "forecast": fore,
                               "error": err, "worst_cell": {"task_condition": list(worst), "tokens_in_error": cell_err[worst]},
                               "usd_without_caching": no_cache, "caching_saving": 1 - act["usd"] / no_cache if no_cache else None}
    print("| model (wire) | episodes | quantity | forecast | actual | error |")
    print("|---|---|---|---|---|---|")
    for name, r in out["models"].items():
        for q in (*QUANTITIES, "usd"):
            fmt = (lambda x: f"{x:,.2f}") if q == "usd" else (lambda x: f"{x:,.0f}")
            print(f"| {name} ({r['wire']}) | {r['episodes']} | {q} | {fmt(r['forecast'][q])} | {fmt(r['actual'][q])} | "
                  f"{r['error'][q]:+.1%} |")
    print()
    print("| model | worst (task, condition), input tokens | USD with caching | USD, every input token at the input price | saving |")
    print("|---|---|---|---|---|")
    for name, r in out["models"].items():
        w = r["worst_cell"]
        print(f"| {name} | {' '.join(w['task_condition'])} {w['tokens_in_error']:+.1%} | {r['actual']['usd']:,.2f} | "
              f"{r['usd_without_caching']:,.2f} | {r['caching_saving']:.1%} |")
    print(f"\n{len(measures)} episodes ({out['not_completed']} not completed) in {elapsed:.0f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
