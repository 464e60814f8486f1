"""JE-14 (estimate releases): the planted world, its decisive facts and the extent of the naive rule (what
every task promises is tests/test_task_contract.py)."""

from __future__ import annotations

import pytest

from jeval_ray.tasks.je14 import ALLOWANCE, BAD_DEBT, POLICY_TITLE
from conftest import check_naive_flags_only_the_key
from support.je14 import after_close, closes, entries, memo_terms, shortfall
from support.worlds import world as cached_world

TASK = "JE-14"
SEEDS = range(5)


# ---------------------------------------------------------------------------- the planted world
@pytest.mark.parametrize("seed", SEEDS)
def test_defects_are_top_side_post_closing_releases_the_open_items_contradict(seed):
    w = cached_world(TASK, seed)
    ents, close = entries(w), closes(w)
    assert w.defects
    for d in w.defects:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)
        assert e["source"] == "manual" and e["document_type"] == "AL" and e["preparer"] == "HJOHANSSON"
        assert e["approver"] in ("IBROWN", "JWRIGHT") and after_close(e, close)
        memo, report, policy, cal = d.required_evidence
        assert cal == "master:calendar" and w.document(policy).title == POLICY_TITLE
        assert w.document(memo).doc_type == "memo" and w.document(report).doc_type == "aging_report"
        assert e["reference"] in w.document(memo).body
        held, required, release, short = shortfall(w, memo, report)
        assert release == pytest.approx(e["amount"]) and short == pytest.approx(d.misstatement, abs=0.01)
        assert d.misstatement > 0 and required > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_decoys_look_the_same_but_the_open_items_support_them(seed):
    w = cached_world(TASK, seed)
    ents, close = entries(w), closes(w)
    for d in w.decoys:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and e["document_type"] == "AL"
        assert e["preparer"] == "HJOHANSSON" and after_close(e, close)
        memo, report, _policy = d.clearing_evidence
        assert shortfall(w, memo, report)[3] <= 0.0


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
    w = cached_world(TASK, seed)
    for rec in (*w.defects, *w.decoys):
        ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
        held, required, release, short = shortfall(w, ev[0], ev[1])
        # facts are deduplicated: a full release states the same figure as the reserve held
        assert {f"{x:.2f}" for x in (held, required, release)} <= set(rec.facts)
        invoices = [f for f in rec.facts if f.startswith("CI-")]
        assert invoices == memo_terms(w, ev[0])[1]
        if hasattr(rec, "misstatement"):
            assert f"{rec.misstatement:.2f}" in rec.facts and rec.misstatement == pytest.approx(short)
