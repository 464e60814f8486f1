"""Order-to-cash: sales order -> shipment -> customer invoice -> cash receipt (-> write-off).

Orders come in through the EDI interface; a small year's orders are scaled up so that the product
sales of 2025 reach at least ``MIN_PRODUCT_SALES`` (the company's scale does not shrink with the
number of entries asked for, only the number of its orders does). Goods ship in one delivery or in two (never more than
ordered); each shipment relieves finished goods at cost into cost of goods sold and is billed the
same evening with sales tax at the customer's rate (resellers are exempt). Customers pay through
the lockbox around the due date, a few in two instalments; about one invoice in a hundred is never
paid and is written off once it is well past due, after the allowance has provided for it in full.

Service contracts are billed a year in advance to deferred revenue and released to service
revenue month by month.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import flows, master as md, noise
from jeval_ray.books.chart import idx
from jeval_ray.books.documents import DocBuilder

#: share of invoices never paid (written off after ``WRITE_OFF_DAYS`` past due)
DOUBTFUL_RATE = 0.012
WRITE_OFF_DAYS = 180
#: an invoice left unpaid is at most this share of all the product billing of the simulation
DOUBTFUL_CAP = 0.02


#: the company's product sales a year are at least this (cents): a plant with its staff, premises and
#: overhead does not run on less; a small year (few orders) has larger orders, not a smaller business
MIN_PRODUCT_SALES = 6_000_000_00
#: a year's product sales at that floor lie between 1 and this many times it (drawn per seed from its
#: own stream, so that a year above the floor draws its orders as if there were none)
FLOOR_SPREAD = 1.3


#: the states the company ships to and their sales tax rates (basis points); state 0 = exempt resellers.
#: Colorado, its home state, is one (the rate a combined state and local one)
STATES = ("exempt (resale certificate)", "Colorado", "Illinois", "Indiana", "California")
STATE_RATES = np.array([0, 600, 625, 700, 725])


def customer_states(m: md.Master) -> np.ndarray:
    """The state of each customer's ship-to address (0: a reseller, exempt from sales tax)."""
    g = md.rng(m.seed, "sales.tax")
    return g.choice(len(STATES), size=m.n_customers, p=[0.3, 0.2, 0.2, 0.1, 0.2]).astype(np.int64)


def tax_rates(m: md.Master) -> np.ndarray:
    """Sales tax rate per customer (in basis points)."""
    return STATE_RATES[customer_states(m)]


def _customer_pick(g: np.random.Generator, n_customers: int, n: int) -> np.ndarray:
    w = 1.0 / (np.arange(n_customers) + 1.0) ** 0.7
    return g.choice(n_customers, size=n, p=w / w.sum())


