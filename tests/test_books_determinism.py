"""The books are a pure function of (seed, size): byte-identical tables in this process and in another.

Another process runs with a different ``PYTHONHASHSEED``, so any use of Python's ``hash()``, the
clock or unseeded randomness would show as a different fingerprint.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from jeval_ray.books import simulate_year
from jeval_ray.books.documents import TYPE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "from jeval_ray.books import simulate_year; print(simulate_year({seed}, {size}).fingerprint())"


def test_same_inputs_give_byte_identical_books_across_processes():
    here = {(s, n): simulate_year(s, n).fingerprint() for s, n in ((3, 1_500), (11, 400))}
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONHASHSEED": "4242"}
    for (s, n), fp in here.items():
        out = subprocess.run([sys.executable, "-c", PROBE.format(seed=s, size=n)], capture_output=True, text=True,
                             env=env, timeout=120, check=True)
        assert out.stdout.strip() == fp
    assert simulate_year(3, 1_500).fingerprint() == here[(3, 1_500)]


def test_different_seeds_give_different_books():
    assert simulate_year(1, 800).fingerprint() != simulate_year(2, 800).fingerprint()


def test_entry_numbers_are_counters_in_entry_time_order():
    b = simulate_year(5, 1_000)
    nums = np.sort(b.entry_no[b.entry_no >= 0])
    assert np.array_equal(nums, 1_000_000_001 + np.arange(len(nums)))
    # the closing entry is recorded last, on the close date
    assert b.entry_no[b.docs.of("YC")[0]] == nums[-1]
    assert (b.docs.type[np.argsort(b.entry_no)][-1]) == TYPE["YC"]


def test_a_process_draws_from_its_own_stream():
    """Streams are seeded by name: two sizes with the same master data (both at its floor) differ in
    how many orders they have, yet the payroll, drawn from its own stream, is the same."""
    a, b = simulate_year(9, 1_000), simulate_year(9, 1_200)
    assert a.master.annual_payroll_cents == b.master.annual_payroll_cents
    assert len(a.docs.of("SO")) != len(b.docs.of("SO"))
    pa_, pb = a.docs.of("PR"), b.docs.of("PR")
    assert np.array_equal(a.docs.amount[pa_], b.docs.amount[pb])


def test_sizes_outside_the_modelled_company_are_refused_with_the_fix():
    import pytest

    with pytest.raises(ValueError, match="too small.*raise size"):
        simulate_year(0, 50)
    with pytest.raises(ValueError, match="too large.*lower size"):
        simulate_year(0, 2_000_001)
