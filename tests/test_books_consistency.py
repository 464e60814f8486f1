"""The books hold together: every invariant of ``jeval_ray.books.invariants`` over many seeds and sizes.

Each invariant is its own test over a shared set of simulated years (small to mid-sized, several
seeds each), plus a property test over arbitrary (seed, size) pairs. A violation is a hard failure
that names the books and what broke.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jeval_ray.books import chart, invariants, master as md, simulate_year
from jeval_ray.books.documents import TYPE

CASES = [(seed, size) for size in (120, 600, 2_500) for seed in range(8)] + [(s, 20_000) for s in range(3)] + [(7, 150_000)]


@pytest.fixture(scope="module")
def years() -> dict:
    return {(seed, size): simulate_year(seed, size) for seed, size in CASES}


@pytest.mark.parametrize("check", invariants.ALL, ids=lambda c: c.__name__)
def test_invariant_holds_over_seeds_and_sizes(years, check):
    bad = {key: v for key, books in years.items() if (v := check(books))}
    assert not bad, f"{check.__name__} broken: {bad}"


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), size=st.integers(100, 4_000))
def test_every_invariant_holds_for_any_seed_and_size(seed, size):
    assert invariants.check(simulate_year(seed, size)) == {}


def test_the_opening_trial_balance_is_built_from_items_and_plugs_only_equity(years):
    for books in years.values():
        o = books.opening.balances
        assert o.sum() == 0
        assert (o[chart.IS_PROFIT_AND_LOSS] == 0).all()
        # receivables and payables open exactly as the prior-year invoices still unpaid
        assert o[chart.idx("ar")] == books.opening.ar[1].sum()
        assert -o[chart.idx("ap")] == books.opening.ap[1].sum()
        assert o[chart.idx("cash")] > 0 and o[chart.idx("inventory_fg")] > 0
        assert o[chart.idx("retained_earnings")] != 0


def test_the_year_closes_to_retained_earnings(years):
    for books in years.values():
        after = books.balances_at(md.YEAR_END, include_closing=True)
        before = books.balances_at(md.YEAR_END)
        assert (after[chart.IS_PROFIT_AND_LOSS] == 0).all()
        profit = -before[chart.IS_PROFIT_AND_LOSS].sum()
        assert after[chart.idx("retained_earnings")] - before[chart.idx("retained_earnings")] == -profit
        assert (books.period_of_line[books.docs.type[books.lines.doc] == TYPE["YC"]] == 13).all()


def test_real_entries_have_more_than_two_lines_where_real_ones_do(years):
    books = years[(0, 20_000)]
    lines_per_doc = np.bincount(books.lines.doc, minlength=len(books.docs))
    for code, least in (("PR", 4), ("YC", 10)):
        ids = books.docs.of(code)
        assert (lines_per_doc[ids] >= least).all(), code
    in_year = books.entry_no >= 0
    ci = books.docs.of("CI")
    taxed = ci[(books.docs.tax[ci] > 0) & in_year[ci]]
    assert len(taxed) and (lines_per_doc[taxed] == 3).all()
    vi = books.docs.of("VI")
    vi = vi[in_year[vi]]
    assert (lines_per_doc[vi[books.docs.variance[vi] != 0]] == 3).all()
    share_multi = float(np.mean(lines_per_doc[np.flatnonzero(books.entry_no >= 0)] > 2))
    assert 0.15 < share_multi < 0.6


def test_a_post_close_entry_shows_out_of_sequence_by_posting_date(years):
    books = years[(1, 2_500)]
    d = books.docs
    ts = d.of("TS")
    assert (d.post_date[ts] == md.YEAR_END).all() and (d.entry_date[ts] > md.YEAR_END).all()
    # later entry numbers than every entry recorded in December, though posted to 31 December
    dec = np.flatnonzero((books.entry_no >= 0) & (d.entry_date <= md.YEAR_END))
    assert books.entry_no[ts].min() > books.entry_no[dec].max()


def test_depreciation_posts_once_a_month_and_accruals_reverse_on_day_one(years):
    books = years[(2, 2_500)]
    d = books.docs
    dp = d.of("DP")
    assert sorted(md.month_of(d.post_date[dp]).tolist()) == list(range(1, 13))
    assert (d.post_date[dp] == md.MONTH_ENDS).all()
    rv = d.of("RV")
    assert len(rv) and (np.asarray([md.iso(x)[8:] for x in d.post_date[rv]]) == "01").all()
