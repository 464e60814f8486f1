"""The honest population keeps its look-alikes at the documented rates (``jeval_ray.books.noise``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jeval_ray.books import master as md, noise, simulate_year


@pytest.fixture(scope="module")
def books():
    return simulate_year(13, 80_000)


@pytest.mark.parametrize("name,rate", [("round_amounts", noise.ROUND_RATE), ("near_limit_manual", noise.NEAR_LIMIT_RATE),
                                       ("weekend_interface", noise.WEEKEND_RATE)])
def test_look_alikes_occur_at_their_documented_rate(books, name, rate):
    share, n = noise.measure(books)[name]
    assert n > 2_000
    sd = math.sqrt(rate * (1 - rate) / n)
    assert abs(share - rate) < 5 * sd + 0.002, f"{name}: {share:.4f} over {n}, documented {rate}"


def test_recurring_vendors_are_paid_the_same_amount_every_month(books):
    d = books.docs
    vp = d.of("VP")
    vp = vp[(d.post_date[vp] >= md.YEAR_START)]
    for cat in ("rent", "software"):
        for v in books.master.vendors_of(cat):
            amounts = d.amount[vp[d.partner[vp] == v]]
            values, counts = np.unique(amounts, return_counts=True)
            assert counts.max() >= 10, (cat, v, values, counts)
    share, _ = noise.measure(books)["recurring_same_amount_payments"]
    assert share > 0.01


def test_the_look_alikes_are_not_defects(books):
    """A round fee, a weekend receipt and a near-limit price are ordinary documents: approved by
    someone whose limit covers them, posted by the user entitled to, with a full chain."""
    from jeval_ray.books import invariants

    assert invariants.check(books, (invariants.document_chains, invariants.vendor_accounts)) == {}
    d = books.docs
    receipts = d.of("CR")
    weekend = receipts[noise.is_weekend(d.post_date[receipts]) & (d.post_date[receipts] >= md.YEAR_START)]
    assert len(weekend) and (d.parent[weekend] >= 0).all()
