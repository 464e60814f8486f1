"""JE-5 (approval-limit avoidance): planting, the clean base, determinism and the built-in agents.

The red-flag rule is re-implemented here from the visible world only (ledger lines, ``master:users``
and the support pack), independently of the task module, so a planting bug cannot hide behind the
same code in the test.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict

import pytest

from jeval_ray.world import generate_world

TASK = "JE-5"
SEEDS = range(5)
ROLE_LIMITS = {"AP Clerk": 5_000, "AR Clerk": 5_000, "GL Accountant": 10_000, "Senior Accountant": 25_000}


def manual_heads(world) -> dict[str, dict]:
    """Line 1 (carrying the amount) of every manual entry, by entry id."""
    return {r["entry_id"]: r for r in world.ledger.to_pylist() if r["source"] == "manual" and r["line_no"] == 1}


def limits(world) -> dict[str, float]:
    return {u["user_id"]: u["approval_limit"] for u in world.master["users"].to_pylist()}


def near_limit(world) -> set[str]:
    lim = limits(world)
    return {k for k, r in manual_heads(world).items()
            if lim[r["preparer"]] > 0 and 0.9 * lim[r["preparer"]] <= r["debit"] < lim[r["preparer"]]}


def split_groups(world) -> list[list[str]]:
    """Runs of manual invoices by one preparer for one vendor, one day apart at most, each under
    the preparer's limit and together above it."""
    lim = limits(world)
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in manual_heads(world).values():
        if r["vendor_id"]:
            by[(r["preparer"], r["vendor_id"])].append(r)
    out = []
    for (prep, _v), rows in by.items():
        rows.sort(key=lambda r: r["posting_date"])
        run = [rows[0]]
        for r in rows[1:] + [None]:
            if r is not None and (r["posting_date"] - run[-1]["posting_date"]).days <= 1:
                run.append(r)
                continue
            amounts = [x["debit"] for x in run]
            if len(run) >= 2 and max(amounts) < lim[prep] and sum(amounts) > lim[prep]:
                out.append([x["entry_id"] for x in run])
            run = [r] if r is not None else []
    return out


def contract_terms(body: str) -> dict:
    fee = re.search(r"fixed fee of USD ([\d,]+\.\d\d) per", body)
    term = re.search(r"Term: (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)", body)
    vendor = re.search(r"vendor no\. (V\d+)", body)
    return {"fee": float(fee.group(1).replace(",", "")), "start": dt.date.fromisoformat(term.group(1)),
            "end": dt.date.fromisoformat(term.group(2)), "vendor": vendor.group(1)}


def contracts(world) -> dict[str, dict]:
    return {d.doc_id: contract_terms(d.body) for d in world.documents if d.doc_type == "contract"}


def covered(world, row: dict) -> list[str]:
    """Contracts fixing exactly this entry's amount for its vendor over its posting date."""
    return [k for k, c in contracts(world).items() if c["vendor"] == row["vendor_id"]
            and abs(c["fee"] - row["debit"]) < 0.005 and c["start"] <= row["posting_date"] <= c["end"]]


def test_users_carry_approval_limits_and_the_matrix_states_them(worlds):
    for w in worlds.values():
        for u in w.master["users"].to_pylist():
            if u["role"] in ROLE_LIMITS:
                assert u["approval_limit"] == ROLE_LIMITS[u["role"]]
        matrix = [d for d in w.documents if d.doc_type == "policy" and "Approval authority matrix" in d.title]
        assert len(matrix) == 1
        assert "90% or more" in matrix[0].body and "Splitting" in matrix[0].body and "USD 25,000" in matrix[0].body


def test_defects_satisfy_the_rule(worlds):
    kinds = set()
    for w in worlds.values():
        heads, band = manual_heads(w), near_limit(w)
        splits = {eid: g for g in split_groups(w) for eid in g}
        matrix = next(d.doc_id for d in w.documents if "Approval authority matrix" in d.title)
        for d in w.defects:
            assert d.criteria == "LIMIT_AVOIDANCE" and d.entry_id in heads
            assert {matrix, "master:users", d.entry_id} <= set(d.required_evidence)
            if d.defect_type == "near_limit":
                assert d.entry_id in band and not covered(w, heads[d.entry_id])
            else:
                assert d.defect_type == "split_entry"
                group = splits[d.entry_id]
                assert set(group) <= w.defect_ids and set(group) <= set(d.required_evidence) | {d.entry_id}
            assert d.misstatement == pytest.approx(heads[d.entry_id]["debit"])
            kinds.add(d.defect_type)
    assert kinds == {"near_limit", "split_entry"}


def test_decoys_are_near_the_limit_and_cleared_by_their_contract(worlds):
    for w in worlds.values():
        heads, band = manual_heads(w), near_limit(w)
        docs = {d.doc_id: d for d in w.documents}
        for d in w.decoys:
            assert d.decoy_type == "contract_fixed_price" and d.entry_id in band
            cleared_by = covered(w, heads[d.entry_id])
            assert len(cleared_by) == 1 and cleared_by[0] in d.clearing_evidence
            vendor = next(v["name"] for v in w.master["vendors"].to_pylist() if v["vendor_id"] == heads[d.entry_id]["vendor_id"])
            assert vendor in docs[cleared_by[0]].title and vendor in docs[cleared_by[0]].body


@pytest.mark.parametrize("knobs", [None, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}, {"n_entries": 3000}])
def test_base_population_never_trips_the_rule(knobs):
    for s in range(12):
        w = generate_world(TASK, s, knobs)
        tripped = near_limit(w) | {e for g in split_groups(w) for e in g}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
