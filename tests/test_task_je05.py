"""JE-5 (approval-limit avoidance): planting, the clean base, determinism and the built-in agents.

The red-flag rule is re-implemented here from the visible world only (ledger lines, ``master:users``
and the support pack), independently of the task module, so a planting bug cannot hide behind the
same code in the test.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter, defaultdict

import pytest

from jeval_ray.world import generate_world
from conftest import check_naive_and_careful

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
    fee = re.search(r"fixed price of USD ([\d,]+\.\d\d)", body)
    term = re.search(r"Term: (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)", body)
    vendor = re.search(r"vendor no\. (V\d+)", body)
    return {"fee": float(fee.group(1).replace(",", "")), "start": dt.date.fromisoformat(term.group(1)),
            "end": dt.date.fromisoformat(term.group(2)), "vendor": vendor.group(1)}


def contracts(world) -> dict[str, dict]:
    return {d.doc_id: contract_terms(d.body) for d in world.documents if d.doc_type == "contract"}


def covered(world, row: dict) -> list[str]:
    """Statements of work fixing exactly this entry's amount for its vendor over its posting date."""
    return [k for k, c in contracts(world).items() if c["vendor"] == row["vendor_id"]
            and abs(c["fee"] - row["debit"]) < 0.005 and c["start"] <= row["posting_date"] <= c["end"]]


def invoice_of(world, row: dict):
    """The vendor invoice in the pack titled with the entry's reference, and its purchase order."""
    (doc,) = [d for d in world.documents if d.title.startswith(f"Invoice {row['reference']} - ")]
    po, total = re.search(r"(PO-\d+) \(order total USD ([\d,]+\.\d\d)", doc.body).groups()
    # the invoice the entry was keyed from: its date is the entry's document date, its amount the entry's
    assert f"Invoice date: {row['document_date']}" in doc.body and f"Amount due: USD {row['debit']:,.2f}" in doc.body
    ordered = re.search(r"raised on (\d{4}-\d\d-\d\d)", doc.body).group(1)
    assert ordered < row["document_date"].isoformat()
    return doc, po, float(total.replace(",", "")), "Partial invoice" in doc.body


def test_users_carry_approval_limits_and_the_matrix_states_them(worlds):
    for w in worlds.values():
        for u in w.master["users"].to_pylist():
            if u["role"] in ROLE_LIMITS:
                assert u["approval_limit"] == ROLE_LIMITS[u["role"]]
        matrix = [d for d in w.documents if d.doc_type == "policy" and "Approval authority matrix" in d.title]
        assert len(matrix) == 1
        assert "90% or more" in matrix[0].body and "Splitting" in matrix[0].body and "USD 25,000" in matrix[0].body
        assert "one purchase order" in matrix[0].body and "term covering the date" in matrix[0].body


def test_defects_satisfy_the_rule_and_their_evidence_proves_the_exception(worlds):
    kinds = set()
    for w in worlds.values():
        heads, band, lim = manual_heads(w), near_limit(w), limits(w)
        splits = {eid: g for g in split_groups(w) for eid in g}
        matrix = next(d.doc_id for d in w.documents if "Approval authority matrix" in d.title)
        for d in w.defects:
            r = heads[d.entry_id]
            assert d.criteria == "LIMIT_AVOIDANCE"
            assert {matrix, "master:users"} <= set(d.required_evidence)
            if d.defect_type == "near_limit":
                assert d.entry_id in band and not covered(w, r)
                # the vendor's statement of work is read and fixes another price
                (sow,) = set(d.required_evidence) - {matrix, "master:users"}
                assert contracts(w)[sow]["vendor"] == r["vendor_id"] and contracts(w)[sow]["fee"] != r["debit"]
                assert {r["preparer"], f"{lim[r['preparer']]:.2f}", f"{r['debit']:.2f}", sow} <= set(d.facts)
            else:
                assert d.defect_type == "split_entry"
                group = splits[d.entry_id]
                assert set(group) <= w.defect_ids
                total = sum(heads[g]["debit"] for g in group)
                # one purchase order for the total, above the preparer's and the reviewer's limits
                doc, po, order_total, partial = invoice_of(w, r)
                assert partial and order_total == pytest.approx(total) and doc.doc_id in d.required_evidence
                assert {invoice_of(w, heads[g])[1] for g in group} == {po}
                assert total > lim[r["preparer"]] and lim[r["approver"]] < total
                assert r["approver"] != r["preparer"] and lim[r["approver"]] >= r["debit"]
                assert {po, f"{total:.2f}", f"{lim[r['preparer']]:.2f}", doc.doc_id} <= set(d.facts)
            assert d.misstatement == pytest.approx(r["debit"])
            kinds.add(d.defect_type)
    assert kinds == {"near_limit", "split_entry"}


