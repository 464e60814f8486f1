"""JE-5 key audit: over many seeds, the facts ``KEY_RATIONALE`` relies on hold in the world as the
agent sees it (ledger, ``master:users``, ``master:vendors`` and the support pack), and no run of
invoices outside the key breaks the matrix's rule on splitting.

Written from the visible world only, independently of the task module's planting code."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.books import chart, master as md
from jeval_ray.tasks import task_module
from jeval_ray.world import generate_world

TASK = "JE-5"
SEEDS = range(20, 45)
GAP = 3  # the brief's "within days": the red-flag rule's run gap


def _invoices(w) -> dict[str, dict]:
    """Manual vendor-invoice entries with their total payable (the credit to 2000) in cents."""
    led = w.ledger
    led = led.filter(pc.and_(pc.equal(led["source"], "manual"), pc.is_in(led["document_type"], pa.array(["VI", "VN"]))))
    out: dict[str, dict] = {}
    for r in led.to_pylist():
        e = out.setdefault(r["entry_id"], {**r, "cents": 0, "accounts": set()})
        # the invoice's amount is its total payable (a favourable price variance raises its debits)
        e["cents"] += round(r["credit"] * 100) if r["account"] == "2000" else 0
        e["accounts"].add(r["account"])
    return out


def _runs(ents: dict[str, dict], limit: dict[str, int]) -> list[list[dict]]:
    """The brief's rule: invoices of one preparer and vendor, each within GAP days of the one
    before, together above the preparer's limit."""
    by = defaultdict(list)
    for e in ents.values():
        by[(e["preparer"], e["vendor_id"])].append(e)
    out = []
    for (prep, _v), rows in by.items():
        rows.sort(key=lambda r: r["posting_date"])
        run = [rows[0]]
        for r in rows[1:] + [None]:
            if r is not None and (r["posting_date"] - run[-1]["posting_date"]).days <= GAP:
                run.append(r)
                continue
            if len(run) >= 2 and sum(x["cents"] for x in run) > limit[prep]:
                out.append(run)
            run = [r] if r is not None else []
    return out


def _fields(body: str) -> dict[str, str]:
    return {k.strip().lower(): v.strip() for k, v in re.findall(r"^([A-Za-z ]+): (.*)$", body, re.M)}


def _cents(text: str) -> int:
    return round(float(re.search(r"USD ([\d,]+\.\d\d)", text).group(1).replace(",", "")) * 100)


def _approval(text: str) -> tuple[str, str]:
    return re.search(r"\(([A-Z_]+), [^)]*\) on (\d{4}-\d\d-\d\d)", text).groups()


def _vouch(w, e: dict) -> tuple[dict, dict]:
    """The entry's vendor invoice and its purchase order, as fields; both must be in the pack."""
    (inv,) = [d for d in w.documents if d.title.startswith("Vendor invoice") and f" {e['reference']} - " in d.title]
    f = _fields(inv.body)
    (po,) = [d for d in w.documents if d.title.startswith(f"Purchase order {f['reference document']} - ")]
    return f, _fields(po.body)


