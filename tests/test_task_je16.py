"""JE-16 (mixed engagement with completeness): every criterion's exceptions obey their rule, decoys
are cleared by their evidence, the missing entry shows in the numbering and the roll-forward, the
base is clean, premature dispositions cost, and the agents discriminate."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.agents import entries_of
from jeval_ray.tasks import get_task
from jeval_ray.tasks.je16 import KINDS, _account_ok, _off_window, _rules, _user_ok
from jeval_ray.world import generate_world
from jeval_ray.world._base import month_close_dates

TASK = "JE-16"
SEEDS = range(5)
LEAK = re.compile(r"decoy|defect|planted|red flag|exception", re.I)
CLOSES = dict(month_close_dates())


def entries(world) -> dict[str, dict]:
    rows = [{**r, "posting_date": str(r["posting_date"]), "entry_timestamp": r["entry_timestamp"].isoformat()}
            for r in world.ledger.to_pylist()]
    return entries_of(rows)


def master(world, name, key) -> dict[str, dict]:
    return {r[key]: r for r in world.master[name].to_pylist()}


def holidays(world) -> set[str]:
    return {r["date"] for r in world.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def rule_hits(world) -> dict[str, list[str]]:
    return _rules(entries(world), master(world, "users", "user_id"), master(world, "accounts", "account"), holidays(world))


def memo_covers(world, doc_id: str, h: dict) -> bool:
    body = world.document(doc_id).body
    days = set(re.findall(r"(?:Saturday|Sunday) (\d{4}-\d{2}-\d{2})", body))
    users = {u.strip() for u in re.search(r"Authorised users: ([A-Z_, ]+)", body).group(1).split(",")}
    lo, hi = (int(x) for x in re.search(r"between (\d\d):00 and (\d\d):00", body).groups())
    ts = h["entry_timestamp"]
    return ts[:10] in days and h["preparer"] in users and lo <= int(ts[11:13]) < hi


@pytest.fixture(scope="module")
def big():
    """Enough exceptions and decoys that every kind and variant appears."""
    return generate_world(TASK, 1, {"n_entries": 3000, "n_defects": 30, "n_decoys": 30, "near_miss": 1.0})


def test_spec_scores_premature_dispositions():
    spec = get_task(TASK)
    assert spec.available and spec.tier == "L4" and spec.step_budget == 120 and spec.asks_amount
    assert spec.premature_penalty == pytest.approx(0.05)
    assert set(KINDS) | {"COMPLETENESS_GAP"} <= set(spec.criteria_codes)


def _check_defects(w) -> set[str]:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    kinds = set()
    for d in w.defects:
        kinds.add(d.defect_type)
        if d.criteria == "COMPLETENESS_GAP":
            assert d.entry_id in w.hidden_entries and d.required_evidence == ("master:balances",)
            continue
        h = ents[d.entry_id]
        assert d.entry_id in hits[d.criteria], d
        # exactly one rule fires on a planted entry, so the criteria code is unambiguous
        assert [k for k in KINDS if d.entry_id in hits[k]] == [d.criteria], d
        if d.criteria == "UNBALANCED":
            diff = abs(h["total_debit"] - h["total_credit"])
            tol = float(re.search(r"up to USD ([\d.]+)", w.document(d.required_evidence[1]).body).group(1))
            assert diff > tol and d.misstatement == pytest.approx(diff, abs=0.01)
        else:
            assert d.misstatement == pytest.approx(h["total_debit"])
        if d.criteria == "SELF_APPROVAL":
            assert h["source"] == "manual" and users[h["preparer"]]["role"] != "System"
        if d.criteria == "INVALID_ACCOUNT":
            assert not all(_account_ok(chart.get(a), h["posting_date"])[0] for a in h["accounts"])
        if d.criteria == "UNAUTHORISED_USER":
            assert not _user_ok(users.get(h["preparer"]), h["posting_date"])[0]
        if d.criteria == "OFF_HOURS":
            memos = [x.doc_id for x in w.documents if x.title.startswith("Weekend work authorisation")]
            assert not any(memo_covers(w, m, h) for m in memos)
        if d.criteria == "CUTOFF":
            assert h["entry_timestamp"][:10] > CLOSES[h["posting_date"][:7]]
    return kinds


def test_defects_satisfy_their_rules(worlds, big):
    for w in worlds.values():
        _check_defects(w)
        assert sum(d.criteria == "COMPLETENESS_GAP" for d in w.defects) == 1
    kinds = _check_defects(big)
    assert {"off_hours_weekend", "off_hours_holiday", "off_hours_evening", "off_hours_unlisted_user",
            "off_hours_outside_memo_hours", "posting_to_blocked_account", "posting_to_closed_account",
            "posting_to_nonexistent_account", "no_posting_rights", "posted_after_termination"} <= kinds


def _check_decoys(w) -> None:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    for d in w.decoys:
        h = ents[d.entry_id]
        fired = [k for k in KINDS if d.entry_id in hits[k]]
        assert len(fired) == 1, d  # looks like exactly one kind of exception
        if d.decoy_type == "rounding_within_tolerance":
            tol = float(re.search(r"up to USD ([\d.]+)", w.document(d.clearing_evidence[1]).body).group(1))
            assert 0 < abs(h["total_debit"] - h["total_credit"]) <= tol
        elif d.decoy_type == "system_release_under_interface_control":
            assert h["source"] == "automated" and users[h["preparer"]]["role"] == "System"
            assert "not a self-approval" in w.document(d.clearing_evidence[1]).body
        elif d.decoy_type == "account_opened_before_posting":
            assert all(_account_ok(chart.get(a), h["posting_date"])[0] for a in h["accounts"])
        elif d.decoy_type == "posted_before_termination":
            assert _user_ok(users[h["preparer"]], h["posting_date"])[0] and users[h["preparer"]]["termination_date"]
        elif d.decoy_type == "authorised_weekend_work":
            assert _off_window(h["entry_timestamp"], holidays(w)) and memo_covers(w, d.clearing_evidence[0], h)
        else:
            assert d.decoy_type == "recorded_before_close"
            rec = h["entry_timestamp"][:10]
            assert h["posting_date"][:7] < rec[:7] or rec[:4] > h["posting_date"][:4]
            assert rec <= CLOSES[h["posting_date"][:7]] and np.is_busday(np.datetime64(rec))


def test_decoys_are_cleared_by_their_evidence(worlds, big):
    for w in [*worlds.values(), big]:
        _check_decoys(w)


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


def test_base_population_does_not_trip_the_rules(worlds):
    for w in worlds.values():
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        for crit, ids in rule_hits(w).items():
            assert set(ids) <= planted, (crit, sorted(set(ids) - planted))


def test_no_hidden_labels_in_visible_text(worlds):
    for w in worlds.values():
        for d in w.documents:
            assert not LEAK.search(d.title + d.body), d.doc_id
        assert not any(LEAK.search(str(x)) for x in w.ledger.column("description").to_pylist())
