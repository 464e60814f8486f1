"""JE-6 (off-hours manual postings): planting, the clean base, determinism and the built-in agents.

The rule and the memo coverage are re-implemented here from the visible world only (ledger lines,
``master:calendar``, the posting-window policy and the close-work memos), independently of the
task module.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from jeval_ray.world import generate_world

TASK = "JE-6"
SEEDS = range(5)


def hours(world) -> tuple[dt.time, dt.time]:
    pol = next(d for d in world.documents if d.doc_type == "policy" and d.title == "Journal entry posting window policy")
    m = re.search(r"Monday to Friday, from (\d\d:\d\d) to (\d\d:\d\d)", pol.body)
    return dt.time.fromisoformat(m.group(1)), dt.time.fromisoformat(m.group(2))


def holidays(world) -> set[dt.date]:
    return {dt.date.fromisoformat(r["date"]) for r in world.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def memos(world) -> dict[str, dict]:
    out = {}
    for d in world.documents:
        if d.doc_type == "memo" and d.title.startswith("Authorisation of close work outside business hours"):
            users = re.search(r"Authorised users: (.*)", d.body).group(1)
            dates = re.search(r"Dates covered: (.*)", d.body).group(1)
            w0, w1 = re.search(r"Hours: (\d\d:\d\d) to (\d\d:\d\d)", d.body).groups()
            out[d.doc_id] = {"users": set(re.findall(r"\(([A-Z]+)\)", users)),
                             "dates": {dt.date.fromisoformat(x) for x in re.findall(r"\d{4}-\d\d-\d\d", dates)},
                             "start": dt.time.fromisoformat(w0), "end": dt.time.fromisoformat(w1)}
    return out


def manual_heads(world) -> dict[str, dict]:
    return {r["entry_id"]: r for r in world.ledger.to_pylist() if r["source"] == "manual" and r["line_no"] == 1}


def off_hours(world) -> dict[str, dict]:
    """Manual entries keyed on a weekend, a holiday or outside business hours."""
    start, end = hours(world)
    hol = holidays(world)
    return {k: r for k, r in manual_heads(world).items()
            if r["entry_timestamp"].weekday() >= 5 or r["entry_timestamp"].date() in hol
            or not (start <= r["entry_timestamp"].time() < end)}


def covering(world, row: dict) -> list[str]:
    ts = row["entry_timestamp"]
    return [k for k, m in memos(world).items()
            if ts.date() in m["dates"] and row["preparer"] in m["users"] and m["start"] <= ts.time() < m["end"]]


def test_policy_states_hours_and_scope(worlds):
    for w in worlds.values():
        pol = next(d for d in w.documents if d.title == "Journal entry posting window policy")
        assert "manual entries only" in pol.body and "SYS_BATCH" in pol.body and "holiday" in pol.body
        start, end = hours(w)
        assert start <= dt.time(8, 30) and end >= dt.time(17, 30)
        assert len(holidays(w)) >= 10 and memos(w)


def test_defects_satisfy_the_rule_and_no_memo_covers_them(worlds):
    kinds = set()
    for w in worlds.values():
        odd, heads = off_hours(w), manual_heads(w)
        pol = next(d.doc_id for d in w.documents if d.title == "Journal entry posting window policy")
        hol, ms = holidays(w), memos(w)
        for d in w.defects:
            assert d.criteria == "OFF_HOURS" and d.entry_id in odd and not covering(w, heads[d.entry_id])
            assert {pol, "master:calendar", d.entry_id} <= set(d.required_evidence)
            ts = heads[d.entry_id]["entry_timestamp"]
            if d.defect_type == "holiday_posting":
                assert ts.date() in hol
            elif d.defect_type == "weekend_posting":
                assert ts.weekday() >= 5 and not any(ts.date() in m["dates"] for m in ms.values())
            elif d.defect_type == "after_hours_posting":
                assert ts.weekday() < 5 and ts.date() not in hol
            else:
                assert d.defect_type == "outside_memo_scope"
                memo = [k for k, m in ms.items() if ts.date() in m["dates"]]
                assert memo and memo[0] in d.required_evidence
            kinds.add(d.defect_type)
    assert kinds == {"holiday_posting", "weekend_posting", "after_hours_posting", "outside_memo_scope"}


def test_decoys_are_off_hours_and_cleared_by_their_memo(worlds):
    for w in worlds.values():
        odd, heads = off_hours(w), manual_heads(w)
        for d in w.decoys:
            assert d.decoy_type == "authorised_close_work" and d.entry_id in odd
            memo = covering(w, heads[d.entry_id])
            assert len(memo) == 1 and memo[0] in d.clearing_evidence and d.entry_id in d.clearing_evidence


@pytest.mark.parametrize("knobs", [None, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}, {"n_entries": 3000}])
def test_base_population_never_trips_the_rule(knobs):
    for s in range(12):
        w = generate_world(TASK, s, knobs)
        assert set(off_hours(w)) == w.defect_ids | {d.entry_id for d in w.decoys}
        # automated night jobs are outside the rule and stay in the slice
        assert any(r["source"] == "automated" and r["entry_timestamp"].hour < 6 for r in w.ledger.to_pylist())
