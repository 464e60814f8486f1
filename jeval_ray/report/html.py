"""The report as a self-contained HTML page that works offline, with one replay page per episode.

``index.html`` holds, per condition, four plots drawn by matplotlib as static SVG and inlined in the
page (no script, no CDN, no external file): each model's score with its interval, the model x task
heat map, the paired-difference matrix and cost against score; then every table of the report
and the list of episodes. ``episodes/<episode_id>.html`` replays one episode step by step: the tool,
its arguments, the observation, the dispositions made at that step (with the reference fact) and
the judges' comments. Heat-map cells link to the task rows, model names to their episode lists.

matplotlib is an optional dependency (``pip install 'jeval_ray[report]'``): the terminal report
needs none of it. SVG output is made reproducible (fixed hash salt, no date metadata).
"""

from __future__ import annotations

import html
import io
import json
import re
from collections import defaultdict
from pathlib import Path

from jeval_ray.report.render import fmt
from jeval_ray.report.tables import Report, Table, _task_order, episode_index

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1400px;color:#222;
padding:0 1em}
h1{font-size:1.5em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}h3{margin-top:1.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}
th,td{border:1px solid #ddd;padding:.25em .5em;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#555}.note{color:#555;font-size:.85em;margin:.2em 0}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plot{border:1px solid #eee;padding:.3em}
pre{white-space:pre-wrap;word-break:break-word;background:#f8f8f8;padding:.4em;margin:.2em 0;font-size:.85em;
max-height:30em;overflow:auto}
.step{border-left:4px solid #9ab;padding:.2em .8em;margin:.8em 0}.step.err{border-color:#d66}
.disp{background:#fff8e0;padding:.3em .6em;margin:.3em 0}.disp.flag{background:#ffe8e0}
.judge{background:#eef6ff;padding:.3em .6em;margin:.3em 0}
nav a{margin-right:1em}
"""
OBS_PREVIEW = 2000  # characters of an observation shown before "show all"


def _slug(*parts) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", "-".join(str(p) for p in parts))


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


# ---------------------------------------------------------------------------- plots (matplotlib -> inline SVG)

def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "jeval_ray", "font.size": 9,
                         "figure.dpi": 72})
    return plt


def _svg(fig) -> str:
    plt = _plt()
    buf = io.StringIO()
    # no metadata block (creation date, tool URLs): the page is reproducible and names only namespaces
    fig.savefig(buf, format="svg", bbox_inches="tight",
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: the SVG is inlined in HTML


def _score_plot(board: list[dict], cond: str) -> str:
    plt = _plt()
    rows = [r for r in board if r["score"] is not None][::-1]
    fig, ax = plt.subplots(figsize=(5.5, 0.45 * len(rows) + 1.2))
    for i, r in enumerate(rows):
        if r["score_lo"] is not None:
            ax.errorbar(r["score"], i, xerr=[[r["score"] - r["score_lo"]], [r["score_hi"] - r["score"]]], fmt="o",
                        color="#1f5fa8", capsize=4)
        else:
            ax.plot(r["score"], i, "o", color="#999", mfc="white")
            ax.annotate("variance not measurable", (r["score"], i), xytext=(6, 4), textcoords="offset points",
                        fontsize=7, color="#777")
    ax.set_yticks(range(len(rows)), [f"{r['rank']}. {r['model']}" for r in rows])
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel("score (mean, 95% interval clustered by task)")
    ax.set_title(f"Score per model - {cond}")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _heatmap(task_rows: list[dict], cond: str) -> str:
    plt = _plt()
    from matplotlib.patches import Rectangle

    models = list(dict.fromkeys(r["model"] for r in task_rows))
    tasks = sorted({r["task_id"] for r in task_rows}, key=_task_order)
    val = {(r["model"], r["task_id"]): r["score"] for r in task_rows}
    fig, ax = plt.subplots(figsize=(0.55 * len(tasks) + 2.5, 0.45 * len(models) + 1.2))
    cmap = plt.get_cmap("viridis")
    for i, m in enumerate(models):
        for j, t in enumerate(tasks):
            v = val.get((m, t))
            rect = Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#eee" if v is None else cmap(v), edgecolor="white")
            rect.set_url(f"#{_slug('task', cond, m, t)}")
            ax.add_patch(rect)
            ax.text(j, i, "-" if v is None else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if v is None or v > 0.6 else "white")
    ax.set_xlim(-0.5, len(tasks) - 0.5)
    ax.set_ylim(len(models) - 0.5, -0.5)
    ax.set_xticks(range(len(tasks)), tasks, rotation=45, ha="right")
    ax.set_yticks(range(len(models)), models)
    ax.set_title(f"Mean score, model x task - {cond}")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(sm, ax=ax, fraction=0.04)
    return _svg(fig)


def _pair_matrix(pairs: list[dict], models: list[str], cond: str) -> str:
    plt = _plt()
    import numpy as np

    n = len(models)
    m = np.full((n, n), np.nan)
    sig: dict[tuple[int, int], bool | None] = {}
    idx = {x: i for i, x in enumerate(models)}
    for p in pairs:
        i, j = idx[p["model_a"]], idx[p["model_b"]]
        m[i, j], m[j, i] = p["diff"], -p["diff"]
        sig[(i, j)] = sig[(j, i)] = p["significant"]
    lim = max(0.05, float(np.nanmax(np.abs(m)))) if n > 1 else 1.0
    fig, ax = plt.subplots(figsize=(0.7 * n + 2.8, 0.6 * n + 1.4))
    im = ax.imshow(m, cmap="RdBu", vmin=-lim, vmax=lim)
    for i in range(n):
        for j in range(n):
            if i != j and not np.isnan(m[i, j]):
                mark = {True: "*", False: "", None: "?"}[sig[(i, j)]]
                ax.text(j, i, f"{m[i, j]:+.2f}{mark}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(n), models, rotation=45, ha="right")
    ax.set_yticks(range(n), models)
    ax.set_title(f"Row minus column - {cond}\n* significant after Holm, ? variance not measurable", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.04)
    return _svg(fig)


def _cost_plot(board: list[dict], costs: list[dict], cond: str) -> str:
    plt = _plt()
    cost = {r["model"]: (r["agent_cost_usd"] or 0) + (r["judge_cost_usd"] or 0) for r in costs}
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for r in board:
        if r["score"] is None:
            continue
        x = cost.get(r["model"], 0.0)
        err = None if r["score_lo"] is None else [[r["score"] - r["score_lo"]], [r["score_hi"] - r["score"]]]
        ax.errorbar(x, r["score"], yerr=err, fmt="o", capsize=3)
        ax.annotate(r["model"], (x, r["score"]), xytext=(5, 3), textcoords="offset points", fontsize=7)
    ax.set_xlabel("cost per episode, USD (agent + judge)")
    ax.set_ylabel("score (mean)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(f"Cost against score - {cond}")
    ax.grid(alpha=0.3)
    return _svg(fig)


# ---------------------------------------------------------------------------- tables

def _table_html(t: Table, rows: list[dict] | None = None, links: dict | None = None) -> str:
    rows = t.rows if rows is None else rows
    if not rows:
        return "<p class=\"note\">(no rows)</p>"
    head = "".join(f"<th>{_e(c.header)}</th>" for c in t.columns)
    body = []
    for r in rows:
        cells = []
        for c in t.columns:
            text = _e(fmt(r.get(c.key), c.kind))
            href = (links or {}).get(c.key, lambda r: None)(r)
            if href:
                text = f"<a href=\"{_e(href)}\">{text}</a>"
            cells.append(f"<td class=\"{'' if c.kind == 'text' else 'num'}\">{text}</td>")
        rid = f' id="{r["_id"]}"' if r.get("_id") else ""
        body.append(f"<tr{rid}>{''.join(cells)}</tr>")
    notes = "".join(f"<p class=\"note\">{_e(n)}</p>" for n in t.notes)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}"


def _model_link(cond_key: str = "condition", model_key: str = "model"):
    return lambda r: f"#{_slug('episodes', r[cond_key], r[model_key])}"


def render_index(report: Report, episodes: list[dict]) -> str:
    """The index page (a string): plots, tables and the episode list of every condition."""
    tables = {t.name: t for t in report.tables}
    conds = report.meta["conditions"]
    m = report.meta
    parts = [f"<h1>jeval_ray report: {_e(report.run)}</h1>",
             f"<p class=\"meta\">{m['episodes']} episodes; bootstrap seed {m['bootstrap_seed']} "
             f"({m['bootstrap_resamples']} resamples); pass threshold {m['pass_threshold']:g}; intervals 95%, "
             f"clustered by task; fewer than {m['min_seeds']} seeds: variance not measurable; world versions "
             f"{_e(m.get('world_versions_text', '-'))}"
             + (" (MIXED: pooled by --allow-mixed)" if m.get("mixed_world_versions") else "") + ".</p>",
             "<nav>" + "".join(f"<a href=\"#{_slug('cond', c)}\">{_e(c)}</a>" for c in conds)
             + "<a href=\"#tables\">all tables</a><a href=\"#episodes\">episodes</a></nav>"]
    for cond in conds:
        board = [r for r in tables["leaderboard"].rows if r["condition"] == cond]
        pairs = [r for r in tables["pairs"].rows if r["condition"] == cond]
        task_rows = [r for r in tables["tasks"].rows if r["condition"] == cond]
        costs = [r for r in tables["costs"].rows if r["condition"] == cond]
        models = [r["model"] for r in board]
        parts.append(f"<h2 id=\"{_slug('cond', cond)}\">Condition {_e(cond)}</h2>")
        parts.append(_table_html(tables["leaderboard"], board, {"model": _model_link()}))
        plots = [_score_plot(board, cond), _heatmap(task_rows, cond)]
        if len(models) > 1:
            plots.append(_pair_matrix(pairs, models, cond))
        plots.append(_cost_plot(board, costs, cond))
        parts.append("<div class=\"plots\">" + "".join(f"<div class=\"plot\">{p}</div>" for p in plots) + "</div>")
    parts.append("<h2 id=\"tables\">All tables</h2>")
    for t in report.tables:
        rows = t.rows
        if t.name == "tasks":
            rows = [{**r, "_id": _slug("task", r["condition"], r["model"], r["task_id"])} for r in rows]
        links = {"model": _model_link()} if t.columns and any(c.key == "model" for c in t.columns) else None
        if t.name == "tasks":  # a task row leads to that model's episodes, each a replay page
            links["task_id"] = _model_link()
        parts.append(f"<h3 id=\"{_slug('table', t.name)}\">{_e(t.title)}</h3>" + _table_html(t, rows, links))
    parts.append("<h2 id=\"episodes\">Episodes</h2>")
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for e in episodes:
        by[(e["condition"], e["model"])].append(e)
    for (cond, model), eps in by.items():
        parts.append(f"<h3 id=\"{_slug('episodes', cond, model)}\">{_e(model)} - {_e(cond)}</h3>")
        rows = "".join(
            f"<tr><td><a href=\"episodes/{_e(e['episode_id'])}.html\">{_e(e['task_id'])} seed {e['seed']}</a></td>"
            f"<td>{_e(e['tier'])}</td><td>{_e(e['status'])}</td><td>{_e(e['termination'])}</td>"
            f"<td class=\"num\">{fmt(e['score'], 'score')}</td><td class=\"num\">{fmt(e['outcome'], 'score')}</td>"
            f"<td class=\"num\">{fmt(e['process'], 'score')}</td><td class=\"num\">{fmt(e['rationale'], 'score')}</td>"
            f"<td class=\"num\">{fmt(e['n_steps'], 'int')}</td><td class=\"num\">{fmt(e['fabrications'], 'int')}</td>"
            "</tr>" for e in eps)
        parts.append("<table><thead><tr><th>episode</th><th>tier</th><th>status</th><th>termination</th><th>score</th>"
                     "<th>outcome</th><th>process</th><th>rationale</th><th>steps</th><th>fabrications</th></tr>"
                     f"</thead><tbody>{rows}</tbody></table>")
    return _page(f"jeval_ray report {report.run}", "\n".join(parts))


# ---------------------------------------------------------------------------- episode replay

def _pretty_json(text: str | None) -> str:
    if not text:
        return ""
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
    except ValueError:
        return text


def _observation(text: str | None) -> str:
    body = _pretty_json(text)
    if len(body) <= OBS_PREVIEW:
        return f"<pre>{_e(body)}</pre>"
    return (f"<pre>{_e(body[:OBS_PREVIEW])}</pre><details><summary>show all {len(body)} characters</summary>"
            f"<pre>{_e(body)}</pre></details>")


def render_episode(ep: dict, steps: list[dict], disps: list[dict], judgments: list[dict]) -> str:
    """One episode's replay page (a string)."""
    anchor = _slug("episodes", ep["condition"], ep["model"])
    head = (f"<p><a href=\"../index.html#{anchor}\">back to the report</a></p>"
            f"<h1>{_e(ep['task_id'])} seed {ep['seed']} - {_e(ep['model'])} ({_e(ep['condition'])})</h1>"
            f"<p class=\"meta\">episode {_e(ep['episode_id'])}, attempt {ep['attempt']}, tier {_e(ep['tier'])}, "
            f"{_e(ep['status'])} ({_e(ep['termination'])}){'; error: ' + _e(ep['error']) if ep.get('error') else ''}</p>"
            "<table><tr>" + "".join(f"<th>{k}</th>" for k in ("score", "outcome", "process", "rationale", "tp", "fp",
                                                             "fn", "fabrications", "steps"))
            + "</tr><tr>" + "".join(f"<td class=\"num\">{fmt(ep.get(k), 'score' if isinstance(ep.get(k), float) else 'int')}</td>"
                                    for k in ("score", "outcome", "process", "rationale", "tp", "fp", "fn",
                                              "fabrications", "n_steps")) + "</tr></table>")
    by_step: dict[int, list[dict]] = defaultdict(list)
    for d in disps:
        by_step[d["step_idx"]].append(d)
    comments = _item_comments(judgments)
    out = [head, "<h2>Trajectory</h2>"]
    for s in steps:
        cls = "step err" if s.get("is_error") else "step"
        out.append(f"<div class=\"{cls}\" id=\"step-{s['step_idx']}\"><b>step {s['step_idx']}: {_e(s['tool'])}</b>"
                   + (" <span class=\"note\">(error observation)</span>" if s.get("is_error") else "")
                   + (f"<div class=\"note\">reasoning</div><pre>{_e(s['reasoning_trace'])}</pre>"
                      if s.get("reasoning_trace") else "")
                   + f"<div class=\"note\">arguments</div><pre>{_e(_pretty_json(s['args']))}</pre>"
                   + f"<div class=\"note\">observation</div>{_observation(s.get('observation'))}")
        for d in by_step.get(s["step_idx"], []):
            truth = {True: "an exception", False: "not an exception", None: "unknown"}[d.get("is_exception")]
            out.append(f"<div class=\"disp {_e(d['decision'])}\"><b>{_e(d['decision'])}</b> entry {_e(d['entry_id'])}"
                       f"{' - ' + _e(d['criteria']) if d.get('criteria') else ''}"
                       f"{' - amount ' + fmt(d['amount'], 'usd') if d.get('amount') is not None else ''}"
                       f"<br>evidence: {_e(', '.join(d.get('evidence') or []) or '-')}"
                       f"{' <b>(fabricated: cites evidence not opened before)</b>' if d.get('fabricated') else ''}"
                       f"<br>rationale: {_e(d.get('rationale'))}<br><span class=\"note\">reference: the entry is "
                       f"{truth}{'; final disposition' if d.get('is_final') else '; superseded later'}</span>"
                       + "".join(f"<br><span class=\"note\">{_e(c)}</span>" for c in comments.get(d["entry_id"], []))
                       + "</div>")
        out.append("</div>")
    out.append("<h2>Judges</h2>")
    if not judgments:
        out.append("<p class=\"note\">no judgments</p>")
    for j in judgments:
        out.append(f"<div class=\"judge\"><b>{_e(j['judge'])}</b> #{j['judge_idx']} ({_e(j['rubric'])}): "
                   f"{_e(j['status'])}, rationale score {fmt(j.get('rationale_score'), 'score')}"
                   f"{'<br>' + _e(j['overall_comment']) if j.get('overall_comment') else ''}"
                   f"{'<br>error: ' + _e(j['error']) if j.get('error') else ''}</div>")
    return _page(f"{ep['task_id']} seed {ep['seed']} {ep['model']} {ep['condition']}", "\n".join(out))


def _item_comments(judgments: list[dict]) -> dict[str, list[str]]:
    """Per entry: each judge's item scores and comment on the disposition of that entry."""
    out: dict[str, list[str]] = defaultdict(list)
    for j in judgments:
        try:
            items = json.loads(j.get("item_scores") or "[]")
        except ValueError:
            continue
        for it in items if isinstance(items, list) else []:
            scores = ", ".join(f"{k} {v}" for k, v in (it.get("scores") or {}).items())
            extra = "; ".join(x for x in (it.get("dealbreaker"), it.get("comment")) if x)
            out[str(it.get("entry_id"))].append(f"judge {j['judge']} #{j['judge_idx']}: {scores}"
                                                + (f" - {extra}" if extra else ""))
    return out


def write_html(report: Report, run_dir: str, out_dir: str | Path) -> list[Path]:
    """Write ``index.html`` and ``episodes/<episode_id>.html`` into ``out_dir``; return the paths."""
    from jeval_ray.store.reader import read_run

    run = read_run(run_dir)
    eps = episode_index(run["episodes"])
    d = Path(out_dir)
    (d / "episodes").mkdir(parents=True, exist_ok=True)
    index = d / "index.html"
    index.write_text(render_index(report, eps))
    written = [index]
    group = {name: defaultdict(list) for name in ("steps", "dispositions", "judgments")}
    for name, g in group.items():
        for r in run[name].to_pylist():
            g[r["episode_id"]].append(r)
    for ep in run["episodes"].to_pylist():
        p = d / "episodes" / f"{ep['episode_id']}.html"
        eid = ep["episode_id"]
        p.write_text(render_episode(ep, group["steps"][eid], group["dispositions"][eid], group["judgments"][eid]))
        written.append(p)
    return written
