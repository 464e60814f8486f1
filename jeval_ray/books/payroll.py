"""Payroll: a semi-monthly payroll register, its journal, the net-pay transfer and the tax deposit.

Pay days are the 15th and the last day of each month (the business day before when those fall on
a weekend or holiday). The payroll interface posts one journal per run with four lines (gross
wages and the employer's payroll taxes as expenses; net pay and all payroll taxes as liabilities),
the net pay leaves the bank the same day and the taxes (withheld plus employer) are deposited three
business days later. Finance approves each register (within the approver's limit) two business days before pay day.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import DocBuilder

EMPLOYER_TAX_RATE = 0.0765
WITHHOLDING_RATE = 0.23


def pay_days() -> np.ndarray:
    days = []
    for mo in range(1, 13):
        days += [md.day(f"2025-{mo:02d}-15"), md.month_end(2025, mo)]
    return md.business_offset(np.array(days), 0, roll="backward")


def run_payroll(b: DocBuilder, g: np.random.Generator, m: md.Master) -> np.ndarray:
    day = pay_days()
    n = len(day)
    gross = np.rint(m.annual_payroll_cents / 24 * g.uniform(0.97, 1.05, n)).astype(np.int64)
    tax = np.rint(gross * EMPLOYER_TAX_RATE).astype(np.int64)
    withheld = np.rint(gross * g.uniform(WITHHOLDING_RATE - 0.01, WITHHOLDING_RATE + 0.01, n)).astype(np.int64)
    approved = md.business_offset(day, -2)
    pr = b.add("PR", n, doc_date=approved, post_date=day, entry_date=approved, entry_time=md.night_batch(g, n),
               amount=gross, tax=tax, withheld=withheld, preparer=md.USER["SYS_PAYROLL"],
               approver=md.assign_approvers(g, gross, np.full(n, md.USER["SYS_PAYROLL"])), approved_on=approved,
               service_month=md.fiscal_month_code(day))
    b.add("PN", n, doc_date=day, post_date=day, entry_date=day, entry_time=md.night_batch(g, n), value_date=day,
          amount=gross - withheld, preparer=md.USER["SYS_PAYROLL"], parent=pr)
    dep = md.business_offset(day, 3)
    keep = dep <= md.YEAR_END
    k = int(keep.sum())
    b.add("PT", k, doc_date=dep[keep], post_date=dep[keep], entry_date=dep[keep], entry_time=md.night_batch(g, k),
          value_date=dep[keep], amount=(tax + withheld)[keep], preparer=md.USER["SYS_PAYROLL"], parent=pr[keep])
    return pr
