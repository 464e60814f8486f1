"""The report's tables, computed from a run's deduplicated episodes (and judgments) as Arrow tables.

Every table is a ``Table``: a name, a title, its columns (key, header, kind) and rows as dicts, so
the terminal, Markdown, CSV, JSON and HTML writers all render the same numbers. Conditions are
never mixed: every table is computed per condition, and other conditions are compared with
``full`` only through paired deltas on the same (task, seed) cells.

Column kinds say how a number aggregates, and the headers say it too: ``mean`` (per-episode
average), ``total`` (sum over the episodes), ``count``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

import pyarrow as pa

from jeval_ray.errors import ConfigError
from jeval_ray.report import stats

TIERS = ("L1", "L2", "L3", "L4")
#: the six process metrics of the verifier (docs/scoring.md), each a per-episode mean
PROCESS_METRICS = ("evidence_coverage", "evidence_precision", "redundant_calls", "steps_to_first_flag",
                   "baseline_before_claim", "premature_disposition")
NOT_MEASURABLE = "variance not measurable"
DEFAULT_THRESHOLD = 0.8
DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 2000
#: judges that are not LLMs (the deterministic reference judge of jeval_ray.scoring)
MECHANICAL_JUDGES = {"reference"}


@dataclass
class Column:
    key: str
    header: str
    kind: str = "text"  # text | int | mean | total | score | p | usd | seconds | link


@dataclass
class Table:
    name: str
    title: str
    columns: list[Column]
    rows: list[dict]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"title": self.title, "columns": [c.__dict__ for c in self.columns], "rows": self.rows,
                "notes": self.notes}


@dataclass
class Report:
    run: str
    meta: dict
    tables: list[Table]

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)

    def as_dict(self) -> dict:
        return {"run": self.run, "meta": self.meta, "tables": {t.name: t.as_dict() for t in self.tables}}


class MixedWorldVersionsError(ConfigError):
    """Episodes of more than one world version of a task would be pooled (the command exits 2)."""


def _version_label(v) -> str:
    return "unrecorded" if v is None else f"v{v}"


def world_versions(rows: list[dict]) -> dict[str, list]:
    """Per task, the sorted world versions of its episodes (``None``: rows written before versions were recorded)."""
    seen: dict[str, set] = defaultdict(set)
    for r in rows:
        seen[r["task_id"]].add(r.get("world_version"))
    return {t: sorted(seen[t], key=lambda v: (v is None, v or 0)) for t in sorted(seen, key=_task_order)}


def versions_text(versions: dict[str, list]) -> str:
    """``v1: JE-1, JE-2; v2: JE-3`` (tasks grouped by version); a pooled task as ``JE-4 v1+v2 (mixed)``."""
    groups: dict[str, list[str]] = defaultdict(list)
    mixed = []
    for t, vs in versions.items():
        if len(vs) == 1:
            groups[_version_label(vs[0])].append(t)
        else:
            mixed.append(f"{t} {'+'.join(_version_label(v) for v in vs)} (mixed)")
    parts = [f"{label}: {', '.join(ts)}" for label, ts in sorted(groups.items(), key=lambda g: (g[0] == "unrecorded", g[0]))]
    return "; ".join(parts + mixed) or "-"


def check_world_versions(rows: list[dict], *, allow_mixed: bool = False, run: str = "") -> dict[str, list]:
    """The world versions of ``rows`` per task; raises ``MixedWorldVersionsError`` when a task has more than one
    and ``allow_mixed`` is false."""
    versions = world_versions(rows)
    mixed = {t: vs for t, vs in versions.items() if len(vs) > 1}
    if mixed and not allow_mixed:
        counts: dict[tuple, int] = defaultdict(int)
        for r in rows:
            counts[(r["task_id"], r.get("world_version"))] += 1
        what = "; ".join(f"{t}: " + ", ".join(f"{_version_label(v)} {counts[(t, v)]} episode(s)" for v in vs)
                         for t, vs in mixed.items())
        raise MixedWorldVersionsError(
            f"{run or 'the run'} holds episodes of more than one world version of {', '.join(mixed)} ({what}): "
            "pooling them would average scores over different worlds. Fix: report each version in its own run (a "
            "resumed run keeps one version; start a new --run-id for new worlds), or pass --allow-mixed to pool them "
            "anyway (every board then names the versions it pools).")
    return versions


def _mean(xs) -> float | None:
    xs = [float(x) for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _est_fields(prefix: str, e: stats.Estimate) -> dict:
    return {prefix: e.mean, f"{prefix}_lo": e.lo, f"{prefix}_hi": e.hi, f"{prefix}_se": e.se,
            f"{prefix}_interval": _interval_text(e)}


def _interval_text(e: stats.Estimate) -> str:
    if e.mean is None:
        return "-"
    if not e.measurable:
        return f"{NOT_MEASURABLE} ({e.seeds} seed{'s' if e.seeds != 1 else ''})"
    return f"[{e.lo:.3f}, {e.hi:.3f}]"


def _scored(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] == "completed" and r["score"] is not None]


def _cells(rows: list[dict]) -> dict[tuple[str, int], float]:
    return {(r["task_id"], r["seed"]): r["score"] for r in _scored(rows)}


def _paired(a_rows: list[dict], b_rows: list[dict], alpha: float) -> tuple[stats.Paired, int]:
    a, b = _cells(a_rows), _cells(b_rows)
    shared = sorted(set(a) & set(b))
    return (stats.paired_difference([a[c] for c in shared], [b[c] for c in shared], [c[0] for c in shared],
                                    [c[1] for c in shared], alpha), len(shared))


def build_report(episodes: pa.Table, judgments: pa.Table | None = None, *, run: str = "",
                 threshold: float = DEFAULT_THRESHOLD, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                 alpha: float = stats.ALPHA, manifest: dict | None = None, allow_mixed: bool = False) -> Report:
    """All tables of the report (see the module doc); ``seed`` seeds every resampling. ``manifest``:
    the run's manifest, whose ``judging`` block carries the juries' agreement and calibration.
    Raises ``MixedWorldVersionsError`` when a task's episodes are of more than one world version,
    unless ``allow_mixed``."""
    rows, budget_note, skipped_by = shared_cells(episodes.to_pylist())
    versions = check_world_versions(rows, allow_mixed=allow_mixed, run=run)
    by: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[r["condition"]][r["model"]].append(r)
    conditions = sorted(by, key=lambda c: (c != "full", c))
    meta = {"bootstrap_seed": seed, "bootstrap_resamples": resamples, "pass_threshold": threshold,
            "confidence": 1 - alpha, "power": stats.POWER, "min_seeds": stats.MIN_SEEDS,
            "interval": "clustered by task (Student t, tasks-1 df); see docs/analysis.md",
            "episodes": len(rows), "conditions": conditions, "world_versions": versions,
            "mixed_world_versions": [t for t, vs in versions.items() if len(vs) > 1],
            "world_versions_text": versions_text(versions), "budget_skipped": sum(skipped_by.values()),
            "shared_cells_only": bool(budget_note)}
    boards, pairs, tiers, tasks, process, passk, costs, deltas = [], [], [], [], [], [], [], []
    judge_sums = _judge_sums(judgments)
    for cond in conditions:
        models = by[cond]
        board = _board(cond, models, alpha)
        for b in board:
            b["skipped"] = skipped_by.get((cond, b["model"]), 0)
        board.sort(key=lambda b: (-(b["score"] if b["score"] is not None else -1), b["model"]))
        pair_rows = _pairs(cond, models, [b["model"] for b in board], alpha)  # a: the higher mean score
        better = {(p["model_a"], p["model_b"]) if p["diff"] > 0 else (p["model_b"], p["model_a"])
                  for p in pair_rows if p["significant"]}
        ranks = stats.tie_ranks({b["model"]: b["score"] for b in board if b["score"] is not None}, better)
        for b in board:
            b["rank"] = ranks.get(b["model"])
        board.sort(key=lambda b: (b["rank"] or 10**9, -(b["score"] if b["score"] is not None else -1), b["model"]))
        boards += board
        pairs += pair_rows
        for model in [b["model"] for b in board]:  # every table lists the models in board order
            rs = models[model]
            tiers.append(_tier_row(cond, model, rs))
            tasks += _task_rows(cond, model, rs, alpha)
            process.append(_process_row(cond, model, rs))
            row = _passk_row(cond, model, rs, threshold, seed, resamples, alpha)
            passk += [row] if row else []
            costs.append(_cost_row(cond, model, rs, judge_sums))
        if cond != "full" and "full" in by:
            deltas += _delta_rows(cond, {b["model"]: models[b["model"]] for b in board}, by["full"], alpha)
    tables = [
        Table("leaderboard", "Leaderboard (per condition; rank shared by models not separable after Holm)", [
            Column("condition", "condition"), Column("rank", "rank", "int"), Column("model", "model"),
            Column("score", "score (mean)", "score"), Column("score_interval", "95% interval"),
            Column("outcome", "outcome (mean)", "score"), Column("process", "process (mean)", "score"),
            Column("rationale", "rationale (mean)", "score"), Column("tasks", "tasks", "int"),
            Column("seeds", "seeds", "int"), Column("episodes", "episodes", "int"),
            Column("completed", "done", "int"), Column("failed", "failed", "int"),
            Column("unscored", "unscored", "int"), Column("fabrications", "fabrications (total)", "total"),
            Column("steps", "steps (mean/ep)", "mean")]
            + ([Column("skipped", "skipped for budget", "int")] if budget_note else []), boards,
            notes=([budget_note] if budget_note else []) + [f"world versions: {meta['world_versions_text']}"
                   + (" - pooled across versions by --allow-mixed" if meta["mixed_world_versions"] else ""),
                   "score, outcome, process, rationale and steps are per-episode means over scored episodes; "
                   "fabrications is the total over them; episodes, done, failed and unscored are counts.",
                   "95% interval: clustered by task (Student t, tasks-1 df); "
                   f"'{NOT_MEASURABLE}' below {stats.MIN_SEEDS} seeds."]),
        Table("pairs", "Paired differences (a - b) on shared (task, seed) cells, Holm-adjusted per condition", [
            Column("condition", "condition"), Column("model_a", "a"), Column("model_b", "b"),
            Column("cells", "cells", "int"), Column("diff", "a - b (mean)", "score"),
            Column("diff_interval", "95% interval"), Column("corr", "correlation", "score"),
            Column("p", "p", "p"), Column("p_holm", "p (Holm)", "p"), Column("significant", "significant"),
            Column("mde", "MDE (80% power)", "score")], pairs,
            notes=["MDE: the smallest difference this grid detects with 80% power at alpha 0.05 "
                   "(2.80 x SE of the paired difference)."]),
        Table("conditions", "Each model's paired delta against condition full (same task, seed cells)", [
            Column("condition", "condition"), Column("model", "model"), Column("cells", "cells", "int"),
            Column("delta", "delta vs full (mean)", "score"), Column("delta_interval", "95% interval"),
            Column("corr", "correlation", "score"), Column("p", "p", "p"), Column("p_holm", "p (Holm)", "p"),
            Column("mde", "MDE", "score")], deltas,
            notes=[] if deltas else ["no condition other than full to compare"]),
        Table("tiers", "Mean score by tier", [Column("condition", "condition"), Column("model", "model")]
              + [Column(t, f"{t} (mean)", "score") for t in TIERS], tiers),
        Table("tasks", "Mean score by task (interval across the task's seeds)", [
            Column("condition", "condition"), Column("model", "model"), Column("task_id", "task"),
            Column("tier", "tier"), Column("seeds", "seeds", "int"), Column("score", "score (mean)", "score"),
            Column("score_interval", "95% interval"), Column("failed", "failed", "int"),
            Column("world_version", "world version")], tasks),
        Table("process", "Process metrics (per-episode means; baseline_before_claim: of the episodes that made an "
              "unusual claim, the share that ran compute_stats first)", [
            Column("condition", "condition"), Column("model", "model")]
            + [Column(m, f"{m} (mean)", "mean") for m in PROCESS_METRICS], process),
        Table("pass_k", f"pass^k: all of k seeds of a task score >= {threshold:g} (mean over tasks)", [
            Column("condition", "condition"), Column("model", "model"), Column("tasks", "tasks", "int"),
            Column("seeds", "seeds (fewest of a task)", "int")]
            + [c for k in pass_ks(max((r["seeds"] for r in passk), default=0))
               for c in (Column(f"pass{k}", f"pass^{k}", "score"), Column(f"pass{k}_interval", f"pass^{k} 95%"))],
            passk, notes=[f"unbiased C(c,k)/C(n,k) per task over all seed combinations; interval: percentile "
                          f"bootstrap over tasks, {resamples} resamples, seed {seed}"]),
        Table("costs", "Tokens, cost and wall time per episode (agent and judge apart)", [
            Column("condition", "condition"), Column("model", "model"), Column("episodes", "episodes", "int"),
            Column("agent_tokens_in", "agent tokens in (mean/ep)", "mean"),
            Column("agent_tokens_out", "agent tokens out (mean/ep)", "mean"),
            Column("agent_cost_usd", "agent $ (mean/ep)", "usd"), Column("wall_s", "wall s (mean/ep)", "seconds"),
            Column("judge_tokens_in", "judge tokens in (mean/ep)", "mean"),
            Column("judge_tokens_out", "judge tokens out (mean/ep)", "mean"),
            Column("judge_cost_usd", "judge $ (mean/ep)", "usd"),
            Column("judge_s", "judge s (mean/ep, summed over judges)", "seconds"),
            Column("total_cost_usd", "$ (total)", "usd")], costs),
        _judge_table(judgments, episodes, (manifest or {}).get("judging")),
    ]
    return Report(run, meta, tables)


def shared_cells(rows: list[dict]) -> tuple[list[dict], str, dict[tuple[str, str], int]]:
    """When a budget skipped episodes (status ``skipped``), the rows of the (condition, task, seed) cells
    every model of its condition played, a note that says so for the board, and the skipped count per
    (condition, model); otherwise the rows as they are, no note and no counts."""
    skipped = [r for r in rows if r["status"] == "skipped"]
    if not skipped:
        return rows, "", {}
    by: dict[tuple[str, str], int] = defaultdict(int)
    for r in skipped:
        by[(r["condition"], r["model"])] += 1
    gone = {(r["condition"], r["task_id"], r["seed"]) for r in skipped}
    kept = [r for r in rows if (r["condition"], r["task_id"], r["seed"]) not in gone]
    cells = len({(r["condition"], r["task_id"], r["seed"]) for r in kept})
    note = (f"{len(skipped)} episode(s) were skipped for budget (status skipped): models are compared on the {cells} "
            f"(condition, task, seed) cell(s) every model played; the {len(gone)} cell(s) with a skipped episode are "
            "left out of every table (a resume with a higher budget_usd plays them).")
    return kept, note, dict(by)


def _board(cond: str, models: dict[str, list[dict]], alpha: float) -> list[dict]:
    out = []
    for model, rs in models.items():
        done = _scored(rs)
        est = stats.clustered_mean([r["score"] for r in done], [r["task_id"] for r in done], [r["seed"] for r in done],
                                   alpha)
        out.append({
            "condition": cond, "model": model, "agent": rs[0].get("agent"), **_est_fields("score", est),
            "outcome": _mean(r["outcome"] for r in done), "process": _mean(r["process"] for r in done),
            "rationale": _mean(r["rationale"] for r in done), "tasks": len({r["task_id"] for r in done}),
            "seeds": est.seeds, "episodes": len(rs), "completed": sum(r["status"] == "completed" for r in rs),
            "failed": sum(r["status"] == "failed" for r in rs),
            "unscored": sum(r["status"] == "completed" and r["score"] is None for r in rs),
            "fabrications": sum(r["fabrications"] or 0 for r in done), "steps": _mean(r["n_steps"] for r in done),
            "world_versions": versions_text(world_versions(rs)),
        })
    return out


def _pairs(cond: str, models: dict[str, list[dict]], order: list[str], alpha: float) -> list[dict]:
    out = []
    for a, b in combinations(order, 2):
        pr, n = _paired(models[a], models[b], alpha)
        out.append({"condition": cond, "model_a": a, "model_b": b, "cells": n, **_est_fields("diff", pr.diff),
                    "corr": pr.corr, "p": pr.p, "mde": pr.mde})
    _holm_into(out, alpha)
    return out


def _holm_into(rows: list[dict], alpha: float) -> None:
    for r, ph in zip(rows, stats.holm([r["p"] for r in rows])):
        r["p_holm"] = ph
        r["significant"] = None if ph is None else ph < alpha


def _delta_rows(cond: str, models: dict[str, list[dict]], full: dict[str, list[dict]], alpha: float) -> list[dict]:
    out = []
    for model in models:
        if model not in full:
            continue
        pr, n = _paired(models[model], full[model], alpha)
        out.append({"condition": cond, "model": model, "cells": n, **_est_fields("delta", pr.diff), "corr": pr.corr,
                    "p": pr.p, "mde": pr.mde})
    _holm_into(out, alpha)
    return out


def _tier_row(cond: str, model: str, rs: list[dict]) -> dict:
    done = _scored(rs)
    return {"condition": cond, "model": model, **{t: _mean(r["score"] for r in done if r["tier"] == t) for t in TIERS}}


def _task_rows(cond: str, model: str, rs: list[dict], alpha: float) -> list[dict]:
    per: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        per[r["task_id"]].append(r)
    out = []
    for task in sorted(per, key=_task_order):
        done = _scored(per[task])
        est = stats.clustered_mean([r["score"] for r in done], [task] * len(done), [r["seed"] for r in done], alpha)
        out.append({"condition": cond, "model": model, "task_id": task, "tier": per[task][0]["tier"], "seeds": est.seeds,
                    **_est_fields("score", est), "failed": sum(r["status"] == "failed" for r in per[task]),
                    "world_version": "+".join(_version_label(v) for v in world_versions(per[task])[task])})
    return out


def _task_order(task_id: str):
    head, _, num = task_id.rpartition("-")
    return (head, int(num)) if num.isdigit() else (task_id, 0)


def _process_row(cond: str, model: str, rs: list[dict]) -> dict:
    done = _scored(rs)
    row = {"condition": cond, "model": model}
    for m in PROCESS_METRICS:
        vals = [r.get(m) for r in done if r.get(m) is not None]
        row[m] = _mean(float(v) for v in vals)
    return row


def pass_ks(n_min: int) -> list[int]:
    """The k shown: 1, 2, 3, 5 and the largest k every task allows (all seeds pass)."""
    return sorted({k for k in (1, 2, 3, 5, n_min) if 1 <= k <= n_min})


def _passk_row(cond: str, model: str, rs: list[dict], threshold: float, seed: int, resamples: int,
               alpha: float) -> dict | None:
    per: dict[str, list[float]] = defaultdict(list)
    for r in _scored(rs):
        per[r["task_id"]].append(r["score"])
    if not per:
        return None
    n_min = min(len(v) for v in per.values())
    row = {"condition": cond, "model": model, "tasks": len(per), "seeds": n_min}
    for k in pass_ks(n_min):
        vals = [stats.pass_hat_k(sum(s >= threshold for s in v), len(v), k) for v in per.values()]
        row[f"pass{k}"] = sum(vals) / len(vals)
        lo = hi = None
        if n_min < stats.MIN_SEEDS:
            text = f"{NOT_MEASURABLE} ({n_min} seeds)"
        elif len(vals) < 2:
            text = "one task: no task resampling"
        else:
            lo, hi = stats.bootstrap_mean(vals, seed, resamples, alpha)
            text = f"[{lo:.3f}, {hi:.3f}]"
        row.update({f"pass{k}_lo": lo, f"pass{k}_hi": hi, f"pass{k}_interval": text})
    return row


def _judge_sums(judgments: pa.Table | None) -> dict[str, tuple[int, int, float]]:
    """Judge tokens in, out and latency in seconds per episode, summed over its judgments."""
    out: dict[str, tuple[int, int, float]] = {}
    if judgments is None or judgments.num_rows == 0:
        return out
    for eid, ti, to, ms in zip(judgments["episode_id"].to_pylist(), judgments["tokens_in"].to_pylist(),
                               judgments["tokens_out"].to_pylist(), judgments["latency_ms"].to_pylist()):
        a, b, c = out.get(eid, (0, 0, 0.0))
        out[eid] = (a + (ti or 0), b + (to or 0), c + (ms or 0) / 1000)
    return out


def _cost_row(cond: str, model: str, rs: list[dict], sums: dict[str, tuple[int, int, float]]) -> dict:
    def judge(r: dict, i: int):
        col = ("judge_tokens_in", "judge_tokens_out", None)[i]
        if r.get(col) is not None:  # the episodes row carries the judges' tokens (newer runs)
            return r[col]
        got = sums.get(r["episode_id"])
        return None if got is None else got[i]

    return {"condition": cond, "model": model, "episodes": len(rs),
            "agent_tokens_in": _mean(r["tokens_in"] for r in rs), "agent_tokens_out": _mean(r["tokens_out"] for r in rs),
            "agent_cost_usd": _mean(r["cost_usd"] for r in rs), "wall_s": _mean(r["wall_s"] for r in rs),
            "judge_tokens_in": _mean(judge(r, 0) for r in rs), "judge_tokens_out": _mean(judge(r, 1) for r in rs),
            "judge_cost_usd": _mean(r["judge_cost_usd"] for r in rs), "judge_s": _mean(judge(r, 2) for r in rs),
            "total_cost_usd": sum((r["cost_usd"] or 0) + (r["judge_cost_usd"] or 0) for r in rs)}


def _jury_notes(judging: dict | None) -> list[str]:
    """The juries' agreement (Krippendorff's alpha, ordinal, per rubric item, with its bootstrap interval)
    and each LLM judge's agreement with the reference judge, as the sweep or rescore recorded them."""
    notes: list[str] = []
    for jury, j in sorted(((judging or {}).get("juries") or {}).items()):
        head = f"jury {jury} ({j.get('rubric')}): {j.get('ok', 0)} ok, {j.get('unscored', 0)} unscored"
        reasons = j.get("unscored_reasons") or {}
        if reasons:
            head += " (" + ", ".join(f"{k}: {v}" for k, v in reasons.items()) + ")"
        notes.append(head + f", {j.get('failed', 0)} failed")
        items = ((j.get("agreement") or {}).get("items")) or {}
        parts = []
        for item, a in items.items():
            if a.get("alpha") is None:
                parts.append(f"{item} n/a")
            elif a.get("ci_low") is None:
                parts.append(f"{item} {a['alpha']:.2f}")
            else:
                parts.append(f"{item} {a['alpha']:.2f} [{a['ci_low']:.2f}, {a['ci_high']:.2f}]")
        if parts:
            notes.append(f"jury {jury}: Krippendorff's alpha (ordinal) between its judges over "
                         f"{(j.get('agreement') or {}).get('episodes', 0)} episodes: " + "; ".join(parts))
        for model, per_item in sorted((j.get("reference_confusion") or {}).items()):
            cells = [f"{item} {c['agreement']:.2f} of {c['n']}" for item, c in per_item.items() if c.get("n")]
            if cells:
                notes.append(f"jury {jury}: {model} agrees with the reference judge on " + "; ".join(cells))
    return notes


