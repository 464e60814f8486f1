"""JE-5 (approval-limit avoidance): planting on the books, surface parity of the runs, and the rule's hits
(what every task promises, the built-in agents included, is tests/test_task_contract.py).

The rule is re-implemented here from the visible world only (ledger lines and ``master:users``),
independently of the task module, so a planting bug cannot hide behind the same code in the test.
The facts the key rests on are checked in ``test_key_audit_je05.py``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from jeval_ray.books import calendar as cal
from jeval_ray.world import generate_world

TASK = "JE-5"
SEEDS = range(5)
TIER = {"FNGUYEN": 25_000, "GSILVA": 25_000, "HJOHANSSON": 100_000}


def invoices(world) -> dict[str, dict]:
    """Manual vendor-invoice entries (line 1's fields, the entry's total debits)."""
    led = world.ledger
    led = led.filter(pc.and_(pc.equal(led["source"], "manual"), pc.is_in(led["document_type"], pa.array(["VI", "VN"]))))
    out: dict[str, dict] = {}
    for r in led.to_pylist():
        e = out.setdefault(r["entry_id"], {**r, "total": 0.0})
        e["total"] = round(e["total"] + r["debit"], 2)
    return out


def limits(world) -> dict[str, float]:
    return {u["user_id"]: u["approval_limit"] for u in world.master["users"].to_pylist()}


def rule(world) -> list[list[str]]:
    """Runs of invoices by one preparer for one vendor, each at most three days after the one
    before, together above the preparer's limit."""
    lim = limits(world)
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in invoices(world).values():
        by[(r["preparer"], r["vendor_id"])].append(r)
    out = []
    for (prep, _v), rows in by.items():
        rows.sort(key=lambda r: r["posting_date"])
        run = [rows[0]]
        for r in rows[1:] + [None]:
            if r is not None and (r["posting_date"] - run[-1]["posting_date"]).days <= 3:
                run.append(r)
                continue
            if len(run) >= 2 and sum(x["total"] for x in run) > lim[prep]:
                out.append([x["entry_id"] for x in run])
            run = [r] if r is not None else []
    return out


def test_the_matrix_states_the_users_limits_and_the_rule_on_splitting(worlds):
    for w in worlds.values():
        (matrix,) = [d for d in w.documents if d.doc_type == "policy" and "Approval authority matrix" in d.title]
        for u in w.master["users"].to_pylist():
            if u["role"] in ("AP Clerk", "GL Accountant", "Senior Accountant", "Accounting Manager", "Controller"):
                assert f"USD {u['approval_limit']:,.0f}" in matrix.body
        assert "Splitting" in matrix.body and "one requisition or one vendor quotation" in matrix.body
        assert "approved for its full amount" in matrix.body and "Separate requisitions" in matrix.body


def test_the_brief_names_the_procedure_not_the_documents_that_decide_it():
    from jeval_ray.env import JEEnv

    brief, _ = JEEnv(TASK).reset(seed=0)
    assert "LIMIT_AVOIDANCE" in brief
    for word in ("quotation", "requisition", "same day", "approved in full"):
        assert word not in brief.lower(), word


def test_every_planted_entry_is_a_run_the_rule_catches(worlds):
    kinds = Counter()
    for w in worlds.values():
        runs = rule(w)
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        by_entry = {e: g for g in runs for e in g}
        assert key <= set(by_entry)
        for eid in key:
            g = by_entry[eid]
            assert set(g) <= w.defect_ids or not set(g) & w.defect_ids  # a run is one unit: all defects or none
            assert 2 <= len(g) <= 3
        kinds.update(d.defect_type for d in w.defects)
        kinds.update(d.decoy_type for d in w.decoys)
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
    assert set(kinds) == {"split_purchase", "order_approved_in_full", "separate_purchases"}


