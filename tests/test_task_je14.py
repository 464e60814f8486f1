"""JE-14 (estimate releases): the planted world and the built-in agents."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from jeval_ray.episode import play
from jeval_ray.tasks.je14 import ALLOWANCE, BAD_DEBT, POLICY_TITLE
from jeval_ray.world import generate_world
from support.je14 import after_close, closes, entries, memo_terms, shortfall

SEEDS = range(5)


# ---------------------------------------------------------------------------- the planted world
@pytest.mark.parametrize("seed", SEEDS)
def test_defects_are_top_side_post_closing_releases_the_open_items_contradict(seed):
    w = generate_world("JE-14", seed)
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
    w = generate_world("JE-14", seed)
    ents, close = entries(w), closes(w)
    for d in w.decoys:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and e["document_type"] == "AL"
        assert e["preparer"] == "HJOHANSSON" and after_close(e, close)
        memo, report, _policy = d.clearing_evidence
        assert shortfall(w, memo, report)[3] <= 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_no_other_allowance_release_is_keyed_after_the_close(seed):
    w = generate_world("JE-14", seed)
    ents, close = entries(w), closes(w)
    planted = {d.entry_id for d in w.defects} | {d.entry_id for d in w.decoys}
    late_releases = {k for k, e in ents.items() if (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)
                     and e["source"] == "manual" and after_close(e, close)}
    assert late_releases == planted


def test_documents_say_nothing_about_the_answer_key():
    w = generate_world("JE-14", 1)
    text = " ".join(f"{d.title} {d.body}" for d in w.documents).lower()
    for word in ("decoy", "defect", "planted", "red flag", "exception", "unsupported", "misstatement"):
        assert word not in text


# ---------------------------------------------------------------------------- the built-in agents
@pytest.fixture(scope="module")
def runs():
    return {a: [play("JE-14", a, s) for s in SEEDS] for a in ("random", "naive", "careful")}


def test_careful_solves_every_seed_with_the_right_amounts(runs):
    for o in runs["careful"]:
        v = o.score.verification
        assert o.score.outcome >= 0.95, (o.seed, v)
        assert v.misstatement_error == pytest.approx(0.0, abs=1e-6) and v.evidence_coverage == 1.0


def test_naive_flags_every_release_and_loses_to_careful(runs):
    for o in runs["naive"]:
        v = o.score.verification
        assert v.recall == 1.0 and v.fp == len(generate_world("JE-14", o.seed).decoys), (o.seed, v)
    mean = {a: sum(o.score.score for o in rs) / len(rs) for a, rs in runs.items()}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean


def test_careful_states_the_decisive_facts(runs):
    for o in runs["careful"]:
        assert o.score.rationale >= 0.95, (o.seed, o.score.rationale)
        assert o.score.process >= 0.95, (o.seed, o.score.process)


# ---------------------------------------------------------------------------- the surface and the facts
def test_release_amounts_overlap_between_defects_and_decoys():
    """Across many seeds the released amounts of defects and decoys overlap (rank AUC near 0.5): the
    listing's amount decides nothing."""
    dfx, dcx = [], []
    for s in range(300, 340):
        w = generate_world("JE-14", s)
        first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1))
        amount = dict(zip(first.column("entry_id").to_pylist(), first.column("debit").to_pylist()))
        assert all(amount[d.entry_id] > 0 for d in w.defects)
        dfx += [amount[d.entry_id] for d in w.defects]
        dcx += [amount[d.entry_id] for d in w.decoys]
    auc = sum((a > b) + 0.5 * (a == b) for a in dfx for b in dcx) / (len(dfx) * len(dcx))
    assert 0.4 <= auc <= 0.6, auc


@pytest.mark.parametrize("seed", SEEDS)
def test_decisive_facts_are_in_the_evidence(seed):
    w = generate_world("JE-14", seed)
    for rec in (*w.defects, *w.decoys):
        ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
        held, required, release, short = shortfall(w, ev[0], ev[1])
        # facts are deduplicated: a full release states the same figure as the reserve held
        assert {f"{x:.2f}" for x in (held, required, release)} <= set(rec.facts)
        invoices = [f for f in rec.facts if f.startswith("CI-")]
        assert invoices == memo_terms(w, ev[0])[1]
        if hasattr(rec, "misstatement"):
            assert f"{rec.misstatement:.2f}" in rec.facts and rec.misstatement == pytest.approx(short)
