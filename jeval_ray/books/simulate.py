"""The orchestrator: ``simulate_year(seed, size)`` runs the company's year and returns its books.

Phases, in order:

1. chart of accounts (``chart``, fixed) and master data (``master.build_master``);
2. document flows, one process at a time: sales (orders, shipments, invoices, receipts,
   write-offs, service contracts), purchasing sized to what sales consume (raw materials,
   equipment, services, bills, rent and subscriptions), prepaid insurance, accruals, payroll,
   depreciation from the asset register, production, bank charges, then the close (sales tax
   returns, the allowance review, top-side adjustments);
3. opening balances from items: the prior-year documents still open (receivables, payables,
   GR/IR, accruals, sales tax, deferred revenue), the asset register, the prepaid schedule, the
   stock count and the cash that keeps a month of operating expense in the account at every day's
   end, in the books and at the bank (``opening_cash``); equity is the only plug;
4. entries: every document posted through the one engine, numbered in the order recorded;
5. the year-end closing entry to retained earnings;
6. projection (trial balances, subledgers, bank) and validation: a broken invariant raises.

Every process draws from its own named stream (``master.rng(seed, name)``), so adding a process
or changing one leaves the others' draws unchanged. Nothing reads the clock.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import (_np, accruals, assets, bank, chart, close, invariants, ledger, master as md, payroll,
                             prepaids, production, purchasing, sales, subledgers)
from jeval_ray.books.bank import BankState
from jeval_ray.books.documents import DocBuilder

#: chains per unit of ``size``, by process (calibrated so that the year has about ``size`` entries)
SALES_SHARE = 0.205
RAW_SHARE = 0.085
TWO_WAY_SHARE = 0.050
BILL_SHARE = 0.042
MIN_SIZE = 100
#: raw-material orders at least (October 2024 - December 2025): a plant selling several million a
#: year orders its materials every few weeks, not in a handful of lots of half a million
MIN_RAW_ORDERS = 26
#: above this, monthly tax returns and allowance reviews outgrow the CFO's approval limit
MAX_SIZE = 2_000_000


def _counts(size: int) -> dict[str, int]:
    s = max(int(size), MIN_SIZE)
    return {
        "sales": max(20, int(SALES_SHARE * s)),
        "contracts": max(2, int(0.001 * s)),  # annual service contracts
        "raw": max(MIN_RAW_ORDERS, int(RAW_SHARE * s)),
        "capex": max(2, int(0.0008 * s)),  # equipment orders (each receipt becomes an asset)
        "two_way": max(3, int(TWO_WAY_SHARE * s)),
        "bill": max(3, int(BILL_SHARE * s)),
    }


def simulate_year(seed: int, size: int = 10_000, *, validate: bool = True) -> ledger.Books:
    """The books of one simulated year of about ``size`` journal entries; a pure function of its inputs."""
    if int(size) < MIN_SIZE:
        raise ValueError(f"size={size} is too small: a year needs at least {MIN_SIZE} entries; raise size")
    if int(size) > MAX_SIZE:
        raise ValueError(f"size={size} is too large: above {MAX_SIZE:,} entries the company's monthly tax returns "
                         "exceed its CFO's approval limit; lower size")
    seed = int(seed)
    m = md.build_master(seed, size)
    n = _counts(size)
    b = DocBuilder()

    def g(stream: str) -> np.random.Generator:
        return md.rng(seed, stream)

    o2c = sales.order_to_cash(b, g("sales.orders"), m, n["sales"])
    sales.service_contracts(b, g("sales.contracts"), m, n["contracts"])
    sales.write_offs(b, g("sales.write_offs"), o2c)
    raw = purchasing.three_way(b, g("purchasing.raw_materials"), m, "raw_materials", n["raw"],
                               production.raw_targets(o2c))
    capex = purchasing.three_way(b, g("purchasing.capex"), m, "capex", n["capex"])
    for cat in ("freight", "maintenance", "marketing"):
        purchasing.two_way(b, g(f"purchasing.{cat}"), m, cat, n["two_way"] // 3)
    for cat in ("office", "travel"):
        purchasing.bills(b, g(f"purchasing.{cat}"), m, cat, n["bill"] // 2)
    services = {cat: purchasing.monthly_services(b, g(f"purchasing.{cat}"), m, cat)
                for cat in ("professional", "utilities")}
    for cat in ("rent", "software"):
        purchasing.recurring(b, g(f"purchasing.{cat}"), m, cat)
    schedule = prepaids.insurance(b, g("prepaids.insurance"), m)
    prepaids.amortise(b, g("prepaids.amortisation"), schedule)
    for cat, bills in services.items():
        accruals.accrue(b, g(f"accruals.{cat}"), bills)
    payroll.run_payroll(b, g("payroll"), m)
    register = assets.build_register(m, capex)
    assets.depreciation_runs(b, g("assets.depreciation"), register)
    raw_open, fg_open = production.plan(b, g("production"), o2c, raw)
    bank.charges_and_interest(b, g("bank"), m)
    snapshot = b.freeze(("type", "post_date", "due_date", "partner", "amount", "tax", "variance", "parent"))
    close.sales_tax_returns(b, g("close.sales_tax"), m, snapshot)
    allowance_open, _ = close.allowance(b, g("close.allowance"), m, snapshot, o2c["ci"][o2c["doubtful"]])
    close.top_side(b, g("close.top_side"), m)
    close.reserve_closing_entry(b)
    docs = b.freeze()

    prior, year = ledger.post_year(docs)
    opening = _opening(m, docs, prior, year, register, schedule, raw_open, fg_open, allowance_open)
    docs, year, items = ledger.with_closing_entry(docs, year)
    books = ledger.project(m, docs, year, opening, md.YEAR_START, md.YEAR_END, register, schedule, items)
    if validate:
        invariants.assert_cheap(books)
    return books


def _opening(m, docs, prior, year, register, schedule, raw_open, fg_open, allowance_open) -> ledger.Opening:
    """Opening balances from items; the prior year's results and equity are the only plug."""
    bal = np.zeros(len(chart.ACCOUNTS), dtype=np.int64)
    from_items = np.bincount(prior.account, weights=prior.value, minlength=len(chart.ACCOUNTS)).astype(np.int64)
    for role in ledger.OPEN_ITEM_ROLES:
        bal[chart.idx(role)] = from_items[chart.idx(role)]
    cost, accumulated = assets.opening(register)
    bal[chart.idx("ppe")] = cost
    bal[chart.idx("accumulated_depreciation")] = -accumulated
    bal[chart.idx("prepaid")] = prepaids.opening(schedule)
    bal[chart.idx("inventory_raw")] = raw_open
    bal[chart.idx("inventory_fg")] = fg_open
    bal[chart.idx("allowance")] = -allowance_open
    # cash: a month of operating expense above the lowest the account would reach, in the books
    # (by posting date) and at the bank (by value date, the prior year's items in flight included)
    cash = chart.idx("cash")
    bal[cash] = opening_cash(docs, prior, year)
    contra = [chart.idx("allowance"), chart.idx("accumulated_depreciation")]
    assets_total = int(bal[chart.NORMAL > 0].sum() + bal[contra].sum())
    bal[chart.idx("common_stock")] = -max(1, round(assets_total * 0.15 / 10_000_000)) * 10_000_000
    bal[chart.idx("retained_earnings")] = -int(bal.sum())
    # open items and the bank's position at the opening, from the same prior-year documents
    prior_docs = _np.grouped_unique(prior.doc)
    day0 = np.array([md.YEAR_START - 1])
    ap = subledgers.open_at(docs, "ap", prior_docs, day0)
    ar = subledgers.open_at(docs, "ar", prior_docs, day0)
    pc_ = prior.account == cash
    pend = docs.value_date[prior.doc[pc_]] >= md.YEAR_START
    pending, pending_amt = prior.doc[pc_][pend], prior.value[pc_][pend]
    bank_state = BankState(int(bal[cash] - pending_amt.sum()), pending, pending_amt)
    return ledger.Opening(bal, (ap.item, ap.amount), (ar.item, ar.amount), bank_state)


