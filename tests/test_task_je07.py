"""JE-7 (duplicate postings): the planted world, the base population and the built-in agents."""

from __future__ import annotations

import re

import pyarrow.compute as pc
import pytest

from jeval_ray.world import generate_world

SEEDS = range(5)


def _heads(world) -> dict[str, dict]:
    """One row per entry (its debit line), keyed by entry id."""
    led = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1))
    return {r["entry_id"]: r for r in led.to_pylist()}


def _later_postings(heads: dict[str, dict]) -> dict[str, str]:
    """The rule: vendor entries repeating an earlier entry's vendor and amount -> that earlier entry."""
    first: dict[tuple, str] = {}
    later = {}
    for eid in sorted(heads):
        r = heads[eid]
        if not r["vendor_id"]:
            continue
        key = (r["vendor_id"], round(r["debit"], 2))
        if key in first:
            later[eid] = first[key]
        else:
            first[key] = eid
    return later


@pytest.fixture(scope="module", params=[0, 1, 2, 3, 4])
def world(request):
    return generate_world("JE-7", request.param)


def test_rule_catches_exactly_the_planted_entries(world):
    later = _later_postings(_heads(world))
    assert set(later) == world.defect_ids | {d.entry_id for d in world.decoys}


def test_base_stays_clean_on_a_large_slice():
    w = generate_world("JE-7", 7, {"n_entries": 4000, "n_defects": 5, "n_decoys": 20})
    later = _later_postings(_heads(w))
    assert set(later) == w.defect_ids | {d.entry_id for d in w.decoys}
    assert len(w.decoys) == 20


def test_defects_are_one_invoice_posted_twice(world):
    heads = _heads(world)
    later = _later_postings(heads)
    for d in world.defects:
        inv, orig, dup = d.required_evidence
        assert later[dup] == orig and dup == d.entry_id
        o, x = heads[orig], heads[dup]
        assert o["document_date"] == x["document_date"]
        assert 0 < (x["posting_date"] - o["posting_date"]).days <= 14
        doc = world.document(inv)
        assert doc.doc_type == "invoice" and o["reference"] in doc.body
        assert f"USD {o['debit']:,.2f}" in doc.body
        assert d.misstatement == pytest.approx(x["debit"])


def test_decoys_are_rent_fixed_by_a_lease(world):
    heads = _heads(world)
    vendors = {v["vendor_id"]: v["name"] for v in world.master["vendors"].to_pylist()}
    for d in world.decoys:
        r = heads[d.entry_id]
        (lease_id,) = d.clearing_evidence
        lease = world.document(lease_id)
        assert lease.doc_type == "contract" and "lease" in lease.title.lower()
        assert vendors[r["vendor_id"]] in lease.body
        assert f"total USD {r['debit']:,.2f} per month" in lease.body
        start = re.search(r"Commencement date: (\S+)\.", lease.body).group(1)
        assert start <= r["posting_date"].isoformat()
