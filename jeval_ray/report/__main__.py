"""``python -m jeval_ray.report <run>``: the report of a sweep run (see ``jeval_ray.report``)."""

from __future__ import annotations

import argparse
import sys

from jeval_ray.report.tables import DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_THRESHOLD

EPILOG = """\
examples:
  python -m jeval_ray.report runs/<run_id>                   # every table in the terminal
  python -m jeval_ray.report runs/<run_id> --out report/     # + report.md, report.json, <table>.csv, index.html
  python -m jeval_ray.report runs/<run_id> --json            # every table as JSON on stdout
  python -m jeval_ray.report runs/<pilot_id> --plan --effect 0.05   # seeds needed to detect a 0.05 difference

exit codes: 0 report printed (also for a run with no finished episode yet), 2 the path holds no run
(a runs root lists its runs), a task's episodes are of more than one world version (without
--allow-mixed), or a bad option. Statistics: docs/analysis.md.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jeval_ray.report", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=EPILOG, description="The report of a sweep run from its Parquet output: "
                                "leaderboard with clustered intervals, paired differences with Holm and tie groups, "
                                "conditions against full, tiers, tasks, process metrics, pass^k, costs and judges.")
    p.add_argument("run", help="the run directory <out>/<run_id> (local path or filesystem URI)")
    p.add_argument("--json", action="store_true", help="print every table as JSON instead of the terminal tables")
    p.add_argument("--out", metavar="DIR", help="also write report.md, report.json, one CSV per table and index.html "
                   "(self-contained, offline) with episodes/<episode_id>.html replays into DIR")
    p.add_argument("--no-html", action="store_true", help="with --out: skip the HTML page (no matplotlib needed)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="X",
                   help=f"pass^k: an episode passes when its score is >= X (default {DEFAULT_THRESHOLD})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N",
                   help=f"seed of every bootstrap resampling, printed in the report (default {DEFAULT_SEED})")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, metavar="B",
                   help=f"bootstrap resamples (default {DEFAULT_RESAMPLES})")
    p.add_argument("--plan", action="store_true", help="power planning: treat the run as a pilot and print the seeds "
                   "per task needed to detect --effect between each pair of models")
    p.add_argument("--allow-mixed", action="store_true", help="pool episodes of different world versions of a task "
                   "(refused by default: exit 2); every board then names the versions it pools")
    p.add_argument("--effect", type=float, metavar="D", help="with --plan: the score difference to detect (e.g. 0.05)")
    return p


def _bad(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 0 <= args.threshold <= 1:
        return _bad("--threshold: must be between 0 and 1 (scores are in [0, 1]).")
    if args.resamples < 100:
        return _bad("--resamples: must be >= 100 for a percentile interval.")
    if args.plan and (args.effect is None or args.effect <= 0):
        return _bad("--plan needs --effect D with D > 0 (the score difference to detect, e.g. --effect 0.05).")
    if args.effect is not None and not args.plan:
        return _bad("--effect is for --plan: add --plan.")
    if args.out and not args.no_html:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return _bad("--out writes an HTML page with plots, which needs matplotlib: pip install 'jeval_ray[report]', "
                        "or pass --no-html for Markdown, CSV and JSON only.")
    import pyarrow as pa

    from jeval_ray.report import RunPathError, check_run, load_report, plan_table, render_terminal, write_files
    from jeval_ray.report.tables import MixedWorldVersionsError, Report, check_world_versions, dumps, versions_text

    try:
        check_run(args.run)
        if args.plan:
            from jeval_ray.store.reader import read_dataset

            eps = read_dataset(args.run, "episodes")
            versions = check_world_versions(eps.to_pylist(), allow_mixed=args.allow_mixed, run=args.run)
            report = Report(args.run, {"effect": args.effect, "episodes": None, "bootstrap_seed": None,
                                       "world_versions": versions, "world_versions_text": versions_text(versions)},
                            [plan_table(eps, args.effect)])
        else:
            report = load_report(args.run, threshold=args.threshold, seed=args.seed, resamples=args.resamples,
                                 allow_mixed=args.allow_mixed)
    except (RunPathError, MixedWorldVersionsError) as exc:
        return _bad(str(exc))
    except (OSError, pa.ArrowException) as exc:
        return _bad(f"cannot read {args.run}: {exc}")
    if args.json:
        print(dumps(report))
    elif args.plan:
        _print_plan(report)
    elif report.meta["episodes"] == 0:
        print(f"no finished episodes in {args.run} yet")
    else:
        render_terminal(report)
    if args.out:
        html = not args.no_html and not args.plan
        if html:
            from jeval_ray.report.html import write_html
        written = write_files(report, args.out)
        if html:
            written += write_html(report, args.run, args.out)
        print(f"wrote {len(written)} files to {args.out}" + ("" if args.no_html or args.plan else
                                                              f" (open {args.out.rstrip('/')}/index.html)"),
              file=sys.stderr)
    return 0


def _print_plan(report) -> None:
    from rich.console import Console

    from jeval_ray.report.render import render_terminal

    t = report.tables[0]
    if not t.rows:
        print("no pair of models shares 2 or more (task, seed) cells in this run: nothing to plan from")
        return
    render_terminal(report, Console(width=160))


def _entry() -> int:
    try:
        return main()
    except BrokenPipeError:  # piped into head: stop quietly (Python docs' recipe)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(_entry())
