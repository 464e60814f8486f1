"""JE-16 (mixed engagement with completeness): every criterion's exceptions obey their rule, decoys
are cleared by their evidence, the missing entry shows in the numbering and the roll-forward, the
base is clean and premature dispositions cost (what every task promises, the built-in agents
included, is tests/test_task_contract.py)."""

from __future__ import annotations


import numpy as np
import pytest

from jeval_ray.tasks import get_task
from jeval_ray.tasks.je16 import KINDS
from jeval_ray.world import generate_world
from support.je16 import check_decoys, check_defects, entries, rule_hits
from support.worlds import world as cached_world

TASK = "JE-16"
SEEDS = range(5)


@pytest.fixture(scope="module")
def big():
    """Enough exceptions and decoys that every kind and variant appears."""
    return cached_world(TASK, 1, {"n_entries": 3000, "n_defects": 30, "n_decoys": 30, "near_miss": 1.0})


def test_spec_scores_premature_dispositions():
    spec = get_task(TASK)
    assert spec.available and spec.tier == "L4" and spec.step_budget == 120 and spec.asks_amount
    assert spec.premature_penalty == pytest.approx(0.05)
    assert set(KINDS) | {"COMPLETENESS_GAP"} <= set(spec.criteria_codes)


def test_defects_satisfy_their_rules(worlds, big):
    for w in worlds.values():
        check_defects(w)
        assert sum(d.criteria == "COMPLETENESS_GAP" for d in w.defects) == 1
    kinds = check_defects(big)
    assert {"off_hours_unauthorised", "off_hours_unlisted_user", "off_hours_outside_hours", "posting_to_not_yet_open_account",
            "posted_after_termination", "self_approved_not_logged", "self_approved_signed_after_posting",
            "entry_after_close_no_extension", "entry_after_close_after_extension"} <= kinds


def test_decoys_are_cleared_by_their_evidence(worlds, big):
    for w in [*worlds.values(), big]:
        check_decoys(w)


def test_missing_entry_shows_in_numbering_and_roll_forward(worlds):
    for w in worlds.values():
        gap = next(d for d in w.defects if d.criteria == "COMPLETENESS_GAP")
        ids = sorted(int(x) for x in w.entry_ids)
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        assert missing == [int(gap.entry_id)]
        bal = w.master["balances"].to_pylist()
        assert len({r["account"] for r in bal}) == len(bal)  # one row per account
        moved: dict[str, float] = {}
        for r in w.ledger.to_pylist():
            moved[r["account"]] = moved.get(r["account"], 0.0) + r["debit"] - r["credit"]
        diffs = {r["account"]: round(r["closing_balance"] - r["opening_balance"] - moved.get(r["account"], 0.0), 2) for r in bal}
        off = {a: d for a, d in diffs.items() if abs(d) > 0.005}
        assert len(off) == 2 and sorted(abs(x) for x in off.values()) == [gap.misstatement] * 2
        assert gap.facts == (gap.entry_id, f"{gap.misstatement:.2f}", *sorted(off, key=lambda a: -off[a]))


def test_base_population_does_not_trip_the_rules(worlds):
    for w in worlds.values():
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        # the year-end closing entry closes every expense account, the sub-accounts opened in the year
        # included (on 2025-12-31, when they are all open): the one unplanted hit of INVALID_ACCOUNT's rule
        closing = {r["entry_id"] for r in w.ledger.select(["entry_id", "document_type"]).to_pylist()
                   if r["document_type"] == "YC"}
        for crit, ids in rule_hits(w).items():
            if crit == "INVALID_ACCOUNT":
                ids = set(ids) - closing
            assert set(ids) <= planted, (crit, sorted(set(ids) - planted))


def test_listing_cannot_tell_decoys_from_defects_per_criterion():
    """Within each criterion, the listing fields the rule reads come from one distribution for
    defects and decoys: over many worlds the residual posted to suspense, the time of day and the recording lag overlap
    (rank AUC near 0.5; the old tolerance split gave 1.0 for the imbalance)."""
    def auc(a: list[float], b: list[float]) -> float:
        return sum((x > y) + 0.5 * (x == y) for x in a for y in b) / (len(a) * len(b))

    feats: dict[str, tuple[list, list]] = {"imbalance": ([], []), "hour": ([], []), "lag": ([], [])}
    for s in range(300, 330):
        w = generate_world(TASK, s, {"n_defects": 19, "n_decoys": 18})  # three of each kind a world
        ents = entries(w)
        for rec, k in [(d, 0) for d in w.defects] + [(d, 1) for d in w.decoys]:
            h = ents.get(rec.entry_id)
            if h is None:
                continue
            crit = rec.criteria if k == 0 else next(c for c in KINDS if rec.entry_id in rule_hits_cache(w)[c])
            if crit == "UNBALANCED":
                feats["imbalance"][k].append(np.log10(abs(h["residual"])))
            elif crit == "OFF_HOURS":
                feats["hour"][k].append(int(h["entry_timestamp"][11:13]))
            elif crit == "CUTOFF":
                feats["lag"][k].append((np.datetime64(h["entry_timestamp"][:10]) - np.datetime64(h["posting_date"])).astype(int))
    for name, (dfx, dcx) in feats.items():
        assert len(dfx) >= 60 and len(dcx) >= 60, name
        assert 0.35 <= auc(dfx, dcx) <= 0.65, (name, auc(dfx, dcx))


_HITS: dict = {}


def rule_hits_cache(w):
    key = (w.task_id, w.seed)
    if key not in _HITS:
        _HITS[key] = rule_hits(w)
    return _HITS[key]
