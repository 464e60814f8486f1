"""JE-3 (postings to accounts not open at the posting date): the key, the changed accounts decoys share
with defects, and the extent of the naive rule (what every task promises is tests/test_task_contract.py).

The checks read the visible world only (ledger lines, ``master:accounts``, ``master:calendar``),
independently of the task module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import pytest

from jeval_ray.agents import entries_of
from support.worlds import played, world as cached_world

TASK = "JE-3"
SEEDS = range(5)
PARITY_SEEDS = range(100, 220)


def entries(world) -> dict[str, dict]:
    rows = [{**r, "posting_date": str(r["posting_date"]), "keyed": str(r["entry_timestamp"].date())}
            for r in world.ledger.to_pylist()]
    return entries_of(rows)


def chart(world) -> dict[str, dict]:
    return {a["account"]: a for a in world.master["accounts"].to_pylist()}


def changed(acct: dict) -> bool:
    return acct["opened"] >= "2025-01-01" or bool(acct["closed"]) or acct["status"] != "active"


def _valid(a: dict, day: str) -> bool:
    return a["opened"] <= day and (not a["closed"] or day <= a["closed"])


def test_the_rule_catches_the_planted_entries_and_only_valid_postings_besides(worlds):
    """Besides the key, the rule catches the other postings of the changed accounts' streams (each
    valid at its date), one transfer per closed account and the closing entry."""
    for w in worlds.values():
        ch = chart(w)
        ents = entries(w)
        tripped = {k for k, e in ents.items() if any(a not in ch or changed(ch[a]) for a in e["accounts"])}
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        assert planted <= tripped
        others = [ents[k] for k in tripped - planted]
        n_closed = sum(d.decoy_type == "account_closed_after_posting" for d in w.decoys)
        types = [e["document_type"] for e in others]
        assert types.count("YC") == 1 and types.count("TS") == n_closed
        assert set(types) <= {"YC", "TS", "BC", "BI", "AL"} and len(others) > len(planted)
        for e in others:
            assert all(_valid(ch[a], e["posting_date"]) for a in e["accounts"] if changed(ch[a])), e["entry_id"]
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        assert {r["status"] for r in ch.values()} <= {"active", "closed"}


def test_the_key_follows_from_the_chart_and_the_erp_would_have_accepted_every_entry(worlds):
    kinds = set()
    for w in worlds.values():
        ents, ch = entries(w), chart(w)
        closes = {r["description"][-7:]: r["date"] for r in w.master["calendar"].to_pylist() if r["kind"] == "period_close"}
        for r in (*w.defects, *w.decoys):
            e = ents[r.entry_id]
            odd = [x for x in e["accounts"] if changed(ch[x])]
            assert len(odd) == 1, "one changed account per posting, the other lines on standing accounts"
            a = ch[odd[0]]
            # the ERP checks the account when the entry is keyed: it existed and was open then
            assert a["opened"] <= e["keyed"] and (not a["closed"] or e["keyed"] <= a["closed"])
            # keyed after the posting date, within that month's close (not a late posting)
            assert e["posting_date"] < e["keyed"] <= closes[e["posting_date"][:7]]
            assert r.required_evidence == ("master:accounts",) if r.entry_id in w.defect_ids else \
                r.clearing_evidence == ("master:accounts",)
        for d in w.defects:
            e = ents[d.entry_id]
            assert e["posting_date"] < ch[d.facts[0]]["opened"] and d.criteria == "INVALID_ACCOUNT"
            kinds.add(d.defect_type)
        for d in w.decoys:
            e = ents[d.entry_id]
            a = ch[d.facts[0]]
            assert a["opened"] <= e["posting_date"] and (not a["closed"] or e["posting_date"] <= a["closed"])
    assert kinds == {"posting_before_account_opened"}


def test_decisive_facts_are_the_account_its_date_and_the_posting_date(worlds):
    for w in worlds.values():
        ents, ch = entries(w), chart(w)
        for r in (*w.defects, *w.decoys):
            e = ents[r.entry_id]
            code, when, posted = r.facts
            assert code in e["accounts"] and changed(ch[code]) and posted == e["posting_date"]
            assert when in (ch[code]["opened"], ch[code]["closed"])


def test_decoys_and_defects_post_to_the_same_changed_accounts_used_alike():
    """Over many worlds the accounts opened or closed in the year that defects post to are the ones
    decoys post to (the listing's other columns: tests/test_task_contract.py), and they are used
    alike: two postings or more of the account's stream (the year-end closing and a closed account's
    transfer aside), about as many for either, the planted posting the account's first (an opened
    account) or its last (a closed one). Neither "the only posting" nor "the first posting" of an
    opened account tells a defect from a decoy."""
    codes: dict[int, set] = {0: set(), 1: set()}
    counts: dict[int, list[int]] = {0: [], 1: []}
    for s in PARITY_SEEDS:
        w = cached_world(TASK, s, keep=False)
        ch = chart(w)
        rows = [r for r in w.ledger.to_pylist() if r["document_type"] in ("BC", "BI", "AL")]
        for label, recs in ((1, w.defects), (0, w.decoys)):
            for r in recs:
                code = r.facts[0]
                codes[label].add(code)
                dates = sorted(str(x["posting_date"]) for x in rows if x["account"] == code)
                assert len(dates) >= 2, (s, code)
                posted = r.facts[2]
                assert posted == (dates[-1] if ch[code]["closed"] else dates[0]), (s, code)
                counts[label].append(len(dates))
    assert codes[0] == codes[1]
    mean = {k: sum(v) / len(v) for k, v in counts.items()}
    assert abs(mean[0] - mean[1]) < 1.0, mean


@pytest.mark.parametrize("seed", SEEDS)
def test_naive_flags_every_changed_account(seed):
    """naive flags every posting to a changed account: the key, the other postings of the changed
    accounts, the transfers out of closed accounts and the year-end closing entry (which closes the
    accounts opened in the year)."""
    w, naive = cached_world(TASK, seed), played(TASK, "naive", seed)
    ch = chart(w)
    tripped = sorted(k for k, e in entries(w).items() if any(changed(ch[a]) for a in e["accounts"]))
    flagged = [d["entry_id"] for d in naive.dispositions if d["decision"] == "flag"]
    # in entry order, as many as its budget allows
    assert flagged == tripped[:len(flagged)] and len(flagged) >= min(len(tripped), 30)
    tp = len(w.defect_ids & set(flagged))
    assert naive.score.outcome == pytest.approx(tp / (len(flagged) + len(w.defect_ids) - tp))
    assert naive.score.outcome <= len(w.defects) / (2 * len(w.defects) + len(w.decoys))
