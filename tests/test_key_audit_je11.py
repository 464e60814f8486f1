"""JE-11 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (ledger, master tables, board minutes, approval memos, the contractors' invoices and
fixed-asset register additions a capitalisation rests on), and nothing outside the key breaks a rule
the two policies state."""

from __future__ import annotations

import re

import pytest

from jeval_ray.books import chart, master as md
from jeval_ray.tasks.je11 import DIRECTORS, MEMO_TITLE, PAIR_POLICY_TITLE
from jeval_ray.world import generate_world
from support.je11 import parse_pairs

KEY_SEEDS = range(24)
#: the documented share of the red-flag rule's hits that are not planted (module docstring)
LOOKALIKE_RATE = 0.34
_APPROVED = re.compile(r"RESOLVED that the \w+ be approved|Approved: James Wright, CFO, on")


def _view(w) -> dict:
    lines: dict[str, list[dict]] = {}
    for r in w.ledger.to_pylist():
        lines.setdefault(r["entry_id"], []).append(r)
    heads = {}
    for k, rows in lines.items():
        heads[k] = {**rows[0], "drs": [r["account"] for r in rows if r["debit"]],
                    "crs": [r["account"] for r in rows if r["credit"]], "total": round(sum(r["debit"] for r in rows), 2),
                    "recorded": str(rows[0]["entry_timestamp"].date())}
    register = {r["party"]: r for r in w.master["related_parties"].to_pylist()}
    vendors = {v["vendor_id"]: v for v in w.master["vendors"].to_pylist()}
    pairs = parse_pairs(next(d for d in w.documents if d.title == PAIR_POLICY_TITLE).body)
    approvals = [(d.doc_id, d.date, item) for d in w.documents if d.doc_type == "board_minutes"
                 for item in d.body.split("\n\n")] + [(d.doc_id, d.date, d.body) for d in w.documents
                                                     if d.title == MEMO_TITLE]
    rp_ids = {vid for vid, v in vendors.items() if v["name"] in register}
    return {"lines": lines, "heads": heads, "register": register, "vendors": vendors, "pairs": pairs,
            "approvals": approvals, "rp_ids": rp_ids,
            "users": {u["user_id"]: u for u in w.master["users"].to_pylist()}}


def _is_pair(h: dict, pairs: set) -> bool:
    return h["source"] == "manual" and any((a, c) in pairs for a in h["drs"] for c in h["crs"])


def _prior_approval(v: dict, h: dict) -> list[tuple[str, str, str]]:
    return [(doc, day, text) for doc, day, text in v["approvals"]
            if h["reference"] in text and _APPROVED.search(text) and day < h["recorded"]]


@pytest.fixture(scope="module")
def views():
    return {s: (w, _view(w)) for s in KEY_SEEDS for w in [generate_world("JE-11", s)]}


def test_key_audit_related_party_invoices(views):
    for s, (w, v) in views.items():
        for rec in (*w.defects, *w.decoys):
            h = v["heads"][rec.entry_id]
            if h["vendor_id"] not in v["rp_ids"]:
                continue
            vend = v["vendors"][h["vendor_id"]]
            party = v["register"][vend["name"]]
            # a purchase from an entity on the register, booked as its category allows
            assert h["document_type"] == "VN" and party["party_type"] == "entity"
            allowed = {chart.ACCOUNTS[i].code for i in md.ALLOWED_ACCOUNTS[vend["category"]]}
            assert set(h["drs"]) | set(h["crs"]) <= allowed
            if rec.entry_id in w.defect_ids:
                assert rec.criteria == "RELATED_PARTY" and vend["name"] in rec.facts
                person = next(f for f in rec.facts if f in party["relationship"] and f != vend["name"])
                assert person and not _prior_approval(v, h)
            else:
                (doc, day, text), = _prior_approval(v, h)
                # the board met after the invoice existed and before the entry; the resolution names it
                assert str(h["document_date"]) < day < h["recorded"]
                assert vend["name"] in text and f"USD {h['total']:,.2f}" in text and doc in rec.facts
                minutes = w.document(doc).body
                present = re.search(r"Present: ([^.]+)\.", minutes).group(1)
                assert [p.split(" (")[0] for p in present.split(", ")] == list(DIRECTORS)
                person = re.search(r"(\w+ \w+) declared an interest", text).group(1)
                assert person in party["relationship"]
                if person in DIRECTORS:
                    assert f"with {person} abstaining" in text
                else:  # an officer has no vote
                    assert f"{person}, who attends as an officer and has no vote, having left the meeting" in text
                    assert "abstaining" not in text


