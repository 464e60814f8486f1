"""JE-12 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the listing, the master tables, the documents of the pack).

* the analytics plan's tests, computed from the listing with ``compute_stats``' own baseline,
  select every planted entry (robust z above 6 in its account's manual population);
* a defect's source document (the books' own) shows another amount than the entry's and the same
  account; the entry is that amount with one keying slip; the invoice's payment, where made in
  the year, paid the document's amount; an accrual's reversal mirrors the amount keyed;
* a decoy's source document shows the entry's amount and account; its payment pays that amount;
* every other entry the tests select (a genuine look-alike) has its source document in the pack,
  and it agrees with the entry: nothing outside the key breaks the plan's vouching rule;
* approvals: every planted entry is approved by someone other than its preparer whose limit covers it.
"""

from __future__ import annotations

import re
from collections import Counter

import pyarrow.compute as pc
import pytest

from jeval_ray.tools._tools import ComputeStatsArgs, EpisodeState, Filter, compute_stats
from jeval_ray.tasks import je12
from jeval_ray.world import generate_world

SEEDS = range(20)
_USD = re.compile(r"USD (-?[\d,]+\.\d\d)")
_ACCOUNT = re.compile(r"^Account: (\d{4})", re.M)


@pytest.fixture(scope="module")
def worlds():
    return [generate_world("JE-12", s) for s in SEEDS]


@pytest.fixture(scope="module")
def views(worlds):
    return {w.seed: _view(w) for w in worlds}


def _view(w) -> tuple[dict, dict]:
    """(entry id -> first-line row of every entry, entry id -> (z, selected)) of the manual population."""
    st = EpisodeState(w, ("OUTLIER",))
    manual = Filter(column="source", op="eq", value="manual")
    groups = compute_stats(st, ComputeStatsArgs(filters=[manual], group_by="account", top_z=0))["groups"]
    first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1))
    heads = {r["entry_id"]: r for r in first.to_pylist()}
    rows = [r for r in heads.values() if r["source"] == "manual"]
    users = Counter(r["preparer"] for r in rows)
    pairs = Counter((r["preparer"], r["account"]) for r in rows)
    sel = {}
    for r in rows:
        g = groups[r["account"]]
        z = (r["debit"] - g["median"]) / (je12.SCALE * g["mad"]) if g["n"] >= je12.MIN_POP and g.get("mad") else 0.0
        single = pairs[(r["preparer"], r["account"])] == 1 and users[r["preparer"]] - 1 >= je12.MIN_USER
        sel[r["entry_id"]] = (z, z > je12.AMOUNT_Z or (single and z > je12.FLOW_Z))
    return heads, sel


def _source(w, ref: str):
    docs = [d for d in w.documents if re.search(rf"\b{re.escape(ref)}\b", d.title)]
    assert len(docs) <= 1, ref
    return docs[0] if docs else None


def _figures(body: str) -> list[float]:
    return [float(x.replace(",", "")) for x in _USD.findall(body)]


def _amount(body: str) -> float:
    return float(re.search(r"^Amount: USD ([\d,]+\.\d\d)", body, re.M).group(1).replace(",", ""))


def _one_slip(true: float, keyed: float) -> bool:
    """``keyed`` is ``true`` with one digit typed twice, the first two swapped or the first mistyped."""
    t, k = f"{true:.2f}", f"{keyed:.2f}"
    if len(k) == len(t) + 1:
        return any(k == t[:i + 1] + t[i] + t[i + 1:] for i in range(len(t) - 3))
    if len(k) == len(t):
        return (k == t[1] + t[0] + t[2:]) or (k[1:] == t[1:] and k[0] > t[0])
    return False


def _follow_ups(heads: dict, ref: str) -> list[dict]:
    """The payments and reversals whose description names document ``ref``."""
    index = heads.get("_follow_ups")
    if index is None:
        index = {}
        for r in list(heads.values()):
            if r["document_type"] in ("VP", "RV"):
                for m in re.findall(r"\b(?:VN|VI|AC)-\d+\b", r["description"]):
                    index.setdefault(m, []).append(r)
        heads["_follow_ups"] = index
    return index.get(ref, [])


