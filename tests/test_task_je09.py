"""JE-9 (year-end cut-off and close): planted on the year's books, defects and decoys share a
surface per kind, the books are not sanitised (what every task promises, the built-in agents and
the absence of labels included, is tests/test_task_contract.py).

The answer key's facts are audited in tests/test_key_audit_je09.py."""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest

from jeval_ray.books import calendar as cal
from jeval_ray.tasks.je09 import FY_END_CLOSE, REQUEST_TITLE, STATEMENT_TITLE, WINDOW_START, YEAR_END
from jeval_ray.world import generate_world

SEEDS = range(5)
_KIND = {"revenue_before_shipment": "rev", "year_end_revenue_shipped": "rev",
         "post_closing_entry_unauthorised": "late", "post_closing_entry_approved": "late",
         "topside_unsupported": "topside", "topside_supported": "topside",
         "year_end_accrual_unsupported": "accrual", "year_end_accrual_supported": "accrual"}


def _headers(world) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in world.ledger.to_pylist():
        h = out.setdefault(r["entry_id"], {**r, "total": 0.0})
        h["total"] += r["debit"]
    return out


def _kind(rec) -> str:
    return _KIND[getattr(rec, "defect_type", None) or rec.decoy_type]



def test_a_post_closing_request_gives_a_reason_that_fits_its_entry():
    """A request for an allowance entry that releases the allowance (Dr 1190) never says a new
    specific provision was identified: a reason that would raise the allowance cannot support an
    entry that lowers it (an auditor's read found one such decoy on seed 962)."""
    from jeval_ray.world import generate_world

    seen = 0
    for seed in range(60):
        w = generate_world("JE-9", seed)
        led = w.ledger.to_pylist()
        debit = {}
        for r in led:
            if (r["debit"] or 0) > 0:
                debit.setdefault(r["reference"], set()).add(r["account"])
        for d in w.documents:
            if not d.title.startswith("Post-closing adjustment request"):
                continue
            ref = re.search(r"Entry reference: (\S+)", d.body).group(1)
            if "1190" in debit.get(ref, ()):
                seen += 1
                assert "specific provision" not in d.body, (seed, d.doc_id, d.body)
    assert seen, "no request for an allowance release in 60 worlds: the test tests nothing"

def test_every_kind_is_planted_and_the_books_keep_their_close_work():
    """Across seeds every defect and decoy type occurs; each world keeps the books' own January
    close work (top-side entries and December accruals recorded before the close), planted or not."""
    seen = set()
    for seed in range(20):
        w = generate_world("JE-9", seed)
        heads = _headers(w)
        seen |= {d.defect_type for d in w.defects} | {d.decoy_type for d in w.decoys}
        ts = [h for h in heads.values() if h["document_type"] == "TS"]
        assert len(ts) == 4 and all(str(h["posting_date"]) == YEAR_END for h in ts)
        assert all(YEAR_END < str(h["entry_timestamp"].date()) <= FY_END_CLOSE for h in ts)
        assert any(h["document_type"] == "AC" and str(h["posting_date"]) == YEAR_END for h in heads.values())
    assert seen == set(_KIND), set(_KIND) - seen


def test_defects_and_decoys_share_one_listing_surface():
    """Per kind, defects and decoys come from one listing distribution and the kind does not predict
    the label (tests/test_adversarial.py trains a classifier on the whole listing)."""
    rows = []  # (is defect, kind, recording lag in days, posting day)
    for seed in range(100, 130):
        w = generate_world("JE-9", seed)
        heads = _headers(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            kind = _kind(rec)
            lag = (h["entry_timestamp"].date() - h["posting_date"]).days
            if kind == "rev":
                assert WINDOW_START <= str(h["posting_date"]) <= YEAR_END and lag == 0 and h["source"] == "automated"
            elif kind == "late":
                assert str(h["posting_date"]).startswith("2025-12") and h["source"] == "manual"
            else:
                assert str(h["posting_date"]) == YEAR_END and h["source"] == "manual"
            rows.append((rec.entry_id in w.defect_ids, kind, lag, h["posting_date"].day))

    for kind in ("rev", "late"):
        for col in (2, 3):
            m = {bad: statistics.fmean([r[col] for r in rows if r[0] == bad and r[1] == kind]) for bad in (True, False)}
            assert abs(m[True] - m[False]) < 2.5, (kind, col, m)
    for kind in ("rev", "late", "topside", "accrual"):
        share = {bad: statistics.fmean([r[1] == kind for r in rows if r[0] == bad]) for bad in (True, False)}
        assert abs(share[True] - share[False]) < 0.2, (kind, share)  # about 3.5 standard errors


def test_the_books_are_not_sanitised():
    """The naive filter also catches the books' own close work and in-time window sales."""
    n = 0
    for seed in SEEDS:
        w = generate_world("JE-9", seed)
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        n += sum(1 for eid, h in _headers(w).items() if eid not in key and h["document_type"] != "YC"
                 and str(h["posting_date"])[:4] == "2025" and str(h["entry_timestamp"].date()) > YEAR_END)
    assert n >= 3 * len(SEEDS)


@pytest.mark.parametrize("seed", (0, 6, 8, 9, 11, 17))
def test_the_year_end_work_falls_on_business_days_of_the_company_calendar(seed):
    """Post-closing entries are recorded, their requests decided, January invoices dated and goods
    shipped on business days of the one company calendar, Martin Luther King Jr. Day 2026 included
    (JE-9 once counted 2026-01-19 as a business day: on these seeds entries were recorded, requests
    approved or invoices dated on it)."""
    w = generate_world("JE-9", seed)
    days = [(eid, str(h["entry_timestamp"].date())) for eid, h in _headers(w).items()
            if h["source"] == "manual" and str(h["entry_timestamp"].date()) > FY_END_CLOSE]
    for d in w.documents:
        if d.title.startswith(REQUEST_TITLE):
            found = re.findall(r"(?:Approved|Rejected) by [^\n]*? on (\d{4}-\d\d-\d\d)", d.body)
        elif d.title.startswith(STATEMENT_TITLE):
            found = re.findall(r"dated (\d{4}-\d\d-\d\d)", d.body)
        elif d.doc_type == "shipping_document":
            found = re.findall(r"Ship date[^:]*: (\d{4}-\d\d-\d\d)", d.body)
        else:
            continue
        days += [(d.doc_id, x) for x in found]
    assert len(days) >= 5
    assert [(k, x) for k, x in days if not cal.is_business_day(np.datetime64(x))] == []
