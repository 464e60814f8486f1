"""JE-14 (estimate releases): the planted world and the built-in agents."""

from __future__ import annotations

import re

import pyarrow.compute as pc
import pytest

from jeval_ray.episode import play
from jeval_ray.tasks.je14 import ALLOWANCE, BAD_DEBT, POLICY_TITLE
from jeval_ray.world import generate_world

SEEDS = range(5)


def _entries(w) -> dict[str, dict]:
    """Entry headers with their debit and credit accounts."""
    out: dict[str, dict] = {}
    for r in w.ledger.to_pylist():
        e = out.setdefault(r["entry_id"], {**r, "dr": None, "cr": None})
        if r["debit"]:
            e["dr"], e["amount"] = r["account"], r["debit"]
        if r["credit"]:
            e["cr"] = r["account"]
    return out


def _closes(w) -> dict[str, str]:
    cal = w.master["calendar"].to_pylist()
    return {r["description"].split()[-1]: r["date"] for r in cal if r["kind"] == "period_close"}


def _after_close(e: dict, closes: dict[str, str]) -> bool:
    return e["entry_timestamp"].date().isoformat() > closes[e["posting_date"].isoformat()[:7]]


def _unsupported(w, e: dict, memo_id: str, aging_id: str, policy_id: str) -> float:
    """The allowance's shortfall after the release (required - (held - release)), recomputed from the documents."""
    policy = w.document(policy_id).body
    r91 = int(re.search(r"(\d+)% of the balance 91-180 days", policy).group(1)) / 100
    r180 = int(re.search(r"(\d+)% of the balance more than 180 days", policy).group(1)) / 100
    memo = w.document(memo_id).body
    held = float(re.search(r"held before this entry: USD ([\d,.]+\d)", memo).group(1).replace(",", ""))
    customer = re.search(r"held against (.+?) \(C\d+\)", memo).group(1)
    row = next(line for line in w.document(aging_id).body.splitlines() if line.startswith(customer + " ("))
    cells = [float(c.strip().replace(",", "")) for c in row.split("|")[1:]]
    required = r91 * cells[4] + r180 * cells[5]
    return round(max(0.0, required - (held - e["amount"])), 2)


# ---------------------------------------------------------------------------- the planted world
@pytest.mark.parametrize("seed", SEEDS)
def test_defects_are_top_side_post_closing_releases_the_documents_contradict(seed):
    w = generate_world("JE-14", seed)
    ents, closes = _entries(w), _closes(w)
    for d in w.defects:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)
        assert e["source"] == "manual" and e["document_type"] == "SA" and e["preparer"] in ("IBROWN", "JWRIGHT")
        assert _after_close(e, closes)
        memo, aging, policy, cal = d.required_evidence
        assert cal == "master:calendar" and w.document(policy).title == POLICY_TITLE
        assert w.document(memo).doc_type == "memo" and w.document(aging).doc_type == "aging_report"
        assert e["reference"] in w.document(memo).body
        assert _unsupported(w, e, memo, aging, policy) == pytest.approx(d.misstatement, abs=0.01)
        assert d.misstatement > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_decoys_look_the_same_but_the_documents_support_them(seed):
    w = generate_world("JE-14", seed)
    ents, closes = _entries(w), _closes(w)
    for d in w.decoys:
        e = ents[d.entry_id]
        assert (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT) and e["document_type"] == "SA"
        assert e["preparer"] in ("IBROWN", "JWRIGHT") and _after_close(e, closes)
        memo, aging, policy = d.clearing_evidence
        assert _unsupported(w, e, memo, aging, policy) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_base_population_holds_no_other_release_and_nothing_entered_after_close(seed):
    w = generate_world("JE-14", seed)
    ents, closes = _entries(w), _closes(w)
    planted = {d.entry_id for d in w.defects} | {d.entry_id for d in w.decoys}
    releases = {k for k, e in ents.items() if (e["dr"], e["cr"]) == (ALLOWANCE, BAD_DEBT)}
    late = {k for k, e in ents.items() if _after_close(e, closes)}
    assert releases == planted and late == planted


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
def test_release_amounts_come_from_one_distribution():
    """Every release's amount is drawn before it is made a defect or a decoy: across many seeds the
    amounts of defects and decoys overlap (rank AUC near 0.5), so the listing's amount decides nothing."""
    dfx, dcx = [], []
    for s in range(300, 350):
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
    ents = _entries(w)
    for rec in (*w.defects, *w.decoys):
        ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
        memo, aging, policy = (w.document(x) for x in ev[:3])
        held, b91, b180, rate, required, release = rec.facts[:6]
        assert f"held before this entry: USD {float(held):,.2f}" in memo.body
        row = next(ln for ln in aging.body.splitlines() if re.search(r"\(C\d+\)", ln) and ln.split(" (")[0] in memo.body)
        cells = [c.strip().replace(",", "") for c in row.split("|")]
        assert (float(cells[5]), float(cells[6])) == (float(b91), float(b180))
        assert f"{rate} of the balance 91-180 days" in policy.body
        assert float(required) == pytest.approx(int(rate[:-1]) / 100 * float(b91) + float(b180), abs=0.01)
        assert float(release) == pytest.approx(ents[rec.entry_id]["amount"])
        if hasattr(rec, "misstatement"):
            assert float(rec.facts[6]) == pytest.approx(rec.misstatement)
            assert rec.misstatement == pytest.approx(float(required) - (float(held) - float(release)), abs=0.01)
        else:
            assert float(held) - float(release) >= float(required)
