"""JE-14 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the ledger, the trial balance, the calendar, the documents)."""

from __future__ import annotations

import re

import pytest

from jeval_ray.tasks.je14 import ALLOWANCE, AR, BAD_DEBT
from jeval_ray.world import generate_world
from support.je14 import after_close, closes, entries, memo_terms, open_items, shortfall

SEEDS = range(20)


@pytest.fixture(scope="module")
def worlds():
    return [generate_world("JE-14", s) for s in SEEDS]


def _tb(w, account: str) -> dict[int, float]:
    return {r["fiscal_period"]: r["closing_balance"] for r in w.master["trial_balance"].to_pylist() if r["account"] == account}


def test_key_audit_each_release_follows_a_documented_provision_of_the_invoices_it_covers(worlds):
    """The reserve the memo says was held was booked: a provision (Dr 6500 / Cr 1190) of that amount,
    posted to an earlier month end, keyed within that month's close, approved within limits, whose
    credit committee note lists the same invoices; each invoice is a customer invoice in the ledger."""
    for w in worlds:
        ents, close = entries(w), closes(w)
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        by_ref = {e["reference"]: e for e in ents.values()}
        docs = {d.title: d for d in w.documents}
        for rec in (*w.defects, *w.decoys):
            memo = rec.required_evidence[0] if hasattr(rec, "required_evidence") else rec.clearing_evidence[0]
            held, inv, release = memo_terms(w, memo)
            rel = ents[rec.entry_id]
            prov_ref = re.search(r"\(provided by (AL-\d+)\)", w.document(memo).body).group(1)
            prov = by_ref[prov_ref]
            assert (prov["dr"], prov["cr"]) == (BAD_DEBT, ALLOWANCE) and prov["amount"] == pytest.approx(held)
            assert prov["posting_date"] < rel["posting_date"] and not after_close(prov, close)
            for e in (prov, rel):
                a = users[e["approver"]]
                assert e["approver"] != e["preparer"] and a["approval_limit"] >= e["amount"] - 1e-6, (w.seed, e)
                assert e["document_type"] in users[e["preparer"]]["may_post"].split(", ")
            note = next(d for t, d in docs.items() if t.startswith(f"Credit committee note: disputed invoices {prov_ref} "))
            assert all(i in note.body for i in inv) and f"USD {held:,.2f}" in note.body
            assert note.date <= prov["entry_timestamp"].date().isoformat()
            for i in inv:
                ci = by_ref[i]
                assert ci["document_type"] == "CI" and ci["posting_date"] <= prov["posting_date"]
            assert release == pytest.approx(rel["amount"])
            assert w.document(memo).date == rel["entry_timestamp"].date().isoformat()


def test_key_audit_the_open_items_report_ties_to_receivables_and_decides_the_key(worlds):
    """The report's total is account 1100 at the period end; a defect's covered invoices still open
    exceed what its release leaves (shortfall = the misstatement), a decoy's do not; an invoice the
    report no longer lists was paid by a customer receipt posted by the period end."""
    for w in worlds:
        ents = entries(w)
        ar = _tb(w, AR)
        receipts = {}
        for e in ents.values():
            m = re.search(r"invoice (CI-\d+)", e["description"] or "")
            if e["document_type"] == "CR" and m:
                receipts.setdefault(m.group(1), []).append(e["posting_date"].isoformat())
        for rec in (*w.defects, *w.decoys):
            ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
            memo, report = ev[0], ev[1]
            body = w.document(report).body
            total = float(re.search(r"\(USD ([\d,]+\.\d\d)\)", body).group(1).replace(",", ""))
            period = int(w.document(report).date[5:7])
            assert total == pytest.approx(ar[period], abs=0.005), (w.seed, report)
            held, required, release, short = shortfall(w, memo, report)
            if hasattr(rec, "misstatement"):
                assert short > 0 and short == pytest.approx(rec.misstatement, abs=0.01)
            else:
                assert short <= 0.005
            still = open_items(w, report)
            for i in memo_terms(w, memo)[1]:
                if i not in still:
                    assert any(d <= w.document(report).date for d in receipts.get(i, [])), (w.seed, i)


def test_key_audit_nothing_outside_the_key_is_a_post_closing_release_and_the_allowance_stays_a_credit(worlds):
    """The rule the brief and the policy state (a release keyed after the close must be supported)
    only bites on the key: every other manual allowance release is keyed by the close date; the
    allowance keeps its credit balance at every period end."""
    books_releases = 0
    for w in worlds:
        ents, close = entries(w), closes(w)
        planted = {d.entry_id for d in w.defects} | {d.entry_id for d in w.decoys}
        for eid, e in ents.items():
            if (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and eid not in planted:
                books_releases += 1
                assert not after_close(e, close), (w.seed, eid)
        assert all(v <= 0.005 for p, v in _tb(w, ALLOWANCE).items() if p <= 12), w.seed
    assert books_releases > 0  # the review's own releases exist: the surface rule "any release" catches them


def test_key_audit_no_specific_reserve_outlives_its_invoices(worlds):
    """Per dispute, what the release leaves is released by the review (keyed within the close) at the
    first month end by which the disputed invoices are all paid; never by a post-closing entry."""
    n_follow = 0
    for w in worlds:
        ents, close = entries(w), closes(w)
        for rec in (*w.defects, *w.decoys):
            memo = rec.required_evidence[0] if hasattr(rec, "required_evidence") else rec.clearing_evidence[0]
            held, inv, release = memo_terms(w, memo)
            left = round(held - release, 2)
            customer = re.search(r"held against (.+?) \(C\d+\)", w.document(memo).body).group(1)
            later = [e for e in ents.values() if (e["description"] or "").startswith(f"Release specific provision {customer} ")]
            mine = [e for e in later if e["amount"] == pytest.approx(left)]
            if left <= 0:
                continue
            for e in mine:
                n_follow += 1
                assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and not after_close(e, close)
                assert e["posting_date"] > ents[rec.entry_id]["posting_date"]
    assert n_follow > 0
