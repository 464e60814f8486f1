"""Month-end and year-end close: sales tax returns, the allowance review, top-side entries, closing.

* **Sales tax**: the tax billed in a month is remitted with the return on the 20th of the next.
* **Allowance for doubtful accounts** (each month end, and the opening balance): a specific
  provision, customer by customer, of 100 % of invoices known to be uncollectible once 60 days
  past due, plus a general provision of 1 % of current, 4 % of 1-90 days
  and 20 % of older receivables; the senior accountant books the difference to the balance left
  after the month's write-offs (a release when negative). A write-off always meets a full
  specific provision, so the allowance never turns into a debit and never exceeds receivables.
* **Top-side adjustments**: the accounting manager's year-end accruals (bonus, audit fee …),
  keyed in January before the year-end close date and posted to 31 December.
* **Closing entry**: on the close date the batch closes every revenue and expense account to
  retained earnings in one multi-line entry (fiscal period 13).
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import _np, chart, master as md, sales, subledgers
from jeval_ray.books.chart import idx
from jeval_ray.books.documents import DocBuilder, DocTable

#: allowance rates by aging bucket (current, 1-30, 31-60, 61-90, over 90 days past due)
GENERAL_RATES = np.array([0.01, 0.04, 0.04, 0.04, 0.20])
SPECIFIC_AFTER_DAYS = 60
#: the allowance is reviewed at every month end, so it never exceeds the receivables it covers
REVIEW_DATES = md.MONTH_ENDS
TOP_SIDE = (("Year-end bonus accrual FY2025", "wages"), ("Audit fee accrual FY2025", "professional_fees"),
            ("Legal fees accrual - open litigation", "professional_fees"), ("Marketing campaign accrual Q4", "marketing"))


def sales_tax_returns(b: DocBuilder, g: np.random.Generator, m: md.Master, docs: DocTable) -> np.ndarray:
    """One return per state and month: the tax billed in the month, paid on the 20th of the next."""
    ci = docs.of("CI")
    state = sales.customer_states(m)[docs.partner[ci]]
    key = md.fiscal_month_code(docs.post_date[ci]) * 100 + state
    keys, inv = _np.unique_inverse(key)
    tax = np.bincount(inv, weights=docs.tax[ci], minlength=len(keys)).astype(np.int64)
    months, states = keys // 100, keys % 100
    due = np.array([md.day(f"{c // 100 + (c % 100 == 12)}-{c % 100 % 12 + 1:02d}-20") for c in months], dtype=np.int64)
    due = md.business_offset(due, 0, roll="backward")
    keep = (due <= md.YEAR_END) & (tax > 0)
    k = int(keep.sum())
    prep = np.full(k, md.USER["FNGUYEN"])
    return b.add("TX", k, doc_date=due[keep], post_date=due[keep], entry_date=due[keep],
                 entry_time=md.office_hours(g, k), value_date=due[keep], amount=tax[keep], preparer=prep,
                 approver=md.assign_approvers(g, tax[keep], prep), approved_on=due[keep], service_month=months[keep],
                 ext_ref=states[keep])


#: the two parts of the allowance, booked as separate adjustments (``ext_ref`` of an AL document)
ALLOWANCE_PARTS = ("specific provisions", "general provision")


def allowance_targets(docs: DocTable, doubtful: np.ndarray, days: np.ndarray,
                      n_customers: int) -> tuple[np.ndarray, np.ndarray]:
    """Required (specific provision per customer, general provision) at each of ``days``:
    arrays of shape (days, customers) and (days,)."""
    oi = subledgers.open_at(docs, "ar", np.flatnonzero(docs.post_date <= days.max()), days)
    row = np.searchsorted(days, oi.at)
    specific = _np.member(oi.item, doubtful) & (oi.days_past_due > SPECIFIC_AFTER_DAYS)
    general = np.rint(oi.amount * GENERAL_RATES[oi.bucket]).astype(np.int64)
    per_customer = np.bincount(row[specific] * n_customers + oi.partner[specific], weights=oi.amount[specific],
                               minlength=len(days) * n_customers).astype(np.int64).reshape(len(days), n_customers)
    gen = np.bincount(row[~specific], weights=general[~specific], minlength=len(days)).astype(np.int64)
    return per_customer, gen


def allowance(b: DocBuilder, g: np.random.Generator, m: md.Master, docs: DocTable,
              doubtful: np.ndarray) -> tuple[int, np.ndarray]:
    """The opening allowance and the month-end adjustments; ``doubtful``: invoices never to be paid.

    The specific provision is reviewed customer by customer (one adjustment each), the general
    provision as one. Write-offs use up specific provisions, so a customer's adjustment is what
    is required less what is left of the last provision after the month's write-offs."""
    days = np.concatenate([[md.YEAR_START - 1], REVIEW_DATES]).astype(np.int64)
    spec_all, gen_all = allowance_targets(docs, doubtful, days, m.n_customers)
    spec, gen = spec_all[0], int(gen_all[0])
    opening = int(spec.sum()) + gen
    wo = docs.of("WO")
    prev, out = md.YEAR_START - 1, []
    for k, q in enumerate(REVIEW_DATES.tolist(), start=1):
        in_q = wo[(docs.post_date[wo] > prev) & (docs.post_date[wo] <= q)]
        spec = spec - np.bincount(docs.partner[in_q], weights=docs.amount[in_q], minlength=m.n_customers).astype(np.int64)
        new_spec, new_gen = spec_all[k], int(gen_all[k])
        delta = new_spec - spec
        out += [(q, 0, int(c), int(delta[c])) for c in np.flatnonzero(delta)] + [(q, 1, -1, new_gen - gen)]
        spec, gen, prev = new_spec, new_gen, q
    out = [o for o in out if o[3] != 0]
    day = np.array([o[0] for o in out], dtype=np.int64)
    part = np.array([o[1] for o in out], dtype=np.int64)
    customer = np.array([o[2] for o in out], dtype=np.int64)
    amount = np.array([o[3] for o in out], dtype=np.int64)
    k = len(out)
    entered = md.business_offset(day + 1, g.integers(1, 4, k))
    prep = np.full(k, md.USER["FNGUYEN"])
    ids = b.add("AL", k, doc_date=day, post_date=day, entry_date=entered, entry_time=md.office_hours(g, k),
                partner=customer, amount=amount, preparer=prep, approver=md.assign_approvers(g, np.abs(amount), prep),
                approved_on=entered, service_month=md.fiscal_month_code(day), ext_ref=part)
    return opening, ids


