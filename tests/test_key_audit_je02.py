"""JE-2 key audit: the facts the key rationale relies on, read from the world as the agent sees it
(ledger headers, ``master:users``, the approval policy and the journal vouchers), over many seeds.

An auditor signs the key only if: every entry the ERP shows approved by its preparer is a manual
entry keyed by a person and has a journal voucher that describes it (reference, amount, accounts,
preparer, release date) and is dated no earlier than the document it approves and no later than
the release; a decoy's voucher is signed by someone else, no later than the release, whose limit
covers the amount; each defect's voucher fails exactly the condition its type names; and nothing
outside the key breaks the policy (every other manual entry approved by another person whose
limit covers it, for a vendor invoice its total payable; automated postings carry no approver but
the payroll register's).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.world import generate_world

TASK = "JE-2"
AUDIT_SEEDS = range(20, 50)
_SIGNED = re.compile(r"Approved by: ([A-Z_]+) \(.*?\), signed (\d{4}-\d\d-\d\d)")


def test_key_audit_vouchers_and_limits_decide_every_self_release():
    kinds = set()
    for seed in AUDIT_SEEDS:
        w = generate_world(TASK, seed)
        led = w.ledger
        heads = {r["entry_id"]: r for r in led.filter(pc.equal(led["line_no"], 1)).select(
            ["entry_id", "document_type", "source", "preparer", "approver", "reference", "document_date",
             "entry_timestamp"]).to_pylist()}
        for t in led.group_by("entry_id").aggregate([("debit", "sum")]).to_pylist():
            heads[t["entry_id"]]["total_debit"] = heads[t["entry_id"]]["approved"] = round(t["debit_sum"], 2)
        # a vendor invoice's approval covers its total payable (a favourable price variance adds a debit)
        ap = led.filter(pc.and_(pc.equal(led["account"], "2000"), pc.greater(led["credit"], 0)))
        for t in ap.group_by("entry_id").aggregate([("credit", "sum")]).to_pylist():
            if heads[t["entry_id"]]["document_type"] in ("VI", "VN"):
                heads[t["entry_id"]]["approved"] = round(t["credit_sum"], 2)
        # the key entries' main debit and credit accounts: each side's largest line
        main = {}
        key_ids = pa.array(sorted(w.defect_ids | {d.entry_id for d in w.decoys}))
        for r in led.filter(pc.is_in(led["entry_id"], value_set=key_ids)).select(
                ["entry_id", "account", "debit", "credit"]).to_pylist():
            for side in ("debit", "credit"):
                if r[side] > main.get((r["entry_id"], side), (0.0, ""))[0]:
                    main[(r["entry_id"], side)] = (r[side], r["account"])
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        policy = next(d for d in w.documents if d.title == "Journal entry approval policy (FIN-POL-012)")
        key = {r.entry_id: r for r in (*w.defects, *w.decoys)}
        # nothing outside the key breaks the policy
        for eid, h in heads.items():
            if eid in key:
                continue
            if h["source"] == "manual":
                assert h["approver"] not in ("", h["preparer"]), (seed, eid)
                assert users[h["approver"]]["approval_limit"] >= h["approved"] - 1e-9, (seed, eid)
            elif h["document_type"] != "PR":
                assert h["approver"] == "", (seed, eid)
        assert {k for k, h in heads.items() if h["approver"] and h["approver"] == h["preparer"]} == set(key)
        for eid, r in key.items():
            h = heads[eid]
            amount, keyed, dated = h["total_debit"], str(h["entry_timestamp"].date()), str(h["document_date"])
            assert h["source"] == "manual" and users[h["preparer"]]["role"] != "System"
            evidence = r.required_evidence if eid in w.defect_ids else r.clearing_evidence
            assert policy.doc_id in evidence
            vouchers = [w.document(x) for x in evidence if x.startswith("DOC-")
                        and w.document(x).doc_type == "journal_voucher"]
            assert len(vouchers) == 1
            v = vouchers[0]
            # the voucher describes this entry and is dated between its document and its release
            assert h["reference"] in v.title and eid in v.body and f"USD {amount:,.2f}," in v.body
            assert f"debit {main[(eid, 'debit')][1]} / credit {main[(eid, 'credit')][1]}" in v.body
            assert f"Prepared by: {h['preparer']} (" in v.body and f"by the preparer on {keyed};" in v.body
            assert dated <= v.date <= keyed
            m = _SIGNED.search(v.body)
            if m:
                assert m.group(2) >= v.date, "a signature is not dated before the voucher it signs"
            if eid not in w.defect_ids:
                signer, signed = m.group(1), m.group(2)
                assert signer != h["preparer"] and signed <= keyed and users[signer]["approval_limit"] >= amount
                assert r.facts[1:] == (signer, signed, f"{users[signer]['approval_limit']:.2f}")
                continue
            kinds.add(r.defect_type)
            if r.defect_type == "no_independent_approval":
                assert m is None and "signed by the preparer only" in v.body
            elif r.defect_type == "approved_after_posting":
                assert m.group(1) != h["preparer"] and m.group(2) > keyed
                assert users[m.group(1)]["approval_limit"] >= amount  # only the date fails
            else:
                assert r.defect_type == "approver_limit_below_amount"
                assert m.group(1) != h["preparer"] and m.group(2) <= keyed  # only the limit fails
                assert 0 < users[m.group(1)]["approval_limit"] < amount
    assert kinds == {"no_independent_approval", "approved_after_posting", "approver_limit_below_amount"}
