"""JE-14 (estimate releases): the planted world, its decisive facts and the extent of the naive rule (what
every task promises is tests/test_task_contract.py)."""

from __future__ import annotations

import pytest

from jeval_ray.tasks.je14 import ALLOWANCE, BAD_DEBT, POLICY_TITLE
from conftest import check_naive_flags_only_the_key
from support.je14 import after_close, closes, entries, memo_terms, open_items, receipts, shortfall
from support.worlds import world as cached_world

TASK = "JE-14"
SEEDS = range(5)


# ---------------------------------------------------------------------------- the planted world
@pytest.mark.parametrize("seed", SEEDS)
def test_defects_are_year_end_post_closing_releases_the_open_items_and_receipts_contradict(seed):
    w = cached_world(TASK, seed)
    ents, close = entries(w), closes(w)
    assert w.defects
    for d in w.defects:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)
        assert e["source"] == "manual" and e["document_type"] == "AL" and e["preparer"] == "HJOHANSSON"
        assert e["approver"] in ("IBROWN", "JWRIGHT") and after_close(e, close)
        memo, report, cash, policy, cal = d.required_evidence
        assert cal == "master:calendar" and w.document(policy).title == POLICY_TITLE
        assert w.document(memo).doc_type == "memo" and w.document(report).doc_type == "aging_report"
        assert w.document(cash).doc_type == "cash_receipts" and e["reference"] in w.document(memo).body
        held, required, got, unpaid, release, short = shortfall(w, memo, report)
        assert release == pytest.approx(e["amount"]) and short == pytest.approx(d.misstatement, abs=0.01)
        assert d.misstatement > w.facts["clearly_trivial"] and unpaid > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_decoys_look_the_same_but_the_open_items_and_receipts_support_them(seed):
    w = cached_world(TASK, seed)
    ents, close = entries(w), closes(w)
    for d in w.decoys:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and e["document_type"] == "AL"
        assert e["preparer"] == "HJOHANSSON" and after_close(e, close)
        memo, report = d.clearing_evidence[:2]
        assert shortfall(w, memo, report)[5] <= 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_no_other_allowance_release_is_keyed_after_the_close(seed):
    w = cached_world(TASK, seed)
    ents, close = entries(w), closes(w)
    planted = {d.entry_id for d in w.defects} | {d.entry_id for d in w.decoys}
    late_releases = {k for k, e in ents.items() if (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)
                     and e["source"] == "manual" and after_close(e, close)}
    assert late_releases == planted


def test_no_document_speaks_of_a_misstatement(worlds):
    """The key's own word (the other words that name the key: tests/test_task_contract.py)."""
    for w in worlds.values():
        assert "misstatement" not in " ".join(f"{d.title} {d.body}" for d in w.documents).lower()


# ---------------------------------------------------------------------------- the built-in agents
def test_naive_flags_every_release_and_nothing_else(worlds):
    check_naive_flags_only_the_key(TASK, worlds)


# ---------------------------------------------------------------------------- the facts
@pytest.mark.parametrize("seed", SEEDS)
def test_decisive_facts_are_in_the_evidence(seed):
    """The facts are the figures the documents print: the reserve held and the release (memo), the open
    amount of each covered invoice still open at the year end (report), each receipt on them after it
    (listing), the shortfall of a defect, and the invoices in the memo's order."""
    w = cached_world(TASK, seed)
    for rec in (*w.defects, *w.decoys):
        ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
        held, inv, release = memo_terms(w, ev[0])
        still = open_items(w, ev[1])
        paid = [a for _r, day, _c, i, a in receipts(w) if i in inv and i in still]
        figures = {f"{x:.2f}" for x in (held, release, *(still[i] for i in inv if i in still), *paid)}
        stated = {f for f in rec.facts if not f.startswith("CI-")}
        assert figures <= stated and stated <= figures | {f"{getattr(rec, 'misstatement', -1):.2f}"}
        assert [f for f in rec.facts if f.startswith("CI-")] == inv
        if hasattr(rec, "misstatement"):
            assert f"{rec.misstatement:.2f}" in rec.facts
            assert rec.misstatement == pytest.approx(shortfall(w, ev[0], ev[1])[5])