def test_key_audit_non_standard_pairings(views):
    for s, (w, v) in views.items():
        tb = {(r["fiscal_period"], r["account"]): r for r in w.master["trial_balance"].to_pylist()}
        # a release never turns the allowance into a debit balance; PP&E keeps its debit balance
        assert tb[(12, "1190")]["closing_balance"] <= 0 and tb[(12, "1500")]["closing_balance"] > 0
        for rec in (*w.defects, *w.decoys):
            h = v["heads"][rec.entry_id]
            if h["vendor_id"] in v["rp_ids"]:
                continue
            kind = (getattr(rec, "defect_type", None) or rec.decoy_type).split(":")[1]
            assert _is_pair(h, v["pairs"]) and h["document_type"] != "AL"
            # manual entries are approved by another user whose limit covers them (the approval matrix holds)
            assert h["approver"] != h["preparer"] and v["users"][h["approver"]]["approval_limit"] >= h["total"]
            if kind == "manual_revenue":
                # a manual journal booking a customer invoice, keyed after the invoice date by staff who may post it
                assert h["document_type"] == "TS" and h["reference"].startswith("CI-")
                assert h["drs"] == ["1100"] and "4000" in h["crs"] and h["recorded"] > str(h["posting_date"])
                assert "TS" in v["users"][h["preparer"]]["may_post"]
            else:
                assert h["document_type"] == "TS" and str(h["posting_date"]) == "2025-12-31"
                assert (h["drs"], h["crs"]) == ((["1500"], ["6600"]) if kind == "capitalised_expense"
                                                else (["1190"], ["6500"]))
            if rec.entry_id in w.defect_ids:
                unsupported = rec.defect_type == "unusual_pairing_unsupported:capitalised_expense"
                assert rec.criteria == "UNUSUAL_PAIRING" and bool(_prior_approval(v, h)) == unsupported
                assert rec.facts[0] in h["drs"] and rec.facts[1] in h["crs"] and f"{h['total']:.2f}" in rec.facts
            else:
                (doc, day, text), = _prior_approval(v, h)
                assert str(h["document_date"]) <= day < h["recorded"]
                assert f"Debit {h['drs'][0]}" in text and f"USD {h['total']:,.2f}" in text and "Reason:" in text


def test_key_audit_nothing_outside_the_key_breaks_a_stated_rule(views):
    for s, (w, v) in views.items():
        keyed = w.defect_ids | {c.entry_id for c in w.decoys}
        # the register holds directors' and officers' entities, the parent and a shareholder: no customer, no grant body
        assert {r["party_type"] for r in v["register"].values()} <= {"entity", "parent", "shareholder"}
        for eid, h in v["heads"].items():
            if eid in keyed:
                continue
            # no other transaction with a related party: only the payments that settled planted invoices
            if h["vendor_id"] in v["rp_ids"]:
                assert h["document_type"] == "VP"
            # no other manual non-standard combination, the allowance review aside (policy section 6.2)
            if _is_pair(h, v["pairs"]):
                assert h["document_type"] == "AL" and h["drs"] == ["1190"] and h["crs"] == ["6500"]
            # manual entries follow the approval matrix
            if h["source"] == "manual" and h["approver"]:
                assert h["approver"] != h["preparer"]
        for rec in w.defects:
            assert rec.criteria == ("RELATED_PARTY" if v["heads"][rec.entry_id]["vendor_id"] in v["rp_ids"]
                                    else "UNUSUAL_PAIRING")


