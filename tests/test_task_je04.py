"""JE-4 (unauthorised posters): the key an auditor would reach, surface parity, and the built-in agents.

The checks read the visible world only (ledger lines, ``master:users``), independently of the task
module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import statistics

import pyarrow.compute as pc
import pytest

from jeval_ray.episode import play
from jeval_ray.world import generate_world

TASK = "JE-4"
SEEDS = range(5)
PARITY_SEEDS = range(100, 200)


def headers(world) -> dict[str, dict]:
    led = world.ledger
    return {r["entry_id"]: {**r, "posting_date": str(r["posting_date"]), "entry_date": str(r["entry_timestamp"].date())}
            for r in led.filter(pc.equal(led["line_no"], 1)).to_pylist()}


def users(world) -> dict[str, dict]:
    return {u["user_id"]: u for u in world.master["users"].to_pylist()}


def rights_end(user: dict) -> str:
    """The date the user's posting rights ended ('' while they last)."""
    return user["termination_date"] if user["status"] == "terminated" else user["rights_withdrawn_on"]


def test_the_rule_catches_exactly_the_planted_entries(worlds):
    for w in worlds.values():
        us = users(w)
        tripped = {k for k, r in headers(w).items()
                   if not us[r["preparer"]]["posting_rights"] or us[r["preparer"]]["status"] != "active"}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        # every changed user's rights ended inside FY2025; the base users without rights never post
        for u in us.values():
            if rights_end(u):
                assert "2025-01-01" <= rights_end(u) <= "2025-12-31"
        assert not {r["preparer"] for r in headers(w).values()} & {"KLEE", "NPARK"}


def test_the_key_follows_from_the_user_master(worlds):
    kinds = set()
    for w in worlds.values():
        h, us = headers(w), users(w)
        for d in w.defects:
            r = h[d.entry_id]
            end = rights_end(us[r["preparer"]])
            assert end and r["posting_date"] > end and r["entry_date"] > end
            assert r["source"] == "manual" and r["approver"] != r["preparer"]
            assert d.criteria == "UNAUTHORISED_USER" and d.required_evidence == ("master:users",)
            kinds.add(d.defect_type)
        for d in w.decoys:
            r = h[d.entry_id]
            end = rights_end(us[r["preparer"]])
            assert r["posting_date"] < end and r["entry_date"] < end and d.clearing_evidence == ("master:users",)
        # one user's entries are all defects or all decoys: no order within a user gives the key away
        by_user: dict[str, set[bool]] = {}
        for k in w.defect_ids | {d.entry_id for d in w.decoys}:
            by_user.setdefault(h[k]["preparer"], set()).add(k in w.defect_ids)
        assert all(len(v) == 1 for v in by_user.values())
    assert kinds == {"posted_after_termination", "posted_after_rights_withdrawn"}


def test_decisive_facts_are_the_user_the_date_rights_ended_and_the_entry_dates(worlds):
    for w in worlds.values():
        h, us = headers(w), users(w)
        report = next(d.body for d in w.documents if d.title.startswith("HR starters, leavers"))
        for r in (*w.defects, *w.decoys):
            row = h[r.entry_id]
            uid, end = row["preparer"], rights_end(us[row["preparer"]])
            # the entry date and the posting date coincide for vendor invoices: a fact is stated once
            assert r.facts == tuple(dict.fromkeys((uid, end, row["entry_date"], row["posting_date"])))
            assert f"({uid})" in report and end in report


def test_decoys_and_defects_share_one_surface():
    """The same users (drawn per seed), posting dates, amounts and document types for both."""
    months, amounts, refs, preparers = {0: [], 1: []}, {0: [], 1: []}, {0: set(), 1: set()}, {0: set(), 1: set()}
    for s in PARITY_SEEDS:
        w = generate_world(TASK, s)
        h = headers(w)
        for label, recs in ((1, w.defects), (0, w.decoys)):
            for r in recs:
                row = h[r.entry_id]
                months[label].append(int(row["posting_date"][5:7]))
                amounts[label].append(row["debit"])
                refs[label].add(row["reference"].split("-")[0])
                preparers[label].add(row["preparer"])
    assert refs[0] == refs[1] and preparers[0] == preparers[1]
    assert abs(statistics.fmean(months[0]) - statistics.fmean(months[1])) < 0.5
    assert 0.75 < statistics.median(amounts[0]) / statistics.median(amounts[1]) < 1.33


@pytest.mark.parametrize("seed", SEEDS)
def test_careful_compares_dates_and_naive_flags_every_changed_user(seed):
    careful, naive = play(TASK, "careful", seed), play(TASK, "naive", seed)
    assert careful.score.outcome == 1.0 and careful.score.rationale >= 0.95 and careful.score.process >= 0.95
    assert naive.score.outcome == pytest.approx(0.5)
    assert naive.score.score < careful.score.score - 0.15
