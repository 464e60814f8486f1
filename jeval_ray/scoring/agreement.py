"""Judge agreement: Krippendorff's alpha (the project's own implementation) with a bootstrap interval,
and confusion tables of an LLM judge against the reference judge.

Krippendorff's alpha follows K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011):
the coincidence matrix ``o_ck`` counts, within each unit holding ``m_u >= 2`` values, every ordered
pair of values from different coders with weight ``1 / (m_u - 1)``; ``n_c`` are its margins and
``n`` their sum. Then

    alpha = 1 - (n - 1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck

with the metric ``d2`` of the data's level: nominal (0 or 1), ordinal (the squared number of
values between c and k, half-counting the two ends), interval ``(c - k)^2`` or ratio
``((c - k) / (c + k))^2``. Units with fewer than two values are not pairable and drop out. When
every pairable value is the same (no expected disagreement) alpha is undefined: ``None``.

The PyPI ``krippendorff`` package is GPL, so it is not used; tests check this implementation
against the worked examples of the 2011 paper.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

Level = Literal["nominal", "ordinal", "interval", "ratio"]

#: Rubric items the reference judge decides from the reference facts (not from style): the LLM
#: judges are calibrated against it on these.
CORRECTNESS_ITEMS: tuple[str, ...] = ("criterion_identified", "evidence_specific")


def _delta2(values: np.ndarray, margins: np.ndarray, level: Level) -> np.ndarray:
    """The squared difference ``d2[c, k]`` between the sorted distinct ``values``."""
    c = values[:, None]
    k = values[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        total = c + k
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(total == 0, 0.0, ((c - k) / np.where(total == 0, 1, total)) ** 2)
        return out
    if level == "ordinal":
        cum = np.cumsum(margins)  # cum[i] = n_0 + ... + n_i
        i = np.arange(len(values))
        lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
        between = cum[hi] - np.where(lo > 0, cum[lo - 1], 0)  # n_lo + ... + n_hi
        return (between - (margins[lo] + margins[hi]) / 2.0) ** 2
    raise ValueError(f"unknown level of measurement {level!r}")


def _pairable(units: Iterable[Sequence[float | None]]) -> list[list[float]]:
    pairable = [[float(v) for v in u if v is not None] for u in units]
    return [u for u in pairable if len(u) >= 2]


def _coincidence(pairable: list[list[float]], index: dict[float, int]) -> np.ndarray:
    o = np.zeros((len(index), len(index)))
    for u in pairable:
        counts = np.zeros(len(index))
        for v in u:
            counts[index[v]] += 1
        # every ordered pair of different coders: counts x counts minus each value paired with itself
        o += (np.outer(counts, counts) - np.diag(counts)) / (len(u) - 1)
    return o


def coincidences(units: Iterable[Sequence[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, o)``: the sorted distinct pairable values and the coincidence matrix over them."""
    pairable = _pairable(units)
    values = sorted({v for u in pairable for v in u})
    return np.array(values, dtype=float), _coincidence(pairable, {v: i for i, v in enumerate(values)})


def alpha_from_coincidences(values: np.ndarray, o: np.ndarray, level: Level = "ordinal") -> float | None:
    """Alpha of a coincidence matrix over ``values`` (values whose margin is 0 take no part)."""
    if len(values) == 0:
        return None
    margins = o.sum(axis=1)
    n = margins.sum()
    d2 = _delta2(values, margins, level)
    expected = float((np.outer(margins, margins) * d2).sum())
    if n <= 1 or expected <= 1e-12:
        return None
    observed = float((o * d2).sum())
    return 1.0 - (n - 1) * observed / expected


def krippendorff_alpha(units: Iterable[Sequence[float | None]], level: Level = "ordinal") -> float | None:
    """Krippendorff's alpha of reliability data given unit by unit.

    ``units``: one sequence per unit of analysis holding each coder's value (``None`` = missing).
    Returns ``None`` when alpha is undefined (no pairable values, or no variation among them).
    """
    values, o = coincidences(units)
    return alpha_from_coincidences(values, o, level)


