"""JE-4 (unauthorised posters): the key an auditor would reach, the users decoys share with defects, and the
extent of the naive rule (what every task promises is tests/test_task_contract.py).

The checks read the visible world only (ledger lines, ``master:users``), independently of the task
module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import pyarrow.compute as pc

from support.worlds import world as cached_world
from conftest import check_naive_flags_only_the_key

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


def test_decoys_and_defects_share_the_users_and_document_types():
    """The users (drawn per seed) and the document types of defects and decoys are the same over many
    worlds (the distributions of the listing's columns: tests/test_task_contract.py)."""
    refs, preparers = {0: set(), 1: set()}, {0: set(), 1: set()}
    for s in PARITY_SEEDS:
        w = cached_world(TASK, s, keep=False)
        h = headers(w)
        for label, recs in ((1, w.defects), (0, w.decoys)):
            refs[label] |= {h[r.entry_id]["reference"].split("-")[0] for r in recs}
            preparers[label] |= {h[r.entry_id]["preparer"] for r in recs}
    assert refs[0] == refs[1] and preparers[0] == preparers[1]


def test_naive_flags_nothing_but_the_key(worlds):
    check_naive_flags_only_the_key(TASK, worlds)
