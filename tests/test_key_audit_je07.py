"""JE-7 key audit: the facts ``KEY_RATIONALE`` relies on, checked over many seeds from the world as
the agent sees it (the ledger listing, the users master and the AP vouchers), independently of
the task module.

* a defect's two vouchers file one vendor invoice: the same printed number, date, purchase order
  and amount (the entry's), while the second was keyed under another number;
* a decoy's second voucher files another invoice of the vendor, printed with the number keyed;
* every voucher agrees with its entry (number as keyed, amount, posting date, who keyed and
  approved it, an approval on or after the invoice date and no later than the posting);
* nothing outside the key breaks the AP policy: no other invoice repeats a vendor and invoice
  number, and every other repeat of a vendor and amount carries its own invoice date;
* a second posting that was paid is paid once, after it was keyed, for its amount, in a payment
  run (a Thursday, or the next business day when the Thursday is a holiday);
* every voucher (second postings, originals and ordinary invoices alike) is posted and approved on
  business days: no approval on a weekend or a holiday of ``master:calendar``.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict

from jeval_ray.world import generate_world

TASK = "JE-7"
SEEDS = range(24)


@functools.cache
def _seen(seed: int):
    w = generate_world(TASK, seed)
    rows = w.ledger.to_pylist()
    inv = {r["entry_id"]: r for r in rows if r["document_type"] in ("VI", "VN") and r["account"] == "2000" and r["credit"]}
    pays = defaultdict(list)
    for r in rows:
        m = re.match(r"Payment run .* invoice ((?:VN|VI)-\d{7})$", r["description"] or "")
        if r["document_type"] == "VP" and r["account"] == "1000" and m:
            pays[m.group(1)].append(r)
    users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
    vouchers = {}
    for d in w.documents:
        m = re.match(r"AP voucher (\S+) - ", d.title)
        if m:
            body = d.body
            vouchers[m.group(1)] = {
                "doc": d.doc_id, "date": d.date,
                "keyed": re.search(r"Vendor invoice number as keyed: (\d+)", body).group(1),
                "printed": re.search(r"\nInvoice number: (\d+)", body).group(1),
                "inv_date": re.search(r"Invoice date: (\S+)", body).group(1),
                "po": (re.search(r"Purchase order: (\S+)", body) or [None, None])[1],
                "amount": re.search(r"Amount due: USD ([\d,]+\.\d\d)", body).group(1).replace(",", ""),
                "vendor": re.search(r"\(vendor (V\d+)\)", body).group(1),
                "posted": re.search(r"posted (\S+)\.", body).group(1),
                "keyer": re.search(r"Keyed by .*? \(([A-Z_]+)\)", body).group(1),
                "approver": re.search(r"approved by .*? \(([A-Z_]+)\) on (\S+)\.", body).groups(),
            }
    return w, inv, pays, users, vouchers


def _holidays(w) -> set[str]:
    return {r["date"] for r in w.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def _business_day(day: str, holidays: set[str]) -> bool:
    return dt.date.fromisoformat(day).weekday() < 5 and day not in holidays


def _keyed(r: dict) -> str:
    return re.match(r"Invoice (\d+) ", r["description"]).group(1)


def _original(inv: dict, eid: str) -> dict:
    r = inv[eid]
    earlier = [o for k, o in inv.items() if k < eid and o["vendor_id"] == r["vendor_id"]
               and round(o["credit"], 2) == round(r["credit"], 2) and o["document_date"] == r["document_date"]]
    (o,) = earlier
    return o


def test_key_audit_defects_file_one_vendor_invoice_twice():
    n = 0
    for s in SEEDS:
        w, inv, _pays, _users, v = _seen(s)
        for d in w.defects:
            x = inv[d.entry_id]
            o = _original(inv, d.entry_id)
            vx, vo = v[x["reference"]], v[o["reference"]]
            assert {vx["doc"], vo["doc"]} == set(d.required_evidence)
            assert vx["printed"] == vo["printed"] == _keyed(o) != vx["keyed"] == _keyed(x), (s, d.entry_id)
            assert vx["inv_date"] == vo["inv_date"] == str(x["document_date"])
            assert vx["po"] == vo["po"] and vx["amount"] == vo["amount"] == f"{x['credit']:.2f}"
            assert vx["printed"] in d.facts and o["entry_id"] in d.facts and f"{x['credit']:.2f}" in d.facts
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_decoys_file_another_invoice_of_the_vendor():
    n = 0
    for s in SEEDS:
        w, inv, _pays, _users, v = _seen(s)
        for d in w.decoys:
            x = inv[d.entry_id]
            o = _original(inv, d.entry_id)
            vx, vo = v[x["reference"]], v[o["reference"]]
            assert {vx["doc"], vo["doc"]} == set(d.clearing_evidence)
            assert vx["printed"] == vx["keyed"] == _keyed(x) != vo["printed"] == _keyed(o), (s, d.entry_id)
            assert vx["inv_date"] == vo["inv_date"] and vx["amount"] == vo["amount"] == f"{x['credit']:.2f}"
            assert vx["po"] is None or vx["po"] != vo["po"]
            assert {vx["printed"], vo["printed"]} <= set(d.facts)
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_vouchers_agree_with_their_entries():
    for s in SEEDS:
        _w, inv, _pays, users, v = _seen(s)
        by_ref = {r["reference"]: r for r in inv.values()}
        for ref, vc in v.items():
            r = by_ref[ref]
            assert vc["keyed"] == _keyed(r) and vc["amount"] == f"{r['credit']:.2f}" and vc["vendor"] == r["vendor_id"]
            assert vc["posted"] == str(r["posting_date"]) and vc["keyer"] == r["preparer"]
            approver, approved_on = vc["approver"]
            assert approver == r["approver"] != r["preparer"]
            assert users[approver]["approval_limit"] >= r["credit"]
            assert "VN" in users[r["preparer"]]["may_post"].split(", ")
            assert vc["inv_date"] <= approved_on <= vc["posted"], (s, ref)


def test_key_audit_nothing_outside_the_key_repeats_an_invoice():
    for s in SEEDS:
        w, inv, _pays, _users, _v = _seen(s)
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        numbers = defaultdict(list)
        first = {}
        for eid in sorted(inv):
            r = inv[eid]
            if eid not in planted:
                numbers[(r["vendor_id"], _keyed(r))].append(eid)
            key = (r["vendor_id"], round(r["credit"], 2))
            if key in first and eid not in planted:
                # an honest repeat of vendor and amount: another invoice date
                assert inv[first[key]]["document_date"] != r["document_date"], (s, eid)
            first.setdefault(key, eid)
        assert all(len(v) == 1 for v in numbers.values()), (s, [k for k, v in numbers.items() if len(v) > 1][:3])


def test_key_audit_second_postings_are_paid_once_after_they_were_keyed():
    paid = 0
    for s in SEEDS:
        w, inv, pays, _users, _v = _seen(s)
        for eid in w.defect_ids | {d.entry_id for d in w.decoys}:
            x = inv[eid]
            ps = pays.get(x["reference"], [])
            assert sum(p["credit"] for p in ps) <= x["credit"] + 0.005
            hol = _holidays(w)
            for p in ps:
                run = p["posting_date"]
                assert run > x["posting_date"] and _business_day(str(run), hol)
                # the Thursday run, or the next business day when that Thursday was a holiday
                thursday = run - dt.timedelta(days=(run.weekday() - 3) % 7)
                assert run == thursday or (str(thursday) in hol and all(
                    not _business_day(str(thursday + dt.timedelta(days=k)), hol) for k in range((run - thursday).days)))
            paid += bool(ps)
    assert paid


def test_key_audit_vouchers_are_posted_and_approved_on_business_days():
    n = 0
    for s in SEEDS:
        w, _inv, _pays, _users, v = _seen(s)
        hol = _holidays(w)
        assert hol, "the calendar lists the holidays"
        for ref, vc in v.items():
            _approver, approved_on = vc["approver"]
            assert _business_day(vc["posted"], hol) and _business_day(approved_on, hol), (s, ref, approved_on)
            n += 1
    assert n >= 10 * len(SEEDS)
