"""JE-7 (duplicate postings): the planted world, the base population, surface parity and the agents.

The rule and the decisive evidence are re-read here from the visible world (ledger lines and the
AP vouchers' text), independently of the task module.
"""

from __future__ import annotations

import re
import statistics

import pyarrow.compute as pc
import pytest

from jeval_ray.world import generate_world
from conftest import check_naive_and_careful

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


def _voucher(world, ref: str):
    (doc,) = [d for d in world.documents if d.title.startswith(f"AP voucher {ref} - ")]
    return doc


def _field(doc, name: str) -> str:
    return re.search(rf"{name}: (\S+)", doc.body).group(1)


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


def test_defects_record_one_vendor_invoice_twice(world):
    heads = _heads(world)
    later = _later_postings(heads)
    for d in world.defects:
        x, o = heads[d.entry_id], heads[later[d.entry_id]]
        doc_x, doc_o = _voucher(world, x["reference"]), _voucher(world, o["reference"])
        assert set(d.required_evidence) == {doc_x.doc_id, doc_o.doc_id}
        assert _field(doc_x, "Invoice number") == _field(doc_o, "Invoice number")
        assert _field(doc_x, "Purchase order") == _field(doc_o, "Purchase order")
        assert f"USD {x['debit']:,.2f}" in doc_x.body and f"USD {o['debit']:,.2f}" in doc_o.body
        assert d.misstatement == pytest.approx(x["debit"])
        # decisive facts: the vendor invoice number, the original entry and the amount
        assert _field(doc_x, "Invoice number") in d.facts and o["entry_id"] in d.facts and f"{x['debit']:.2f}" in d.facts


def test_no_vendor_invoice_is_filed_twice_outside_the_defects(world):
    """The AP policy's rule, checked on every voucher: a vendor invoice number sits on one voucher,
    except the two vouchers of a defect (the original's and the duplicate's)."""
    heads = _heads(world)
    dup_refs = {heads[d.entry_id]["reference"] for d in world.defects}
    seen: dict[str, list[str]] = {}
    for doc in world.documents:
        if doc.title.startswith("AP voucher "):
            seen.setdefault(_field(doc, "Invoice number"), []).append(doc.title.split()[2])
    for inv, refs in seen.items():
        assert len(refs) == 1 or (len(refs) == 2 and len(set(refs) & dup_refs) == 1), inv


def test_decoys_are_separate_invoices_of_the_same_amount(world):
    heads = _heads(world)
    later = _later_postings(heads)
    for d in world.decoys:
        x, o = heads[d.entry_id], heads[later[d.entry_id]]
        doc_x, doc_o = _voucher(world, x["reference"]), _voucher(world, o["reference"])
        assert set(d.clearing_evidence) == {doc_x.doc_id, doc_o.doc_id}
        assert _field(doc_x, "Invoice number") != _field(doc_o, "Invoice number")
        assert _field(doc_x, "Purchase order") != _field(doc_o, "Purchase order")
        assert _field(doc_x, "Invoice date") == _field(doc_o, "Invoice date") == str(o["document_date"])
        assert {_field(doc_x, "Invoice number"), _field(doc_o, "Invoice number")} <= set(d.facts)


def test_defects_and_decoys_share_one_surface():
    """Every listing fact of a second posting, and its relation to the original, comes from one
    distribution: same vendor, amount and invoice date as the original, a new voucher number, a
    gap of 1-9 days, the original's source; the titles of both kinds' vouchers have one form."""
    gaps = {"defect": [], "decoy": []}
    for s in range(20):
        w = generate_world("JE-7", 100 + s)
        heads = _heads(w)
        later = _later_postings(heads)
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                x, o = heads[eid], heads[later[eid]]
                assert x["document_date"] == o["document_date"] and x["source"] == o["source"]
                assert x["reference"] != o["reference"] and re.fullmatch(r"INV-\d+", x["reference"])
                assert x["description"] in (o["description"], f"Invoice {x['reference']} " + o["description"].split(" ", 2)[-1])
                gaps[kind].append((x["posting_date"] - o["posting_date"]).days)
                _voucher(w, x["reference"]), _voucher(w, o["reference"])
    assert set(gaps["defect"]) <= set(range(1, 12)) and set(gaps["decoy"]) <= set(range(1, 12))
    assert abs(statistics.fmean(gaps["defect"]) - statistics.fmean(gaps["decoy"])) < 1.0


def test_naive_is_the_surface_rule_and_careful_reads_the_vouchers():
    check_naive_and_careful("JE-7")