def bootstrap_alpha(groups: Mapping[str, list[Sequence[float | None]]], level: Level = "ordinal", *,
                    samples: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict:
    """Alpha over all units and a percentile bootstrap interval resampling whole *groups* (episodes).

    ``groups``: group id -> its units. Units of one episode are not independent (one agent, one
    trajectory), so episodes are what is resampled. A resample's coincidence matrix is the sum of its
    groups' matrices (each group's computed once). The RNG is seeded: the interval is reproducible.
    ``defined`` counts the resamples where alpha was defined (the others are left out of the interval).
    """
    keys = sorted(groups)
    per = [_pairable(groups[k]) for k in keys]
    values = sorted({v for units in per for u in units for v in u})
    index = {v: i for i, v in enumerate(values)}
    vals = np.array(values, dtype=float)
    mats = np.array([_coincidence(units, index) for units in per]) if keys else np.zeros((0, 0, 0))
    alpha = alpha_from_coincidences(vals, mats.sum(axis=0), level) if keys else None
    out = {"alpha": alpha, "level": level, "groups": len(keys), "units": sum(len(u) for u in per),
           "ci_low": None, "ci_high": None, "confidence": confidence, "bootstrap_samples": samples, "defined": 0}
    if alpha is None or len(keys) < 2 or samples < 1:
        return out
    rng = random.Random(seed)
    draws = []
    for _ in range(samples):
        counts = np.zeros(len(keys))
        for _k in keys:
            counts[rng.randrange(len(keys))] += 1
        a = alpha_from_coincidences(vals, np.tensordot(counts, mats, axes=1), level)
        if a is not None:
            draws.append(a)
    if draws:
        tail = (1 - confidence) / 2
        lo, hi = np.quantile(np.array(draws), [tail, 1 - tail])
        out.update(ci_low=float(lo), ci_high=float(hi), defined=len(draws))
    return out


# ---------------------------------------------------------------------------- from judgment rows
def _scores(item_scores: str | None) -> dict[str, dict[str, int]]:
    """entry_id -> {item: score} of a judgment row's ``item_scores`` JSON."""
    if not item_scores:
        return {}
    return {d["entry_id"]: d["scores"] for d in json.loads(item_scores)}


def jury_agreement(rows: list[dict], items: Sequence[str], *, samples: int = 1000, seed: int = 0) -> dict:
    """Per rubric item, ordinal alpha between the judges of episodes judged more than once.

    ``rows``: judgment rows of one jury (same rubric). A unit is one (episode, entry); its values
    are the item scores of the episode's judges, by ``judge_idx`` (unscored or failed judges are
    missing values). Episodes judged once carry no agreement information and are left out.
    """
    by_episode: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        by_episode[(r["episode_id"], r["attempt"])].append(r)
    multi = {k: v for k, v in by_episode.items() if len(v) > 1}
    out: dict[str, dict] = {}
    for item in items:
        groups: dict[str, list[list[int | None]]] = {}
        for (eid, attempt), judged in sorted(multi.items()):
            judged = sorted(judged, key=lambda r: r["judge_idx"])
            per = [_scores(r["item_scores"]) if r["status"] == "ok" else {} for r in judged]
            entries = sorted({e for p in per for e in p})
            groups[f"{eid}:{attempt}"] = [[p.get(e, {}).get(item) for p in per] for e in entries]
        out[item] = bootstrap_alpha(groups, "ordinal", samples=samples, seed=seed)
    return {"episodes": len(multi), "items": out}


def reference_confusion(rows: list[dict], items: Sequence[str] = CORRECTNESS_ITEMS, scale: int = 4) -> dict:
    """Per judge model and correctness item: the table of (reference score, judge score) counts.

    ``rows``: judgment rows carrying ``reference_item_scores`` (the reference judge's scores of the
    same packet, recorded beside each LLM judgment). ``table[r][j]`` counts dispositions the
    reference judge scored ``r`` and the LLM judge ``j``; ``agreement`` is the share on the diagonal.
    """
    out: dict[str, dict] = {}
    for r in rows:
        if r["status"] != "ok" or not r.get("reference_item_scores"):
            continue
        mine, ref = _scores(r["item_scores"]), _scores(r["reference_item_scores"])
        judge = out.setdefault(r.get("judge_model") or r["judge"], {
            item: {"table": [[0] * (scale + 1) for _ in range(scale + 1)], "n": 0, "agreement": None} for item in items})
        for entry, ref_scores in ref.items():
            for item in items:
                a, b = ref_scores.get(item), mine.get(entry, {}).get(item)
                if a is None or b is None:
                    continue
                judge[item]["table"][int(a)][int(b)] += 1
                judge[item]["n"] += 1
    for judge in out.values():
        for cell in judge.values():
            if cell["n"]:
                cell["agreement"] = sum(cell["table"][i][i] for i in range(scale + 1)) / cell["n"]
    return out


__all__ = ["CORRECTNESS_ITEMS", "bootstrap_alpha", "coincidences", "jury_agreement", "krippendorff_alpha",
           "reference_confusion"]