def _judge_table(judgments: pa.Table | None, episodes: pa.Table, judging: dict | None = None) -> Table:
    cols = [Column("judge", "judge"), Column("rubric", "rubric"), Column("judgments", "judgments", "int"),
            Column("ok", "ok", "int"), Column("failed", "failed", "int"), Column("unscored", "unscored", "int"),
            Column("rationale_score", "rationale score (mean)", "score"),
            Column("tokens", "tokens (total)", "total"), Column("cost_usd", "$ (total)", "usd")]
    rows: list[dict] = []
    notes: list[str] = []
    recs = judgments.to_pylist() if judgments is not None else []
    per: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for j in recs:
        per[(j["judge"], j["rubric"])].append(j)
    for (judge, rubric), js in sorted(per.items()):
        rows.append({"judge": judge, "rubric": rubric, "judgments": len(js), "ok": sum(j["status"] == "ok" for j in js),
                     "failed": sum(j["status"] == "failed" for j in js),
                     "unscored": sum(j["status"] not in ("ok", "failed") for j in js),
                     "rationale_score": _mean(j["rationale_score"] for j in js if j["status"] == "ok"),
                     "tokens": sum((j["tokens_in"] or 0) + (j["tokens_out"] or 0) for j in js),
                     "cost_usd": sum(j["cost_usd"] or 0 for j in js)})
    if not any(judge not in MECHANICAL_JUDGES for judge, _ in per):
        notes.append("no LLM judges in this run" + (" (only the mechanical reference judge)" if per else ""))
    # agreement: over episodes judged by 2 or more judgments that succeeded, how far their scores spread
    ok_by_ep: dict[str, list[float]] = defaultdict(list)
    for j in recs:
        if j["status"] == "ok" and j["rationale_score"] is not None:
            ok_by_ep[j["episode_id"]].append(j["rationale_score"])
    multi = [max(v) - min(v) for v in ok_by_ep.values() if len(v) >= 2]
    if multi:
        notes.append(f"judge agreement: {len(multi)} episodes with 2+ scoring judges; rationale score spread "
                     f"(max - min) mean {sum(multi) / len(multi):.3f}, max {max(multi):.3f}; "
                     f"{sum(s == 0 for s in multi)} of them in exact agreement")
    else:
        notes.append("judge agreement: no episode has 2 or more scoring judges")
    unscored_eps = sum(1 for r in episodes.select(["status", "judges_ok"]).to_pylist()
                       if r["status"] == "completed" and not r["judges_ok"])
    if unscored_eps:
        notes.append(f"{unscored_eps} completed episode(s) have no successful judgment (rationale unscored)")
    notes += _jury_notes(judging)
    return Table("judges", "Judges: judgments, failures, agreement", cols, rows, notes)


