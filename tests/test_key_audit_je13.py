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

from jeval_ray.tools._tools import digit_test
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


def _guide_selection(w) -> tuple[set[int], dict[int, list]]:
    """The guide applied as written: the first-digit test of the population and of every preparer with at
    least ``MIN_TEST`` entries (steps 1, 2 and 4); the population's over-represented digits traced to the
    preparers whose own test over-represents them, and the entries of every preparer whose own test
    over-represents a digit selected (step 5). Returns (selected entry ids, the population's excess digits
    with the preparers each is traced to)."""
    first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1)).to_pylist()
    manual = [r for r in first if r["source"] == "manual" and r["debit"] >= 10]

    def hot(rows) -> set[int]:
        test = digit_test(np.array([r["debit"] for r in rows]), "first")
        if "distribution" not in test:  # fewer than MIN_TEST entries: too small to test (step 2)
            return set()
        z = je13.digit_z(np.array([test["distribution"][str(d)]["count"] for d in range(1, 10)]), test["n"])
        return set((np.flatnonzero(z > je13.Z_SELECT) + 1).tolist())

    by_user = defaultdict(list)
    for r in manual:
        by_user[r["preparer"]].append(r)
    hot_by_user = {u: hot(rows) for u, rows in by_user.items()}
    traced = {d: sorted(u for u, ds in hot_by_user.items() if d in ds) for d in hot(manual)}
    selected = {r["entry_id"] for u, rows in by_user.items() for r in rows if _first(r["debit"]) in hot_by_user[u]}
    return selected, traced


def test_key_audit_the_guide_as_written_selects_the_key_and_clean_entries(worlds):
    """Every selection rule the guide states, applied literally: the selected entries' exceptions (no
    source document in the pack, or a document that does not bear the amount keyed: step 6) are exactly
    the key's defects, and everything else selected vouches clean. The population test selects nothing
    by itself (step 5), which is what keeps other preparers' undocumented entries out of the selection."""
    guide = next(d for d in worlds[0][0].documents if d.title == je13.GUIDE_TITLE).body
    # the rules this test applies are the guide's words (a guide that selects by the population again fails here)
    for rule in ("tested per preparer (user id) and for all preparers together",
                 f"fewer than {je13.MIN_TEST} entries are too small to test",
                 f"z exceeds {je13.Z_SELECT:.0f}",
                 "The population test is the baseline",
                 "traced to the preparers behind it",
                 "Entries are selected only from a preparer whose own test over-represents a digit",
                 "A population excess that no preparer's own test shows selects nothing",
                 "Vouch each selected entry to its source document",
                 "selected entries that disagree or have no source document are reported"):
        assert rule in guide, rule
    population_excess = 0
    for w, (heads, selected_by_view, _pay) in worlds:
        selected, traced = _guide_selection(w)
        assert selected == selected_by_view, w.seed
        population_excess += bool(traced)
        exceptions, clean = set(), set()
        for eid in selected:
            doc = _source(w, heads[eid]["reference"])
            figures = [float(x.replace(",", "")) for x in _USD.findall(doc.body)] if doc else []
            (clean if any(abs(f - heads[eid]["debit"]) < 0.005 for f in figures) else exceptions).add(eid)
        assert exceptions == w.defect_ids, (w.seed, sorted(exceptions ^ w.defect_ids))
        assert {d.entry_id for d in w.decoys} <= clean, w.seed
        # a population excess in a world with a scheme is the clerk's digit 4, traced to the clerk
        clerk = {heads[d.entry_id]["preparer"] for d in w.defects}
        if 4 in traced:
            assert clerk <= set(traced[4]), (w.seed, traced)
    assert population_excess >= 2  # the population rule is exercised, not vacuous
