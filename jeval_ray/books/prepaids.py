"""Prepaid insurance: annual premiums paid in advance and amortised month by month.

Each insurer's policy renews on its anniversary month; the premium is invoiced two to three weeks
before cover starts and booked to prepaid expenses, then released to insurance expense at each
month end over the twelve months of cover (the last month takes the rounding). The schedule is
the subledger of the prepaid account: its unamortised total equals the account at every month end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import master as md, purchasing
from jeval_ray.books.chart import idx
from jeval_ray.books.documents import DocBuilder


@dataclass(frozen=True, eq=False)
class Schedule:
    vendor: np.ndarray
    invoice: np.ndarray  # vendor invoice document id
    first_month: np.ndarray  # months since 1970-01
    premium: np.ndarray
    posted: np.ndarray  # posting day of the invoice (from then on the premium is in prepaid expenses)

    def amortisation(self, month: int) -> np.ndarray:
        j = month - self.first_month
        base = self.premium // 12
        return np.where((j >= 0) & (j < 12), np.where(j == 11, self.premium - 11 * base, base), 0)

    def remaining(self, through_month: int) -> np.ndarray:
        """Unamortised premium after a month's release (0 for policies not yet invoiced)."""
        n = np.clip(through_month - self.first_month + 1, 0, 12)
        base = self.premium // 12
        done = base * n + np.where(n == 12, self.premium - 12 * base, 0)
        return self.premium - done


def insurance(b: DocBuilder, g: np.random.Generator, m: md.Master) -> Schedule:
    c = md.CATEGORIES[md.CATEGORY["insurance"]]
    vendors = m.vendors_of("insurance")
    anniversary = g.integers(1, 13, len(vendors))
    premium = np.rint(np.exp(g.normal(c.mu, c.sigma, len(vendors))) * 100).astype(np.int64)
    v = np.repeat(vendors, 2)
    first = np.array([12 * y + int(a) - 1 for a in anniversary for y in (2024, 2025)], dtype=np.int64)  # months since year 0
    start_day = md.first_day_of(first)
    amount = np.repeat(premium, 2) * np.tile(np.array([100, 104]), len(vendors)) // 100  # renewal 4 % dearer
    inv = purchasing.invoices(b, g, m, "VN", v, start_day - g.integers(14, 22, len(v)), amount,
                              np.full(len(v), idx("prepaid")), np.full(len(v), -1),
                              service_month=(first // 12) * 100 + first % 12 + 1)
    purchasing.payment_runs(b, g, inv)
    # the invoices ``invoices`` kept (all of them: cover starts by December 2025, so they post by then)
    assert len(inv["ids"]) == len(v)
    first_month = first - 1970 * 12
    return Schedule(vendor=v, invoice=inv["ids"], first_month=first_month, premium=amount, posted=inv["post"])


def amortise(b: DocBuilder, g: np.random.Generator, s: Schedule) -> np.ndarray:
    """One release per policy and month end of the year while cover runs."""
    from jeval_ray.books.assets import FIRST_MONTH

    amt = np.stack([s.amortisation(FIRST_MONTH + i) for i in range(12)])  # (month, policy)
    month, policy = np.nonzero(amt)
    k = len(month)
    end = md.MONTH_ENDS[month]
    return b.add("PA", k, doc_date=end, post_date=end, entry_date=end, entry_time=md.night_batch(g, k),
                 partner=s.vendor[policy], amount=amt[month, policy], account=idx("insurance"),
                 preparer=md.USER["SYS_BATCH"], parent=s.invoice[policy], service_month=md.fiscal_month_code(end))


def balance_at(s: Schedule, month: int, month_end_day: int) -> int:
    """The prepaid balance at a month end: invoiced premiums not yet released."""
    return int(s.remaining(month)[s.posted <= month_end_day].sum())


def opening(s: Schedule) -> int:
    from jeval_ray.books.assets import FIRST_MONTH

    return balance_at(s, FIRST_MONTH - 1, md.YEAR_START - 1)
