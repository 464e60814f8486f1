"""JE-6 (off-hours manual postings): planting, the clean base, surface parity of the close work and the
extent of the naive rule (what every task promises is tests/test_task_contract.py).

The rule and the memo coverage are re-implemented here from the visible world only (ledger lines,
``master:calendar``, the posting-window policy and the close-work memos), independently of the
task module.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter

import pytest

from jeval_ray.world import generate_world
from conftest import check_naive_flags_only_the_key

TASK = "JE-6"
MONTHS = r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b"
SEEDS = range(5)


def hours(world) -> tuple[dt.time, dt.time]:
    pol = next(d for d in world.documents if d.doc_type == "policy" and d.title == "Journal entry posting window policy")
    m = re.search(r"Monday to Friday, from (\d\d:\d\d) to (\d\d:\d\d)", pol.body)
    return dt.time.fromisoformat(m.group(1)), dt.time.fromisoformat(m.group(2))


def holidays(world) -> set[dt.date]:
    return {dt.date.fromisoformat(r["date"]) for r in world.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def closes(world) -> dict[str, dt.date]:
    """{'2025-05': close date} from the calendar."""
    return {r["description"].split()[-1]: dt.date.fromisoformat(r["date"])
            for r in world.master["calendar"].to_pylist() if r["kind"] == "period_close"}


_MEMOS: dict[str, dict] = {}


def memos(world) -> dict[str, dict]:
    """The close-work memos' users, day slots and period, parsed once per world."""
    if world.world_hash in _MEMOS:
        return _MEMOS[world.world_hash]
    out = _MEMOS[world.world_hash] = {}
    for d in world.documents:
        if d.doc_type == "memo" and d.title.startswith("Authorisation of close work outside business hours"):
            users = re.search(r"Authorised users: (.*)", d.body).group(1)
            slots = {dt.date.fromisoformat(day): (dt.time.fromisoformat(a), dt.time.fromisoformat(b))
                     for day, a, b in re.findall(r"(\d{4}-\d\d-\d\d), (\d\d:\d\d) to (\d\d:\d\d)", d.body)}
            period = re.search(r"- (\w+ 2025) close", d.title).group(1)
            out[d.doc_id] = {"users": set(re.findall(r"\(([A-Z]+)\)", users)), "slots": slots, "period": period}
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


def memo_of(world, row: dict) -> str:
    """The close-work memo of the close the entry was posted into (titled with its month)."""
    period = row["posting_date"].strftime("%B %Y")
    (k,) = [k for k, m in memos(world).items() if m["period"] == period]
    return k


def covering(world, row: dict) -> list[str]:
    ts = row["entry_timestamp"]
    close = closes(world)[row["posting_date"].strftime("%Y-%m")]
    return [k for k, m in memos(world).items()
            if ts.date() in m["slots"] and row["preparer"] in m["users"]
            and m["slots"][ts.date()][0] <= ts.time() < m["slots"][ts.date()][1] and ts.date() <= close]


def test_policy_states_hours_scope_and_the_close_date(worlds):
    for w in worlds.values():
        pol = next(d for d in w.documents if d.title == "Journal entry posting window policy")
        assert "manual entries only" in pol.body and "SYS_BATCH" in pol.body and "holiday" in pol.body
        assert "period_close" in pol.body
        start, end = hours(w)
        assert start <= dt.time(8, 30) and end >= dt.time(17, 30)
        assert len(holidays(w)) >= 10 and memos(w)


def test_defects_satisfy_the_rule_and_their_close_memo_does_not_cover_them(worlds):
    kinds = set()
    for w in worlds.values():
        odd, heads = off_hours(w), manual_heads(w)
        pol = next(d.doc_id for d in w.documents if d.title == "Journal entry posting window policy")
        ms = memos(w)
        for d in w.defects:
            r = heads[d.entry_id]
            assert d.criteria == "OFF_HOURS" and d.entry_id in odd and not covering(w, r)
            memo = memo_of(w, r)
            assert {pol, "master:calendar", memo, d.entry_id} <= set(d.required_evidence)
            day = r["entry_timestamp"].date()
            if d.defect_type == "date_not_authorised":
                assert day not in ms[memo]["slots"]
            elif d.defect_type == "user_not_authorised":
                assert day in ms[memo]["slots"] and r["preparer"] not in ms[memo]["users"]
            else:
                assert d.defect_type == "hours_not_authorised" and r["preparer"] in ms[memo]["users"]
            assert {r["preparer"], day.isoformat(), memo} <= set(d.facts)
            kinds.add(d.defect_type)
    assert kinds == {"date_not_authorised", "user_not_authorised"}


