"""Accounts payable and receivable subledgers: open items and agings derived from clearing links.

An open item is an invoice; what clears it is every later document whose parent it is (payments
for payables; receipts and write-offs for receivables). Nothing is stored twice: the open amount
of an invoice at a date is its gross amount less the clearings posted by that date, and the
aging buckets it by days past due. Summed per partner these are the aging; summed over all
partners they equal the control account (``tests/test_books_consistency.py`` holds both), and
from one month end to the next they roll forward by the invoices and clearings in between.

``open_at`` also takes an opening state (items already open at the start of a window with their
open amounts), so a slice of the year has its own subledger that ties to its own control account.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import _np
from jeval_ray.books.documents import TYPE, DocTable

ITEM_TYPES = {"ap": ("VI", "VN"), "ar": ("CI",)}
CLEARING_TYPES = {"ap": ("VP",), "ar": ("CR", "WO")}
BUCKETS = ("current", "1_30", "31_60", "61_90", "over_90")
BUCKET_EDGES = np.array([0, 30, 60, 90])  # days past due, inclusive upper bounds


@dataclass(frozen=True, eq=False)
class OpenItems:
    """Open items at several dates: one row per (date, item) with a non-zero open amount."""

    at: np.ndarray  # day of the row
    item: np.ndarray  # invoice document id
    partner: np.ndarray
    due: np.ndarray
    amount: np.ndarray  # open amount in cents (what the partner owes or is owed)

    @property
    def days_past_due(self) -> np.ndarray:
        return self.at - self.due

    @property
    def bucket(self) -> np.ndarray:
        return np.searchsorted(BUCKET_EDGES, self.days_past_due, side="left")


def items_and_clearings(docs: DocTable, side: str, selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the selected invoices and of the selected documents clearing an invoice."""
    t = docs.type[selected]
    items = selected[np.isin(t, [TYPE[c] for c in ITEM_TYPES[side]])]
    clear = selected[np.isin(t, [TYPE[c] for c in CLEARING_TYPES[side]])]
    return items, clear


def open_at(docs: DocTable, side: str, selected: np.ndarray, days: np.ndarray,
            base: tuple[np.ndarray, np.ndarray] | None = None) -> OpenItems:
    """Open items of ``side`` ("ap" or "ar") at each of ``days``.

    ``selected``: the documents that happened in the window (posted on or after its start);
    ``base``: (invoice ids, open amounts) already open when the window starts.
    """
    items, clear = items_and_clearings(docs, side, selected)
    base_ids, base_amt = base if base is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    all_items = _np.unique(np.concatenate([base_ids, items]))
    pos = np.searchsorted(all_items, docs.parent[clear])
    ok = (pos < len(all_items)) & (all_items[np.minimum(pos, len(all_items) - 1)] == docs.parent[clear])
    clear, pos = clear[ok], pos[ok]
    start_amt = np.zeros(len(all_items), dtype=np.int64)
    start_amt[np.searchsorted(all_items, base_ids)] = base_amt
    in_window = np.zeros(len(all_items), dtype=bool)
    in_window[np.searchsorted(all_items, items)] = True
    days = np.asarray(days, dtype=np.int64)
    n, k = len(all_items), len(days)
    # movements per (item, first period end on or after the posting), accumulated across the period ends
    it = np.flatnonzero(in_window)
    col_item = np.searchsorted(days, docs.post_date[all_items[it]], side="left")
    col_clear = np.searchsorted(days, docs.post_date[clear], side="left")
    gross = docs.amount[all_items[it]] + docs.tax[all_items[it]] + docs.variance[all_items[it]]
    flat = np.bincount(it * (k + 1) + col_item, weights=gross, minlength=n * (k + 1))
    flat -= np.bincount(pos * (k + 1) + col_clear, weights=docs.amount[clear], minlength=n * (k + 1))
    grid = np.rint(flat).astype(np.int64).reshape(n, k + 1)[:, :k]
    grid = np.cumsum(grid, axis=1) + start_amt[:, None]
    col, row = np.nonzero(grid.T)
    at, item, amount = days[col], all_items[row], grid[row, col]
    return OpenItems(at=at.astype(np.int64), item=item, partner=docs.partner[item], due=docs.due_date[item],
                     amount=amount)


def aging(oi: OpenItems) -> dict[str, np.ndarray]:
    """Aging per (date, partner): the bucket totals and the total, as columns."""
    key = oi.at * (1 << 24) + oi.partner
    uniq, inv = _np.unique_inverse(key)
    cols = {"at": uniq >> 24, "partner": uniq & ((1 << 24) - 1)}
    b = oi.bucket
    for k, name in enumerate(BUCKETS):
        cols[name] = np.bincount(inv, weights=np.where(b == k, oi.amount, 0), minlength=len(uniq)).astype(np.int64)
    cols["total"] = np.bincount(inv, weights=oi.amount, minlength=len(uniq)).astype(np.int64)
    return cols


def totals(oi: OpenItems, days: np.ndarray) -> np.ndarray:
    """Total open amount at each of ``days``."""
    return np.array([int(oi.amount[oi.at == d].sum()) for d in days], dtype=np.int64)
