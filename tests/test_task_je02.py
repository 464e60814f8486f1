"""JE-2 (self-approved manual entries): the key an auditor would reach and the extent of the naive rule
(what every task promises is tests/test_task_contract.py).

The checks read the visible world only (ledger lines, ``master:users``, the vouchers), independently
of the task module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import re

import pyarrow.compute as pc

from jeval_ray.world import generate_world
from conftest import check_naive_flags_only_the_key

TASK = "JE-2"
SEEDS = range(5)
_SIGNED = re.compile(r"Approved by: ([A-Z_]+) \(.*?\), signed (\d{4}-\d\d-\d\d)")


def headers(world) -> dict[str, dict]:
    """One row per entry (its debit line carries the header fields)."""
    led = world.ledger
    return {r["entry_id"]: r for r in led.filter(pc.equal(led["line_no"], 1)).to_pylist()}


def voucher(world, record):
    evidence = record.required_evidence if hasattr(record, "required_evidence") else record.clearing_evidence
    return next(world.document(e) for e in evidence if e.startswith("DOC-") and world.document(e).doc_type == "journal_voucher")


def test_the_rule_catches_exactly_the_planted_manual_entries(worlds):
    for w in worlds.values():
        h = headers(w)
        tripped = {k for k, r in h.items() if r["approver"] and r["approver"] == r["preparer"]}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        roles = {u["user_id"]: u["role"] for u in w.master["users"].to_pylist()}
        assert all(h[k]["source"] == "manual" and roles[h[k]["preparer"]] != "System" for k in tripped)
        # automated postings carry no approver, except payroll journals (their register's approver)
        assert not any(r["approver"] for r in h.values() if r["source"] == "automated" and r["document_type"] != "PR")
        assert all(r["approver"] not in ("", r["preparer"]) for r in h.values() if r["document_type"] == "PR")


def test_the_key_follows_from_the_vouchers_and_the_user_master(worlds):
    kinds = set()
    for w in worlds.values():
        h = headers(w)
        limit = {u["user_id"]: u["approval_limit"] for u in w.master["users"].to_pylist()}

        def valid(eid: str, doc) -> bool:
            m = _SIGNED.search(doc.body)
            if m is None:
                return False
            r = h[eid]
            keyed = str(r["entry_timestamp"].date())
            return m.group(1) != r["preparer"] and m.group(2) <= keyed and limit[m.group(1)] >= r["debit"]

        for d in w.decoys:
            doc = voucher(w, d)
            assert valid(d.entry_id, doc) and h[d.entry_id]["reference"] in doc.title
            policy = [e for e in d.clearing_evidence if e.startswith("DOC-") and w.document(e).doc_type == "policy"]
            assert len(policy) == 1 and set(d.clearing_evidence) == {doc.doc_id, policy[0], "master:users"}
        for d in w.defects:
            assert not valid(d.entry_id, voucher(w, d)) and d.criteria == "SELF_APPROVAL"
            assert h[d.entry_id]["reference"] in voucher(w, d).title  # a voucher each, decoy or defect
            kinds.add(d.defect_type)
    assert kinds == {"no_independent_approval", "approved_after_posting", "approver_limit_below_amount"}


def test_no_voucher_gives_a_reason_the_ledger_contradicts():
    """Why the workflow was not used fits the day of the release, read from the listing alone: a
    signer said to be travelling approved nothing in the ERP that day, nobody approved in the ERP on
    the day of an outage, the close meeting falls between a month's last day and its close (the
    5th business day), and a deputy signs for an approver on leave. Once the reason was drawn at random
    and a third of the decoys' vouchers said the approver was away on a day he or she approved
    other entries in the ERP."""
    import numpy as np

    from jeval_ray.books import master as md

    closes = [(np.datetime64(int(end) - 1, "D"), np.datetime64(int(c), "D"))
              for end, c in zip(md.MONTH_ENDS, md.close_dates())]
    seen = set()
    for seed in range(0, 40):
        w = generate_world(TASK, seed)
        h = headers(w)
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        erp = {(r["approver"], r["entry_timestamp"].date()) for k, r in h.items() if r["approver"] and k not in planted}
        for rec in [*w.defects, *w.decoys]:
            r, body = h[rec.entry_id], voucher(w, rec).body
            day = r["entry_timestamp"].date()
            reason = re.search(r"workflow not used: (.*)\.\n", body).group(1)
            m = _SIGNED.search(body)
            signer = m.group(1) if m else None
            if reason.startswith("approver travelling"):
                seen.add("travel")
                assert signer is None or (signer, day) not in erp, (seed, rec.entry_id, reason, signer)
            elif reason.startswith("workflow outage"):
                seen.add("outage")
                assert not any(d == day for _, d in erp), (seed, rec.entry_id, reason)
            elif reason.startswith("month-end close"):
                seen.add("close")
                assert any(a <= np.datetime64(day) <= b for a, b in closes), (seed, rec.entry_id, day)
            elif reason.startswith("approver on leave"):
                seen.add("leave")
            else:
                assert reason.startswith("workflow routed the entry back"), reason
                seen.add("misrouted")
    assert seen == {"travel", "outage", "close", "leave", "misrouted"}


def test_decisive_facts_are_stated_in_the_needed_evidence(worlds):
    for w in worlds.values():
        h = headers(w)
        limit = {u["user_id"]: u["approval_limit"] for u in w.master["users"].to_pylist()}
        # an entry's amount is its total debits (a matched invoice with a price variance debits two lines)
        total: dict[str, float] = {}
        for row in w.ledger.select(["entry_id", "debit"]).to_pylist():
            total[row["entry_id"]] = round(total.get(row["entry_id"], 0.0) + row["debit"], 2)
        for r in (*w.defects, *w.decoys):
            doc = voucher(w, r)
            assert r.facts[0] == doc.doc_id
            for f in r.facts[1:]:
                if re.fullmatch(r"[\d.]+", f):  # an amount: the signer's limit (user master) or the entry's amount
                    assert float(f) in {limit.get(r.facts[1]), total[r.entry_id]}, (r, f)
                else:
                    assert f in doc.body or f == str(h[r.entry_id]["entry_timestamp"].date()), (r, f)


def test_naive_flags_nothing_but_the_key(worlds):
    check_naive_flags_only_the_key(TASK, worlds)
