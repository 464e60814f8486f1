"""JE-2 (self-approved manual entries): planting, the clean base, determinism and the built-in agents."""

from __future__ import annotations

import pyarrow.compute as pc

TASK = "JE-2"
SEEDS = range(5)


def headers(world) -> dict[str, dict]:
    """One row per entry (its debit line carries the header fields)."""
    led = world.ledger
    return {r["entry_id"]: r for r in led.filter(pc.equal(led["line_no"], 1)).to_pylist()}


def test_defects_are_manual_self_approvals_with_required_evidence(worlds):
    for w in worlds.values():
        h = headers(w)
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        for d in w.defects:
            r = h[d.entry_id]
            assert r["source"] == "manual" and r["approver"] == r["preparer"]
            assert d.criteria == "SELF_APPROVAL"
            assert "master:users" in d.required_evidence
            policy = [e for e in d.required_evidence if e.startswith("DOC-")]
            assert len(policy) == 1 and "approval policy" in w.document(policy[0]).title.lower()


def test_decoys_are_system_releases_cleared_by_the_policy(worlds):
    for w in worlds.values():
        h = headers(w)
        roles = {u["user_id"]: u["role"] for u in w.master["users"].to_pylist()}
        for d in w.decoys:
            r = h[d.entry_id]
            assert r["source"] == "automated" and r["approver"] == r["preparer"]
            assert roles[r["preparer"]] == "System"
            assert "master:users" in d.clearing_evidence
            doc = w.document(next(e for e in d.clearing_evidence if e.startswith("DOC-")))
            assert r["preparer"] in doc.body and "not a self-approval" in doc.body


def test_base_population_never_trips_the_rule(worlds):
    for w in worlds.values():
        tripped = {k for k, r in headers(w).items() if r["approver"] and r["approver"] == r["preparer"]}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
