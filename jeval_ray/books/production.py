"""Production: raw materials issued to finished goods at each month end, within what is on hand.

The plant keeps finished goods at a target cover of the busiest month's cost of sales; at each
month end it issues raw materials to production to refill it, never more raw material than is on
hand. This is where state matters, so it loops over the twelve months (not over documents):
shipments during a month draw finished goods down from what the last month end left. The opening
stock counts cover the busiest month of sales and the year's worst shortfall of raw-material
receipts against production, so neither inventory account goes negative.
Purchasing sizes each month's raw-material orders to the cost of that month's sales.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import _np, master as md
from jeval_ray.books.documents import DocBuilder

#: finished goods kept on hand, in months of the busiest month's cost of sales
FG_COVER = 1.6
RAW_COVER = 1.3


def monthly(day: np.ndarray, cents: np.ndarray) -> np.ndarray:
    """Totals per fiscal month of 2025 (index 0 = January)."""
    mo = md.month_of(day)
    ok = (mo >= 1) & (mo <= 12)
    return np.bincount(mo[ok] - 1, weights=cents[ok], minlength=12).astype(np.int64)


def raw_targets(o2c: dict) -> dict[int, int]:
    """Raw-material orders to place per month (yyyymm), from the cost of the month's shipments."""
    codes = md.fiscal_month_code(o2c["sh_day"])
    u, inv = _np.unique_inverse(codes)
    tot = np.bincount(inv, weights=o2c["sh_cost"])
    return {int(c): int(t * 1.02) for c, t in zip(u, tot)}


def plan(b: DocBuilder, g: np.random.Generator, o2c: dict, raw: dict) -> tuple[int, int]:
    """Post the month-end production issues; returns the opening stock counts (raw, finished)."""
    cogs = monthly(o2c["sh_day"], o2c["sh_cost"])
    receipts = monthly(raw["gr_day"], raw["gr_amount"])
    peak = int(cogs.max()) if len(cogs) else 0
    fg_target = int(FG_COVER * peak) + 1_000_00
    fg = fg_target
    # the opening raw-material count covers the year's worst gap between receipts and production
    gap = np.cumsum(receipts - cogs)
    raw_on_hand = max(0, -int(gap.min())) + int(RAW_COVER * peak) + 1_000_00
    opening = (raw_on_hand, fg)
    issue = np.zeros(12, dtype=np.int64)
    for mo in range(12):
        available = raw_on_hand + int(receipts[mo])
        fg -= int(cogs[mo])
        issue[mo] = max(0, min(fg_target - fg, available))
        fg += int(issue[mo])
        raw_on_hand = available - int(issue[mo])
    live = np.flatnonzero(issue > 0)
    k = len(live)
    b.add("MF", k, doc_date=md.MONTH_ENDS[live], post_date=md.MONTH_ENDS[live], entry_date=md.MONTH_ENDS[live],
          entry_time=md.night_batch(g, k), amount=issue[live], preparer=md.USER["SYS_BATCH"],
          service_month=md.fiscal_month_code(md.MONTH_ENDS[live]))
    return opening
