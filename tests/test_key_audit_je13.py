"""JE-13 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the listing, master:users, the documents of the pack).

* the guide's digit test, computed from the listing as ``compute_stats`` counts it, selects every
  planted entry (the scheme clerk's leading 4 is over-represented);
* a defect's source document (the books' own vendor invoice) bills less than the amount keyed, the
  amount keyed sits just under the clerk's USD 5,000 threshold (``master:users``), and the invoice's
  payment, where made in the year, paid the billed amount;
* a decoy's source document bills the amount keyed and its payment pays it;
* every other entry the test selects has its source document in the pack and agrees with it, and
  nothing is approved by its preparer or above its approver's limit.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.env._tools import digit_test
from jeval_ray.tasks import je13
from jeval_ray.world import generate_world

SEEDS = range(20)
_USD = re.compile(r"USD (-?[\d,]+\.\d\d)")


def _first(a: float) -> int:
    return int(f"{a:.2f}".lstrip("0.")[0])


def _view(w):
    """(heads of every entry by id, selected manual entry ids, payments by the invoice they name)."""
    first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1)).to_pylist()
    heads = {r["entry_id"]: r for r in first}
    by_user = defaultdict(list)
    for r in first:
        if r["source"] == "manual" and r["debit"] >= 10:
            by_user[r["preparer"]].append(r)
    selected = set()
    for rows in by_user.values():
        test = digit_test(np.array([r["debit"] for r in rows]), "first")
        if "distribution" not in test:
            continue
        z = je13.digit_z(np.array([test["distribution"][str(d)]["count"] for d in range(1, 10)]), test["n"])
        hot = set((np.flatnonzero(z > je13.Z_SELECT) + 1).tolist())
        selected |= {r["entry_id"] for r in rows if _first(r["debit"]) in hot}
    payments = defaultdict(list)
    for r in first:
        if r["document_type"] == "VP":
            for ref in re.findall(r"\b(?:VN|VI)-\d+\b", r["description"]):
                payments[ref].append(r)
    return heads, selected, payments


@pytest.fixture(scope="module")
def worlds():
    return [(w, _view(w)) for w in (generate_world("JE-13", s) for s in SEEDS)]


def _source(w, ref: str):
    docs = [d for d in w.documents if re.search(rf"\b{re.escape(ref)}\b", d.title)]
    assert len(docs) <= 1, ref
    return docs[0] if docs else None


def _amount(body: str) -> float:
    return float(re.search(r"^Amount: USD ([\d,]+\.\d\d)", body, re.M).group(1).replace(",", ""))


def test_key_audit_the_digit_test_selects_every_planted_entry(worlds):
    for w, (_heads, selected, _pay) in worlds:
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        assert planted and planted <= selected, (w.seed, sorted(planted - selected))


def test_key_audit_defects_are_keyed_above_what_the_vendor_billed(worlds):
    for w, (heads, _sel, payments) in worlds:
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        for d in w.defects:
            h = heads[d.entry_id]
            doc = _source(w, h["reference"])
            assert doc is not None and doc.doc_id in d.required_evidence and "master:users" in d.required_evidence
            billed = _amount(doc.body)
            assert f"({h['vendor_id']})" in doc.body and doc.date <= str(h["posting_date"])
            assert billed < h["debit"] < users[h["preparer"]]["approval_limit"] <= 5_000, (w.seed, billed, h)
            assert h["debit"] >= 0.9 * users[h["preparer"]]["approval_limit"]
            assert d.misstatement == pytest.approx(h["debit"] - billed)
            assert {f"{h['debit']:.2f}", f"{billed:.2f}", doc.doc_id, h["preparer"]} <= set(d.facts)
            for p in payments.get(h["reference"], []):
                assert p["debit"] == pytest.approx(billed), (w.seed, p)  # the payment run paid what was billed


def test_key_audit_decoys_vouch_clean(worlds):
    for w, (heads, _sel, payments) in worlds:
        for c in w.decoys:
            h = heads[c.entry_id]
            doc = _source(w, h["reference"])
            assert doc is not None and c.clearing_evidence == (doc.doc_id,)
            assert _amount(doc.body) == pytest.approx(h["debit"])
            assert f"({h['vendor_id']})" in doc.body and doc.date <= str(h["posting_date"])
            assert {f"{h['debit']:.2f}", doc.doc_id} <= set(c.facts)
            for p in payments.get(h["reference"], []):
                assert p["debit"] == pytest.approx(h["debit"]), (w.seed, p)


def test_key_audit_nothing_outside_the_key_fails_the_guide(worlds):
    """Every other selected entry vouches clean to its source document in the pack; approvals hold."""
    counts = []
    for w, (heads, selected, _pay) in worlds:
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        others = selected - key
        counts.append(len(others))
        for eid in others:
            h = heads[eid]
            doc = _source(w, h["reference"])
            assert doc is not None, (w.seed, eid)
            figures = [float(x.replace(",", "")) for x in _USD.findall(doc.body)]
            assert any(abs(f - h["debit"]) < 0.005 for f in figures), (w.seed, eid, doc.body)
        for eid in key:
            h = heads[eid]
            assert h["approver"] != h["preparer"] and users[h["approver"]]["approval_limit"] >= h["debit"]
    assert sum(counts) / len(counts) >= 2, counts  # genuine entries are selected too (the docstring's rate)