def test_key_audit_the_plan_selects_every_planted_entry(worlds, views):
    for w in worlds:
        heads, sel = views[w.seed]
        for rec in (*w.defects, *w.decoys):
            z, selected = sel[rec.entry_id]
            assert selected and z > je12.AMOUNT_Z, (w.seed, rec.entry_id, z)


def test_key_audit_defects_are_what_vouching_proves_wrong(worlds, views):
    users = {u["user_id"]: u for u in worlds[0].master["users"].to_pylist()}
    for w in worlds:
        heads, _ = views[w.seed]
        plan = next(d.doc_id for d in w.documents if d.title == je12.PLAN_TITLE)
        for d in w.defects:
            h = heads[d.entry_id]
            doc = _source(w, h["reference"])
            assert d.defect_type == "keying_error" and d.criteria == "OUTLIER"
            assert doc is not None and set(d.required_evidence) == {doc.doc_id, plan}
            true = _amount(doc.body)
            assert true != pytest.approx(h["debit"]) and _one_slip(true, h["debit"]), (w.seed, true, h["debit"])
            assert _ACCOUNT.search(doc.body).group(1) == h["account"]
            assert f"({h['vendor_id']})" in doc.body and doc.date <= str(h["posting_date"])
            assert d.misstatement == pytest.approx(h["debit"] - true)
            assert {doc.doc_id, f"{true:.2f}", f"{h['debit']:.2f}"} <= set(d.facts)
            for f in _follow_ups(heads, h["reference"]):
                # the payment run paid what the vendor billed; the accrual's reversal mirrors the amount keyed
                assert f["debit"] == pytest.approx(true if f["document_type"] == "VP" else h["debit"]), (w.seed, f)
            assert h["approver"] != h["preparer"] and users[h["approver"]]["approval_limit"] >= h["debit"]


def test_key_audit_decoys_vouch_clean(worlds, views):
    users = {u["user_id"]: u for u in worlds[0].master["users"].to_pylist()}
    for w in worlds:
        heads, _ = views[w.seed]
        plan = next(d.doc_id for d in w.documents if d.title == je12.PLAN_TITLE)
        for c in w.decoys:
            h = heads[c.entry_id]
            doc = _source(w, h["reference"])
            assert c.decoy_type == "outlier_vouched_amount" and doc is not None
            assert set(c.clearing_evidence) == {doc.doc_id, plan}
            assert _amount(doc.body) == pytest.approx(h["debit"]) and _ACCOUNT.search(doc.body).group(1) == h["account"]
            # the same vendor, dated no later than the entry: the document is the one behind this entry
            assert f"({h['vendor_id']})" in doc.body and doc.date <= str(h["posting_date"])
            assert {doc.doc_id, f"{h['debit']:.2f}", h["account"]} <= set(c.facts)
            for f in _follow_ups(heads, h["reference"]):
                assert f["debit"] == pytest.approx(h["debit"]), (w.seed, f)  # paid in full / reversed in full
            assert h["approver"] != h["preparer"] and users[h["approver"]]["approval_limit"] >= h["debit"]


def test_key_audit_nothing_outside_the_key_fails_the_vouching_rule(worlds, views):
    """Every genuine entry the tests select has its source document in the pack, which supports the
    first-line amount and (where it names one) the account: a careful auditor clears it."""
    n_look_alikes = []
    for w in worlds:
        heads, sel = views[w.seed]
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        others = [eid for eid, (_z, s) in sel.items() if s and eid not in key]
        n_look_alikes.append(len(others))
        for eid in others:
            h = heads[eid]
            doc = _source(w, h["reference"])
            assert doc is not None, (w.seed, eid, h["reference"])
            assert any(abs(f - h["debit"]) < 0.005 for f in _figures(doc.body)), (w.seed, eid, doc.body)
            m = _ACCOUNT.search(doc.body)
            assert m is None or m.group(1) == h["account"], (w.seed, eid)
    # the tests do catch genuine entries (issue 14's natural noise), as the module docstring states
    assert sum(n_look_alikes) / len(n_look_alikes) >= 5, n_look_alikes
