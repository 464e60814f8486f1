"""JE-3 (postings to invalid accounts): planting, the clean base, determinism and the built-in agents."""

from __future__ import annotations

from jeval_ray.agents import entries_of
from jeval_ray.tasks.je03 import _standing, _valid

TASK = "JE-3"
SEEDS = range(5)


def entries(world) -> dict[str, dict]:
    return entries_of([{**r, "posting_date": str(r["posting_date"])} for r in world.ledger.to_pylist()])


def chart(world) -> dict[str, dict]:
    return {a["account"]: a for a in world.master["accounts"].to_pylist()}


def test_chart_carries_status_and_dates(worlds):
    for w in worlds.values():
        rows = w.master["accounts"].to_pylist()
        assert {"account", "status", "opened", "closed", "blocked_on"} <= set(rows[0])
        assert {r["status"] for r in rows} == {"active", "closed", "blocked"}
        assert any("2025-01-01" < r["opened"] <= "2025-12-31" for r in rows)


def test_defects_post_to_accounts_invalid_at_the_posting_date(worlds):
    kinds = set()
    for w in worlds.values():
        ents, ch = entries(w), chart(w)
        for d in w.defects:
            e = ents[d.entry_id]
            bad = [a for a in e["accounts"] if not _valid(ch.get(a), e["posting_date"])[0]]
            assert len(bad) == 1 and d.criteria == "INVALID_ACCOUNT" and d.required_evidence == ("master:accounts",)
            kinds.add(d.defect_type)
    assert kinds == {"posting_to_blocked_account", "posting_to_closed_account", "posting_before_account_opened",
                     "posting_to_nonexistent_account"}


def test_decoys_post_to_changed_accounts_active_at_the_posting_date(worlds):
    for w in worlds.values():
        ents, ch = entries(w), chart(w)
        for d in w.decoys:
            e = ents[d.entry_id]
            odd = [a for a in e["accounts"] if not _standing(ch.get(a))]
            assert odd, "a decoy must look like an exception"
            assert all(_valid(ch[a], e["posting_date"])[0] for a in odd)
            a = ch[odd[0]]
            # opened during the year before the posting, or closed during the year after it
            assert (a["opened"] >= "2025-01-01" and a["opened"] < e["posting_date"]) or \
                ("2025-01-01" <= a["closed"] and e["posting_date"] < a["closed"])
            assert d.clearing_evidence == ("master:accounts",)


def test_base_population_never_trips_the_rule(worlds):
    for w in worlds.values():
        ch = chart(w)
        tripped = {k for k, e in entries(w).items() if any(not _standing(ch.get(a)) for a in e["accounts"])}
        assert tripped == w.defect_ids | {d.entry_id for d in w.decoys}
