"""Writers of the report's tables: rich terminal tables, Markdown, CSV and JSON.

All of them render the same ``Table`` objects (``jeval_ray.report.tables``) with one formatter, so
a number reads the same in every output.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from jeval_ray.report.tables import Report, Table, dumps

#: the tables shown at the end of a sweep (the command line shows them all)
SUMMARY = ("leaderboard", "pairs", "conditions")


def fmt(value, kind: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "int":
        return str(value)
    if kind == "p":
        return f"{value:.4f}" if value >= 0.0001 else "<0.0001"
    if kind == "usd":
        return f"{value:.4f}"
    if kind in ("seconds", "mean"):
        return f"{value:.2f}"
    if kind == "total":
        return str(int(value)) if value == int(value) else f"{value:.2f}"
    if kind == "score":
        return f"{value:.3f}"
    return str(value)


def text_rows(table: Table) -> list[list[str]]:
    return [[fmt(r.get(c.key), c.kind) for c in table.columns] for r in table.rows]


def _header(report: Report) -> str:
    m = report.meta
    if "effect" in m:
        return (f"pilot run {report.run}: power plan for a difference of {m['effect']:g}; world versions "
                f"{m.get('world_versions_text', '-')}")
    return (f"run {report.run}: {m['episodes']} episodes; conditions {', '.join(m['conditions']) or '-'}; "
            f"bootstrap seed {m['bootstrap_seed']} ({m['bootstrap_resamples']} resamples); "
            f"pass threshold {m['pass_threshold']:g}; world versions {m.get('world_versions_text', '-')}"
            + (" (MIXED: pooled by --allow-mixed)" if m.get("mixed_world_versions") else ""))


def render_terminal(report: Report, console=None, names: tuple[str, ...] | None = None) -> None:
    """Print the tables with rich, one table per condition where the table has a condition column."""
    from rich.console import Console
    from rich.table import Table as RichTable

    if console is None:
        console = Console()
        if not console.is_terminal or console.width < 150:
            console = Console(width=160)  # logs and narrow terminals: wrap rather than truncate to "…"
    console.print(_header(report), highlight=False)
    for t in report.tables:
        if names is not None and t.name not in names:
            continue
        split = t.columns and t.columns[0].key == "condition"
        groups = list(dict.fromkeys(r["condition"] for r in t.rows)) if split else [None]
        cols = t.columns[1:] if split else t.columns
        if not t.rows:
            groups = []
        for cond in groups:
            rt = RichTable(title=f"{t.title}" + (f" - condition: {cond}" if cond is not None else ""), title_justify="left")
            cells = [[fmt(r.get(c.key), c.kind) for c in cols] for r in t.rows if cond is None or r["condition"] == cond]
            for i, c in enumerate(cols):
                # names and intervals are not broken across lines; other columns may wrap their headers
                whole = c.key in ("model", "model_a", "model_b", "task_id") or c.key.endswith("_interval")
                rt.add_column(c.header, justify="left" if c.kind == "text" else "right", overflow="fold", no_wrap=whole,
                              min_width=max((len(row[i]) for row in cells), default=0) if whole else None)
            for row in cells:
                rt.add_row(*row)
            console.print(rt)
        for n in t.notes if (t.rows or t.notes) else []:
            console.print(f"  {t.name}: {n}", highlight=False)


def to_markdown(report: Report) -> str:
    out = [f"# Report of run {report.run}", "", _header(report), ""]
    for t in report.tables:
        out += [f"## {t.title}", ""]
        if t.rows:
            out.append("| " + " | ".join(c.header for c in t.columns) + " |")
            out.append("|" + "|".join("---" if c.kind == "text" else "---:" for c in t.columns) + "|")
            for row in text_rows(t):
                out.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
        else:
            out.append("(no rows)")
        out += [""] + [f"- {n}" for n in t.notes] + ([""] if t.notes else [])
    return "\n".join(out)


def to_csv(table: Table) -> str:
    """Raw values (not rounded) under the column keys, plus every extra key of the rows (e.g. ``score_lo``)."""
    keys = [c.key for c in table.columns]
    for r in table.rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for r in table.rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in keys})
    return buf.getvalue()


def write_files(report: Report, out_dir: str | Path) -> list[Path]:
    """``report.md``, ``report.json`` and ``<table>.csv`` for every table in ``out_dir``."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    written = [d / "report.md", d / "report.json"]
    written[0].write_text(to_markdown(report))
    written[1].write_text(dumps(report))
    for t in report.tables:
        p = d / f"{t.name}.csv"
        p.write_text(to_csv(t))
        written.append(p)
    return written
