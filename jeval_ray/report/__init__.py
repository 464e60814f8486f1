"""The report of a sweep run: leaderboard, paired comparisons, pass^k, breakdowns and an HTML page.

``python -m jeval_ray.report <run>`` prints every table (``--json`` prints them as JSON, ``--out DIR``
writes Markdown, CSV, JSON and a self-contained HTML page with one page per episode; ``--plan
--effect D`` sizes a sweep from a pilot run). The sweep prints the summary tables at its end
through ``print_leaderboard``. The statistics are in ``stats`` (Miller 2024: clustered standard
errors, paired differences, minimum detectable effect), the tables in ``tables``; docs/analysis.md
says which estimator is used and why.

Reads the deduplicated datasets (``jeval_ray.store.read_dataset``). Conditions are separate boards,
never mixed; other conditions meet ``full`` only through paired deltas. World versions are never
pooled either: episodes of two versions of a task are refused (``MixedWorldVersionsError``, exit 2)
unless ``allow_mixed``, and every board names the versions it covers.
"""

from __future__ import annotations

from jeval_ray.report.render import SUMMARY, render_terminal, to_csv, to_markdown, write_files
from jeval_ray.report.runs import RunPathError, check_run, list_runs
from jeval_ray.report.tables import (DEFAULT_SEED, DEFAULT_THRESHOLD, MixedWorldVersionsError, Report, Table,
                                     build_report, plan_table)


def load_report(run_dir: str, **options) -> Report:
    """Read a run's deduplicated episodes and judgments (and its manifest's judging block) and compute
    every table (``build_report`` options)."""
    from jeval_ray.report.runs import read_manifest
    from jeval_ray.store.reader import read_dataset

    return build_report(read_dataset(run_dir, "episodes"), read_dataset(run_dir, "judgments"), run=run_dir,
                        manifest=read_manifest(run_dir), **options)


def print_leaderboard(run_dir: str, console=None) -> Report:
    """Print the summary tables of a run (the end of a sweep) and return the report.

    The sweep has already warned about fewer than 5 seeds; here that state shows in the interval
    cells ("variance not measurable"), not as another warning line.
    """
    report = load_report(run_dir, allow_mixed=True)  # the header and boards name any mix of versions
    if report.meta["episodes"] == 0:
        (console.print if console else print)(f"no episodes in {run_dir}")
        return report
    render_terminal(report, console, names=SUMMARY)
    return report


__all__ = ["DEFAULT_SEED", "DEFAULT_THRESHOLD", "SUMMARY", "MixedWorldVersionsError", "Report", "RunPathError", "Table", "build_report",
           "check_run", "list_runs", "load_report", "plan_table", "print_leaderboard", "render_terminal", "to_csv",
           "to_markdown", "write_files"]