def top_side(b: DocBuilder, g: np.random.Generator, m: md.Master) -> np.ndarray:
    n = len(TOP_SIDE)
    amount = np.rint(np.exp(g.normal(10.3, 0.6, n)) * 100).astype(np.int64)
    amount[0] = int(m.annual_payroll_cents * g.uniform(0.03, 0.05))
    amount = np.maximum(np.rint(amount / 100_000), 1).astype(np.int64) * 100_000  # estimates in whole thousands
    amount = np.minimum(amount, md.MAX_MANUAL_CENTS // 2)
    entered = md.business_offset(md.day("2026-01-05"), g.integers(0, 3, n))
    prep = np.where(amount > md.USERS[md.USER["HJOHANSSON"]].approval_limit_cents, md.USER["IBROWN"],
                    md.USER["HJOHANSSON"])
    return b.add("TS", n, doc_date=md.YEAR_END, post_date=md.YEAR_END, entry_date=entered,
                 entry_time=md.office_hours(g, n), amount=amount, account=[idx(r) for _, r in TOP_SIDE],
                 preparer=prep, approver=md.assign_approvers(g, amount, prep), approved_on=entered,
                 ext_ref=np.arange(n))


def reserve_closing_entry(b: DocBuilder) -> np.ndarray:
    """The closing document, recorded last on the close date; its lines follow from the year's postings."""
    return b.add("YC", 1, doc_date=md.YEAR_END, post_date=md.YEAR_END, entry_date=md.YEAR_END_CLOSE,
                 entry_time=18 * 3600, preparer=md.USER["SYS_BATCH"])


def closing_items(year_lines_account: np.ndarray, year_lines_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The closing entry's items (account, value): every P&L balance of the year, reversed."""
    bal = np.bincount(year_lines_account, weights=year_lines_value, minlength=len(chart.ACCOUNTS)).astype(np.int64)
    pl = np.flatnonzero(chart.IS_PROFIT_AND_LOSS & (bal != 0))
    return pl, -bal[pl]
