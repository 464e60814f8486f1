"""JE-7 (duplicate postings): the planted world, the honest look-alikes, surface parity of the repeats and
the extent of the naive rule (what every task promises is tests/test_task_contract.py).

The rule and the decisive evidence are re-read here from the visible world (ledger lines and the
AP vouchers' text), independently of the task module.
"""

from __future__ import annotations

import re
import statistics

import pytest

from jeval_ray.world import generate_world
from support.worlds import played, world as cached_world

SEEDS = range(5)


def _invoices(world) -> dict[str, dict]:
    """One row per vendor invoice (VI/VN): its credit to accounts payable, keyed by entry id."""
    return {r["entry_id"]: r for r in world.ledger.to_pylist()
            if r["document_type"] in ("VI", "VN") and r["account"] == "2000" and r["credit"]}


def _later_postings(rows: dict[str, dict]) -> dict[str, str]:
    """The red-flag rule: invoices repeating an earlier invoice's vendor and amount -> that earlier one."""
    first: dict[tuple, str] = {}
    later = {}
    for eid in sorted(rows):
        r = rows[eid]
        key = (r["vendor_id"], round(r["credit"], 2))
        if key in first:
            later[eid] = first[key]
        else:
            first[key] = eid
    return later


def _same_day(rows: dict[str, dict]) -> dict[str, str]:
    """The repeats dated the same day as the earlier invoice (the only ones that can be one invoice)."""
    return {e: o for e, o in _later_postings(rows).items() if rows[e]["document_date"] == rows[o]["document_date"]}


def _voucher(world, ref: str):
    (doc,) = [d for d in world.documents if d.title.startswith(f"AP voucher {ref} - ")]
    return doc


def _field(doc, name: str) -> str:
    return re.search(rf"{name}: (\S+)", doc.body).group(1)


def _keyed(description: str) -> str:
    return re.match(r"Invoice (\d+) ", description).group(1)


@pytest.fixture(scope="module", params=list(SEEDS))
def world(request):
    return cached_world("JE-7", request.param)


def test_rule_catches_the_planted_entries_and_honest_recurring_fees(world):
    rows = _invoices(world)
    later = _later_postings(rows)
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    assert planted <= set(later)
    # what else the rule catches is another invoice with its own invoice date (monthly fees, fixed fees)
    lookalikes = set(later) - planted
    assert lookalikes
    assert all(rows[e]["document_date"] != rows[later[e]]["document_date"] for e in lookalikes)
    assert set(_same_day(rows)) == planted


def test_base_stays_clean_on_a_large_slice():
    w = generate_world("JE-7", 7, {"n_entries": 4000, "n_defects": 5, "n_decoys": 20})
    assert set(_same_day(_invoices(w))) == w.defect_ids | {d.entry_id for d in w.decoys}
    assert len(w.decoys) == 20


def test_defects_record_one_vendor_invoice_twice(world):
    rows = _invoices(world)
    later = _later_postings(rows)
    for d in world.defects:
        x, o = rows[d.entry_id], rows[later[d.entry_id]]
        doc_x, doc_o = _voucher(world, x["reference"]), _voucher(world, o["reference"])
        assert set(d.required_evidence) == {doc_x.doc_id, doc_o.doc_id}
        assert _field(doc_x, "Invoice number") == _field(doc_o, "Invoice number") == _keyed(o["description"])
        # keyed with another number (the ERP rejects a repeat of the number as keyed)
        assert _keyed(x["description"]) != _field(doc_x, "Invoice number")
        assert ("Purchase order" in doc_x.body) == ("Purchase order" in doc_o.body)
        if "Purchase order" in doc_x.body:
            assert _field(doc_x, "Purchase order") == _field(doc_o, "Purchase order")
        assert f"USD {x['credit']:,.2f}" in doc_x.body and f"USD {o['credit']:,.2f}" in doc_o.body
        assert d.misstatement == pytest.approx(x["credit"])
        assert _field(doc_x, "Invoice number") in d.facts and o["entry_id"] in d.facts and f"{x['credit']:.2f}" in d.facts


def test_no_vendor_invoice_is_filed_twice_outside_the_defects(world):
    """The AP policy's rule on every voucher: a printed vendor invoice number sits on one voucher,
    except the two vouchers of a defect (the original's and the duplicate's)."""
    rows = _invoices(world)
    dup_refs = {rows[d.entry_id]["reference"] for d in world.defects}
    seen: dict[str, list[str]] = {}
    for doc in world.documents:
        if doc.title.startswith("AP voucher "):
            vendor = re.search(r"\(vendor (V\d+)\)", doc.body).group(1)
            seen.setdefault((vendor, _field(doc, "Invoice number")), []).append(doc.title.split()[2])
    for inv, refs in seen.items():
        assert len(refs) == 1 or (len(refs) == 2 and len(set(refs) & dup_refs) == 1), inv


def test_decoys_are_separate_invoices_of_the_same_amount(world):
    rows = _invoices(world)
    later = _later_postings(rows)
    for d in world.decoys:
        x, o = rows[d.entry_id], rows[later[d.entry_id]]
        doc_x, doc_o = _voucher(world, x["reference"]), _voucher(world, o["reference"])
        assert set(d.clearing_evidence) == {doc_x.doc_id, doc_o.doc_id}
        assert _field(doc_x, "Invoice number") != _field(doc_o, "Invoice number")
        assert _field(doc_x, "Invoice number") == _keyed(x["description"])
        if "Purchase order" in doc_x.body:
            assert _field(doc_x, "Purchase order") != _field(doc_o, "Purchase order")
        assert _field(doc_x, "Invoice date") == _field(doc_o, "Invoice date") == str(o["document_date"])
        assert {_field(doc_x, "Invoice number"), _field(doc_o, "Invoice number")} <= set(d.facts)


def test_defects_and_decoys_share_one_surface():
    """Every listing fact of a second posting, and its relation to the original, comes from one
    distribution: same vendor, amount and invoice date as the original, a new voucher number, a
    keyed invoice number differing in its last digit, a gap of 1-9 days (to a business day), a manual posting."""
    gaps = {"defect": [], "decoy": []}
    for s in range(20):
        w = generate_world("JE-7", 100 + s)
        rows = _invoices(w)
        later = _later_postings(rows)
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                x, o = rows[eid], rows[later[eid]]
                assert x["document_date"] == o["document_date"] and x["source"] == o["source"] == "manual"
                assert x["reference"] != o["reference"] and re.fullmatch(r"VN-\d{7}", x["reference"])
                kx, ko = _keyed(x["description"]), _keyed(o["description"])
                assert kx != ko and kx[:-1] == ko[:-1]
                assert x["description"].replace(kx, ko, 1) == o["description"]
                gaps[kind].append((x["posting_date"] - o["posting_date"]).days)
                _voucher(w, x["reference"]), _voucher(w, o["reference"])
    assert set(gaps["defect"]) <= set(range(1, 15)) and set(gaps["decoy"]) <= set(range(1, 15))
    assert abs(statistics.fmean(gaps["defect"]) - statistics.fmean(gaps["decoy"])) < 1.5


def test_naive_flags_every_repeat_of_a_vendor_and_amount(world):
    """naive flags every repeat (recall 1, as the task contract checks): every decoy and every honest
    recurring fee is a false positive."""
    v = played("JE-7", "naive", world.seed).score.verification
    assert v.recall == 1.0 and v.fp == len(_later_postings(_invoices(world))) - len(world.defects), world.seed
