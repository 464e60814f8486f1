"""Defects are planted as documents and re-projected: the rest of the books stay consistent.

A perturbation adds or changes documents; ``Books.perturb`` posts them through the same engine,
numbers them by entry time, closes the year again and derives subledgers and bank anew. Only the
invariants the perturbation itself breaks may fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from jeval_ray.books import chart, invariants, master as md, simulate_year
from jeval_ray.books.documents import TYPE


@pytest.fixture(scope="module")
def year():
    return simulate_year(17, 4_000)


def _a_year_invoice(books, code="VN"):
    d = books.docs
    ids = d.of(code)
    ids = ids[(d.post_date[ids] >= md.day("2025-03-01")) & (d.post_date[ids] <= md.day("2025-09-30"))
              & (d.amount[ids] > 10_000_00) & (d.amount[ids] < 20_000_00)]
    return int(ids[0])


def test_a_duplicate_invoice_and_its_payment_leave_the_books_consistent(year):
    d = year.docs
    i = _a_year_invoice(year)
    late = int(md.business_offset(d.post_date[i] + 20, 0))
    dup = {c: d.cols[c][i] for c in ("partner", "amount", "account", "preparer", "approver", "ext_ref")}
    add = {"type": ["VN", "VP"],
           "doc_date": [int(d.doc_date[i]), late + 14], "post_date": [late, late + 14], "entry_date": [late, late + 14],
           "entry_time": [10 * 3600, 2 * 3600], "approved_on": [late, -1], "due_date": [late + 30, -1],
           "value_date": [-1, late + 15], "parent": [-1, len(d)], "approver": [dup["approver"], -1],
           "preparer": [dup["preparer"], md.USER["SYS_BATCH"]], "partner": [dup["partner"]] * 2,
           "amount": [dup["amount"]] * 2, "account": [dup["account"], -1], "ext_ref": [dup["ext_ref"], -1]}
    planted = year.perturb(add=add)
    assert invariants.check(planted) == {}
    new_inv, new_pay = len(d), len(d) + 1
    assert planted.entry_no[new_inv] > 0 and planted.entry_no[new_pay] > planted.entry_no[new_inv]
    j = planted.journal
    refs = j.column("reference").to_pylist()
    assert f"VN-{new_inv:07d}" in refs and f"VP-{new_pay:07d}" in refs
    # the same vendor invoice number now appears twice: the trace a duplicate leaves
    ext = planted.docs.ext_ref[planted.docs.of("VN")]
    assert (ext == dup["ext_ref"]).sum() == 2
    # expenses grew by the duplicate; the closing entry moved retained earnings by as much
    cost = chart.idx("utilities") if dup["account"] == chart.idx("utilities") else int(dup["account"])
    assert planted.balances_at(md.YEAR_END)[cost] - year.balances_at(md.YEAR_END)[cost] == dup["amount"]


def test_an_approval_beyond_the_approvers_limit_breaks_only_that_invariant(year):
    i = _a_year_invoice(year)
    planted = year.perturb(replace={i: {"approver": md.USER["AKIM"] if year.docs.preparer[i] != md.USER["AKIM"]
                                        else md.USER["BOKAFOR"]}})
    broken = invariants.check(planted)
    assert set(broken) == {"document_chains"}
    assert any("limit" in v for v in broken["document_chains"])


def test_an_entry_recorded_after_the_close_keeps_the_ledger_balanced_and_shows_late(year):
    d = year.docs
    i = _a_year_invoice(year)
    close_plus = md.close_dates()[int(md.month_of(np.array([d.post_date[i]]))[0]) - 1] + 3
    planted = year.perturb(replace={i: {"entry_date": close_plus, "approved_on": close_plus}})
    assert invariants.check(planted, (invariants.entries_balance, invariants.trial_balance_zero,
                                      invariants.subledgers_tie, invariants.bank_ties)) == {}
    # its entry number now sits among entries recorded days later than its posting date
    assert planted.entry_no[i] > year.entry_no[i]


def test_a_perturbation_cannot_reach_into_the_prior_year(year):
    i = _a_year_invoice(year)
    with pytest.raises(ValueError, match="prior year"):
        year.perturb(replace={i: {"post_date": md.day("2024-12-30")}})
    with pytest.raises(ValueError, match="then take a slice"):
        year.slice("2025-02-01", "2025-02-28").perturb(replace={i: {"amount": 1}})
    with pytest.raises(KeyError, match="unknown document column"):
        year.perturb(replace={i: {"colour": 1}})
    assert TYPE["VN"] == year.docs.type[i]


def test_a_payment_to_the_wrong_vendor_breaks_only_the_partner_tie(year):
    d = year.docs
    vp = d.of("VP")
    vp = int(vp[(d.post_date[vp] > md.day("2025-05-01")) & (year.entry_no[vp] >= 0)][0])
    other = (int(d.partner[vp]) + 1) % year.master.n_vendors
    planted = year.perturb(replace={vp: {"partner": other}})
    broken = invariants.check(planted)
    # the control account still equals the open items in total; per vendor they no longer agree
    assert set(broken) == {"partners_tie"}
