"""JE-11 (related parties and non-standard pairings): the planted world obeys the rule, the base is
clean, the board minutes clear exactly the decoys (what every task promises, the built-in agents
included, is tests/test_task_contract.py)."""

from __future__ import annotations

import re

import pytest

from jeval_ray.tasks.je11 import MEMO_TITLE, PAIR_POLICY_TITLE, RP_POLICY_TITLE
from jeval_ray.world import generate_world
from support.worlds import world as cached_world
from support.je11 import parse_pairs

#: the answer key is audited over more seeds than the task contract reads one by one (a world takes ~20 ms)
KEY_SEEDS = range(16)


def _heads(world) -> dict[str, dict]:
    """Entry id -> its first line, with its debit and credit accounts and its total debit."""
    out: dict[str, dict] = {}
    for r in world.ledger.to_pylist():
        h = out.setdefault(r["entry_id"], {**r, "drs": [], "crs": [], "total": 0.0})
        (h["drs"] if r["debit"] else h["crs"]).append(r["account"])
        h["total"] = round(h["total"] + r["debit"], 2)
    return out


def _pair(h: dict, pairs: set) -> tuple[str, str] | None:
    hit = sorted((a, c) for a in h["drs"] for c in h["crs"] if (a, c) in pairs)
    return hit[0] if hit else None


def _rule(world) -> set[str]:
    """Entries with a related vendor or manual entries with a pairing listed in the policy (the red-flag rule)."""
    names = {r["party"] for r in world.master["related_parties"].to_pylist()}
    rp_ids = {v["vendor_id"] for v in world.master["vendors"].to_pylist() if v["name"] in names}
    policy = next(d for d in world.documents if d.title == PAIR_POLICY_TITLE)
    pairs = parse_pairs(policy.body)
    assert len(pairs) == 3
    return {eid for eid, h in _heads(world).items()
            if h["vendor_id"] in rp_ids or (h["source"] == "manual" and _pair(h, pairs))}


def _items(world) -> list[tuple[str, str, str]]:
    """(doc id, date, text) of every board-minutes item and every CFO approval memo."""
    return [(d.doc_id, d.date, item) for d in world.documents if d.doc_type == "board_minutes"
            for item in d.body.split("\n\n")] + [(d.doc_id, d.date, d.body) for d in world.documents
                                                  if d.title == MEMO_TITLE]


def _approved(item: str) -> bool:
    return bool(re.search(r"RESOLVED that the \w+ be approved|Approved: James Wright, CFO, on", item))


@pytest.fixture(scope="module", params=list(KEY_SEEDS))
def world(request):
    return cached_world("JE-11", request.param)


def test_rule_hits_the_planted_entries_and_only_honest_lookalikes(world):
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    assert world.defects and world.decoys
    hits = _rule(world)
    assert planted <= hits
    heads = _heads(world)
    rp_invoices = {heads[e]["reference"] for e in planted if heads[e]["document_type"] == "VN"}
    for eid in hits - planted:
        h = heads[eid]
        # the payments of the planted related-party invoices, or the monthly allowance review's releases
        assert (h["document_type"] == "VP" and any(r in h["description"] for r in rp_invoices)) or (
            h["document_type"] == "AL" and h["drs"] == ["1190"] and h["crs"] == ["6500"]), h


