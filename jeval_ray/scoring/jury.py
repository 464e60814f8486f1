"""A run's juries, from its ``judgments`` rows: counts, unscored reasons, cost, agreement, calibration.

A run holds the judgments of the sweep's jury and of every re-score (``python -m jeval_ray.rescore``),
told apart by the ``jury`` column. ``judging_summary`` describes each jury for the manifest
(``manifest.judging.juries``): what the report reads to show agreement, confusion tables and
unscored counts. ``jury_rationales`` gives a jury's per-episode rationale (the median of its ``ok``
judgments), which is how a report shows a re-scored jury without any row being rewritten.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from jeval_ray.scoring.agreement import CORRECTNESS_ITEMS, jury_agreement, reference_confusion
from jeval_ray.scoring.rubric import rubric_items

#: Bootstrap resamples of the alpha interval (seeded: the manifest is reproducible).
BOOTSTRAP_SAMPLES = 1000


def unscored_reason(error: str | None) -> str:
    """The class of an unscored judgment's reason: ``invalid_output``, ``model_error``, ``budget`` or ``other``."""
    head = (error or "").split(":", 1)[0]
    return head if head in ("invalid_output", "model_error", "budget") else "other"


def jury_rationales(rows: list[dict], jury: str) -> dict[tuple[str, int], float | None]:
    """(episode_id, attempt) -> the median rationale score of ``jury``'s ``ok`` judgments (None if none)."""
    by_episode: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in rows:
        if r.get("jury") != jury:
            continue
        scores = by_episode[(r["episode_id"], r["attempt"])]
        if r["status"] == "ok" and r["rationale_score"] is not None:
            scores.append(r["rationale_score"])
    return {k: (statistics.median(v) if v else None) for k, v in by_episode.items()}


def summarise_jury(rows: list[dict], *, samples: int = BOOTSTRAP_SAMPLES) -> dict:
    """Counts, cost, agreement and reference calibration of one jury's rows (one rubric)."""
    status = Counter(r["status"] for r in rows)
    reasons = Counter(unscored_reason(r["error"]) for r in rows if r["status"] == "unscored")
    rubric = rows[0]["rubric"] if rows else None
    try:
        items = rubric_items(rubric) if rubric else []
    except KeyError:  # rows of a rubric this version does not ship: counts only
        items = []
    return {
        "rubric": rubric, "judgments": len(rows), "episodes": len({(r["episode_id"], r["attempt"]) for r in rows}),
        "ok": status.get("ok", 0), "unscored": status.get("unscored", 0), "failed": status.get("failed", 0),
        "unscored_reasons": dict(sorted(reasons.items())),
        "calls": sum(r.get("calls") or 0 for r in rows), "reasks": sum(r.get("reasks") or 0 for r in rows),
        "tokens_in": sum(r.get("tokens_in") or 0 for r in rows), "tokens_out": sum(r.get("tokens_out") or 0 for r in rows),
        "cost_usd": sum(r.get("cost_usd") or 0.0 for r in rows),
        "agreement": jury_agreement(rows, items, samples=samples) if items else None,
        "reference_confusion": reference_confusion(rows, [i for i in CORRECTNESS_ITEMS if i in items]),
    }


def judging_summary(rows: list[dict], described: dict[str, dict] | None = None, *,
                    samples: int = BOOTSTRAP_SAMPLES) -> dict[str, dict]:
    """jury id -> its description (from ``described``: rubric, judges, models, settings, who scored)
    merged with ``summarise_jury`` of its rows. Rows without a jury id (older runs) go under ``""``."""
    by_jury: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_jury[r.get("jury") or ""].append(r)
    described = described or {}
    out = {}
    for jury in sorted(set(by_jury) | set(described)):
        out[jury] = {**described.get(jury, {}), **summarise_jury(by_jury.get(jury, []), samples=samples)}
    return out


#: the fields of a jury's manifest entry that describe it (the rest is computed from its rows)
DESCRIPTION_FIELDS = ("scored_by", "judges", "judge_models", "judges_per_episode", "max_reasks", "rationale_max_chars",
                      "budget_usd")


def described_juries(judging_block: dict) -> dict[str, dict]:
    """jury id -> its description, from a manifest's ``judging`` block (what a summary is merged into)."""
    return {k: {f: v[f] for f in DESCRIPTION_FIELDS if f in v} for k, v in (judging_block.get("juries") or {}).items()}


def describe_jury(judging: dict, scored_by: str, budget_usd: float | None = None) -> dict:
    """A jury as the manifest names it (no keys: judge models by provider, model and URL)."""
    models = {name: {"provider": e.get("provider", "openai"), "model": e.get("model"), "base_url": e.get("base_url"),
                     "structured_output": e.get("structured_output", "auto"), "price": e.get("price")}
              for name, e in sorted((judging.get("models") or {}).items())}
    return {"scored_by": scored_by, "judges": list(judging.get("judges") or []), "judge_models": models,
            "judges_per_episode": judging.get("judges_per_episode"), "max_reasks": judging.get("max_reasks"),
            "rationale_max_chars": judging.get("rationale_max_chars"), "budget_usd": budget_usd}


__all__ = ["BOOTSTRAP_SAMPLES", "DESCRIPTION_FIELDS", "described_juries", "describe_jury", "judging_summary", "jury_rationales", "summarise_jury", "unscored_reason"]
