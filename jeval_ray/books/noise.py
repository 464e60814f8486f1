"""The natural look-alikes of an honest population, at documented rates.

Real journal-entry filters return many legitimate hits; an auditor clears them with evidence.
So the ordinary books carry, on purpose and at the rates below, the same surface patterns a
defect shows:

* **round amounts**: retainers and fixed fees billed at whole hundreds (``ROUND_RATE`` of the
  invoices of vendors billed without a goods receipt, plus every rent instalment, a whole-hundred
  lease fee; no other vendor invoice is a whole hundred);
* **weekend system runs**: the warehouse and lockbox interfaces post goods receipts and customer
  receipts on a Saturday or Sunday (``WEEKEND_RATE`` of those documents);
* **entries near approval limits**: manual vendor invoices priced at 90-99.9 % of the limit of
  the approver tier that releases them (``NEAR_LIMIT_RATE`` of the invoices of those vendors that
  are not round fees; ordinary prices keep out of that band);
* **recurring same-amount payments**: rent and software subscriptions billed and paid the same
  amount every month (every invoice of a ``recurring`` vendor).

``measure`` computes the realised rates from finished books, so tests hold the generator to them.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import _np, calendar as cal, master as md

ROUND_RATE = 0.08
WEEKEND_RATE = 0.03
NEAR_LIMIT_RATE = 0.02
#: the share of an approver's limit from which an amount counts as "near the limit"
NEAR_LIMIT_SHARE = 0.90


def round_hundreds(g: np.random.Generator, cents: np.ndarray, rate: float = ROUND_RATE) -> tuple[np.ndarray, np.ndarray]:
    """Round a ``rate`` share of amounts to whole hundreds of dollars; returns (amounts, which)."""
    pick = g.random(len(cents)) < rate
    rounded = np.maximum(np.rint(cents / 10_000), 1).astype(np.int64) * 10_000
    return np.where(pick, rounded, cents), pick


def avoid_whole_hundreds(cents: np.ndarray) -> np.ndarray:
    """Ordinary amounts are not whole hundreds by accident; only the documented share is."""
    return np.where(cents % 10_000 == 0, cents + 1_737, cents)


def weekend(g: np.random.Generator, days: np.ndarray, rate: float = WEEKEND_RATE) -> tuple[np.ndarray, np.ndarray]:
    """Move a ``rate`` share of business days to the following Saturday or Sunday (weekend runs)."""
    pick = g.random(len(days)) < rate
    to_sat = (5 - cal.weekday(days)) % 7 + g.integers(0, 2, len(days))
    return np.where(pick, days + to_sat, days), pick


def near_limit(g: np.random.Generator, cents: np.ndarray, rate: float = NEAR_LIMIT_RATE) -> tuple[np.ndarray, np.ndarray]:
    """Price a ``rate`` share of manual amounts at 90-99.9 % of the nearest approver limit above them."""
    pick = g.random(len(cents)) < rate
    tier = np.minimum(np.searchsorted(md.APPROVER_LIMITS, cents, side="left"), len(md.APPROVER_LIMITS) - 1)
    lim = md.APPROVER_LIMITS[tier]
    near = (lim * g.uniform(NEAR_LIMIT_SHARE, 0.999, len(cents))).astype(np.int64)
    near = avoid_whole_hundreds(near)
    near = np.minimum(near, lim - 1)
    return np.where(pick, near, cents), pick


def is_near_limit(cents: np.ndarray) -> np.ndarray:
    """Amounts in [90 %, 100 %) of some approver limit."""
    tier = np.minimum(np.searchsorted(md.APPROVER_LIMITS, cents, side="right"), len(md.APPROVER_LIMITS) - 1)
    lim = md.APPROVER_LIMITS[tier]
    return (cents >= NEAR_LIMIT_SHARE * lim) & (cents < lim)


def is_weekend(days: np.ndarray) -> np.ndarray:
    return cal.is_weekend(days)


def measure(books) -> dict[str, tuple[float, int]]:
    """Realised rate of each look-alike in the year's documents and the population it is measured
    on: (share, population size). ``tests/test_books_noise.py`` holds them to the documented rates."""
    from jeval_ray.books.documents import TYPE

    d = books.docs
    in_year = (d.post_date >= md.YEAR_START) & (d.post_date <= md.YEAR_END)
    cat = books.master.vendor_category
    shaped = [i for i, c in enumerate(md.CATEGORIES) if c.flow in ("bill", "two_way")]
    vn = np.flatnonzero(in_year & (d.type == TYPE["VN"]))
    bill = vn[np.isin(cat[d.partner[vn]], shaped)]
    gross = d.gross()
    round_ = gross[bill] % 10_000 == 0
    not_round = bill[~round_]
    interface = np.flatnonzero(in_year & np.isin(d.type, [TYPE["GR"], TYPE["CR"]]))
    vp = np.flatnonzero(in_year & (d.type == TYPE["VP"]))
    _, inv = _np.unique_inverse(d.partner[vp] * (1 << 40) + d.amount[vp])
    repeated = np.bincount(inv)[inv] > 1

    def share(mask: np.ndarray) -> tuple[float, int]:
        return (float(np.mean(mask)) if len(mask) else 0.0, int(len(mask)))

    return {
        "round_amounts": share(round_),
        "near_limit_manual": share(is_near_limit(gross[not_round])),
        "weekend_interface": share(is_weekend(d.post_date[interface])),
        "recurring_same_amount_payments": share(repeated),
    }
