"""The company's economics in a few figures: is the simulated company one that could exist?

``figures(books)`` returns, in USD: the year's revenue, expenses and net income, equity at year end
(after the closing entry), year-end cash, a month of operating expense (a twelfth of every expense
of the year but depreciation and bad debt, what the company pays out to run:
``simulate.month_of_operating_expense``), year-end cash in months of it, and the lowest
end-of-day balance of the operating account in the books (by posting date) and at the bank (by
value date, from the statements). ``bench/bench_company.py`` reports them over many seeds and
``tests/test_company.py`` asserts the company's targets on them: equity and net income positive,
the balance never negative, year-end cash of at least a month of operating expense.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import chart
from jeval_ray.books.simulate import NON_CASH_EXPENSES

REVENUE = [chart.idx(r) for r in ("revenue_product", "revenue_service", "other_income")]
EXPENSE = [i for i, a in enumerate(chart.ACCOUNTS) if a.type == "expense"]
NON_CASH = [chart.idx(r) for r in NON_CASH_EXPENSES]
EQUITY = [i for i, a in enumerate(chart.ACCOUNTS) if a.type == "equity"]


def figures(books) -> dict[str, float]:
    """The company's year in USD (see the module's docstring)."""
    tb = books.balances_at(int(books.end))  # before the closing entry: the year's P&L still in its accounts
    revenue = -int(tb[REVENUE].sum())
    expenses = int(tb[EXPENSE].sum())
    opex = (expenses - int(tb[NON_CASH].sum())) / 12
    closed = books.balances_at(int(books.end), include_closing=True)
    equity = -int(closed[EQUITY].sum())
    cash = chart.idx("cash")
    on = books.lines.account == cash
    day = books.docs.post_date[books.lines.doc[on]]
    days, inv = np.unique(day, return_inverse=True)
    daily = books.opening.balances[cash] + np.cumsum(np.bincount(inv, weights=books.lines.value[on]))
    low_book = min(int(books.opening.balances[cash]), int(daily.min()) if len(daily) else 0)
    st = books.bank
    vd, vinv = np.unique(st.line_value_date, return_inverse=True)
    bank_daily = int(st.opening[0]) + np.cumsum(np.bincount(vinv, weights=st.line_amount)) if len(vd) else np.zeros(1)
    low_bank = min(int(st.opening[0]), int(bank_daily.min()))
    year_end_cash = int(tb[cash])
    return {"revenue": revenue / 100, "expenses": expenses / 100, "net_income": (revenue - expenses) / 100,
            "equity": equity / 100, "year_end_cash": year_end_cash / 100, "month_opex": opex / 100,
            "cash_months": year_end_cash / max(opex, 1), "low_book": low_book / 100, "low_bank": low_bank / 100}
