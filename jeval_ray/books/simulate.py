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
   stock count and the cash needed so the account never goes negative; equity is the only plug;
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
#: above this, monthly tax returns and allowance reviews outgrow the CFO's approval limit
MAX_SIZE = 2_000_000


def _counts(size: int) -> dict[str, int]:
    s = max(int(size), MIN_SIZE)
    return {
        "sales": max(20, int(SALES_SHARE * s)),
        "contracts": max(2, int(0.001 * s)),  # annual service contracts
        "raw": max(8, int(RAW_SHARE * s)),
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
    # cash: enough that the account never goes negative, plus half a month of payroll
    cash = chart.idx("cash")
    on_cash = year.account == cash
    days = docs.post_date[year.doc[on_cash]]
    order = np.argsort(days, kind="stable")
    running = np.cumsum(year.value[on_cash][order])
    last_of_day = np.concatenate([days[order][1:] != days[order][:-1], [True]]) if len(days) else np.zeros(0, bool)
    low = int(running[last_of_day].min()) if len(running) else 0
    need = max(0, -low) + m.annual_payroll_cents // 24
    bal[cash] = -(-need // 100_000) * 100_000  # whole thousands of dollars
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
