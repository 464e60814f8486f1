"""``out_of_balance(world)``: why a world's books do not balance, or None.

The ERP posts only balanced entries and the upload tools post each residual to a rounding or suspense
account, so every entry, the year and the closing trial balance net to zero (within half a cent).
``tests/test_always_generate.py`` and ``bench/bench_generate.py`` check it on every world they make.
"""

from __future__ import annotations

import pyarrow.compute as pc

from jeval_ray.builder import World

#: the largest difference (USD) taken as balanced: half a cent
TOLERANCE = 0.005


def out_of_balance(w: World) -> str | None:
    """Why ``w``'s books do not balance (the year, an entry or the period 12 or 13 closing trial balance off by
    more than ``TOLERANCE``), or None when they do."""
    led = w.ledger
    year = pc.sum(led["debit"]).as_py() - pc.sum(led["credit"]).as_py()
    if abs(year) > TOLERANCE:
        return f"the year's debits less credits are {year:,.2f}"
    sums = led.group_by("entry_id").aggregate([("debit", "sum"), ("credit", "sum")])
    off = sums.filter(pc.greater(pc.abs(pc.subtract(sums["debit_sum"], sums["credit_sum"])), TOLERANCE))
    if off.num_rows:
        return f"unbalanced entries {off['entry_id'].to_pylist()[:3]}"
    tb = w.master["trial_balance"]
    for period in (12, 13):
        closing = pc.sum(tb.filter(pc.equal(tb["fiscal_period"], period))["closing_balance"]).as_py()
        if abs(closing) > TOLERANCE:
            return f"the period {period} trial balance nets to {closing:,.2f}"
    return None
