"""The company's one bank account: monthly statements and their reconciliation to the cash ledger.

Every cash document (payments, receipts, payroll transfers, tax deposits, bank charges and
interest) carries the value date on which the bank moved the money. A statement lists, for one
month, the documents valued in that month; the reconciliation at each month end explains the
difference between the bank's balance and the ledger's by listed items only: payments recorded
but not yet presented (outstanding cheques and transfers) and receipts recorded but not yet
credited (deposits in transit). Bank charges and interest are booked from the statement to the
day the bank charged them, so they are never reconciling items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import DocBuilder

GL_ACCOUNTANTS = np.array([md.USER["DPATEL"], md.USER["EMUELLER"]])


def charges_and_interest(b: DocBuilder, g: np.random.Generator, m: md.Master) -> None:
    """Monthly bank charges and interest, keyed from the statement in the first days of the next month."""
    day = md.business_offset(md.MONTH_ENDS, 0, roll="backward")
    scale = max(1.0, (m.size / 10_000) ** 0.3)
    for code, mu in (("BC", 5.6), ("BI", 6.9)):
        amount = np.rint(np.exp(g.normal(mu, 0.3, 12)) * 100 * scale).astype(np.int64)
        entered = md.business_offset(md.MONTH_ENDS + 1, g.integers(0, 3, 12))
        prep = GL_ACCOUNTANTS[g.integers(0, 2, 12)]
        b.add(code, 12, doc_date=day, post_date=day, entry_date=entered, entry_time=md.office_hours(g, 12),
              value_date=day, amount=amount, preparer=prep, approver=md.assign_approvers(g, amount, prep),
              approved_on=entered, service_month=md.fiscal_month_code(day))


@dataclass(frozen=True, eq=False)
class BankState:
    """Where the bank stands when a window opens: its balance and the items still in flight."""

    balance: int
    pending: np.ndarray  # document ids recorded in the books but not yet valued by the bank
    pending_amount: np.ndarray  # their signed cash effect (+ money in)


@dataclass(frozen=True, eq=False)
class Statements:
    month_end: np.ndarray  # one per statement
    opening: np.ndarray
    closing: np.ndarray
    line_doc: np.ndarray  # statement lines: document, its value date and signed amount
    line_value_date: np.ndarray
    line_amount: np.ndarray
    recon_at: np.ndarray  # reconciling items: month end, document, signed amount
    recon_doc: np.ndarray
    recon_amount: np.ndarray


def statements(docs, cash_doc: np.ndarray, cash_amount: np.ndarray, state: BankState, ends: np.ndarray,
               start: int) -> Statements:
    """Statements for the months ending ``ends`` (window from ``start``), from the window's cash
    documents (``cash_doc``/``cash_amount``, posted in the window) and the opening ``state``."""
    doc = np.concatenate([state.pending, cash_doc])
    amt = np.concatenate([state.pending_amount, cash_amount])
    value = docs.value_date[doc]
    post = docs.post_date[doc]
    order = np.lexsort((doc, value))
    doc, amt, value, post = doc[order], amt[order], value[order], post[order]
    opening, closing = [], []
    bal = state.balance
    lines = []
    recon = []
    prev = start - 1
    for e in np.asarray(ends, dtype=np.int64):
        sel = (value > prev) & (value <= e)
        opening.append(bal)
        bal += int(amt[sel].sum())
        closing.append(bal)
        lines.append(np.flatnonzero(sel))
        # recorded by the statement date, not yet through the bank (pending items were recorded earlier)
        out = np.flatnonzero((post <= e) & (value > e))
        recon.append((np.full(len(out), e), out))
        prev = e
    li = np.concatenate(lines) if lines else np.zeros(0, np.int64)
    ri = np.concatenate([r[1] for r in recon]) if recon else np.zeros(0, np.int64)
    return Statements(
        month_end=np.asarray(ends, dtype=np.int64), opening=np.array(opening, dtype=np.int64),
        closing=np.array(closing, dtype=np.int64), line_doc=doc[li], line_value_date=value[li], line_amount=amt[li],
        recon_at=np.concatenate([r[0] for r in recon]).astype(np.int64) if recon else np.zeros(0, np.int64),
        recon_doc=doc[ri], recon_amount=amt[ri])
