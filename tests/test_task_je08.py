"""JE-8 (unsupported round-amount entries): the planted world, the base population, surface parity and
the extent of the naive rule (what every task promises is tests/test_task_contract.py). Support is
re-read here from the visible world (ledger lines and document text)."""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter

import pyarrow.compute as pc
import pytest

from jeval_ray.world import generate_world
from support.worlds import played, world as cached_world

SEEDS = range(5)


def _heads(world) -> dict[str, dict]:
    """One row per entry (its first line), ``debit`` the entry's total debits."""
    total: dict[str, float] = {}
    for eid, debit in zip(world.ledger.column("entry_id").to_pylist(), world.ledger.column("debit").to_pylist()):
        total[eid] = total.get(eid, 0.0) + debit
    led = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1))
    return {r["entry_id"]: {**r, "debit": round(total[r["entry_id"]], 2)} for r in led.to_pylist()}


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _round(r: dict) -> bool:
    return round(r["debit"] * 100) % 10_000 == 0


def _carrying(world, r: dict) -> list:
    """Minutes and agreements whose text names the entry's reference."""
    return [d for d in world.documents if d.doc_type in ("board_minutes", "contract")
            and re.search(rf"\b{re.escape(r['reference'])}\b", d.body)]


def _supports(doc, r: dict) -> bool:
    """The policy's test: the document names the reference, fixes the amount and is dated no later than
    the day the entry was recorded."""
    return (f"USD {r['debit']:,.2f}" in doc.body and re.search(rf"\b{re.escape(r['reference'])}\b", doc.body) is not None
            and doc.date <= r["entry_timestamp"].date().isoformat())


@pytest.fixture(scope="module", params=[0, 1, 2, 3, 4])
def world(request):
    return cached_world("JE-8", request.param)


def test_rule_catches_the_planted_entries_and_honest_round_invoices(world):
    heads = _heads(world)
    flagged = {e for e, r in heads.items() if r["source"] == "manual" and _round(r)}
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    assert planted <= flagged
    # in the policy's scope (top-side adjustments) the rule returns exactly the planted entries; the rest
    # are vendor invoices (rent, fixed fees) and month-end accruals, which the policy leaves to their own procedures
    assert {e for e in flagged if heads[e]["document_type"] == "TS"} == planted
    assert {heads[e]["document_type"] for e in flagged - planted} <= {"VN", "VI", "AC"}
    assert flagged - planted


def test_base_stays_clean_on_a_large_slice():
    w = generate_world("JE-8", 11, {"n_entries": 4000, "n_defects": 30, "n_decoys": 30, "description_quality": 0.2})
    heads = _heads(w)
    planted = w.defect_ids | {d.entry_id for d in w.decoys}
    assert {e for e, r in heads.items() if _round(r) and r["document_type"] == "TS"} == planted
    # policy section 2.2: every top-side adjustment states its purpose, whatever the description quality
    assert all(heads[e]["description"].endswith(f" per {heads[e]['reference']}") for e in planted)


def test_defects_are_not_fixed_by_the_document_they_reference(world):
    heads = _heads(world)
    policy = next(d for d in world.documents if d.doc_type == "policy" and "supporting documentation" in d.title)
    assert "dated no later than the day the entry is recorded" in policy.body and "(document type TS)" in policy.body
    for d in world.defects:
        r = heads[d.entry_id]
        assert r["source"] == "manual" and round(r["debit"] * 100) % 100_000 == 0
        assert r["approver"] and r["approver"] != r["preparer"]
        assert not [doc for doc in world.documents if _supports(doc, r)]
        assert policy.doc_id in d.required_evidence
        carrying = _carrying(world, r)
        assert r["reference"] in d.facts
        if d.defect_type == "no_support":
            assert not carrying and f"{r['debit']:.2f}" in d.facts
            continue
        (doc,) = carrying
        assert doc.doc_id in d.required_evidence and doc.doc_id in d.facts
        if d.defect_type == "amount_not_supported":
            shown = re.search(r"USD ([\d,]+\.\d\d)", doc.body).group(1).replace(",", "")
            assert r["debit"] / 2 <= float(shown) < r["debit"] and {shown, f"{r['debit']:.2f}"} <= set(d.facts)
            assert d.misstatement == pytest.approx(r["debit"] - float(shown))  # the excess over what is supported
        else:
            assert d.defect_type == "approved_after_posting"
            assert f"USD {r['debit']:,.2f}" in doc.body and doc.date > r["entry_timestamp"].date().isoformat()
            assert {doc.date, r["entry_timestamp"].date().isoformat()} <= set(d.facts)


