"""Procure-to-pay: purchase order -> goods receipt -> vendor invoice -> payment run.

How the company buys depends on the vendor's category (``master.CATEGORIES``):

* **three-way** (raw materials, production equipment): a purchase order, one goods receipt or a
  partial receipt and a later one (sometimes short-shipped, never more than ordered), then one
  invoice for what was received. The goods receipt debits inventory (or PP&E) and credits GR/IR;
  the invoice clears GR/IR at the order price and books any price difference to purchase price
  variance. One invoice in ten arrives before the goods (GR/IR then carries a debit for a while).
* **two-way** (freight, maintenance, marketing): a purchase order and an invoice for at most the
  ordered amount, booked straight to the category's cost account.
* **bill** (professional fees, utilities, office supplies, travel): an invoice without an order.
  Professional services and utilities bill monthly for the month before (``service_month``), which
  is what the month-end accruals estimate.
* **recurring** (rent, software): the same fee every month, billed on the first.

Invoices are keyed by the AP team and released by an approver whose limit covers the invoice;
the approval is dated between the invoice date and its posting. Payments go out in the Thursday
payment run on or just before the due date, one payment per invoice (a few in two instalments),
by ACH (value next business day) or cheque (value three to nine days later).
Only what happened by 31 December 2025 is kept: chains still running then stay open.
"""

from __future__ import annotations

import numpy as np


from jeval_ray.books import _np, calendar as cal, flows, master as md, noise
from jeval_ray.books.chart import idx
from jeval_ray.books.documents import DocBuilder

AP_KEYERS = np.array([md.USER["AKIM"], md.USER["BOKAFOR"], md.USER["GSILVA"]])
AP_KEYER_WEIGHTS = np.array([0.42, 0.42, 0.16])


def _vendor_pick(g: np.random.Generator, vendors: np.ndarray, n: int) -> np.ndarray:
    """Vendors for ``n`` documents, a few big ones taking most of the business."""
    w = 1.0 / (np.arange(len(vendors)) + 1.0) ** 0.8
    return vendors[g.choice(len(vendors), size=n, p=w / w.sum())]


