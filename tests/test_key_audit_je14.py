"""JE-14 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the ledger, the trial balance, the calendar, the brief's notes, the documents)."""

from __future__ import annotations

import re

import pytest

from jeval_ray.tasks.je14 import ALLOWANCE, AR, BAD_DEBT
from jeval_ray.world import generate_world
from support.je14 import (after_close, closes, entries, fieldwork_window, memo_terms, open_items, receipts,
                          receipts_doc, shortfall)

SEEDS = range(20)
YEAR_END, YEAR_END_CLOSE = "2025-12-31", "2026-01-09"


@pytest.fixture(scope="module")
def worlds():
    return [generate_world("JE-14", s) for s in SEEDS]


def _tb(w, account: str) -> dict[int, float]:
    return {r["fiscal_period"]: r["closing_balance"] for r in w.master["trial_balance"].to_pylist() if r["account"] == account}


def _evidence(rec) -> tuple[str, ...]:
    return rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence


def test_key_audit_each_release_follows_a_documented_provision_of_the_invoices_it_covers(worlds):
    """The reserve the memo says was held was booked: a provision (Dr 6500 / Cr 1190) of that amount,
    posted to a month end no later than the release, keyed within that month's close and before the
    release, approved within limits, whose credit committee note lists the same invoices; each invoice
    is a customer invoice in the ledger."""
    for w in worlds:
        ents, close = entries(w), closes(w)
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        by_ref = {e["reference"]: e for e in ents.values()}
        docs = {d.title: d for d in w.documents}
        for rec in (*w.defects, *w.decoys):
            memo = _evidence(rec)[0]
            held, inv, release = memo_terms(w, memo)
            rel = ents[rec.entry_id]
            prov_ref = re.search(r"\(provided by (AL-\d+)\)", w.document(memo).body).group(1)
            prov = by_ref[prov_ref]
            assert (prov["dr"], prov["cr"]) == (BAD_DEBT, ALLOWANCE) and prov["amount"] == pytest.approx(held)
            assert prov["posting_date"] <= rel["posting_date"] and not after_close(prov, close)
            assert prov["entry_timestamp"] < rel["entry_timestamp"]
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


def test_key_audit_every_planted_release_is_a_year_end_release_keyed_after_the_close(worlds):
    """Defects and decoys alike post to the year end and are keyed after the year-end close, so the
    month tells nothing; the open-items report each cites is the one at the year end."""
    for w in worlds:
        ents = entries(w)
        for rec in (*w.defects, *w.decoys):
            e = ents[rec.entry_id]
            assert e["posting_date"].isoformat() == YEAR_END, (w.seed, rec.entry_id)
            assert e["entry_timestamp"].date().isoformat() > YEAR_END_CLOSE
            assert w.document(_evidence(rec)[1]).date == YEAR_END


def test_key_audit_the_receipts_listing_runs_to_the_end_of_fieldwork_the_brief_states(worlds):
    """The brief's notes state the end of fieldwork; the receipts listing runs from the day after the
    year end to that date, each receipt of an invoice open at the year end, no more than it owed."""
    for w in worlds:
        start, end = fieldwork_window(w)
        assert start == "2026-01-01" and end in w.facts["brief_notes"]["end of fieldwork"]
        assert "2026-02-01" < end < "2026-03-01" and receipts_doc(w).date == end
        report = next(d for d in w.documents if d.doc_type == "aging_report" and d.date == YEAR_END)
        owed = open_items(w, report.doc_id)
        paid: dict[str, float] = {}
        for _r, day, _c, inv, amount in receipts(w):
            assert start <= day <= end and amount > 0, (w.seed, inv)
            paid[inv] = round(paid.get(inv, 0.0) + amount, 2)
        assert all(inv in owed and v <= owed[inv] + 0.005 for inv, v in paid.items()), w.seed
        total = float(re.search(r"\(USD ([\d,]+\.\d\d) in all\)", receipts_doc(w).body).group(1).replace(",", ""))
        assert total == pytest.approx(sum(paid.values()), abs=0.005)


def test_key_audit_the_shortfall_after_subsequent_receipts_decides_the_key(worlds):
    """The report's total is account 1100 at the year end; a defect's covered invoices still unpaid
    after the receipts to the end of fieldwork exceed what its release leaves by more than clearly
    trivial (the shortfall is the misstatement), a decoy's do not exceed it at all; an invoice the report
    no longer lists was paid by a customer receipt in the ledger by the year end; no invoice of a
    defect was paid (in whole or in part) before the release was recorded."""
    n_partial = n_cured = 0
    for w in worlds:
        ents, trivial = entries(w), w.facts["clearly_trivial"]
        ar = _tb(w, AR)
        in_ledger = {}
        for e in ents.values():
            m = re.search(r"invoice (CI-\d+)", e["description"] or "")
            if e["document_type"] == "CR" and m:
                in_ledger.setdefault(m.group(1), []).append(e["posting_date"].isoformat())
        after = {}
        for _r, day, _c, inv, _a in receipts(w):
            after.setdefault(inv, []).append(day)
        for rec in (*w.defects, *w.decoys):
            memo, report = _evidence(rec)[:2]
            body = w.document(report).body
            total = float(re.search(r"\(USD ([\d,]+\.\d\d)\)", body).group(1).replace(",", ""))
            assert total == pytest.approx(ar[12], abs=0.005), (w.seed, report)
            held, required, got, unpaid, release, short = shortfall(w, memo, report)
            inv = memo_terms(w, memo)[1]
            if hasattr(rec, "misstatement"):
                assert short > trivial and short == pytest.approx(rec.misstatement, abs=0.01), (w.seed, rec.entry_id)
                keyed = ents[rec.entry_id]["entry_timestamp"].date().isoformat()
                assert all(day > keyed for i in inv for day in after.get(i, [])), (w.seed, rec.entry_id)
                assert not any(i in in_ledger for i in inv), (w.seed, rec.entry_id)  # nothing received in the year
                assert all(i in open_items(w, report) for i in inv)
                n_partial += got > 0
            else:
                assert short <= 0.005, (w.seed, rec.entry_id)
                n_cured += got > 0
            still = open_items(w, report)
            for i in inv:
                if i not in still:
                    assert any(d <= YEAR_END for d in in_ledger.get(i, [])), (w.seed, i)
    # receipts after the year end decide some of each: defects they reduce, decoys they cure
    assert n_partial > 0 and n_cured > 0


def test_key_audit_the_receipts_are_evidence_where_an_invoice_is_open_at_the_year_end(worlds):
    """The key asks for the receipts listing exactly when a covered invoice is still open at the year
    end (every defect; a decoy whose invoices were all paid by the year end needs none)."""
    for w in worlds:
        cash = receipts_doc(w).doc_id
        for rec in (*w.defects, *w.decoys):
            memo, report = _evidence(rec)[:2]
            still = set(open_items(w, report)) & set(memo_terms(w, memo)[1])
            assert (cash in _evidence(rec)) == bool(still), (w.seed, rec.entry_id)


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


def test_key_audit_the_voucher_numbers_do_not_order_defects_before_decoys(worlds):
    """The defects draw their invoices first, but the vouchers are numbered in a random order: a
    defect's release reference is above a decoy's about as often as below."""
    above = pairs = 0
    for w in worlds:
        ents = entries(w)
        number = {r.entry_id: int(ents[r.entry_id]["reference"].split("-")[1]) for r in (*w.defects, *w.decoys)}
        for d in w.defects:
            for c in w.decoys:
                pairs += 1
                above += number[d.entry_id] > number[c.entry_id]
    assert 0.35 < above / pairs < 0.65, above / pairs
