"""JE-9 (year-end cut-off): the planted world obeys the rule, the base is clean, defects and decoys share a surface, the built-in agents discriminate."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.world import generate_world
from jeval_ray.world._base import HOLIDAYS_2025, month_close_dates

SEEDS = range(5)
#: the answer key is audited over more seeds than the agents play (a world takes ~20 ms)
KEY_SEEDS = range(16)
CLOSES = dict(month_close_dates())
HOLIDAYS = [d for d, _ in HOLIDAYS_2025]


def _period_end(day: str) -> str:
    return str((np.datetime64(day[:7], "M") + 1).astype("datetime64[D]") - 1)


def _headers(world) -> dict[str, dict]:
    """One row per entry: header fields plus the set of accounts it touches."""
    out: dict[str, dict] = {}
    for r in world.ledger.to_pylist():
        h = out.setdefault(r["entry_id"], {**r, "accounts": set(), "amount": 0.0})
        h["accounts"].add(r["account"])
        h["amount"] = max(h["amount"], r["debit"], r["credit"])
    return out


def _ship_date(world, doc_id: str) -> str:
    m = re.search(r"Ship date[^:]*:\s*(\d{4}-\d{2}-\d{2})", world.document(doc_id).body)
    assert m, doc_id
    return m.group(1)


def _is_revenue(h) -> bool:
    return bool(h["accounts"] & {"4000", "4100"})


def _late(h) -> bool:
    return str(h["entry_timestamp"].date()) > CLOSES[str(h["posting_date"])[:7]]


@pytest.fixture(scope="module", params=list(KEY_SEEDS))
def world(request):
    return generate_world("JE-9", request.param)


def _request(world, doc_id: str) -> dict:
    body = world.document(doc_id).body
    dec = re.search(r"Decision: (Approved|Rejected) .*? on (\d{4}-\d{2}-\d{2})", body)
    amt = re.search(r"on \d{4}-\d{2}-\d{2}, for USD ([\d,]+\.\d\d)", body)
    return {"ref": re.search(r"Entry reference: (\S+)", body).group(1), "status": dec.group(1), "date": dec.group(2),
            "amount": float(amt.group(1).replace(",", "")) if amt else None}


def _requests(world) -> dict[str, tuple[str, dict]]:
    """Entry reference -> (doc id, request) of every post-closing adjustment request."""
    return {r["ref"]: (d.doc_id, r) for d in world.documents if d.title.startswith("Post-closing adjustment request")
            for r in [_request(world, d.doc_id)]}


def _authorised(h, req: dict | None) -> bool:
    """The policy's test: approved before the entry was recorded, for the amount posted."""
    return (req is not None and req["status"] == "Approved" and req["date"] < str(h["entry_timestamp"].date())
            and req["amount"] == pytest.approx(h["amount"]))


def test_defects_satisfy_the_rule(world):
    heads = _headers(world)
    reqs = _requests(world)
    assert world.defects
    for d in world.defects:
        h = heads[d.entry_id]
        assert d.criteria == "CUTOFF" and d.entry_id in d.required_evidence
        assert d.misstatement == pytest.approx(h["amount"])
        assert f"{h['amount']:.2f}" in d.facts
        if d.defect_type == "revenue_before_shipment":
            assert _is_revenue(h) and "2025-12-24" <= str(h["posting_date"]) <= "2025-12-31"
            note = next(x for x in d.required_evidence if x.startswith("DOC-") and world.document(x).doc_type == "shipping_document")
            ship = _ship_date(world, note)
            assert ship >= "2026-01-01"  # shipped in the next year
            assert np.is_busday(np.datetime64(ship), holidays=["2026-01-01"])  # the warehouse ships on business days
            assert {note, ship, str(h["posting_date"])} <= set(d.facts)
        else:
            assert d.defect_type == "post_closing_entry_unauthorised"
            assert str(h["posting_date"]) == "2025-12-31" and _late(h)
            assert "master:calendar" in d.required_evidence
            assert {str(h["entry_timestamp"].date()), CLOSES["2025-12"]} <= set(d.facts)
            doc, req = reqs.get(h["reference"], (None, None))
            assert not _authorised(h, req)
            if doc is not None:  # the request that fails to authorise it is part of the proof
                assert doc in d.required_evidence and doc in d.facts