def test_key_audit_lookalike_rate():
    """The share of the red-flag rule's hits that are unplanted look-alikes, over seeds 0-49."""
    hits = unplanted = 0
    for s in range(50):
        w = generate_world("JE-11", s)
        v = _view(w)
        keyed = w.defect_ids | {c.entry_id for c in w.decoys}
        rule = {k for k, h in v["heads"].items()
                if (h["vendor_id"] in v["rp_ids"] and h["document_type"] in ("VN", "VI")) or _is_pair(h, v["pairs"])}
        assert keyed <= rule
        hits += len(rule)
        unplanted += len(rule - keyed)
    assert unplanted / hits == pytest.approx(LOOKALIKE_RATE, abs=0.02), unplanted / hits


def _capital_basis(w, v: dict, h: dict) -> tuple[dict, str | None]:
    """A capitalisation's basis as the pack shows it: the contractor's invoice the memo (or, without a memo,
    the register addition) names, read against the ledger, and why section 6.1.1 is not met (None: it is)."""
    memo = next((t for _d, _day, t in v["approvals"] if h["reference"] in t and "Debit 1500" in t), None)
    adds = [d for d in w.documents if d.doc_type == "asset_register"]
    ref = re.search(r"on invoice (VN-\d+)", memo).group(1) if memo else None
    inv = next(d for d in w.documents if d.doc_type == "invoice" and (ref is None or d.title.startswith(
        f"Vendor invoice {ref} - ")) and f"USD {h['total']:,.2f}" in d.body)
    ref = ref or re.search(r"posted as (VN-\d+)", inv.body).group(1)
    bill = next(b for b in v["heads"].values() if b["reference"] == ref)
    # the invoice is one of the year's repairs bills: its vendor, its amount, posted to repairs
    assert bill["document_type"] == "VN" and bill["drs"] == ["6600"] and bill["total"] == h["total"]
    assert f"our vendor no. {bill['vendor_id']})" in inv.body
    assert f"posted as {ref} on {bill['posting_date']}" in inv.body
    assert v["vendors"][bill["vendor_id"]]["category"] == "maintenance"
    improves = bool(re.search(r"replaced with new units of higher capacity, extending its useful life by \d+ years",
                              inv.body))
    restores = "after a breakdown" in inv.body and "restoring normal operation" in inv.body
    assert improves != restores, inv.body
    added = [d for d in adds if f"per invoice {ref} of" in d.body and f"Cost: USD {h['total']:,.2f}," in d.body]
    why = "a repair" if restores else None if added else "no register addition"
    return {"invoice": inv.doc_id, "additions": [d.doc_id for d in added], "memo": memo}, why


def test_key_audit_capitalisations_rest_on_their_basis(views):
    """Every capitalisation of repairs, defect or decoy, has the contractor's invoice behind one of the year's
    repairs bills, and (but where its absence is the defect) the register's addition at that cost: the same
    kinds of documents. A decoy's invoice bills an improvement and the register adds it; a defect approved
    beforehand bills a repair, or the register holds no addition; an unapproved one may rest on either."""
    seen = {"decoy": 0, "a repair": 0, "no register addition": 0, "unapproved": 0}
    for s, (w, v) in views.items():
        for rec in (*w.defects, *w.decoys):
            kind = getattr(rec, "defect_type", None) or rec.decoy_type
            if not kind.endswith(":capitalised_expense"):
                continue
            h = v["heads"][rec.entry_id]
            basis, why = _capital_basis(w, v, h)
            if kind == "unusual_pairing_approved:capitalised_expense":
                assert why is None and basis["memo"] and len(basis["additions"]) == 1, (s, rec.entry_id)
                assert {basis["invoice"], *basis["additions"]} <= set(rec.clearing_evidence) & set(rec.facts)
                seen["decoy"] += 1
            elif kind == "unusual_pairing_unsupported:capitalised_expense":
                assert why is not None and _prior_approval(v, h), (s, rec.entry_id)
                assert basis["invoice"] in rec.required_evidence and basis["invoice"] in rec.facts
                seen[why] += 1
            else:
                assert why is None and len(basis["additions"]) == 1, (s, rec.entry_id)  # approval is what it lacks
                seen["unapproved"] += 1
    assert all(seen.values()), seen