def test_key_audit_je05():
    rationale = {(k.kind, k.type) for k in task_module(TASK).KEY_RATIONALE}
    allowed = {c.name: {chart.ACCOUNTS[i].code for i in md.ALLOWED_ACCOUNTS[c.name]} for c in md.CATEGORIES}
    n_lookalike = 0
    for seed in SEEDS:
        w = generate_world(TASK, seed)
        ents = _invoices(w)
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        limit = {k: round(u["approval_limit"] * 100) for k, u in users.items()}
        vendors = {v["vendor_id"]: v for v in w.master["vendors"].to_pylist()}
        key = {d.entry_id: ("defect", d.defect_type) for d in w.defects}
        key |= {d.entry_id: ("decoy", d.decoy_type) for d in w.decoys}
        assert set(key.values()) <= rationale
        policy = next(d for d in w.documents if d.doc_type == "policy" and "Approval authority" in d.title)
        for u in md.USERS:
            if u.approval_limit_cents and u.role not in ("AR Clerk",):
                assert f"{u.role} " in policy.body and f"USD {u.approval_limit_cents // 100:,}" in policy.body
        # each planted invoice is paid once, at its own amount, to its vendor, in a Thursday payment
        # run after it and at most a week past its due date, within the year
        vp = w.ledger.filter(pc.and_(pc.equal(w.ledger["document_type"], "VP"), pc.equal(w.ledger["line_no"], 1)))
        paid = defaultdict(list)
        for p in vp.to_pylist():
            paid[p["description"].rsplit(" ", 1)[-1]].append(p)
        for eid in key:
            e = ents[eid]
            (p,) = paid[e["reference"]]
            due = e["document_date"] + timedelta(days=vendors[e["vendor_id"]]["payment_terms_days"])
            assert p["vendor_id"] == e["vendor_id"] and vendors[e["vendor_id"]]["name"] in p["description"]
            assert round(p["debit"] * 100) == e["cents"], (seed, eid)
            assert e["posting_date"] < p["posting_date"] <= min(due + timedelta(days=7), date(2025, 12, 31)), (seed, eid)
            assert p["posting_date"].weekday() <= 4, (seed, eid)
        runs = _runs(ents, limit)
        in_run = {e["entry_id"] for g in runs for e in g}
        assert set(key) <= in_run, seed  # every planted entry is caught by the rule
        for e in ents.values():
            # every vendor posts to accounts its category allows; every invoice is approved by
            # another user whose limit covers it, on a date between the invoice and its entry
            assert e["accounts"] <= allowed[vendors[e["vendor_id"]]["category"]], (seed, e["entry_id"])
            assert e["approver"] != e["preparer"] and limit[e["approver"]] >= e["cents"], (seed, e["entry_id"])
        for g in runs:
            ids = {e["entry_id"] for e in g}
            total = sum(e["cents"] for e in g)
            kinds = {key.get(i) for i in ids}
            assert len(kinds) == 1, (seed, ids)  # a planted run is one unit, never mixed with the books' invoices
            kind = kinds.pop()
            if kind is None:
                n_lookalike += len(g)
                if min(limit[e["approver"]] for e in g) >= total:
                    continue  # every approver's limit covers the whole run: nothing was avoided
            vouched = [(e, *_vouch(w, e)) for e in g]
            for e, inv, po in vouched:
                # the invoice is the entry's: amount, dates, people; approved between its date and the entry
                if kind is not None:  # (the books' own invoices are tied to their entries by the books' tests)
                    assert _cents(inv["amount"]) == e["cents"]
                assert inv["document date"] == str(e["document_date"]) and inv["posting date"] == str(e["posting_date"])
                who, on = _approval(inv["approved by"])
                assert who == e["approver"] and str(e["document_date"]) <= on <= str(e["entry_timestamp"].date())
                assert po["document date"] <= inv["document date"], (seed, e["entry_id"])
                po_by, po_on = _approval(po["approved by"])
                assert limit[po_by] >= _cents(po["amount"]) and po_on >= po["document date"]
            orders = {inv["reference document"]: po for _e, inv, po in vouched}
            if kind is None:
                # the books' own runs: one order approved by a user whose limit covers the run, or
                # separate orders raised on different days
                if len(orders) == 1:
                    (po,) = orders.values()
                    assert limit[_approval(po["approved by"])[0]] >= total, (seed, ids)
                else:
                    assert len({po["document date"] for po in orders.values()}) == len(orders), (seed, ids)
                continue
            typ = kind[1]
            prep = g[0]["preparer"]
            assert total > limit[prep] and all(e["cents"] <= limit[e["approver"]] for e in g)
            if typ == "split_purchase":
                quotes = {po["vendor quotation"] for po in orders.values()}
                reqs = {po["requisition"] for po in orders.values()}
                assert len(orders) == len(g) and len(quotes) == 1 and len(reqs) == 1, (seed, ids)
                assert len({po["document date"] for po in orders.values()}) == 1
                assert _cents(quotes.pop()) == total
                # every user who approved an order or an invoice holds a limit below the purchase
                approvers = {_approval(po["approved by"])[0] for po in orders.values()} | {e["approver"] for e in g}
                assert all(limit[a] < total for a in approvers), (seed, ids)
                for d in w.defects:
                    if d.entry_id in ids:
                        assert d.criteria == "LIMIT_AVOIDANCE" and round(d.misstatement * 100) == next(
                            e["cents"] for e in g if e["entry_id"] == d.entry_id)
                        assert f"{total / 100:.2f}" in d.facts
            elif typ == "order_approved_in_full":
                (po,) = orders.values()
                assert _cents(po["amount"]) == total and limit[_approval(po["approved by"])[0]] >= total, (seed, ids)
            else:
                assert typ == "separate_purchases"
                assert len(orders) == len(g)
                for field in ("vendor quotation", "requisition", "document date"):
                    assert len({po[field] for po in orders.values()}) == len(g), (seed, ids, field)
                for e, inv, po in vouched:
                    assert _cents(po["amount"]) == e["cents"] and _cents(po["vendor quotation"]) == e["cents"]
    assert n_lookalike > 0  # the rule does catch the books' own runs, and they hold no exception
