"""JE-4 (unauthorised posters): planting, the clean base, determinism and the built-in agents."""

from __future__ import annotations

import pyarrow.compute as pc

TASK = "JE-4"
SEEDS = range(5)


def headers(world) -> dict[str, dict]:
    led = world.ledger
    return {r["entry_id"]: {**r, "posting_date": str(r["posting_date"])}
            for r in led.filter(pc.equal(led["line_no"], 1)).to_pylist()}


def users(world) -> dict[str, dict]:
    return {u["user_id"]: u for u in world.master["users"].to_pylist()}


def test_user_master_has_leavers(worlds):
    for w in worlds.values():
        us = users(w)
        leavers = [u for u in us.values() if u["status"] == "terminated"]
        assert len(leavers) == 2 and all("2025-01-01" < u["termination_date"] < "2025-12-31" for u in leavers)
        assert {"KLEE", "LGARCIA", "MCHEN"} == {k for k, u in us.items() if not u["posting_rights"]}


def test_defects_are_posted_without_rights_or_after_termination(worlds):
    kinds = set()
    for w in worlds.values():
        h, us = headers(w), users(w)
        for d in w.defects:
            r = h[d.entry_id]
            u = us[r["preparer"]]
            assert r["source"] == "manual" and r["approver"] != r["preparer"]
            if d.defect_type == "no_posting_rights":
                assert not u["posting_rights"]
            else:
                assert d.defect_type == "posted_after_termination"
                assert u["posting_rights"] and r["posting_date"] > u["termination_date"]
            assert d.criteria == "UNAUTHORISED_USER" and d.required_evidence == ("master:users",)
            kinds.add(d.defect_type)
    assert kinds == {"no_posting_rights", "posted_after_termination"}


def test_decoys_are_posted_before_termination(worlds):
    for w in worlds.values():
        h, us = headers(w), users(w)
        for d in w.decoys:
            r = h[d.entry_id]
            u = us[r["preparer"]]
            assert u["status"] == "terminated" and u["posting_rights"]
            assert r["posting_date"] < u["termination_date"]
            assert d.clearing_evidence == ("master:users",)


def test_base_population_never_trips_the_rule(worlds):
    for w in worlds.values():
        us = users(w)
        tripped = {k for k, r in headers(w).items()
                   if not us[r["preparer"]]["posting_rights"] or us[r["preparer"]]["status"] != "active"}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