#: expenses that are not paid out: left out of a month of operating expense
NON_CASH_EXPENSES = ("depreciation", "bad_debt")


def month_of_operating_expense(account: np.ndarray, value: np.ndarray) -> int:
    """A twelfth of the year's expenses other than depreciation and bad debt (cents), from the
    year's lines (``account``, signed ``value``; the closing entry left out)."""
    expense = np.array([a.type == "expense" for a in chart.ACCOUNTS])
    expense[[chart.idx(r) for r in NON_CASH_EXPENSES]] = False
    return int(value[expense[account]].sum()) // 12


def lowest_day_end(day: np.ndarray, value: np.ndarray) -> int:
    """The lowest end-of-day running total of signed ``value`` by ``day`` (0 before the first day)."""
    if not len(day):
        return 0
    order = np.argsort(day, kind="stable")
    d, run = day[order], np.cumsum(value[order])
    last_of_day = np.concatenate([d[1:] != d[:-1], [True]])
    return min(0, int(run[last_of_day].min()))


def whole_thousands(cents: int) -> int:
    """``cents`` rounded up to whole thousands of dollars."""
    return -(-int(cents) // 100_000) * 100_000


def opening_cash(docs, prior, year) -> int:
    """The opening balance of the operating account: the company's cash policy keeps a month of
    operating expense in it at every day's end, in the books (by posting date) and at the bank (by
    value date); whole thousands of dollars."""
    cash = chart.idx("cash")
    on = year.account == cash
    book_low = lowest_day_end(docs.post_date[year.doc[on]], year.value[on])
    # at the bank: the prior year's payments and receipts still in flight on 1 January clear in the
    # year; the bank opens at the book balance less them
    pc = prior.account == cash
    pend = docs.value_date[prior.doc[pc]] >= md.YEAR_START
    v_day = np.concatenate([docs.value_date[prior.doc[pc][pend]], docs.value_date[year.doc[on]]])
    v_amt = np.concatenate([prior.value[pc][pend], year.value[on]])
    in_year = v_day <= md.YEAR_END
    bank_low = lowest_day_end(v_day[in_year], v_amt[in_year]) - int(prior.value[pc][pend].sum())
    return whole_thousands(max(-book_low, -bank_low, 0) + month_of_operating_expense(year.account, year.value))
