"""JE-11 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (ledger, master tables, board minutes, approval memos), and nothing outside the key
breaks a rule the two policies state."""

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
                assert rec.criteria == "UNUSUAL_PAIRING" and not _prior_approval(v, h)
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
