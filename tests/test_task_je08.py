"""JE-8 (unsupported round-amount entries): the planted world, the base population and the agents."""

from __future__ import annotations

import re

import pyarrow.compute as pc
import pytest

from jeval_ray.tasks.je08 import VAGUE
from jeval_ray.world import generate_world

SEEDS = range(5)


def _heads(world) -> dict[str, dict]:
    led = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1))
    return {r["entry_id"]: r for r in led.to_pylist()}


def _round(r: dict) -> bool:
    return round(r["debit"] * 100) % 10_000 == 0


def _supports(doc, r: dict) -> bool:
    return f"USD {r['debit']:,.2f}" in doc.body and re.search(rf"\b{re.escape(r['reference'])}\b", doc.body) is not None


@pytest.fixture(scope="module", params=[0, 1, 2, 3, 4])
def world(request):
    return generate_world("JE-8", request.param)


def test_rule_catches_exactly_the_planted_entries(world):
    heads = _heads(world)
    flagged = {e for e, r in heads.items() if r["source"] == "manual" and _round(r)}
    assert flagged == world.defect_ids | {d.entry_id for d in world.decoys}
    # no round amount anywhere else either, automated entries included
    assert {e for e, r in heads.items() if _round(r)} == flagged


def test_base_stays_clean_on_a_large_slice():
    w = generate_world("JE-8", 11, {"n_entries": 4000, "n_defects": 30, "n_decoys": 30, "description_quality": 0.2})
    heads = _heads(w)
    assert {e for e, r in heads.items() if _round(r)} == w.defect_ids | {d.entry_id for d in w.decoys}


def test_defects_are_vague_and_unsupported(world):
    heads = _heads(world)
    for d in world.defects:
        r = heads[d.entry_id]
        assert r["source"] == "manual" and round(r["debit"] * 100) % 100_000 == 0
        assert r["description"] in VAGUE
        assert r["approver"] and r["approver"] != r["preparer"]
        assert not [doc.doc_id for doc in world.documents if _supports(doc, r)]
        assert d.misstatement == pytest.approx(r["debit"])
        policy = world.document(d.required_evidence[1])
        assert policy.doc_type == "policy" and "supported" in policy.body


def test_decoys_are_backed_by_their_document(world):
    heads = _heads(world)
    for d in world.decoys:
        r = heads[d.entry_id]
        (doc_id,) = d.clearing_evidence
        doc = world.document(doc_id)
        assert doc.doc_type in ("board_minutes", "contract")
        assert _supports(doc, r)
        assert doc.date < r["posting_date"].isoformat()


def test_near_miss_traps_do_not_support():
    w = generate_world("JE-8", 2, {"near_miss": 1.0, "n_defects": 8, "n_decoys": 8})
    heads = _heads(w)
    amounts = {f"USD {heads[d.entry_id]['debit']:,.2f}" for d in w.defects}
    traps = [doc for doc in w.documents if any(a in doc.body for a in amounts)]
    assert traps  # the same figure approved for something else
    assert not any(_supports(doc, heads[d.entry_id]) for doc in traps for d in w.defects)