def test_defects_have_no_approval_and_decoys_are_approved_before_the_entry(world):
    heads = _heads(world)
    items = _items(world)
    rp = next(d.doc_id for d in world.documents if d.title == RP_POLICY_TITLE)
    pair = next(d.doc_id for d in world.documents if d.title == PAIR_POLICY_TITLE)
    for d in world.defects:
        h = heads[d.entry_id]
        recorded = str(h["entry_timestamp"].date())
        assert d.entry_id in d.required_evidence
        approved = any(h["reference"] in text and _approved(text) and day < recorded for _doc, day, text in items)
        # approved beforehand only where the capitalisation lacks its basis (the key audit reads the basis)
        assert approved == (d.defect_type == "unusual_pairing_unsupported:capitalised_expense"), d.defect_type
        if d.defect_type == "related_party_unapproved":
            assert d.criteria == "RELATED_PARTY" and h["document_type"] == "VN"
            assert {"master:related_parties", rp} <= set(d.required_evidence)
            # the vendor is on the register, and the interested person named there is a decisive fact
            reg = {r["party"]: r["relationship"] for r in world.master["related_parties"].to_pylist()}
            name = next(v["name"] for v in world.master["vendors"].to_pylist() if v["vendor_id"] == h["vendor_id"])
            assert name in d.facts and any(f in reg[name] for f in d.facts if f not in (name,) and not f[0].isdigit())
        else:
            assert d.criteria == "UNUSUAL_PAIRING" and h["source"] == "manual" and h["document_type"] != "AL"
            assert d.defect_type.startswith(("unusual_pairing_unapproved", "unusual_pairing_unsupported"))
            assert pair in d.required_evidence
            assert d.facts[0] in h["drs"] and d.facts[1] in h["crs"]
        assert f"{h['total']:.2f}" in d.facts
        # minutes or memos that discuss the entry without approving it in time are part of its proof
        discussed = {doc for doc, _day, text in items if h["reference"] in text}
        basis = {x.doc_id for x in world.documents if x.doc_type in ("invoice", "asset_register")}
        assert discussed == {e for e in d.required_evidence if e.startswith("DOC-")} - {rp, pair} - basis
    for c in world.decoys:
        h = heads[c.entry_id]
        doc = c.clearing_evidence[0]
        hits = [(day, text) for did, day, text in items if did == doc and h["reference"] in text]
        assert len(hits) == 1 and _approved(hits[0][1])
        day, text = hits[0]
        assert f"USD {h['total']:,.2f}" in text  # the approval states the amount posted
        assert str(h["document_date"]) <= day < str(h["entry_timestamp"].date())  # prior approval, not before the document
        assert doc in c.facts and day in c.facts and f"{h['total']:.2f}" in c.facts
        if c.decoy_type == "related_party_approved":
            assert str(h["document_date"]) < day  # the invoice existed when the board approved it
            # only directors vote: an interested director abstains; an officer has no vote and leaves the room
            person = next(p for p in ("Margaret Osei", "Robert Hale", "Priya Raman", "Thomas Becker", "James Wright",
                                      "Isabel Brown") if f"{p} declared an interest" in text)
            director = person not in ("James Wright", "Isabel Brown")
            assert (f"with {person} abstaining" in text) == director
            assert director or f"{person}, who attends as an officer and has no vote, having left" in text
            assert "master:related_parties" in c.clearing_evidence
        else:
            assert pair in c.clearing_evidence and h["source"] == "manual" and h["document_type"] != "AL"
            assert c.facts[2] in h["drs"] and c.facts[3] in h["crs"]
            assert f"Debit {c.facts[2]}" in text and f"Credit {c.facts[3]}" in text


def test_board_minutes_are_dated_in_the_years_around_the_audit(world):
    minutes = [d for d in world.documents if d.doc_type == "board_minutes"]
    assert all(d.date[:4] in ("2024", "2025", "2026") for d in minutes)


def test_defects_and_decoys_share_one_listing_surface():
    """The kind of a candidate (related vendor or listed pairing) does not predict its label, and
    within a kind the invoice and posting dates are drawn alike (tests/test_adversarial.py trains a
    classifier on the whole listing)."""
    rows = []  # (is defect, related-party kind, document lag)
    for seed in range(100, 130):
        w = generate_world("JE-11", seed)
        heads = _heads(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            kind = (getattr(rec, "defect_type", None) or rec.decoy_type).startswith("related_party")
            rows.append((rec.entry_id in w.defect_ids, kind, (h["entry_timestamp"].date() - h["document_date"]).days))

    def mean(xs):
        return sum(xs) / len(xs)

    share = {bad: mean([r[1] for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(share[True] - share[False]) < 0.2, share  # about 3.5 standard errors at this sample size
    lag = {bad: mean([r[2] for r in rows if r[0] == bad and r[1]]) for bad in (True, False)}
    assert abs(lag[True] - lag[False]) < 3.0, lag