def test_decoys_are_cleared_by_their_evidence(world):
    heads = _headers(world)
    reqs = _requests(world)
    assert world.decoys
    for d in world.decoys:
        h = heads[d.entry_id]
        if d.decoy_type == "year_end_revenue_shipped":
            assert _is_revenue(h) and "2025-12-24" <= str(h["posting_date"]) <= "2025-12-31"
            note = next(x for x in d.clearing_evidence if x.startswith("DOC-") and world.document(x).doc_type == "shipping_document")
            assert _ship_date(world, note) <= "2025-12-31"
            assert np.is_busday(np.datetime64(_ship_date(world, note)), holidays=HOLIDAYS)
            assert {note, _ship_date(world, note)} <= set(d.facts)
        else:
            assert d.decoy_type == "post_closing_entry_approved"
            assert _late(h) and "master:calendar" in d.clearing_evidence
            doc, req = reqs[h["reference"]]
            assert _authorised(h, req) and req["date"] > CLOSES["2025-12"]
            assert doc in d.clearing_evidence and {doc, req["date"]} <= set(d.facts)


def test_base_population_does_not_trip_the_rule(world):
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    for eid, h in _headers(world).items():
        if eid in planted:
            continue
        posted, rec = str(h["posting_date"]), str(h["entry_timestamp"].date())
        assert rec <= CLOSES[posted[:7]], eid  # at most normal close work
        assert rec == posted or posted == "2025-12-31", eid
        assert not (_is_revenue(h) and posted >= "2025-12-24"), eid


def test_document_listing_dates_do_not_reveal_ship_or_approval_dates(world):
    """list_documents shows each document's date: a delivery note is dated when raised (on or before
    billing), a post-closing request when asked (before the entry was recorded), for defects and decoys alike."""
    heads = _headers(world)
    reqs = _requests(world)
    for rec in (*world.defects, *world.decoys):
        h = heads[rec.entry_id]
        ev = getattr(rec, "required_evidence", None) or rec.clearing_evidence
        for x in ev:
            doc = world.document(x) if x.startswith("DOC-") else None
            if doc is not None and doc.doc_type == "shipping_document":
                assert doc.date <= str(h["posting_date"]) <= "2025-12-31"
        if h["reference"] in reqs:
            doc_id, _req = reqs[h["reference"]]
            assert CLOSES["2025-12"] < world.document(doc_id).date < str(h["entry_timestamp"].date())


def test_defects_and_decoys_share_one_listing_surface():
    """Per kind, defects and decoys come from one listing distribution; the kind does not predict the
    label (tests/test_leak_probe.py trains a classifier on the whole listing)."""
    kinds = {"revenue_before_shipment": "rev", "year_end_revenue_shipped": "rev",
             "post_closing_entry_unauthorised": "late", "post_closing_entry_approved": "late"}
    rows = []  # (is defect, kind, recording lag in days, source)
    for seed in range(100, 130):
        w = generate_world("JE-9", seed)
        heads = _headers(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            kind = kinds[getattr(rec, "defect_type", None) or rec.decoy_type]
            lag = (h["entry_timestamp"].date() - h["posting_date"]).days
            if kind == "rev":
                assert "2025-12-24" <= str(h["posting_date"]) <= "2025-12-31" and lag == 0
            else:
                assert str(h["posting_date"]) == "2025-12-31" and h["source"] == "manual"
            rows.append((rec.entry_id in w.defect_ids, kind, lag))

    def mean(xs):
        return sum(xs) / len(xs)

    for kind in ("rev", "late"):
        lag = {bad: mean([r[2] for r in rows if r[0] == bad and r[1] == kind]) for bad in (True, False)}
        assert abs(lag[True] - lag[False]) < 2.0, (kind, lag)
    share = {bad: mean([r[1] == "rev" for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(share[True] - share[False]) < 0.2, share  # about 3.5 standard errors at this sample size


def test_careful_solves_naive_is_fooled():
    import statistics

    from jeval_ray.episode import play

    res = {(a, s): play("JE-9", a, s) for a in ("random", "naive", "careful") for s in SEEDS}
    for s in SEEDS:
        c = res[("careful", s)].score
        assert c.outcome >= 0.95 and c.rationale >= 0.95 and c.verification.fabrications == 0, s
        n = res[("naive", s)].score.verification
        assert n.fn == 0 and n.fp >= len(generate_world("JE-9", s).decoys)  # flags every look-alike
    mean = {a: statistics.fmean(res[(a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean
    assert play("JE-9", "careful", 7, tools_withheld=("search_documents",)).score.outcome >= 0.95


def test_no_hidden_labels_in_visible_text(world):
    words = re.compile(r"decoy|defect|planted|red flag|exception", re.I)
    for d in world.documents:
        assert not words.search(d.title + d.body), d.doc_id
    assert not any(words.search(str(x)) for x in world.ledger.column("description").to_pylist())