def plan_table(episodes: pa.Table, effect: float, alpha: float = stats.ALPHA) -> Table:
    """Power planning from a pilot run: seeds per task to detect ``effect`` for every pair of models."""
    by: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in episodes.to_pylist():
        by[r["condition"]][r["model"]].append(r)
    rows = []
    for cond in sorted(by, key=lambda c: (c != "full", c)):
        for a, b in combinations(sorted(by[cond]), 2):
            ca, cb = _cells(by[cond][a]), _cells(by[cond][b])
            shared = sorted(set(ca) & set(cb))
            if len(shared) < 2:
                continue
            p = stats.seeds_needed([ca[c] - cb[c] for c in shared], [c[0] for c in shared], [c[1] for c in shared],
                                   effect, alpha)
            rows.append({"condition": cond, "model_a": a, "model_b": b, "tasks": p.tasks, "pilot_seeds": p.pilot_seeds,
                         "within_sd": p.within_var ** 0.5, "between_sd": p.between_var ** 0.5,
                         "mde_pilot": p.mde_pilot, "effect": effect, "seeds_needed": p.seeds_needed,
                         "tasks_needed": p.tasks_needed_at_pilot_seeds,
                         "verdict": (f"{p.seeds_needed} seeds per task" if p.seeds_needed is not None else
                                     f"not reachable with {p.tasks} task(s) by adding seeds: the gap varies between "
                                     f"tasks; about {p.tasks_needed_at_pilot_seeds} tasks at {p.pilot_seeds} seeds")})
    return Table("plan", f"Power plan: seeds per task to detect a difference of {effect:g} (alpha {alpha:g}, "
                 f"power {stats.POWER:g})", [
        Column("condition", "condition"), Column("model_a", "a"), Column("model_b", "b"), Column("tasks", "tasks", "int"),
        Column("pilot_seeds", "pilot seeds", "int"), Column("within_sd", "sd across seeds", "score"),
        Column("between_sd", "sd across tasks", "score"), Column("mde_pilot", "MDE now", "score"),
        Column("verdict", "needed")], rows,
        notes=["paired differences d = a - b per (task, seed); Var(mean d) = sd_tasks^2/T + sd_seeds^2/(T*S); "
               f"S = the smallest number of seeds (at least {stats.MIN_SEEDS}) with 2.80 * SE <= effect"])


def episode_index(episodes: pa.Table) -> list[dict]:
    """One row per episode for the HTML page's episode list (ordered by condition, model, task, seed)."""
    cols = ["episode_id", "attempt", "condition", "model", "task_id", "tier", "seed", "status", "termination", "score",
            "outcome", "process", "rationale", "n_steps", "fabrications"]
    rows = episodes.select(cols).to_pylist()
    rows.sort(key=lambda r: (r["condition"] != "full", r["condition"], r["model"], _task_order(r["task_id"]), r["seed"]))
    return rows


def json_default(o):
    return str(o)


def dumps(report: Report) -> str:
    return json.dumps(report.as_dict(), indent=2, default=json_default)
