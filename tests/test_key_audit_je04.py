"""JE-4 key audit: over many seeds, the facts ``KEY_RATIONALE`` relies on hold in the world as the
agent sees it (the ledger listing, ``master:users`` and HR's report), and nothing outside the key
breaks the brief's rule (an entry keyed by a user without posting rights)."""

from __future__ import annotations

import re

import pyarrow.compute as pc

from jeval_ray.tasks import task_module
from jeval_ray.world import generate_world

TASK = "JE-4"
SEEDS = range(20, 45)


def _entries(world) -> dict[str, dict]:
    """One row per listed entry: line 1's header fields plus the entry's total debits."""
    led = world.ledger
    out: dict[str, dict] = {}
    for r in led.to_pylist():
        e = out.setdefault(r["entry_id"], {**r, "total": 0.0, "payable": 0.0, "keyed": str(r["entry_timestamp"].date()),
                                           "posted": str(r["posting_date"])})
        e["total"] += r["debit"]
        if r["account"] == "2000":
            e["payable"] += r["credit"]
    return out


def _end(user: dict) -> str:
    return user["termination_date"] if user["status"] == "terminated" else user["rights_withdrawn_on"]


def test_key_audit_je04():
    rationale = {(k.kind, k.type) for k in task_module(TASK).KEY_RATIONALE}
    for seed in SEEDS:
        w = generate_world(TASK, seed)
        ents = _entries(w)
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        report = next(d for d in w.documents if d.title.startswith("HR starters, leavers"))
        key = {d.entry_id: ("defect", d.defect_type) for d in w.defects}
        key |= {d.entry_id: ("decoy", d.decoy_type) for d in w.decoys}
        assert set(key.values()) <= rationale, seed
        for eid, (kind, typ) in key.items():
            e = ents[eid]
            u = users[e["preparer"]]
            end = _end(u)
            # HR's report states the same date for the same user
            assert re.search(rf"{end}\s+.*\({u['user_id']}\)", report.body), (seed, eid)
            assert (u["status"] == "terminated") == typ.endswith("termination")
            if kind == "defect":
                assert e["keyed"] > end and e["posted"] > end, (seed, eid)
            else:
                assert e["keyed"] < end and e["posted"] < end, (seed, eid)
            # the user's former role keyed this kind of entry: the report names the role, and the
            # books' own users of that role may post the entry's document type
            role = re.search(rf"\({u['user_id']}\)(?:, | moved from )([A-Za-z ]+?),", report.body).group(1)
            peers = [p for p in users.values() if p["role"] == role and p["status"] == "active" and p["user_id"] not in key]
            assert any(e["document_type"] in p["may_post"].split(", ") for p in peers), (seed, eid, role)
        for eid, e in ents.items():
            if e["source"] != "manual":
                continue
            # every manual entry is approved by another active user whose limit covers it (a vendor
            # invoice: its total payable; a favourable price variance raises its debits above that)
            a = users[e["approver"]]
            amount = e["payable"] if e["document_type"] in ("VI", "VN") else e["total"]
            assert a["user_id"] != e["preparer"] and a["status"] == "active" and a["approval_limit"] >= amount - 0.005
            # nothing outside the key breaks the rule: its preparer held posting rights for its kind
            if eid not in key:
                p = users[e["preparer"]]
                assert p["posting_rights"] and p["status"] == "active" and not _end(p), (seed, eid)
                assert e["document_type"] in p["may_post"].split(", "), (seed, eid)
