"""JE-9 (cut-off): the planted world obeys the rule, the base is clean, the built-in agents discriminate."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.world import generate_world
from jeval_ray.world._base import month_close_dates

SEEDS = range(5)
CLOSES = dict(month_close_dates())


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


@pytest.fixture(scope="module", params=list(SEEDS))
def world(request):
    return generate_world("JE-9", request.param)


def test_defects_satisfy_the_rule(world):
    heads = _headers(world)
    assert world.defects
    for d in world.defects:
        h = heads[d.entry_id]
        assert d.criteria == "CUTOFF"
        assert d.misstatement == pytest.approx(h["amount"])
        if d.defect_type == "revenue_before_shipment":
            assert _is_revenue(h) and str(h["posting_date"]) == _period_end(str(h["posting_date"]))
            docs = [e for e in d.required_evidence if e.startswith("DOC-")]
            ship = next(_ship_date(world, x) for x in docs if world.document(x).doc_type == "shipping_document")
            assert ship > str(h["posting_date"])  # shipped in the next period
            assert d.entry_id in d.required_evidence
        else:
            assert d.defect_type == "entry_after_close"
            assert _late(h)
            assert "master:calendar" in d.required_evidence and d.entry_id in d.required_evidence


def test_decoys_are_cleared_by_their_evidence(world):
    heads = _headers(world)
    assert world.decoys
    for d in world.decoys:
        h = heads[d.entry_id]
        if d.decoy_type == "period_end_revenue_shipped":
            assert _is_revenue(h) and str(h["posting_date"]) == _period_end(str(h["posting_date"]))
            note = next(x for x in d.clearing_evidence if x.startswith("DOC-") and world.document(x).doc_type == "shipping_document")
            assert _ship_date(world, note) <= str(h["posting_date"])
        else:
            assert d.decoy_type == "recorded_before_close"
            rec = str(h["entry_timestamp"].date())
            assert _period_end(str(h["posting_date"])) < rec <= CLOSES[str(h["posting_date"])[:7]]
            assert "master:calendar" in d.clearing_evidence


def test_base_population_does_not_trip_the_rule(world):
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    for eid, h in _headers(world).items():
        if eid in planted:
            continue
        posted = str(h["posting_date"])
        assert str(h["entry_timestamp"].date()) == posted, eid
        assert not (_is_revenue(h) and posted == _period_end(posted)), eid


def test_no_hidden_labels_in_visible_text(world):
    words = re.compile(r"decoy|defect|planted|red flag|exception", re.I)
    for d in world.documents:
        assert not words.search(d.title + d.body), d.doc_id
    assert not any(words.search(str(x)) for x in world.ledger.column("description").to_pylist())
