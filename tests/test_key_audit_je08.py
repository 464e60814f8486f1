"""JE-8 key audit: the facts ``KEY_RATIONALE`` relies on, checked over many seeds from the world as
the agent sees it (the ledger listing, the users and vendors masters, the policy, minutes and
agreements), independently of the task module.

* a decoy's document names its reference, fixes exactly its amount for the period it is posted to
  and is dated before it was posted; its description states a purpose (policy section 2.2);
* a defect has no document that names its reference, fixes its amount and is dated no later than
  the day it was recorded, and the document it does have shows the fact its type names; its
  misstatement is what no document supports (the excess over the figure fixed, else the whole entry);
* the planted entries are top-side adjustments as the books make them: keyed by the accounting
  manager or the Controller, approved by someone else whose limit covers them, Dr an expense and
  Cr accrued liabilities, posted to a month end and keyed after it;
* nothing outside the key breaks the policy: no other top-side adjustment lacks support, and the
  other round manual entries are outside its scope (vendor invoices, accruals);
* agreements name firms whose kind fits their scope (an audit firm audits, a law firm litigates) and whose
  category fits the account charged: a vendor of the vendor master, else the auditors or counsel.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

import pytest

from jeval_ray.world import generate_world

TASK = "JE-8"
SEEDS = range(24)
#: the expense account a fixed-fee agreement with a vendor of each category is charged to
CATEGORY_ACCOUNT = {"professional": "6400", "marketing": "6700", "software": "7100", "maintenance": "6600"}
#: professional scopes: the name endings of the firms that do the work, and the firm engaged outside the
#: vendor master when it holds none (the auditors and counsel JE-9's close binder names)
FIRM_KIND = {
    "audit": (("CPAs",), ("Ridgeway & Stone LLP", "independent auditors")),
    "litigation": (("Legal LLP",), ("Hartwell & Crane LLP", "outside counsel")),
    "efficiency review": (("Consulting", "Advisors"), None),
    "tax structuring": (("Legal LLP", "Advisors", "Consulting"), None),
}
TERSE = {"adj", "misc adj", "per jv", "correction", "see file", "reclass", "entry", "adjustment"}


@functools.cache
def _seen(seed: int):
    w = generate_world(TASK, seed)
    lines: dict[str, list[dict]] = {}
    for r in w.ledger.to_pylist():
        lines.setdefault(r["entry_id"], []).append(r)
    users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
    vendors = {v["vendor_id"]: v for v in w.master["vendors"].to_pylist()}
    support = [d for d in w.documents if d.doc_type in ("board_minutes", "contract")]
    return w, lines, users, vendors, support


def _amount(ls: list[dict]) -> float:
    return round(sum(r["debit"] for r in ls), 2)


def _names(doc, ref: str) -> bool:
    return re.search(rf"\b{re.escape(ref)}\b", doc.body) is not None


def _fixes(doc, cents_text: str) -> bool:
    return f"USD {cents_text}" in doc.body


def _supported(support, head: dict, amount: float) -> list:
    keyed = head["entry_timestamp"].date().isoformat()
    return [d for d in support if _names(d, head["reference"]) and _fixes(d, f"{amount:,.2f}") and d.date <= keyed]


def _period(head: dict) -> str:
    p = head["posting_date"]
    return "FY2025" if (p.month, p.day) == (12, 31) else p.strftime("%B %Y")


def test_key_audit_decoys_are_fixed_by_a_document_dated_before_them():
    n = 0
    for s in SEEDS:
        w, lines, _users, vendors, support = _seen(s)
        for d in w.decoys:
            ls = lines[d.entry_id]
            h, amount = ls[0], _amount(ls)
            (doc_id,) = d.clearing_evidence
            doc = w.document(doc_id)
            assert _names(doc, h["reference"]) and _fixes(doc, f"{amount:,.2f}"), (s, d.entry_id)
            assert doc.date < h["posting_date"].isoformat(), (s, d.entry_id)
            assert _period(h) in doc.body, (s, d.entry_id, _period(h))
            desc = h["description"]
            assert desc.endswith(f" per {h['reference']}") and desc.rsplit(" per ", 1)[0].lower() not in TERSE
            assert {doc_id, h["reference"], f"{amount:.2f}"} <= set(d.facts)
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_defects_lack_a_document_that_fixes_them_in_time():
    n = 0
    for s in SEEDS:
        w, lines, _users, _vendors, support = _seen(s)
        for d in w.defects:
            ls = lines[d.entry_id]
            h, amount = ls[0], _amount(ls)
            assert not _supported(support, h, amount), (s, d.entry_id)
            carrying = [x for x in support if _names(x, h["reference"])]
            if d.defect_type == "no_support":
                assert not carrying
                assert d.misstatement == pytest.approx(amount), (s, d.entry_id)  # nothing supports any of it
            else:
                (doc,) = carrying
                shown = float(re.search(r"USD ([\d,]+\.\d\d)", doc.body).group(1).replace(",", ""))
                if d.defect_type == "amount_not_supported":
                    assert amount / 2 <= shown < amount, (s, d.entry_id)
                    # the document supports its figure; the misstatement is the excess booked over it
                    assert d.misstatement == pytest.approx(amount - shown), (s, d.entry_id, d.misstatement)
                else:
                    assert d.defect_type == "approved_after_posting" and shown == amount
                    assert doc.date > h["entry_timestamp"].date().isoformat(), (s, d.entry_id)
                    assert d.misstatement == pytest.approx(amount), (s, d.entry_id)  # nothing supported it in time
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_planted_entries_are_top_side_adjustments_as_the_books_make_them():
    for s in SEEDS:
        w, lines, users, _vendors, _support = _seen(s)
        for eid in w.defect_ids | {d.entry_id for d in w.decoys}:
            ls = lines[eid]
            h, amount = ls[0], _amount(ls)
            assert h["document_type"] == "TS" and h["source"] == "manual"
            assert round(amount * 100) % 100_000 == 0
            assert "TS" in users[h["preparer"]]["may_post"].split(", ")
            assert h["approver"] != h["preparer"] and users[h["approver"]]["approval_limit"] >= amount
            assert [(r["account"], bool(r["debit"])) for r in ls][1:] == [("2100", False)]
            assert ls[0]["account"].startswith(("5", "6", "7")) and ls[0]["debit"] == amount
            p = h["posting_date"]
            assert (p + dt.timedelta(days=1)).day == 1 and h["entry_timestamp"].date() > p, (s, eid)


def test_key_audit_nothing_outside_the_key_breaks_the_policy():
    for s in SEEDS:
        w, lines, _users, _vendors, support = _seen(s)
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        for eid, ls in lines.items():
            h, amount = ls[0], _amount(ls)
            if eid in planted or h["source"] != "manual":
                continue
            if h["document_type"] == "TS":
                assert _supported(support, h, amount), (s, eid)
            elif amount and round(amount * 100) % 10_000 == 0:
                assert h["document_type"] in ("VN", "VI", "AC"), (s, eid, h["document_type"])


def test_key_audit_agreements_name_firms_that_fit_their_scope_and_the_charge():
    """A professional agreement's counterparty is the kind of firm that does the work (an audit firm
    audits, a law firm defends the litigation); the auditors or counsel are engaged outside the vendor
    master only when it holds no such firm."""
    n_outside = 0
    for s in SEEDS:
        w, lines, _users, vendors, support = _seen(s)
        by_ref = {ls[0]["reference"]: ls[0] for ls in lines.values() if ls[0]["document_type"] == "TS"}
        for doc in support:
            if doc.doc_type != "contract":
                continue
            ref = re.search(r"SERVICES AGREEMENT (\S+)", doc.body).group(1)
            name, who = re.search(r"\(the Client\) and (.+?) \(([^,]+), the Provider\)", doc.body).groups()
            scope = re.search(r"^Scope: (.*)$", doc.body, re.M).group(1)
            kind = next((k for k in FIRM_KIND if k in scope), None)
            if who.startswith("vendor "):
                v = vendors[who.removeprefix("vendor ")]
                assert v["name"] == name and v["category"] in CATEGORY_ACCOUNT
                category = v["category"]
                # the master's firm does this kind of work (a CPA firm is engaged for the audit alone)
                assert kind is None or name.endswith(FIRM_KIND[kind][0]), (s, ref, name, scope)
            else:
                # a firm outside the master only where the master has none that fits: the auditors, counsel
                assert kind is not None and (name, who) == FIRM_KIND[kind][1], (s, ref, name, who)
                assert not [v for v in vendors.values() if v["name"].endswith(FIRM_KIND[kind][0])], (s, ref)
                category = "professional"
            if ref in by_ref:
                assert by_ref[ref]["account"] == CATEGORY_ACCOUNT[category], (s, ref)
            n_outside += not who.startswith("vendor ")
    assert n_outside, "the auditors or counsel come from outside the master in some world"


def test_key_audit_documents_under_other_numbers_imply_nothing_for_fy2025():
    """A minute or agreement that carries no entry's reference (the look-alikes around a defect) approves
    activity of a month of 2026 that it names, to be accrued then: an expo to be held, a programme or a
    service period, work to be performed; never a settlement or a true-up, which would settle something of
    FY2025 and leave the year's books short of a liability. (The capital budgets carry no reference.)"""
    n = 0
    for s in SEEDS:
        w, lines, _users, _vendors, support = _seen(s)
        refs = {ls[0]["reference"] for ls in lines.values()}
        for doc in support:
            m = re.search(r"(?:Resolution|SERVICES AGREEMENT) ((?:BR|CTR)-\d{4}-\d+)", doc.body)
            if m is None or m.group(1) in refs:
                continue
            period = re.search(r"(?:to be accrued in|earned in) ([A-Z][a-z]+ \d{4})", doc.body).group(1)
            assert period.endswith(" 2026"), (s, doc.doc_id, period)
            what = (re.search(r"approves (.*) in the\s+amount of", doc.body)
                    or re.search(r"^Scope: (.*)$", doc.body, re.M)).group(1)
            assert period in what, (s, doc.doc_id, what)  # the activity is of the month it is accrued in
            assert not re.search(r"settle|true-up|claim|FY2025|2025", what), (s, doc.doc_id, what)
            n += 1
    assert n >= len(SEEDS) // 2, n
