"""JE-11 (related parties and non-standard pairings): the planted world obeys the rule, the base is
clean, the board minutes clear exactly the decoys, and the built-in agents discriminate."""

from __future__ import annotations

import re
import statistics

import pytest

from jeval_ray.episode import play
from jeval_ray.tasks.je11 import PAIR_POLICY_TITLE, RP_POLICY_TITLE, parse_pairs
from jeval_ray.world import generate_world

SEEDS = range(5)
#: the answer key is audited over more seeds than the agents play (a world takes ~20 ms)
KEY_SEEDS = range(16)


def _heads(world) -> dict[str, dict]:
    """Entry id -> its debit line, with the credit account added."""
    out = {}
    for r in world.ledger.to_pylist():
        if r["line_no"] == 1:
            out.setdefault(r["entry_id"], {}).update(r)
        else:
            out.setdefault(r["entry_id"], {})["credit_account"] = r["account"]
    return out


def _rule(world) -> set[str]:
    """Entries with a related vendor or a pairing listed in the policy (the red-flag rule)."""
    names = {r["party"] for r in world.master["related_parties"].to_pylist()}
    rp_ids = {v["vendor_id"] for v in world.master["vendors"].to_pylist() if v["name"] in names}
    policy = next(d for d in world.documents if d.title == PAIR_POLICY_TITLE)
    pairs = parse_pairs(policy.body)
    assert len(pairs) >= 4
    return {eid for eid, h in _heads(world).items()
            if h["vendor_id"] in rp_ids or (h["account"], h["credit_account"]) in pairs}


def _items(world) -> list[tuple[str, str, str]]:
    """(doc id, meeting date, item text) of every board-minutes item."""
    return [(d.doc_id, d.date, item) for d in world.documents if d.doc_type == "board_minutes"
            for item in d.body.split("\n\n")]


def _approved(item: str) -> bool:
    return bool(re.search(r"RESOLVED that the \w+ be approved", item))


@pytest.fixture(scope="module", params=list(KEY_SEEDS))
def world(request):
    return generate_world("JE-11", request.param)


def test_rule_hits_exactly_the_planted_entries(world):
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    assert world.defects and world.decoys
    assert _rule(world) == planted  # the base population never trips the rule


def test_defects_have_no_approval_and_decoys_are_approved_before_posting(world):
    heads = _heads(world)
    items = _items(world)
    rp = next(d.doc_id for d in world.documents if d.title == RP_POLICY_TITLE)
    pair = next(d.doc_id for d in world.documents if d.title == PAIR_POLICY_TITLE)
    for d in world.defects:
        h = heads[d.entry_id]
        assert d.entry_id in d.required_evidence
        assert not any(h["reference"] in text and _approved(text) for _doc, _day, text in items)
        if d.defect_type == "related_party_unapproved":
            assert d.criteria == "RELATED_PARTY"
            assert {"master:related_parties", rp} <= set(d.required_evidence)
            # the vendor is on the register, and the interested person named there is a decisive fact
            reg = {r["party"]: r["relationship"] for r in world.master["related_parties"].to_pylist()}
            name = next(v["name"] for v in world.master["vendors"].to_pylist() if v["vendor_id"] == h["vendor_id"])
            assert name in d.facts and any(f in reg[name] for f in d.facts if f not in (name,) and not f[0].isdigit())
        else:
            assert d.criteria == "UNUSUAL_PAIRING"
            assert d.defect_type.startswith("unusual_pairing_unapproved") and pair in d.required_evidence
            assert h["account"] in d.facts and h["credit_account"] in d.facts
        assert f"{h['debit']:.2f}" in d.facts
        # minutes that discuss the entry without approving it are part of its proof
        discussed = {doc for doc, _day, text in items if h["reference"] in text}
        assert discussed == {e for e in d.required_evidence if e.startswith("DOC-")} - {rp, pair}
    for c in world.decoys:
        h = heads[c.entry_id]
        doc = c.clearing_evidence[0]
        hits = [(day, text) for did, day, text in items if did == doc and h["reference"] in text]
        assert len(hits) == 1 and _approved(hits[0][1])
        day, text = hits[0]
        assert f"USD {h['debit']:,.2f}" in text  # the minutes state the amount posted
        assert day < str(h["posting_date"])  # prior approval
        assert doc in c.facts and day in c.facts and f"{h['debit']:.2f}" in c.facts
        if c.decoy_type == "related_party_approved":
            assert str(h["document_date"]) < day  # the invoice existed when the board approved it
            # an interested director abstains; an officer has no vote and leaves the room
            person = next(p for p in ("Margaret Osei", "Robert Hale", "Priya Raman", "Thomas Becker", "James Wright",
                                      "Isabel Brown") if f"{p} declared an interest" in text)
            director = person not in ("James Wright", "Isabel Brown")
            assert (f"with {person} abstaining" in text) == director
        assert ("master:related_parties" if c.decoy_type == "related_party_approved" else pair) in c.clearing_evidence


def test_documents_do_not_give_the_game_away(world):
    for d in world.documents:
        assert not re.search(r"decoy|defect|planted|red flag|exception", d.title + d.body, re.I)
    minutes = [d for d in world.documents if d.doc_type == "board_minutes"]
    assert all(d.date[:4] in ("2024", "2025") for d in minutes)


@pytest.fixture(scope="module")
def results():
    return {(a, s): play("JE-11", a, s) for a in ("random", "naive", "careful") for s in SEEDS}


def test_careful_solves_every_seed_and_naive_is_fooled(results):
    for s in SEEDS:
        c = results[("careful", s)]
        assert c.score.outcome >= 0.95, (s, c.score.verification)
        assert c.termination == "submitted" and c.score.verification.fabrications == 0
        assert c.score.verification.premature_disposition == 0
        assert results[("naive", s)].score.outcome < 0.9
    mean = {a: statistics.fmean(results[(a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"], mean


def test_defects_and_decoys_share_one_listing_surface():
    """The kind of a candidate (related vendor or listed pairing) does not predict its label, and
    within a kind the invoice and posting dates are drawn alike (tests/test_leak_probe.py trains a
    classifier on the whole listing)."""
    rows = []  # (is defect, related-party kind, document lag)
    for seed in range(100, 130):
        w = generate_world("JE-11", seed)
        heads = _heads(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            kind = (getattr(rec, "defect_type", None) or rec.decoy_type).startswith("related_party")
            rows.append((rec.entry_id in w.defect_ids, kind, (h["posting_date"] - h["document_date"]).days))

    def mean(xs):
        return sum(xs) / len(xs)

    share = {bad: mean([r[1] for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(share[True] - share[False]) < 0.2, share  # about 3.5 standard errors at this sample size
    lag = {bad: mean([r[2] for r in rows if r[0] == bad and r[1]]) for bad in (True, False)}
    assert abs(lag[True] - lag[False]) < 3.0, lag


def test_careful_states_the_decisive_facts(results):
    for s in SEEDS:
        assert results[("careful", s)].score.rationale >= 0.95, s


def test_careful_without_search_documents():
    o = play("JE-11", "careful", 2, tools_withheld=("search_documents",))
    assert o.score.outcome >= 0.95
