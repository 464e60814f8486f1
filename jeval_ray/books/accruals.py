"""Month-end accruals of services received but not yet billed, reversed on day 1 of the next month.

Professional-services firms and utilities bill in the month after the service. At each month end
a GL accountant accrues each such vendor's expected bill (an estimate in whole dollars, within
about 8 % of what is later billed) and a senior accountant approves it; the batch scheduler
reverses it on the first day of the next month, linked to the accrual it reverses, so the
expense lands once, with the invoice. An accrual and its reversal net to nil line by line.
Accruals are keyed in the first business days after month end, before the period closes.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import DocBuilder

GL_ACCOUNTANTS = np.array([md.USER["DPATEL"], md.USER["EMUELLER"]])


def accrue(b: DocBuilder, g: np.random.Generator, bills: dict) -> tuple[np.ndarray, np.ndarray]:
    """Accruals and their reversals for ``bills`` (from ``purchasing.monthly_services``)."""
    svc = bills["service_month"]
    year, mon = svc // 100, svc % 100
    end = md.last_day_of(12 * year + mon - 1)
    keep = (end >= md.SIM_START) & (end <= md.YEAR_END)
    sel = np.flatnonzero(keep)
    n = len(sel)
    end = end[sel]
    estimate = np.maximum(np.rint(bills["amount"][sel] * g.uniform(0.92, 1.08, n) / 100), 1).astype(np.int64) * 100
    entered = md.business_offset(end + 1, g.integers(0, 3, n))
    prep = GL_ACCOUNTANTS[g.integers(0, 2, n)]
    approver = md.assign_approvers(g, estimate, prep)
    ac = b.add("AC", n, doc_date=end, post_date=end, entry_date=entered, entry_time=md.office_hours(g, n),
               partner=bills["vendor"][sel], amount=estimate, account=bills["account"], preparer=prep,
               approver=approver, approved_on=entered, service_month=svc[sel])
    first = end + 1
    ok = first <= md.YEAR_END
    k = int(ok.sum())
    rv = b.add("RV", k, doc_date=first[ok], post_date=first[ok], entry_date=entered[ok], entry_time=23 * 3600 + 1800,
               partner=bills["vendor"][sel][ok], amount=estimate[ok], account=bills["account"],
               preparer=md.USER["SYS_BATCH"], parent=ac[ok], service_month=svc[sel][ok])
    return ac, rv