def _lognormal_cents(g: np.random.Generator, mu: float, sigma: float, n: int) -> np.ndarray:
    c = np.rint(np.exp(g.normal(mu, sigma, n)) * 100).astype(np.int64)
    return np.clip(c, 25_00, md.MAX_MANUAL_CENTS // 2)


def invoices(b: DocBuilder, g: np.random.Generator, m: md.Master, code: str, vendor: np.ndarray,
             doc_date: np.ndarray, amount: np.ndarray, account: np.ndarray, parent: np.ndarray,
             variance: np.ndarray | int = 0, service_month: np.ndarray | int = -1) -> dict:
    """Key vendor invoices (``VI`` or ``VN``) and return what the payment run needs."""
    n = len(vendor)
    post = md.business_offset(doc_date + g.integers(1, 9, n), 0)
    keep = post <= md.YEAR_END
    sel = np.flatnonzero(keep)
    vendor, doc_date, amount, account, post = vendor[sel], doc_date[sel], amount[sel], account[sel], post[sel]
    parent = parent[sel] if np.ndim(parent) else np.full(len(sel), parent)
    variance = variance[sel] if np.ndim(variance) else np.full(len(sel), variance)
    service_month = service_month[sel] if np.ndim(service_month) else np.full(len(sel), service_month)
    k = len(sel)
    preparer = AP_KEYERS[g.choice(len(AP_KEYERS), size=k, p=AP_KEYER_WEIGHTS)]
    gross = amount + variance
    approver = md.assign_approvers(g, gross, preparer)
    # approved on a business day between the invoice date and the posting date
    span = post - doc_date
    approved = md.business_offset(doc_date + (g.random(k) * span).astype(np.int64), 0, roll="backward")
    approved = np.clip(approved, doc_date, post)
    due = doc_date + m.vendor_terms[vendor]
    ids = b.add(code, k, doc_date=doc_date, post_date=post, entry_date=post, entry_time=md.office_hours(g, k),
                due_date=due, partner=vendor, amount=amount, variance=variance, account=account,
                preparer=preparer, approver=approver, approved_on=approved, parent=parent,
                ext_ref=g.integers(10_000, 999_999, k), service_month=service_month)
    return {"ids": ids, "vendor": vendor, "gross": gross, "due": due, "post": post}


def payment_runs(b: DocBuilder, g: np.random.Generator, inv: dict) -> np.ndarray:
    """Pay invoices in the Thursday payment run before their due date (a few in two instalments)."""
    ids, vendor, gross, due, post = inv["ids"], inv["vendor"], inv["gross"], inv["due"], inv["post"]
    n = len(ids)
    earliest = np.maximum(due - g.integers(0, 8, n), post + 2)
    run = md.business_offset(earliest + (3 - cal.weekday(earliest)) % 7, 0)
    split = g.random(n) < 0.04
    first = np.where(split, (gross * g.uniform(0.5, 0.8, n)).astype(np.int64), gross)
    run2 = md.business_offset(run + 7 * g.integers(2, 5, n), 0)
    inv_of = np.concatenate([np.arange(n), np.flatnonzero(split)])
    amount = np.concatenate([first, (gross - first)[split]])
    day = np.concatenate([run, run2[split]])
    keep = day <= md.YEAR_END
    inv_of, amount, day = inv_of[keep], amount[keep], day[keep]
    k = len(inv_of)
    cheque = g.random(k) < 0.25
    value = np.where(cheque, day + g.integers(3, 10, k), md.business_offset(day, 1))
    return b.add("VP", k, doc_date=day, post_date=day, entry_date=day, entry_time=md.night_batch(g, k),
                 value_date=value, partner=vendor[inv_of], amount=amount, preparer=md.USER["SYS_BATCH"],
                 parent=ids[inv_of])


def _purchase_orders(b: DocBuilder, g: np.random.Generator, vendor: np.ndarray, day: np.ndarray, qty: np.ndarray,
                     price: np.ndarray) -> np.ndarray:
    n = len(vendor)
    amount = qty * price
    approver = md.assign_approvers(g, amount, np.full(n, md.USER["NPARK"]))
    return b.add("PO", n, doc_date=day, partner=vendor, amount=amount, quantity=qty, preparer=md.USER["NPARK"],
                 approver=approver, approved_on=day, entry_date=day, entry_time=md.office_hours(g, n))


def three_way(b: DocBuilder, g: np.random.Generator, m: md.Master, category: str, n: int,
              monthly_target: np.ndarray | None = None) -> dict:
    """Purchase chains with goods receipts; returns the receipts (for inventory and the asset register)."""
    c = md.CATEGORIES[md.CATEGORY[category]]
    vendor = _vendor_pick(g, m.vendors_of(category), n)
    po_day = np.sort(md.uniform_days(g, md.SIM_START, md.YEAR_END - 20, n))
    amount = _lognormal_cents(g, c.mu, c.sigma, n)
    qty = np.where(category == "capex", 1, g.integers(10, 600, n))
    if monthly_target is not None:
        # size each month's orders to what production will consume
        mi = md.fiscal_month_code(po_day)
        months, inv = _np.unique_inverse(mi)
        total = np.bincount(inv, weights=amount)
        want = np.array([monthly_target.get(int(x), total[j]) for j, x in enumerate(months)])
        amount = np.rint(amount * (want / np.maximum(total, 1))[inv]).astype(np.int64)
    price = np.maximum(amount // qty, 1_00)
    po = _purchase_orders(b, g, vendor, po_day, qty, price)

    chain, gr_day, gr_qty, lots = flows.deliveries(g, qty, po_day + g.integers(3, 25, n), partial_rate=0.15,
                                                   short_rate=0.3, weekend_runs=True)
    k = len(chain)
    gr_amount = gr_qty * price[chain]
    gr_ids = b.add("GR", k, doc_date=gr_day, post_date=gr_day, entry_date=gr_day,
                   entry_time=md.evening_interface(g, k), partner=vendor[chain], amount=gr_amount,
                   account=idx(c.account), quantity=gr_qty, preparer=md.USER["SYS_INTERFACE"], parent=po[chain])

    # one invoice per order for what was received; one in ten before the goods arrive
    received = lots["delivered"]
    early = ~lots["partial"] & (g.random(n) < 0.10)
    inv_day = np.where(early, np.maximum(lots["first"] - g.integers(1, 6, n), po_day + 1),
                       lots["last"] + g.integers(0, 11, n))
    inv_amount = received * price
    if category == "capex":
        variance = np.zeros(n, dtype=np.int64)
    else:
        variance = np.where(g.random(n) < 0.25, np.rint(inv_amount * g.normal(0, 0.015, n)).astype(np.int64), 0)
    inv = invoices(b, g, m, "VI", vendor, inv_day, inv_amount, np.full(n, -1), po, variance=variance)
    payment_runs(b, g, inv)
    return {"gr_ids": gr_ids, "gr_day": gr_day, "gr_amount": gr_amount, "gr_vendor": vendor[chain]}


def two_way(b: DocBuilder, g: np.random.Generator, m: md.Master, category: str, n: int) -> None:
    """Orders for services billed without a goods receipt; the invoice never exceeds the order."""
    c = md.CATEGORIES[md.CATEGORY[category]]
    vendor = _vendor_pick(g, m.vendors_of(category), n)
    po_day = np.sort(md.uniform_days(g, md.SIM_START, md.YEAR_END - 10, n))
    amount = _lognormal_cents(g, c.mu, c.sigma, n)
    billed = _shape_bill(g, np.where(g.random(n) < 0.7, amount, (amount * g.uniform(0.85, 1.0, n)).astype(np.int64)))
    # the order covers the bill (a fixed fee or a near-limit price is what was ordered)
    po = _purchase_orders(b, g, vendor, po_day, np.ones(n, dtype=np.int64), np.maximum(amount, billed))
    inv = invoices(b, g, m, "VN", vendor, po_day + g.integers(5, 30, n), billed, np.full(n, idx(c.account)), po)
    payment_runs(b, g, inv)


def _shape_bill(g: np.random.Generator, cents: np.ndarray) -> np.ndarray:
    """Ordinary amounts, except the documented shares of round fees and near-limit prices."""
    cents = noise.avoid_whole_hundreds(cents)
    # ordinary prices keep out of the band just below an approver's limit; the documented share sits in it
    cents = np.where(noise.is_near_limit(cents), (cents * 0.8).astype(np.int64) + 13, cents)
    cents, rounded = noise.round_hundreds(g, cents)
    near, near_pick = noise.near_limit(g, cents)
    return np.where(near_pick & ~rounded, near, cents)


def bills(b: DocBuilder, g: np.random.Generator, m: md.Master, category: str, n: int) -> None:
    """Invoices without an order (office supplies, travel)."""
    c = md.CATEGORIES[md.CATEGORY[category]]
    vendor = _vendor_pick(g, m.vendors_of(category), n)
    day = np.sort(md.uniform_days(g, md.SIM_START, md.YEAR_END, n))
    amount = _shape_bill(g, _lognormal_cents(g, c.mu, c.sigma, n))
    inv = invoices(b, g, m, "VN", vendor, day, amount, np.full(n, idx(c.account)), np.full(n, -1))
    payment_runs(b, g, inv)


def monthly_services(b: DocBuilder, g: np.random.Generator, m: md.Master, category: str) -> dict:
    """Each vendor bills every month for the month before; returns the bills (what accruals estimate)."""
    c = md.CATEGORIES[md.CATEGORY[category]]
    vendors = m.vendors_of(category)
    months = np.arange(12 * 2024 + 8, 12 * 2025 + 12)  # service months September 2024 - December 2025
    v = np.repeat(vendors, len(months))
    mon = np.tile(months, len(vendors))
    base = np.exp(g.normal(c.mu, c.sigma, len(vendors)))[np.searchsorted(vendors, v)]
    amount = _shape_bill(g, np.rint(base * g.uniform(0.85, 1.15, len(v)) * 100).astype(np.int64))
    first_next = md.first_day_of(mon + 1)
    doc_day = first_next + g.integers(2, 18, len(v))
    service = (mon // 12) * 100 + mon % 12 + 1
    inv = invoices(b, g, m, "VN", v, doc_day, amount, np.full(len(v), idx(c.account)), np.full(len(v), -1),
                   service_month=service)
    payment_runs(b, g, inv)
    return {"vendor": v, "service_month": service, "amount": amount, "account": idx(c.account),
            "first_next": first_next}


def recurring(b: DocBuilder, g: np.random.Generator, m: md.Master, category: str) -> None:
    """Rent and subscriptions: the same fee every month, billed on the first (rent in whole hundreds)."""
    c = md.CATEGORIES[md.CATEGORY[category]]
    vendors = m.vendors_of(category)
    fee = np.rint(np.exp(g.normal(c.mu, c.sigma, len(vendors))) * 100).astype(np.int64)
    if category == "rent":
        fee = np.maximum(np.rint(fee / 10_000), 1).astype(np.int64) * 10_000
    else:
        fee = noise.avoid_whole_hundreds(fee)
    months = np.arange(12 * 2024 + 9, 12 * 2025 + 12)  # October 2024 - December 2025
    v = np.repeat(vendors, len(months))
    mon = np.tile(months, len(vendors))
    first = md.first_day_of(mon)
    doc_day = first - g.integers(3, 10, len(v))
    inv = invoices(b, g, m, "VN", v, doc_day, np.repeat(fee, len(months)), np.full(len(v), idx(c.account)),
                   np.full(len(v), -1), service_month=(mon // 12) * 100 + mon % 12 + 1)
    payment_runs(b, g, inv)