def test_defects_and_decoys_share_one_surface():
    """Run sizes, preparers, approvers, vendors, accounts and amounts (as a share of the approver's
    tier) come from one process for defects and decoys."""
    stats = {"defect": Counter(), "decoy": Counter()}
    share = {"defect": [], "decoy": []}
    for s in range(30):
        w = generate_world(TASK, 400 + s)
        inv = invoices(w)
        size = {e: len(g) for g in rule(w) for e in g}
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                r = inv[eid]
                stats[kind][f"size={size[eid]}"] += 1
                for f in ("preparer", "approver", "account"):
                    stats[kind][f"{f}={r[f]}"] += 1
                share[kind].append(r["total"] / TIER[r["approver"]] / 1000)
    for kind in stats:
        n = sum(v for k, v in stats[kind].items() if k.startswith("size="))
        stats[kind] = {k: v / n for k, v in stats[kind].items()}
    for k in set(stats["defect"]) | set(stats["decoy"]):
        assert abs(stats["defect"].get(k, 0) - stats["decoy"].get(k, 0)) < 0.15, k
    assert abs(statistics.fmean(share["defect"]) - statistics.fmean(share["decoy"])) < 0.05


@pytest.mark.parametrize("knobs", [None, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}, {"n_entries": 3000}])
def test_the_rule_catches_the_key_and_only_documented_lookalikes(knobs):
    """Outside the key, the rule catches only the books' own runs: ones whose every approver's
    limit covers the run, or ones whose invoices and purchase orders are in the pack."""
    for s in range(8):
        w = generate_world(TASK, s, knobs)
        inv, lim = invoices(w), limits(w)
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        titles = " | ".join(d.title for d in w.documents)
        for g in rule(w):
            if set(g) & key:
                assert set(g) <= key
                continue
            total = sum(inv[e]["total"] for e in g)
            if min(lim[inv[e]["approver"]] for e in g) < total:
                assert all(f" {inv[e]['reference']} - " in titles for e in g), (s, g)


def test_the_run_rule_is_the_rule_as_written():
    """``runs`` and ``flagged_runs`` (one vectorised pass) agree with the rule read literally: sort each
    preparer's invoices of each vendor by day, cut where the gap exceeds the rule's days, keep runs of two
    or more, flag those whose total exceeds the preparer's limit."""
    import numpy as np

    from jeval_ray.tasks.je05 import RUN_GAP_DAYS, _limits_of, flagged_runs, runs

    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 60))
        prep = rng.choice(np.array(["AKIM", "BOKAFOR", "CLEE"]), n)
        vendor = rng.choice(np.array(["", "V0001", "V0002", "V0003"]), n)
        day = rng.integers(0, 40, n)
        cents = rng.integers(1, 400_000, n)
        limit = {"AKIM": 500_000, "CLEE": 250_000}
        plim = _limits_of(prep, limit)
        assert plim.tolist() == [limit.get(p, 0) for p in prep.tolist()]
        expect = []
        for key in sorted({(p, v) for p, v in zip(prep.tolist(), vendor.tolist()) if v}):
            pos = sorted((int(day[i]), i) for i in range(n) if (prep[i], vendor[i]) == key)
            run = [pos[0][1]]
            for (d0, _), (d1, i) in zip(pos, pos[1:]):
                if d1 - d0 <= RUN_GAP_DAYS:
                    run.append(i)
                else:
                    expect.append(run)
                    run = [i]
            expect.append(run)
        expect = [r for r in expect if len(r) >= 2]
        got = [g.tolist() for g in runs(prep, vendor, day)]
        assert sorted(got) == sorted(expect)
        flagged = [g.tolist() for g in flagged_runs(prep, vendor, day, cents, plim)]
        assert flagged == [g for g in got if int(cents[g].sum()) > plim[g[0]]]


@pytest.mark.parametrize("seed", (54, 423))
def test_purchase_orders_are_raised_on_business_days_of_the_company_calendar(seed):
    """The buyer raises orders on business days of the one company calendar, the holidays of 2024
    included (JE-5 once read only 2025's: on these seeds an order was dated Christmas Day 2024)."""
    orders = [d for d in generate_world("JE-5", seed).documents if d.doc_type == "purchase order"]
    assert orders
    assert [(d.doc_id, d.date) for d in orders if not cal.is_business_day(np.datetime64(d.date[:10]))] == []
