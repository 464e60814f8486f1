"""Every invariant check can fail: each is shown a corrupted copy of good books and must object.

Corruptions of documents go through ``Books.perturb`` (what a planting layer does); corruptions
that no document can cause (a ledger line edited, a subledger or register out of step) are made by
replacing one projected array, which is exactly what the checks exist to catch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jeval_ray.books import chart, invariants, master as md, posting, simulate_year
from jeval_ray.books.bank import Statements


@pytest.fixture(scope="module")
def books():
    b = simulate_year(23, 3_000)
    assert invariants.check(b) == {}
    return b


def _lines(b, **arrays):
    fields = {f.name: getattr(b.lines, f.name) for f in dataclasses.fields(posting.Lines)}
    fields.update(arrays)
    return dataclasses.replace(b, lines=posting.Lines(**fields), _arrow={})


def _mid_year(b, code):
    ids = b.docs.of(code)
    return int(ids[(b.docs.post_date[ids] > md.day("2025-04-01")) & (b.entry_no[ids] >= 0)][0])


def corrupt(b, name):
    if name == "entries_balance":
        v = b.lines.value.copy()
        v[10] += 1
        return _lines(b, value=v)
    if name == "trial_balance_zero":
        o = b.opening.balances.copy()
        o[chart.idx("cash")] += 100
        return dataclasses.replace(b, opening=dataclasses.replace(b.opening, balances=o), _arrow={})
    if name == "closing_is_opening_plus_postings":
        p = b.period_of_line.copy()
        p[(p == 3).argmax()] = 4
        return dataclasses.replace(b, period_of_line=p, _arrow={})
    if name == "normal_balances":
        bc = _mid_year(b, "BC")
        return b.perturb(replace={bc: {"amount": 10**12}})
    if name in ("subledgers_tie", "partners_tie"):
        oi = b.ap_open
        amt = oi.amount.copy()
        amt[len(amt) // 2] += 500
        return dataclasses.replace(b, ap_open=dataclasses.replace(oi, amount=amt), _arrow={})
    if name == "agings_roll_forward":
        oi = b.ar_open
        due = oi.due.copy()
        due[oi.at == oi.at.max()] -= 1
        return dataclasses.replace(b, ar_open=dataclasses.replace(oi, due=due), _arrow={})
    if name == "bank_ties":
        closing = b.bank.closing.copy()
        closing[5] += 1
        return dataclasses.replace(b, bank=dataclasses.replace(b.bank, closing=closing), _arrow={})
    if name == "document_chains":
        vn = _mid_year(b, "VN")
        return b.perturb(replace={vn: {"approved_on": int(b.docs.doc_date[vn]) - 3}})
    if name == "entry_numbers_follow_entry_time":
        no = b.entry_no.copy()
        a, c = np.flatnonzero(no >= 0)[[3, 400]]
        no[a], no[c] = no[c], no[a]
        return dataclasses.replace(b, entry_no=no)
    if name == "fixed_assets_tie":
        cost = b.register.cost.copy()
        cost[0] += 100
        return dataclasses.replace(b, register=dataclasses.replace(b.register, cost=cost))
    if name == "prepaids_tie":
        prem = b.schedule.premium.copy()
        prem[:] += 1_200
        return dataclasses.replace(b, schedule=dataclasses.replace(b.schedule, premium=prem))
    if name == "accruals_reverse":
        rv = _mid_year(b, "RV")
        return b.perturb(replace={rv: {"amount": int(b.docs.amount[rv]) + 100}})
    if name == "vendor_accounts":
        vn = _mid_year(b, "VN")
        return b.perturb(replace={vn: {"account": chart.idx("rent") if b.docs.account[vn] != chart.idx("rent")
                                       else chart.idx("marketing")}})
    if name == "control_accounts":
        acct = b.lines.account.copy()
        k = int(np.flatnonzero(b.docs.type[b.lines.doc] == b.docs.type[b.docs.of("AC")[0]])[0])
        acct[k] = chart.idx("ap")
        return _lines(b, account=acct)
    raise AssertionError(f"no corruption for {name}")


@pytest.mark.parametrize("check", invariants.ALL, ids=lambda c: c.__name__)
def test_each_invariant_objects_to_corrupted_books(books, check):
    assert check(corrupt(books, check.__name__)), f"{check.__name__} did not notice"


def test_statements_are_a_projection_not_a_store():
    assert {f.name for f in dataclasses.fields(Statements)} >= {"closing", "recon_amount"}