def test_decoys_are_cleared_by_a_fixed_price_or_separate_orders(worlds):
    kinds = set()
    for w in worlds.values():
        heads, band = manual_heads(w), near_limit(w)
        splits = {eid: g for g in split_groups(w) for eid in g}
        docs = {d.doc_id: d for d in w.documents}
        vendors = {v["vendor_id"]: v["name"] for v in w.master["vendors"].to_pylist()}
        for d in w.decoys:
            r = heads[d.entry_id]
            if d.decoy_type == "contract_fixed_price":
                assert d.entry_id in band
                cleared_by = covered(w, r)
                assert len(cleared_by) == 1 and cleared_by[0] in d.clearing_evidence
                sow = docs[cleared_by[0]]
                assert vendors[r["vendor_id"]] in sow.title and sow.date < r["posting_date"].isoformat()
                assert {sow.doc_id, f"{r['debit']:.2f}", r["vendor_id"]} <= set(d.facts)
            else:
                assert d.decoy_type == "separate_purchases"
                group = splits[d.entry_id]
                assert set(group) <= {x.entry_id for x in w.decoys}
                doc, po, order_total, partial = invoice_of(w, r)
                assert not partial and order_total == pytest.approx(r["debit"]) and doc.doc_id in d.clearing_evidence
                assert len({invoice_of(w, heads[g])[1] for g in group}) == len(group)
                assert {po, f"{r['debit']:.2f}", doc.doc_id} <= set(d.facts)
            kinds.add(d.decoy_type)
    assert kinds == {"contract_fixed_price", "separate_purchases"}


def test_defects_and_decoys_share_one_surface():
    """Shapes, preparers, vendors, accounts, reviewers and amounts (as a share of the preparer's
    limit) come from one distribution; every single's vendor has a statement of work on file."""
    stats = {"defect": Counter(), "decoy": Counter()}
    share = {"defect": [], "decoy": []}
    for s in range(30):
        w = generate_world(TASK, 400 + s)
        heads, lim = manual_heads(w), limits(w)
        in_group = {e for g in split_groups(w) for e in g}
        titles = [d.title for d in w.documents if d.doc_type == "contract"]
        vendors = {v["vendor_id"]: v["name"] for v in w.master["vendors"].to_pylist()}
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                r = heads[eid]
                stats[kind]["group" if eid in in_group else "single"] += 1
                stats[kind][r["preparer"]] += 1
                stats[kind][r["account"]] += 1
                if eid not in in_group:
                    assert any(t.endswith(f"- {vendors[r['vendor_id']]}") for t in titles)
                    share[kind].append(r["debit"] / lim[r["preparer"]])
    for kind in stats:
        n = stats[kind]["group"] + stats[kind]["single"]
        stats[kind] = {k: v / n for k, v in stats[kind].items()}
    for k in ("group", "AKIM", "DPATEL", "FNGUYEN", "6400", "6600"):
        assert abs(stats["defect"].get(k, 0) - stats["decoy"].get(k, 0)) < 0.12, k
    assert abs(statistics.fmean(share["defect"]) - statistics.fmean(share["decoy"])) < 0.02


@pytest.mark.parametrize("knobs", [None, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}, {"n_entries": 3000}])
def test_base_population_never_trips_the_rule(knobs):
    for s in range(12):
        w = generate_world(TASK, s, knobs)
        tripped = near_limit(w) | {e for g in split_groups(w) for e in g}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}


def test_naive_is_the_surface_rule_and_careful_reads_the_documents():
    check_naive_and_careful(TASK)