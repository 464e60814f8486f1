"""JE-6 key audit: the facts ``KEY_RATIONALE`` relies on, checked over many seeds from the world as
the agent sees it (the ledger listing, ``master:calendar``, the posting-window policy and the
close-work memos), independently of the task module.

* every decoy is close work its memo covers: preparer named, day listed with hours that include
  the entry time, keyed after the month end and on or before the period's close date, under a
  memo issued before the close began;
* every defect is outside the posting window and outside what its close's memo authorises, and
  none sits within minutes of the stated hours;
* nothing outside the key breaks the policy: every other manual entry is keyed on a business day
  within the stated hours;
* the planted entries are the books' own month-end close entries (their posting date the month
  end), and an accrual's reversal is still recorded after the accrual.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

import pyarrow.compute as pc

from jeval_ray.world import generate_world

TASK = "JE-6"
SEEDS = range(24)
CLOSE_TYPES = {"AC", "AL", "BC", "BI"}


@functools.cache
def _world(seed: int):
    return generate_world(TASK, seed)


@functools.cache
def _facts(seed: int):
    return _world_facts(_world(seed))


def _world_facts(w):
    pol = next(d for d in w.documents if d.doc_type == "policy" and d.title == "Journal entry posting window policy")
    a, b = re.search(r"Monday to Friday, from (\d\d:\d\d) to (\d\d:\d\d)", pol.body).groups()
    cal = w.master["calendar"].to_pylist()
    holidays = {dt.date.fromisoformat(r["date"]) for r in cal if r["kind"] == "holiday"}
    closes = {r["description"].split()[-1]: dt.date.fromisoformat(r["date"]) for r in cal if r["kind"] == "period_close"}
    memos = {}
    for d in w.documents:
        if d.doc_type == "memo" and d.title.startswith("Authorisation of close work outside business hours"):
            users = set(re.findall(r"\(([A-Z_]+)\)", re.search(r"Authorised users: (.*)", d.body).group(1)))
            slots = {dt.date.fromisoformat(x): (dt.time.fromisoformat(y), dt.time.fromisoformat(z))
                     for x, y, z in re.findall(r"(\d{4}-\d\d-\d\d), (\d\d:\d\d) to (\d\d:\d\d)", d.body)}
            period = re.search(r"- (\w+ 2025) close", d.title).group(1)
            memos[d.doc_id] = {"users": users, "slots": slots, "period": period, "date": dt.date.fromisoformat(d.date)}
    heads = {r["entry_id"]: r for r in w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1)).to_pylist()}
    return dt.time.fromisoformat(a), dt.time.fromisoformat(b), holidays, closes, memos, heads


def _off(ts: dt.datetime, start: dt.time, end: dt.time, holidays: set) -> bool:
    return ts.weekday() >= 5 or ts.date() in holidays or not (start <= ts.time() < end)


def _covers(m: dict, r: dict) -> bool:
    ts = r["entry_timestamp"]
    slot = m["slots"].get(ts.date())
    return bool(slot) and r["preparer"] in m["users"] and slot[0] <= ts.time() < slot[1]


def test_key_audit_decoys_are_close_work_their_memo_covers_before_the_close_date():
    n = 0
    for s in SEEDS:
        w = _world(s)
        start, end, holidays, closes, memos, heads = _facts(s)
        for d in w.decoys:
            r = heads[d.entry_id]
            ts, posted = r["entry_timestamp"], r["posting_date"]
            assert _off(ts, start, end, holidays), (s, d.entry_id)
            (memo,) = [x for x in d.clearing_evidence if x in memos]
            m = memos[memo]
            assert m["period"] == posted.strftime("%B %Y") and _covers(m, r), (s, d.entry_id)
            close = closes[posted.strftime("%Y-%m")]
            # close work: keyed after the month end it is posted to and on or before the close date
            assert posted < ts.date() <= close, (s, d.entry_id, ts, close)
            assert m["date"] <= posted, (s, memo)
            assert {memo, r["preparer"], ts.date().isoformat(), close.isoformat()} <= set(d.facts)
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_defects_are_outside_the_window_and_outside_their_memo():
    n = 0
    for s in SEEDS:
        w = _world(s)
        start, end, holidays, closes, memos, heads = _facts(s)
        for d in w.defects:
            r = heads[d.entry_id]
            ts = r["entry_timestamp"]
            assert _off(ts, start, end, holidays), (s, d.entry_id)
            (memo,) = [x for x in d.required_evidence if x in memos]
            assert memos[memo]["period"] == r["posting_date"].strftime("%B %Y")
            # no memo of the world covers it
            assert not any(_covers(m, r) for m in memos.values()), (s, d.entry_id)
            # nothing marginal: a business-day defect is keyed an hour or more after business hours end
            if ts.weekday() < 5 and ts.date() not in holidays:
                late = dt.datetime.combine(ts.date(), end) + dt.timedelta(hours=1)
                assert ts >= late, (s, d.entry_id, ts)
            assert {r["preparer"], ts.date().isoformat(), memo} <= set(d.facts)
            n += 1
    assert n >= 3 * len(SEEDS)


def test_key_audit_nothing_outside_the_key_breaks_the_policy():
    for s in SEEDS:
        w = _world(s)
        start, end, holidays, _closes, _memos, heads = _facts(s)
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        stray = [e for e, r in heads.items() if r["source"] == "manual" and e not in planted
                 and _off(r["entry_timestamp"], start, end, holidays)]
        assert not stray, (s, stray[:3])


def test_key_audit_planted_entries_are_the_books_close_entries_and_reversals_follow_them():
    for s in SEEDS:
        w = _world(s)
        *_, heads = _facts(s)
        reversals = {}
        for r in heads.values():
            m = re.match(r"Reversal of accrual (AC-\d+)", r["description"] or "")
            if m:
                reversals[m.group(1)] = r
        for eid in w.defect_ids | {d.entry_id for d in w.decoys}:
            r = heads[eid]
            p = r["posting_date"]
            assert r["document_type"] in CLOSE_TYPES and r["source"] == "manual"
            assert (p + dt.timedelta(days=1)).day == 1, (s, eid, p)  # posted to a month end
            assert r["approver"] and r["approver"] != r["preparer"]
            if r["document_type"] == "AC" and r["reference"] in reversals:
                assert reversals[r["reference"]]["entry_timestamp"] > r["entry_timestamp"], (s, eid)
