"""JE-16 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the listing, the master data, the documents), and nothing outside the key breaks a
rule the brief or the pack states."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.world import generate_world
from support.je16 import (CLOSES, approval_row, check_decoys, check_defects, entries, extension, master, memo_covers,
                          rule_hits)

SEEDS = range(20)


@pytest.fixture(scope="module")
def worlds():
    return [generate_world("JE-16", s) for s in SEEDS]


def test_key_audit_every_defect_breaks_its_rule_and_every_decoy_is_cleared_by_its_evidence(worlds):
    for w in worlds:
        check_defects(w)
        check_decoys(w)


def test_key_audit_nothing_outside_the_key_trips_a_rule(worlds):
    for w in worlds:
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        # the year-end closing entry closes every expense account, the sub-accounts opened in the year
        # included (on 2025-12-31, when they are all open): the one unplanted hit of INVALID_ACCOUNT's rule
        closing = {r["entry_id"] for r in w.ledger.select(["entry_id", "document_type"]).to_pylist()
                   if r["document_type"] == "YC"}
        for crit, ids in rule_hits(w).items():
            if crit == "INVALID_ACCOUNT":
                ids = set(ids) - closing
            assert set(ids) <= planted, (w.seed, crit, sorted(set(ids) - planted))


def test_key_audit_clearing_documents_fit_what_they_clear(worlds):
    """An authorisation is issued before the day, for the entry's period and kind (supplier invoices and
    accruals); a sign-off falls between the entry's document date and its posting; a close extension is
    issued by the close it extends; a leaver's entries are of the document types the role keys."""
    for w in worlds:
        ents = entries(w)
        users = master(w, "users", "user_id")
        for d in w.decoys:
            h = ents[d.entry_id]
            if d.decoy_type == "authorised_out_of_hours_work":
                body = w.document(d.clearing_evidence[0]).body
                assert re.search(r"Date: (\S+)", body).group(1) < h["entry_timestamp"][:10]
                assert "supplier invoices and accruals of period" in body and h["posting_date"][:7] in body
                assert memo_covers(w, d.clearing_evidence[0], h)
                assert h["document_type"] in ("VI", "VN", "AC")
            elif d.decoy_type == "signed_off_on_outage_log":
                row = approval_row(w, d.clearing_evidence[0], h["reference"])
                assert str(h["document_date"]) <= row["date"] <= h["posting_date"] == h["entry_timestamp"][:10]
                span = re.search(r"from (\S+) to (\S+)\.", w.document(d.clearing_evidence[0]).body).groups()
                assert span[0] <= h["posting_date"] <= span[1]
            elif d.decoy_type == "recorded_within_close_extension":
                period, old, new, issued = extension(w, d.clearing_evidence[2])
                assert issued <= old == CLOSES[period] and h["entry_timestamp"][:10] <= new
            elif d.decoy_type == "posted_before_termination":
                assert h["document_type"] in users[h["preparer"]]["may_post"].split(", ")


def test_key_audit_moved_keying_stays_inside_the_entrys_own_chain(worlds):
    """Out-of-hours and post-close keying change only when an entry was recorded: never before its
    posting date, and an out-of-hours keying within the close of its period."""
    for w in worlds:
        ents = entries(w)
        for rec in (*w.defects, *w.decoys):
            h = ents.get(rec.entry_id)
            if h is None:
                continue
            assert h["entry_timestamp"][:10] >= h["posting_date"] >= str(h["document_date"]), (w.seed, rec)
            crit = rec.criteria if hasattr(rec, "criteria") else None
            if crit == "OFF_HOURS" or getattr(rec, "decoy_type", "") == "authorised_out_of_hours_work":
                assert h["entry_timestamp"][:10] <= CLOSES[h["posting_date"][:7]]
                assert (np.datetime64(h["entry_timestamp"][:10]) - np.datetime64(h["posting_date"])).astype(int) <= 6


def test_key_audit_the_missing_entry_is_what_the_roll_forward_shows(worlds):
    for w in worlds:
        gap = next(d for d in w.defects if d.criteria == "COMPLETENESS_GAP")
        ids = sorted(int(x) for x in w.entry_ids)
        assert ids[0] < int(gap.entry_id) < ids[-1]
        moved: dict[str, float] = {}
        for r in w.ledger.to_pylist():
            moved[r["account"]] = moved.get(r["account"], 0.0) + r["debit"] - r["credit"]
        off = {r["account"]: round(r["closing_balance"] - r["opening_balance"] - moved.get(r["account"], 0.0), 2)
               for r in w.master["balances"].to_pylist()}
        off = {a: v for a, v in off.items() if abs(v) > 0.005}
        assert sorted(off) == sorted(gap.facts[2:]) and {abs(v) for v in off.values()} == {gap.misstatement}