def test_decoys_are_fixed_by_their_document_and_state_a_purpose(world):
    heads = _heads(world)
    for d in world.decoys:
        r = heads[d.entry_id]
        (doc_id,) = d.clearing_evidence
        doc = world.document(doc_id)
        assert doc.doc_type in ("board_minutes", "contract") and _supports(doc, r)
        # policy section 2.2: a business purpose, not "adjustment" alone
        assert r["description"].endswith(f" per {r['reference']}") and len(r["description"].split()) >= 4
        assert {doc_id, r["reference"], f"{r['debit']:.2f}"} <= set(d.facts)


def test_no_document_calls_for_an_accrual_in_the_year_that_no_entry_records():
    """The pack's agreements and resolutions under a number no entry carries are for work of 2026:
    one fixing a fee earned, or to be accrued, in FY2025 would be an unrecorded liability the books
    never book (an auditor's read found 94,000 of them on seed 961 once)."""
    for seed in range(40):
        w = generate_world("JE-8", seed)
        refs = set(w.ledger.column("reference").to_pylist())
        for d in w.documents:
            m = re.search(r"\b(?:CTR|BR)-2025-\d+", d.body or "")
            if d.doc_type in ("contract", "board_minutes") and m and m[0] not in refs:
                assert not re.search(r"(?:accrued|earned) in \w+ 2025|accrued under", d.body), (seed, d.doc_id, d.body)


def test_defects_and_decoys_share_one_surface():
    """Descriptions, reference forms, accounts and amounts come from one distribution; titles never
    name a reference; references rise with the posting date; every candidate has a document of its
    kind dated shortly before it."""
    feats = {"defect": Counter(), "decoy": Counter()}
    amounts = {"defect": [], "decoy": []}
    for s in range(30):
        w = generate_world("JE-8", 200 + s)
        heads = _heads(w)
        titles = " ".join(d.title for d in w.documents)
        # references rise with the posting date for defects and decoys alike
        planted = sorted((heads[e]["posting_date"], heads[e]["reference"]) for e in w.defect_ids | {d.entry_id for d in w.decoys})
        for prefix in ("BR-", "CTR-"):
            numbers = [int(ref.rsplit("-", 1)[1]) for _, ref in planted if ref.startswith(prefix)]
            assert numbers == sorted(numbers), (s, prefix)
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                r = heads[eid]
                assert r["reference"] not in titles
                feats[kind][r["reference"][:3]] += 1
                feats[kind][r["account"]] += 1
                amounts[kind].append(r["debit"])
                # a document of its kind (minutes or agreement) dated 3-40 days before it, for every candidate
                kind_of = "board_minutes" if r["reference"].startswith("BR-") else "contract"
                assert any(d.doc_type == kind_of and 3 <= (r["posting_date"] - _date(d.date)).days <= 40
                           for d in w.documents), (s, eid)
    for kind in feats:
        total = sum(v for k, v in feats[kind].items() if k in ("BR-", "CTR"))
        feats[kind] = {k: v / total for k, v in feats[kind].items()}
    for k in ("BR-", "CTR", "6000", "6700", "6400"):
        assert abs(feats["defect"].get(k, 0) - feats["decoy"].get(k, 0)) < 0.15, k
    assert abs(statistics.median(amounts["defect"]) - statistics.median(amounts["decoy"])) < 12_000


def test_near_miss_traps_do_not_support():
    w = generate_world("JE-8", 2, {"near_miss": 1.0, "n_defects": 8, "n_decoys": 8})
    heads = _heads(w)
    amounts = {f"USD {heads[d.entry_id]['debit']:,.2f}" for d in w.defects if d.defect_type == "no_support"}
    traps = [doc for doc in w.documents if "Capital budget" in doc.body and any(a in doc.body for a in amounts)]
    assert traps  # the same figure approved for something else
    assert not any(_supports(doc, heads[d.entry_id]) for doc in traps for d in w.defects)


def test_naive_flags_every_round_manual_entry(world):
    """naive flags every round manual entry (recall 1, as the task contract checks): every decoy and
    every honest round invoice is a false positive."""
    v = played("JE-8", "naive", world.seed).score.verification
    heads = _heads(world)
    rule = {e for e, r in heads.items() if r["source"] == "manual" and _round(r)}
    assert v.recall == 1.0 and v.fp == len(rule) - len(world.defects), world.seed
