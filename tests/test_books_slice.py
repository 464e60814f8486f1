"""A task's slice of the year (a window and/or a mix of processes) keeps its own books consistent."""

from __future__ import annotations

import time

import numpy as np
import pytest

from jeval_ray.books import PROCESSES, chart, invariants, master as md, simulate_year
from jeval_ray.books.documents import TYPE

#: the invariants that speak of a window's own books (registers and schedules are the year's)
SLICE_CHECKS = (invariants.entries_balance, invariants.trial_balance_zero,
                invariants.closing_is_opening_plus_postings, invariants.subledgers_tie,
                invariants.partners_tie, invariants.agings_roll_forward, invariants.bank_ties,
                invariants.entry_numbers_follow_entry_time, invariants.vendor_accounts, invariants.control_accounts)


@pytest.fixture(scope="module")
def year():
    return simulate_year(21, 6_000)


@pytest.mark.parametrize("window,processes", [
    (("2025-03-01", "2025-03-31"), None),
    (("2025-06-10", "2025-09-20"), None),
    (("2025-01-01", "2025-12-31"), ("purchasing",)),
    (("2025-10-01", "2025-12-31"), ("sales", "close")),
    (("2025-04-01", "2025-04-30"), ("payroll", "bank")),
    (("2025-12-01", "2025-12-31"), ("accruals", "prepaids", "assets", "close")),
])
def test_a_slice_is_consistent_on_its_own(year, window, processes):
    s = year.slice(*window, processes=processes)
    assert s.n_entries > 0
    assert invariants.check(s, SLICE_CHECKS) == {}
    start = md.day(window[0])
    # the slice opens at the year's balances, open items and bank position of the day before
    expected = year.balances_at(start - 1) if start > md.YEAR_START else year.opening.balances
    assert np.array_equal(s.opening.balances, expected)
    if processes:
        kept = {c for p in processes for c in PROCESSES[p]}
        assert set(np.unique(s.journal.column("document_type").to_numpy(zero_copy_only=False))) <= kept


def test_the_whole_year_as_a_slice_is_the_year(year):
    s = year.slice("2025-01-01", "2025-12-31")
    assert s.fingerprint() == year.fingerprint()


def test_a_full_window_slice_keeps_the_year_balances(year):
    s = year.slice("2025-05-01", "2025-08-31")
    cash = chart.idx("cash")
    assert s.balances_at(md.day("2025-08-31"))[cash] == year.balances_at(md.day("2025-08-31"))[cash]
    assert np.array_equal(s.bank.closing, year.bank.closing[4:8])
    ar_year = year.ar_open.amount[year.ar_open.at == md.day("2025-08-31")].sum()
    assert s.ar_open.amount[s.ar_open.at == md.day("2025-08-31")].sum() == ar_year


def test_bad_slices_say_what_to_fix(year):
    with pytest.raises(ValueError, match="within"):
        year.slice("2024-12-01", "2025-01-31")
    with pytest.raises(ValueError, match="unknown processes"):
        year.slice("2025-01-01", "2025-01-31", processes=("treasury",))


def test_a_small_world_for_one_task_slice_takes_milliseconds():
    simulate_year(0, 300).slice("2025-11-01", "2025-12-31").journal  # warm imports and caches
    best = float("inf")
    for seed in range(5):
        t = time.perf_counter()
        b = simulate_year(seed, 300)
        s = b.slice("2025-10-01", "2025-12-31", processes=("purchasing", "close"))
        s.journal
        best = min(best, time.perf_counter() - t)
    assert s.n_entries > 20
    assert best < 0.25, f"small world + slice took {best * 1000:.0f} ms"
    assert (s.docs.type[s.lines.doc] != TYPE["SH"]).all()
