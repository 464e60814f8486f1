"""``python -m jeval_ray.sweep``: run a sweep (the embedded default when given no arguments)."""

from __future__ import annotations

import argparse
import json
import sys

from jeval_ray.errors import ConfigError

EPILOG = """\
examples:
  python -m jeval_ray.sweep                              # embedded default: every available task x random/naive/careful
                                                         #   x 5 seeds x {full, withheld}, local ray.init()
  python -m jeval_ray.sweep --config configs/openai_compatible.yaml --address auto --out s3://bucket/jeval
  python -m jeval_ray.sweep --tasks JE-1,JE-3 --models careful --seeds 2   # a quick run of part of the grid
  python -m jeval_ray.sweep --run-id 20260101T000000Z-abc123   # resume: completed episodes are skipped
  python -m jeval_ray.sweep --dry-run                    # the grid and every episode's run-config contract
                                                         #   (stdout) and the cost forecast (stderr)
  python -m jeval_ray.sweep --config c.yaml --dry-run --forecast-from runs/20260101T000000Z-abc123 > /dev/null
  python -m jeval_ray.sweep --schema > sweep.schema.json

On a cluster: run it there (--address auto), or submit it as a Ray job with ray job submit;
cluster/README.md has both, and Ray's token authentication.

exit codes: 0 done (failed episodes are rows, not errors), 2 invalid config or option, or a cluster that
cannot be reached (nothing written), 1 the sweep could not go on. Output layout, dedup rule and resume:
docs/sweep.md.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jeval_ray.sweep", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Play tasks x models x seeds x conditions journal-entry-testing episodes on Ray, judge them in a "
                    "separate actor pool and write steps/episodes/dispositions/judgments as Parquet.")
    p.add_argument("--config", metavar="PATH", help="sweep config (YAML or JSON; schema: --schema). "
                   "Default: the embedded configs/local.yaml.")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster to join, from a machine of that cluster: 'auto' (the "
                   "cluster started on this machine with 'ray start') or the head's GCS address host:6379. From "
                   "elsewhere submit the sweep as a Ray job instead (cluster/README.md). "
                   "Default: $RAY_ADDRESS, then the config's ray.address, else a new local Ray of the sweep's own "
                   "(even when a cluster runs on this machine: 'auto' joins that one).")
    p.add_argument("--out", metavar="PATH_OR_URI", help="output root: a local directory or a pyarrow filesystem URI "
                   "(s3://bucket/prefix, gs://...; options as a query, e.g. ?endpoint_override=host:9000&scheme=http). "
                   "The run is written to <out>/<run-id>/. Credentials come from the filesystem's usual environment "
                   "variables (AWS_ACCESS_KEY_ID, ...), never from the URI. Default: config output.root.")
    p.add_argument("--run-id", metavar="ID", help="run id; an existing run with this id is RESUMED (completed episodes "
                   "are skipped, the rest re-run with a higher attempt). Default: a new timestamped id.")
    p.add_argument("--cache", metavar="DIR|URI", help="response cache of the endpoint models' calls (a directory or a "
                   "pyarrow filesystem URI; sets execution.response_cache): a call answered before is replayed without "
                   "a request or a cost, so a crash or a new run over a finished grid pays nothing twice.")
    p.add_argument("--dry-run", action="store_true", help="print each episode's run-config contract as JSON lines on "
                   "stdout and exit: no Ray, nothing written. The grid's summary and the forecast (per model and in "
                   "total: requests, input, cached and output tokens, dollars at the config's prices, from the shipped "
                   "per-task token profile of the reference solver) go to stderr.")
    p.add_argument("--forecast-from", metavar="RUN", help="an earlier run (<out>/<run-id>) of the same model(s): "
                   "calibrates the forecast (--dry-run) and the budgets' admission (budget_usd) on what each model "
                   "used there, instead of the reference solver's profile alone.")
    narrow = p.add_argument_group("narrowing the config's grid (each picks from what the config has)")
    narrow.add_argument("--tasks", metavar="IDS", help="comma list of task ids, e.g. JE-1,JE-3.")
    narrow.add_argument("--models", metavar="NAMES", help="comma list of model names, e.g. careful,naive.")
    narrow.add_argument("--seeds", metavar="N|LIST", help="a count N (the config's first N seeds) or seeds, e.g. 0,3 "
                        "(a single seed: [3]).")
    narrow.add_argument("--conditions", metavar="NAMES", help="comma list of condition names, e.g. full.")
    p.add_argument("--max-in-flight", type=int, metavar="N", help="bound on episodes dispatched and not yet written "
                   "(driver memory and cluster load). Default: the config's execution.max_in_flight.")
    p.add_argument("--schema", action="store_true", help="print the JSON Schema of the sweep config and exit.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quiet", action="store_true", help="no progress display (warnings, leaderboard and output path only).")
    mode.add_argument("--plain", action="store_true", help="progress as plain log lines (for CI and log files) "
                      "instead of the live bar. The live bar is used on a terminal, plain lines otherwise.")
    p.add_argument("--no-leaderboard", action="store_true", help="do not print the leaderboard at the end.")
    return p


def with_response_cache(cfg, cli_value: str | None):
    """``cfg`` with ``--cache`` (if given) as ``execution.response_cache``, a local path made absolute (the
    workers' working directory may differ) and the location opened once: ``ConfigError`` if it cannot be."""
    value = cli_value if cli_value is not None else cfg.execution.response_cache
    if value is None:
        return cfg
    where = "--cache" if cli_value is not None else "field 'execution.response_cache'"
    if not value.strip():
        raise ConfigError(f"{where}: empty. Fix: give a directory or a filesystem URI such as s3://bucket/cache.")
    if "://" not in value:
        import os

        value = os.path.abspath(os.path.expanduser(value))
    try:
        from jeval_ray.cache import ResponseCache

        ResponseCache(value).check()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ConfigError(f"{where}: cannot open the response cache {value!r}: {exc}. Fix: give a writable directory "
                          "or a reachable filesystem URI.") from None
    return cfg.model_copy(update={"execution": cfg.execution.model_copy(update={"response_cache": value})})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from jeval_ray.sweep.config import json_schema, load_sweep_config, narrow_config

    if args.schema:
        print(json.dumps(json_schema(), indent=2))
        return 0
    try:
        cfg = narrow_config(load_sweep_config(args.config), tasks=args.tasks, models=args.models, seeds=args.seeds,
                            conditions=args.conditions)
        cfg = with_response_cache(cfg, args.cache)
        if args.max_in_flight is not None and args.max_in_flight < 1:
            raise ConfigError("--max-in-flight: must be >= 1. Fix: pass a positive number.")
        from jeval_ray.sweep.driver import plan_run

        plan = plan_run(cfg, out=args.out, run_id=args.run_id, address=args.address, max_in_flight=args.max_in_flight,
                        forecast_from=args.forecast_from)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    warn = cfg.seed_warning()
    if warn:
        print(f"warning: {warn}", file=sys.stderr)
    if args.dry_run:
        try:
            _dry_run(plan)
        except BrokenPipeError:  # piped into head: stop quietly (Python docs' recipe)
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    from jeval_ray.sweep.driver import SweepError, run_sweep

    mode = "quiet" if args.quiet else "plain" if args.plain else "auto"
    if plan.resume and not args.quiet:
        print(f"resuming run {plan.run_id} at {plan.run_uri}", file=sys.stderr)
    try:
        result = run_sweep(plan, progress=mode)
    except ConfigError as exc:  # the output location refused the first write (before Ray started)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        from shlex import quote  # an object-store URI's query has '&' in it

        narrowed = "".join(f"--{k} {quote(v)} " for k in ("tasks", "models", "seeds", "conditions")
                           if (v := getattr(args, k)) is not None)  # the same part of the grid
        print(f"\ninterrupted; completed episodes are saved. Resume with: python -m jeval_ray.sweep "
              f"{'--config ' + quote(args.config) + ' ' if args.config else ''}{narrowed}--out {quote(plan.root_uri)} "
              f"--run-id {plan.run_id}", file=sys.stderr)
        return 130
    if not args.no_leaderboard:
        print_leaderboard(result.run_dir)
    if result.budget_skipped:
        print(f"budget: {result.budget_skipped} episode(s) not started (status skipped, termination budget: ...); "
              "a resume with a higher budget_usd plays them (--run-id " + plan.run_id + ")")
    print(f"episodes: {result.done} completed, {result.failed} failed, {result.skipped} skipped (already complete), "
          f"{result.retried} retried, in {result.elapsed_s:.1f} s; worlds: {result.worlds['generated']} generated"
          + (f" ({result.worlds['ahead']} of them while their episode queued)" if result.worlds.get("ahead") else "")
          + f", {result.worlds['reused']} reused (execution.world_cache)")
    for w in result.warnings:  # the seed warning was said once, at the start
        print(f"warning: {w}")
    print(f"output: {result.run_dir}")
    return 0


def _dry_run(plan) -> None:
    """The contracts as JSON lines on stdout (for jq and friends); the grid's summary on stderr."""
    rows = plan.grid.summary_rows()
    err = sys.stderr
    print(f"# run {plan.run_id} -> {plan.run_uri} ({'resume' if plan.resume else 'new run'})", file=err)
    print(f"# grid: {len(plan.grid)} episodes = {len(plan.grid.tasks)} task(s) x {len(plan.grid.models)} model(s) "
          f"x {len(plan.grid.seeds)} seed(s) x conditions", file=err)
    print(f"# {'task':6} {'tier':4} {'condition':12} {'withheld':28} episodes", file=err)
    for r in rows:
        print(f"# {r['task_id']:6} {r['tier']:4} {r['condition']:12} {','.join(r['tools_withheld']) or '-':28} "
              f"{r['episodes']}", file=err)
    try:
        for line in forecast_lines(plan):
            print(line, file=err)
    except (OSError, ValueError, KeyError) as exc:  # the forecast is advice: the contracts still print
        print(f"# forecast: not available ({type(exc).__name__}: {exc})", file=err)
    for c in plan.grid.cells():
        print(json.dumps({"episode_id": c.episode_id, "task_id": c.task_id, "model": c.model, "seed": c.seed,
                          "condition": c.condition, "run_config": json.loads(c.contract_json)}, sort_keys=True))


def forecast_lines(plan) -> list[str]:
    """The forecast of the plan's grid, per model and in total, as ``--dry-run`` prints it on stderr."""
    from jeval_ray.sweep.forecast import context_notes, format_forecast

    fc = plan.forecaster()
    cells = plan.grid.cells()
    lines = []
    if plan.resume:  # what is left to play: the completed cells cost nothing more
        from jeval_ray.store.reader import episode_progress

        completed, _ = episode_progress(plan.run_path, filesystem=plan.fs)
        cells = [c for c in cells if c.episode_id not in completed]
        lines.append(f"# resume: the forecast covers the {len(cells)} episode(s) not yet completed")
    by_model = fc.grid(cells)
    order = {m: by_model.get(m) for m in plan.grid.models if m in by_model}
    order["total"] = by_model["total"]
    builtin = [m.name for m in plan.cfg.models if m.provider == "builtin"]
    lines += format_forecast(order, fc.profile, fc.calibration, builtin, fc.approximated)
    lines += context_notes(fc, ((r["task_id"], r["condition"]) for r in plan.grid.summary_rows()))
    budgets = [(f"models[{i}].budget_usd", m.name, (m.model_extra or {}).get("budget_usd"))
               for i, m in enumerate(plan.cfg.models)] + [("budget_usd", None, plan.cfg.budget_usd)]
    spent: dict[str, float] = {}
    if plan.resume and any(cap is not None for _, _, cap in budgets):
        from jeval_ray.sweep.budget import prior_spend

        spent = prior_spend(plan.run_path, plan.fs)
    endpoints = {m.name for m in plan.cfg.models if m.provider != "builtin"}
    for field, name, cap in budgets:
        if cap is None:
            continue
        want = (order[name].usd if name in order else 0.0) if name else order["total"].usd
        had = spent.get(name, 0.0) if name else sum(v for m, v in spent.items() if m in endpoints)
        lines.append(f"# {field}={cap:g}: the forecast {'fits' if had + want <= cap else 'does NOT fit'} ({want:.2f} USD"
                     f"{' for ' + name if name else ' in total'}{f' + {had:.2f} already spent by the run' if had else ''}); "
                     "past it the rest are skipped for budget")
    return lines


def print_leaderboard(run_dir: str) -> None:
    """The lead's leaderboard (``jeval_ray.report``) when present, else a simple mean-score table."""
    try:
        from jeval_ray.report import print_leaderboard as lead_leaderboard
    except ImportError:
        _simple_leaderboard(run_dir)
        return
    lead_leaderboard(run_dir)


def _simple_leaderboard(run_dir: str) -> None:
    import pyarrow.compute as pc

    from jeval_ray.store import read_dataset

    eps = read_dataset(run_dir, "episodes")
    if eps.num_rows == 0:
        print("leaderboard: no episodes")
        return
    ok = eps.filter(pc.equal(eps["status"], "completed"))
    g = ok.group_by(["condition", "model"]).aggregate([("score", "mean"), ("outcome", "mean"), ("episode_id", "count")])
    fails = eps.filter(pc.equal(eps["status"], "failed")).group_by(["condition", "model"]).aggregate([("episode_id", "count")])
    nfail = {(c, m): n for c, m, n in zip(fails["condition"].to_pylist(), fails["model"].to_pylist(),
                                            fails["episode_id_count"].to_pylist())}
    rows = sorted(zip(g["condition"].to_pylist(), g["model"].to_pylist(), g["score_mean"].to_pylist(),
                      g["outcome_mean"].to_pylist(), g["episode_id_count"].to_pylist()),
                  key=lambda r: (r[0] != "full", r[0], -(r[2] or 0)))
    print(f"{'condition':12} {'model':28} {'score':>7} {'outcome':>8} {'episodes':>9} {'failed':>7}")
    for cond, model, score, outcome, n in rows:
        s = f"{score:.3f}" if score is not None else "-"
        o = f"{outcome:.3f}" if outcome is not None else "-"
        print(f"{cond:12} {model:28} {s:>7} {o:>8} {n:>9} {nfail.get((cond, model), 0):>7}")


if __name__ == "__main__":
    sys.exit(main())