def order_to_cash(b: DocBuilder, g: np.random.Generator, m: md.Master, n: int) -> dict:
    """``n`` product order chains; returns shipments (for inventory) and invoices (for the allowance)."""
    cust = _customer_pick(g, m.n_customers, n)
    so_day = np.sort(md.uniform_days(g, md.SIM_START, md.YEAR_END - 3, n))
    qty = g.integers(5, 400, n)
    draw = np.exp(g.normal(8.7, 1.0, n))
    # orders are scaled up when the orders of 2025 would sell less than the floor; a year above it
    # keeps its drawn prices
    floor = MIN_PRODUCT_SALES / 100 * md.rng(m.seed, "sales.floor").uniform(1.0, FLOOR_SPREAD)
    scale = max(1.0, floor / max(float(draw[so_day >= md.YEAR_START].sum()), 1.0))
    net = np.clip(np.rint(draw * scale * 100), 50_00, 2_000_000_00).astype(np.int64)
    price = np.maximum(net // qty, 1_00)
    cost_ratio = g.uniform(0.58, 0.68, n)
    so = b.add("SO", n, doc_date=so_day, entry_date=so_day, entry_time=md.evening_interface(g, n), partner=cust,
               amount=qty * price, quantity=qty, preparer=md.USER["SYS_INTERFACE"])

    chain, day, sq, _ = flows.deliveries(g, qty, so_day + g.integers(1, 12, n), partial_rate=0.10)
    k = len(chain)
    value = sq * price[chain]
    cost = np.rint(value * cost_ratio[chain]).astype(np.int64)
    t = md.evening_interface(g, k) - 120
    sh = b.add("SH", k, doc_date=day, post_date=day, entry_date=day, entry_time=t, partner=cust[chain], amount=cost,
               quantity=sq, preparer=md.USER["SYS_INTERFACE"], parent=so[chain])
    c = cust[chain]
    tax = np.rint(value * tax_rates(m)[c] / 10_000).astype(np.int64)
    due = day + m.customer_terms[c]
    ci = b.add("CI", k, doc_date=day, post_date=day, entry_date=day, entry_time=t + 60, due_date=due, partner=c,
               amount=value, tax=tax, account=idx("revenue_product"), quantity=sq, preparer=md.USER["SYS_INTERFACE"],
               parent=sh)
    # a customer that never pays is a small one: no single bad debt above DOUBTFUL_CAP of the billing
    doubtful = (g.random(k) < DOUBTFUL_RATE) & (value <= DOUBTFUL_CAP * value.sum())
    receipts(b, g, ci, c, value + tax, day, due, ~doubtful)
    return {"sh_day": day, "sh_cost": cost, "ci": ci, "ci_customer": c, "ci_gross": value + tax, "ci_day": day,
            "ci_due": due, "doubtful": doubtful}


def receipts(b: DocBuilder, g: np.random.Generator, ci: np.ndarray, cust: np.ndarray, gross: np.ndarray,
             day: np.ndarray, due: np.ndarray, pays: np.ndarray) -> None:
    """Lockbox receipts around the due date (a few in two instalments); value the same or next day."""
    sel = np.flatnonzero(pays)
    n = len(sel)
    pay = np.maximum(due[sel] + np.rint(g.normal(-2, 8, n)).astype(np.int64), day[sel] + 3)
    pay = md.business_offset(pay, 0)
    pay, _ = noise.weekend(g, pay)
    split = g.random(n) < 0.05
    first = np.where(split, (gross[sel] * g.uniform(0.4, 0.8, n)).astype(np.int64), gross[sel])
    pay2 = md.business_offset(pay + g.integers(10, 30, n), 0)
    of = np.concatenate([np.arange(n), np.flatnonzero(split)])
    amt = np.concatenate([first, (gross[sel] - first)[split]])
    d = np.concatenate([pay, pay2[split]])
    keep = d <= md.YEAR_END
    of, amt, d = of[keep], amt[keep], d[keep]
    k = len(of)
    value = np.where(g.random(k) < 0.3, md.business_offset(d, 1), d)
    b.add("CR", k, doc_date=d, post_date=d, entry_date=d, entry_time=md.evening_interface(g, k), value_date=value,
          partner=cust[sel][of], amount=amt, preparer=md.USER["SYS_INTERFACE"], parent=ci[sel][of])


def write_offs(b: DocBuilder, g: np.random.Generator, o2c: dict) -> np.ndarray:
    """Write off the unpaid invoices once ``WRITE_OFF_DAYS`` past due (keyed by the AR clerk)."""
    sel = np.flatnonzero(o2c["doubtful"])
    day = md.business_offset(o2c["ci_due"][sel] + WRITE_OFF_DAYS + g.integers(0, 30, len(sel)), 0)
    keep = day <= md.YEAR_END
    sel, day = sel[keep], day[keep]
    k = len(sel)
    amount = o2c["ci_gross"][sel]
    prep = np.full(k, md.USER["CRUIZ"])
    approver = md.assign_approvers(g, amount, prep)
    return b.add("WO", k, doc_date=day, post_date=day, entry_date=day, entry_time=md.office_hours(g, k),
                 partner=o2c["ci_customer"][sel], amount=amount, preparer=prep, approver=approver, approved_on=day,
                 parent=o2c["ci"][sel])


def service_contracts(b: DocBuilder, g: np.random.Generator, m: md.Master, n: int) -> None:
    """Annual service contracts billed in advance to deferred revenue, released monthly."""
    cust = _customer_pick(g, m.n_customers, n)
    start = (12 * 2024 + 9) + g.integers(0, 15, n)  # first service month, October 2024 - December 2025
    first = md.first_day_of(start)
    fee = np.rint(np.exp(g.normal(9.6, 0.6, n)) * 100).astype(np.int64) * 12
    so = b.add("SO", n, doc_date=first - 10, entry_date=first - 10, entry_time=md.office_hours(g, n), partner=cust,
               amount=fee, quantity=1, preparer=md.USER["SYS_INTERFACE"])
    due = first + m.customer_terms[cust]
    ci = b.add("CI", n, doc_date=first, post_date=first, entry_date=first, entry_time=md.evening_interface(g, n),
               due_date=due, partner=cust, amount=fee, account=idx("deferred_revenue"), quantity=1,
               preparer=md.USER["SYS_INTERFACE"], parent=so)
    keep = first <= md.YEAR_END
    receipts(b, g, ci, cust, fee, first, due, keep)
    # twelve releases per contract at each month end, the last one taking the rounding
    k = np.arange(12)
    mon = start[:, None] + k[None, :]
    base = fee // 12
    rel = np.where(k[None, :] == 11, fee[:, None] - 11 * base[:, None], base[:, None])
    end = md.last_day_of(mon.ravel())
    ok = end <= md.YEAR_END
    c = np.repeat(np.arange(n), 12)[ok]
    kk = int(ok.sum())
    code = ((mon.ravel() // 12) * 100 + mon.ravel() % 12 + 1)[ok]
    b.add("RR", kk, doc_date=end[ok], post_date=end[ok], entry_date=end[ok], entry_time=md.night_batch(g, kk),
          partner=cust[c], amount=rel.ravel()[ok], preparer=md.USER["SYS_BATCH"], parent=ci[c], service_month=code)
