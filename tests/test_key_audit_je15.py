"""JE-15 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (ledger, master tables, documents), and nothing outside the key breaks a rule the
vendor-master policy states."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from jeval_ray.books import chart, master as md
from jeval_ray.world import generate_world

KEY_SEEDS = range(20)
#: the documented share of the change-log screen's hits that are not planted (module docstring)
LOOKALIKE_RATE = 0.47


def _view(w) -> dict:
    lines: dict[str, list[dict]] = {}
    for r in w.ledger.to_pylist():
        lines.setdefault(r["entry_id"], []).append(r)
    stmt_lines = {}
    for d in w.documents:
        if d.doc_type == "bank_statement":
            for ln in d.body.splitlines():
                parts = ln.split(" | ")
                if len(parts) == 5 and parts[1] != "Reference":
                    stmt_lines[parts[1]] = (d.doc_id, parts)
    return {"lines": lines, "heads": {k: v[0] for k, v in lines.items()},
            "by_ref": {v[0]["reference"]: v for v in lines.values()},
            "users": {u["user_id"]: u for u in w.master["users"].to_pylist()},
            "vendors": {v["vendor_id"]: v for v in w.master["vendors"].to_pylist()},
            "log": w.master["vendor_changes"].to_pylist(), "stmt": stmt_lines}


@pytest.fixture(scope="module")
def views():
    return {s: (w, _view(w)) for s in KEY_SEEDS for w in [generate_world("JE-15", s)]}


def _payments(v: dict, invoice_ref: str) -> list[tuple[str, list[str]]]:
    return [(doc, p) for doc, p in v["stmt"].values() if p[2].endswith(f"invoice {invoice_ref}")]


def test_key_audit_shell_invoices_pay_the_clerk_who_keyed_them(views):
    for s, (w, v) in views.items():
        staff = {u["bank_account"]: uid for uid, u in v["users"].items() if u["bank_account"]}
        for d in w.defects:
            h = v["heads"][d.entry_id]
            bank, user, vid, amount, stmt = d.facts
            vend = v["vendors"][vid]
            # the vendor's account is the employee's, and that employee keyed the invoice
            assert h["vendor_id"] == vid and vend["bank_account"] == bank and staff.get(bank) == user
            assert h["preparer"] == user and user in md.USER and "VN" in v["users"][user]["may_post"]
            assert "2025-01-01" <= str(vend["created_on"]) < str(h["document_date"])
            # the change log shows the employee created the vendor or put the account on it
            assert any(r["vendor_id"] == vid and r["changed_by"] == user and r["new_value"] == bank for r in v["log"])
            # paid in one payment: a ledger payment of the vendor (Dr 2000 / Cr 1000), on the statement, to the account
            (doc, p), = _payments(v, h["reference"])
            pay = v["by_ref"][p[1]]
            assert doc == stmt and pay[0]["vendor_id"] == vid and pay[0]["document_type"] == "VP"
            assert {(r["account"], r["debit"] > 0) for r in pay} == {("2000", True), ("1000", False)}
            assert p[3] == bank and float(p[4].replace(",", "")) == pytest.approx(-float(amount)) == pytest.approx(-h["debit"])
            assert str(pay[0]["posting_date"]) <= p[0]
            assert d.misstatement == pytest.approx(h["debit"])


def test_key_audit_new_vendor_decoys_are_cleared_by_their_set_up_forms(views):
    for s, (w, v) in views.items():
        staff = {u["bank_account"] for u in v["users"].values() if u["bank_account"]}
        for c in w.decoys:
            h = v["heads"][c.entry_id]
            bank, vid, form, word = c.facts
            vend = v["vendors"][vid]
            body = w.document(form).body
            assert h["vendor_id"] == vid and vend["bank_account"] == bank and bank not in staff
            assert "TIN matched" in body and word in body and vid in body and str(vend["created_on"]) in body
            # the form predates the invoice; the vendor is paid to its own (verified) account
            assert w.document(form).date <= str(h["document_date"])
            last_change = max(r["changed_on"] for r in v["log"] if r["vendor_id"] == vid)
            paid = _payments(v, h["reference"])
            assert len(paid) == 1
            for _doc, p in paid:
                assert p[3] not in staff and (p[3] == bank or p[0] < last_change)


def test_key_audit_nothing_outside_the_key_breaks_the_policy(views):
    for s, (w, v) in views.items():
        staff = {u["bank_account"] for u in v["users"].values() if u["bank_account"]}
        keyed = w.defect_ids | {c.entry_id for c in w.decoys}
        key_refs = {v["heads"][k]["reference"] for k in keyed}
        shells = {vid for vid, x in v["vendors"].items() if x["bank_account"] in staff}
        assert shells == {v["heads"][d.entry_id]["vendor_id"] for d in w.defects}
        for eid, h in v["heads"].items():
            # policy 4: no payment to an employee's account except the scheme's
            if h["vendor_id"] in shells:
                assert eid in w.defect_ids or (h["document_type"] == "VP" and any(r in h["description"] for r in key_refs))
            # policy 6: invoices approved by another user whose limit covers them (the amount owed, Cr 2000)
            if h["document_type"] in ("VN", "VI"):
                total = sum(r["credit"] for r in v["lines"][eid] if r["account"] == "2000")
                assert h["approver"] != h["preparer"] and v["users"][h["approver"]]["approval_limit"] >= total
        # policy 3: every bank change of a vendor other than the shells is verified by a call-back on file
        for r in v["log"]:
            if r["field"] == "bank_account" and r["old_value"] and r["vendor_id"] not in shells:
                assert any(d.doc_type == "vendor_form" and r["new_value"] in d.body and "call-back" in d.body
                           and r["changed_on"] in d.body for d in w.documents), r
        # policy 5: users who key invoices change no vendor data, except the scheme user on the shell
        keyers = {h["preparer"] for h in v["heads"].values() if h["document_type"] in ("VN", "VI")}
        for r in v["log"]:
            if r["changed_by"] in keyers:
                assert r["vendor_id"] in shells, r
        # every vendor posts only to accounts its category allows
        for eid, rows in v["lines"].items():
            vid = rows[0]["vendor_id"]
            if vid:
                allowed = {chart.ACCOUNTS[i].code for i in md.ALLOWED_ACCOUNTS[v["vendors"][vid]["category"]]}
                assert {r["account"] for r in rows} <= allowed, (s, eid)


def test_key_audit_statements_are_the_company_account_and_tie(views):
    for s, (w, v) in views.items():
        stmts = [d for d in w.documents if d.doc_type == "bank_statement"]
        assert len(stmts) == 12
        for d in stmts:
            assert md.BANK_ACCOUNT in d.body
            rows = [ln.split(" | ") for ln in d.body.splitlines() if ln.count(" | ") == 4][1:]
            head = d.body.splitlines()[3]
            nums = [float(x.replace(",", "")) for x in re.findall(r"USD (-?[\d,]+\.\d\d)", head)]
            opening, credits, debits, closing = nums
            net = sum(float(p[4].replace(",", "")) for p in rows)
            assert net == pytest.approx(credits - debits, abs=0.01) and closing == pytest.approx(opening + net, abs=0.01)
            for p in rows:
                # a statement line is a cash posting of the ledger under the same reference, for the same amount
                # (or one recorded in 2024 and cleared by the bank in January)
                ent = v["by_ref"].get(p[1])
                if ent is None:
                    assert p[0] <= "2025-01-31", p
                    continue
                cash = sum(r["debit"] - r["credit"] for r in ent if r["account"] == "1000")
                assert cash == pytest.approx(float(p[4].replace(",", "")), abs=0.005), p


def _business_day(day: str, holidays: set[str]) -> bool:
    return dt.date.fromisoformat(day).weekday() < 5 and day not in holidays


def test_key_audit_every_date_the_task_writes_is_a_business_day(views):
    """Statement value dates, the vendor change log of the year and every date on the vendor forms fall
    on business days (no bank values a payment on a Sunday; no one sets up a vendor on one); each
    statement lists its lines in value-date order, within its month."""
    n = 0
    for s, (w, v) in views.items():
        hol = {r["date"] for r in w.master["calendar"].to_pylist() if r["kind"] == "holiday"}
        assert hol
        for d in w.documents:
            if d.doc_type == "bank_statement":
                days = [p[0] for p in (ln.split(" | ") for ln in d.body.splitlines()) if len(p) == 5][1:]
                assert days == sorted(days) and all(x[:7] == d.date[:7] for x in days), (s, d.doc_id)
                bad = [x for x in days if not _business_day(x, hol)]
                assert not bad, (s, d.doc_id, bad)
                n += len(days)
            elif d.doc_type == "vendor_form":
                for x in re.findall(r"\d{4}-\d\d-\d\d", d.body):
                    assert _business_day(x, hol), (s, d.title, x)
        for r in v["log"]:
            if r["changed_on"] >= "2025-01-01":
                assert _business_day(r["changed_on"], hol), (s, r)
    assert n > 1000


def test_key_audit_lookalike_rate():
    """Over seeds 0-49: the new-vendor rule catches no unplanted invoice; the change-log screen (vendors
    created or given new bank details in the year) catches the documented share of honest look-alikes."""
    hits = unplanted = 0
    for s in range(50):
        w = generate_world("JE-15", s)
        v = _view(w)
        keyed = w.defect_ids | {c.entry_id for c in w.decoys}
        invoices = {k: h for k, h in v["heads"].items() if h["document_type"] in ("VN", "VI")}
        new = {vid for vid, x in v["vendors"].items() if str(x["created_on"]) >= "2025-01-01"}
        assert {k for k, h in invoices.items() if h["vendor_id"] in new} == keyed
        touched = {r["vendor_id"] for r in v["log"] if r["field"] in ("vendor_created", "bank_account")
                   and r["changed_on"] >= "2025-01-01"}
        screen = {k for k, h in invoices.items() if h["vendor_id"] in touched}
        assert keyed <= screen
        hits += len(screen)
        unplanted += len(screen - keyed)
    assert unplanted / hits == pytest.approx(LOOKALIKE_RATE, abs=0.02), unplanted / hits
