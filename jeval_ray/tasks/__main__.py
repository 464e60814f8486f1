"""``python -m jeval_ray.tasks``: print the task catalogue (``--json`` for machine-readable output)."""

from __future__ import annotations

import argparse
import json
import sys

from jeval_ray.tasks import all_tasks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jeval_ray.tasks", description="Print the JE-1…JE-16 task catalogue.")
    ap.add_argument("--json", action="store_true", help="print the catalogue as JSON (one object per task)")
    ap.add_argument("--markdown", action="store_true", help="print the catalogue document (docs/tasks.md)")
    args = ap.parse_args(argv)
    if args.markdown:
        from jeval_ray.catalogue import catalogue_markdown

        print(catalogue_markdown(), end="")
        return 0
    tasks = all_tasks()
    if args.json:
        print(json.dumps([t.summary() for t in tasks], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="jeval_ray task catalogue", show_lines=False)
    for col in ("id", "tier", "title", "budget", "weights o/p/r", "judges", "status", "planted defect / decoys"):
        table.add_column(col, overflow="fold")
    for t in tasks:
        w = t.weights
        table.add_row(t.id, t.tier, t.title, str(t.step_budget), f"{w.outcome:.2f}/{w.process:.2f}/{w.rationale:.2f}",
                      str(t.judges_per_episode), "available" if t.available else "not yet available",
                      f"{t.defect}  |  decoys: {t.decoys}")
    Console(width=max(160, Console().width)).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