def test_decoys_are_off_hours_and_cleared_by_their_memo_before_the_close(worlds):
    for w in worlds.values():
        odd, heads = off_hours(w), manual_heads(w)
        for d in w.decoys:
            r = heads[d.entry_id]
            assert d.decoy_type == "authorised_close_work" and d.entry_id in odd
            memo = covering(w, r)
            assert memo == [memo_of(w, r)] and memo[0] in d.clearing_evidence and d.entry_id in d.clearing_evidence
            close = closes(w)[r["posting_date"].strftime("%Y-%m")]
            assert r["posting_date"] < r["entry_timestamp"].date() <= close
            assert {memo[0], r["preparer"], r["entry_timestamp"].date().isoformat(), close.isoformat()} <= set(d.facts)


def test_defects_and_decoys_share_one_surface():
    """Close work either way: posted to a month end, keyed in its close window; weekend/holiday
    versus evening, preparers and hours come from one distribution."""
    stats = {"defect": Counter(), "decoy": Counter()}
    hrs = {"defect": [], "decoy": []}
    for s in range(30):
        w = generate_world(TASK, 300 + s)
        heads, cl, hol = manual_heads(w), closes(w), holidays(w)
        for kind, ids in (("defect", w.defect_ids), ("decoy", {d.entry_id for d in w.decoys})):
            for eid in ids:
                r = heads[eid]
                ts = r["entry_timestamp"]
                assert r["posting_date"] < ts.date() <= cl[r["posting_date"].strftime("%Y-%m")]
                # a month named in the description is the month posted to
                assert all(m == r["posting_date"].strftime("%b") for m in re.findall(MONTHS, r["description"]))
                # the close's memo was issued before the close began, so its date tells nothing
                assert w.document(memo_of(w, r)).date <= r["posting_date"].isoformat()
                # nothing a few minutes outside the window: an off-day, or an hour after business hours
                assert ts.weekday() >= 5 or ts.date() in hol or ts.time() >= dt.time(19)
                stats[kind]["offday" if ts.weekday() >= 5 or ts.date() in hol else "evening"] += 1
                stats[kind][r["preparer"]] += 1
                hrs[kind].append(ts.hour)
    for kind in stats:
        n = stats[kind]["offday"] + stats[kind]["evening"]
        stats[kind] = {k: v / n for k, v in stats[kind].items()}
    for k in ("offday", "DPATEL", "EMUELLER", "FNGUYEN"):
        assert abs(stats["defect"].get(k, 0) - stats["decoy"].get(k, 0)) < 0.12, k
    assert abs(statistics.fmean(hrs["defect"]) - statistics.fmean(hrs["decoy"])) < 1.5


def test_a_crowded_close_still_keeps_defects_uncovered_and_decoys_covered():
    w = generate_world(TASK, 1, {"n_entries": 30000, "n_defects": 100, "n_decoys": 100})
    heads = manual_heads(w)
    assert not any(covering(w, heads[d.entry_id]) for d in w.defects)
    assert all(covering(w, heads[d.entry_id]) for d in w.decoys)
    assert "hours_not_authorised" in {d.defect_type for d in w.defects}


@pytest.mark.parametrize("knobs", [None, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}, {"n_entries": 3000}])
def test_base_population_never_trips_the_rule(knobs):
    for s in range(12):
        w = generate_world(TASK, s, knobs)
        assert set(off_hours(w)) == w.defect_ids | {d.entry_id for d in w.decoys}
        # automated night jobs are outside the rule and stay in the slice
        assert any(r["source"] == "automated" and r["entry_timestamp"].hour < 6 for r in w.ledger.to_pylist())


def test_naive_flags_nothing_but_the_key(worlds):
    check_naive_flags_only_the_key(TASK, worlds)