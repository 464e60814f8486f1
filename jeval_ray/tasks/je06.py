"""JE-6 (L2): off-hours manual postings.

The posting-window policy (a policy document) allows manual entries only on business days
(Monday to Friday, not on the public holidays of ``master:calendar``) within stated business
hours, judged on the ERP entry timestamp. Automated postings by system users run as night jobs and
are outside the rule. The Controller may authorise named users, in a memo, to post on named
close-weekend dates (or a close evening) within stated hours.

Planted defects (criteria ``OFF_HOURS``), manual entries keyed:
  * ``weekend_posting``: on a Saturday or Sunday no memo covers;
  * ``holiday_posting``: on a public holiday, during normal hours;
  * ``after_hours_posting``: on a business day before the start or after the end of business hours;
  * ``outside_memo_scope``: on a date a memo covers, but by a user the memo does not name or outside
    the memo's hours (more of these as ``near_miss`` rises).
Decoys: manual entries on a close weekend or evening by a user the memo names, within its hours
(``near_miss`` moves them towards the edges of the authorised window). On close weekends the
posting date is the last day of the period being closed while the entry timestamp is the weekend,
as in a real ERP; the rule reads the timestamp.

Required evidence: the policy, ``master:calendar`` and the entry (plus the memo for
``outside_memo_scope``); a decoy is cleared by the policy, its memo and the entry.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import APPROVERS, HOLIDAYS_2025, PERIOD_END, PERIOD_START, PREPARERS, business_days

SPEC = spec(
    "JE-6",
    "L2",
    'Off-hours manual postings',
    objective='Find manual entries posted on weekends, public holidays or outside business hours that no memo authorises.',
    defect='manual posting on a weekend, holiday or after hours',
    decoys='close-weekend work authorised by a memo',
    required_evidence='holiday calendar and close memo',
    sources=('general_ledger', 'holiday_calendar', 'close_memos'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OFF_HOURS', 'manual posting on a weekend, public holiday or outside business hours without authorisation'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Journal entry posting window policy"
MEMO_TITLE = "Authorisation of close work outside business hours"
#: business-hour windows (seconds after midnight) a world may state; the base keys 08:30-17:30
HOUR_OPTIONS = ((8 * 3600, 18 * 3600), (7 * 3600 + 1800, 18 * 3600), (8 * 3600, 18 * 3600 + 1800), (7 * 3600, 19 * 3600))
_NAMES = {"AKIM": "Anna Kim", "BOKAFOR": "Ben Okafor", "CRUIZ": "Carla Ruiz", "DPATEL": "Dev Patel",
          "EMUELLER": "Eva Mueller", "FNGUYEN": "Frank Nguyen", "GSILVA": "Grace Silva"}
_MONTH = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_HOLIDAYS = np.array([h for h, _ in HOLIDAYS_2025], dtype="datetime64[D]")


def hhmm(s: int) -> str:
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}"


def off_hours(day: np.ndarray, time_s: np.ndarray, holidays: np.ndarray, start: int, end: int) -> np.ndarray:
    """The rule (vectorised): a weekend, a public holiday, or a time outside [start, end)."""
    day = np.asarray(day, dtype="datetime64[D]")
    weekend = ~np.is_busday(day)
    holiday = np.isin(day, np.asarray(holidays, dtype="datetime64[D]"))
    return weekend | holiday | (np.asarray(time_s) < start) | (np.asarray(time_s) >= end)


# ---------------------------------------------------------------------------- planting
def _policy_body(start: int, end: int) -> str:
    return (
        "Policy FIN-11 Posting window for manual journal entries. Effective 2024-01-01. Owner: Controller.\n\n"
        f"1. Business hours. Manual journal entries may be keyed and posted only on business days, Monday to "
        f"Friday, from {hhmm(start)} to {hhmm(end)} (local time).\n"
        "2. Weekends and public holidays. No manual entries may be keyed on Saturdays, Sundays or on the public "
        "holidays listed in the company calendar (master data: calendar, kind 'holiday').\n"
        "3. The time that counts is the entry timestamp recorded by the ERP system when the entry is keyed, "
        "not the posting date chosen for the entry.\n"
        "4. Close work. During period-close weekends or evenings the Controller may authorise named users in a "
        "written memo to key manual entries on named dates within stated hours. The memo lists the users, the "
        "dates and the hours covered. Entries by other users, on other dates or outside those hours are not "
        "covered and fall under sections 1 and 2.\n"
        "5. Scope. This policy applies to manual entries only. Automated postings by system users "
        "(SYS_BATCH, SYS_INTERFACE) run as scheduled night jobs and are outside this policy."
    )


def _memo_body(users: list[str], dates: list[np.datetime64], start: int, end: int, period: str, evening: bool) -> str:
    who = ", ".join(f"{_NAMES[u]} ({u})" for u in users)
    days = ", ".join(f"{dt.date.fromisoformat(str(d)):%A} {d}" for d in dates)
    reason = (f"To complete the {period} close on schedule" if not evening
              else f"To finish the {period} reconciliations before the reporting deadline")
    return (
        "To: General Ledger and Accounts Payable teams\n"
        "From: Isabel Brown, Controller\n"
        f"Subject: {MEMO_TITLE} - {period} close\n\n"
        f"{reason}, I authorise the users below to key and post manual journal entries outside normal business "
        "hours, under section 4 of the posting window policy.\n"
        f"  Authorised users: {who}\n"
        f"  Dates covered: {days}\n"
        f"  Hours: {hhmm(start)} to {hhmm(end)}\n"
        "Entries keyed under this authorisation follow the normal approval workflow. The authorisation does "
        "not extend to any other user, date or time."
    )


def _close_weekend(month: int) -> list[np.datetime64]:
    """The first Saturday and Sunday after the end of ``month`` (2025)."""
    first = np.datetime64(f"2025-{month + 1:02d}-01", "D")
    sat = next(first + k for k in range(7) if dt.date.fromisoformat(str(first + k)).weekday() == 5)
    return [sat, sat + 1]


def plant(b) -> None:
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    start, end = HOUR_OPTIONS[int(rng.integers(0, len(HOUR_OPTIONS)))]
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(start, end), "2023-12-12")
    manual = e["manual"].copy()
    planted = np.zeros(b.n, dtype=bool)
    limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}

    # close events: weekends after a month end, or an evening at quarter-end close
    n_ev = math.ceil(b.n_decoys / int(rng.integers(2, 4))) if b.n_decoys else 0
    # defects on a memo date but outside its scope; at most half, so every kind of breach appears
    n_trap = min(int((rng.random(b.n_defects) < 0.5 * near).sum()), b.n_defects // 2)
    n_noise = int(rng.integers(1, 3))
    months = [int(m) for m in rng.permutation(np.arange(1, 12))]
    events: list[dict] = []
    for k in range(max(n_ev + n_noise, n_ev + (1 if n_trap else 0))):
        month = months[k % len(months)]
        evening = rng.random() < 0.25 and month in (3, 6, 9)
        users = sorted(str(u) for u in rng.choice(PREPARERS, size=int(rng.integers(2, 4)), replace=False))
        if evening:
            first = np.datetime64(f"2025-{month + 1:02d}-01", "D")
            dates = [np.busday_offset(first, int(rng.integers(1, 4)), roll="forward", holidays=_HOLIDAYS)]
            w0, w1 = end, int(rng.choice([21, 22, 23])) * 3600
            period = f"Q{month // 3} 2025"
        else:
            dates = _close_weekend(month)
            w0 = int(rng.choice([8, 9, 10])) * 3600
            w1 = int(rng.choice([16, 17, 18, 20])) * 3600
            period = f"{_MONTH[month - 1]} 2025"
        issued = str(dates[0] - int(rng.integers(2, 6)))
        doc = b.add_document("memo", f"{MEMO_TITLE} - {period} close",
                             _memo_body(users, dates, w0, w1, period, evening), issued)
        events.append({"doc": doc, "users": users, "dates": dates, "w0": w0, "w1": w1, "month": month,
                       "evening": evening})
    memo_dates = {str(d) for ev in events for d in ev["dates"]}

    def place(idx: int, day: np.datetime64, t: int, ev: dict | None) -> None:
        # close-weekend work is posted into the period being closed; the timestamp is the weekend
        post = day
        if ev is not None and not ev["evening"]:
            post = np.datetime64(f"2025-{ev['month'] + 1:02d}-01", "D") - 1
        e["entry_date"][idx] = day
        e["post_date"][idx] = post
        e["doc_date"][idx] = max(post - int(rng.integers(0, 6)), PERIOD_START)
        e["time_s"][idx] = int(t)
        planted[idx] = True

    def inside(w0: int, w1: int) -> int:
        """A time inside [w0, w1): near_miss pulls it towards an edge."""
        span = (w1 - w0) // 2 - 120
        off = 120 + int(rng.uniform(0, 1) * (1 - 0.9 * near) * span)
        return w0 + off if rng.random() < 0.5 else w1 - 1 - off

    def take(users) -> int:
        """An unplanted manual entry by one of ``users``; in a slice too small to have one, an
        unplanted entry is re-keyed as a manual entry by one of them."""
        where = manual & np.isin(e["preparer"], list(users))
        if (where & ~b.used).any():
            return int(b.pick(1, where)[0])
        (idx,) = b.pick(1, what="entries")
        prep = str(users[int(rng.integers(0, len(users)))])
        e["manual"][idx] = True
        e["preparer"][idx] = prep
        ok = [a for a in APPROVERS if a != prep and limits[a] >= e["debit_cents"][idx]] or ["JWRIGHT"]
        e["approver"][idx] = ok[int(rng.integers(0, len(ok)))]
        return int(idx)

    # decoys: authorised close work
    for j in range(b.n_decoys):
        ev = events[j % n_ev]
        idx = take(ev["users"])
        day = ev["dates"][int(rng.integers(0, len(ev["dates"])))]
        place(idx, day, inside(ev["w0"], ev["w1"]), ev)
        b.add_decoy(idx, "authorised_close_work", [policy, ev["doc"], "entry"])

    # defects
    weekends = np.arange(PERIOD_START, PERIOD_END + 1, dtype="datetime64[D]")
    weekends = weekends[~np.is_busday(weekends) & ~np.isin(weekends.astype(str), list(memo_dates))]
    bdays = business_days(PERIOD_START, PERIOD_END)
    bdays = bdays[~np.isin(bdays.astype(str), list(memo_dates))]
    kinds = ["outside_memo_scope"] * n_trap + [
        str(rng.choice(["weekend_posting", "holiday_posting", "after_hours_posting"], p=[0.35, 0.25, 0.4]))
        for _ in range(b.n_defects - n_trap)]
    for kind in kinds:
        ev = None
        evidence = [policy, "master:calendar", "entry"]
        if kind == "outside_memo_scope":
            ev = events[int(rng.integers(0, len(events)))]
            day = ev["dates"][int(rng.integers(0, len(ev["dates"])))]
            outsiders = [u for u in PREPARERS if u not in ev["users"]]
            if rng.random() < 0.5 and outsiders:
                idx = take(outsiders)
                t = inside(ev["w0"], ev["w1"])
            else:
                idx = take(ev["users"])
                t = _outside_window(rng, ev, near)
            evidence.append(ev["doc"])
        else:
            idx = take(PREPARERS)
            if kind == "weekend_posting":
                day = weekends[int(rng.integers(0, len(weekends)))]
                t = int(rng.integers(7 * 3600, 20 * 3600))
            elif kind == "holiday_posting":
                day = _HOLIDAYS[int(rng.integers(0, len(_HOLIDAYS)))]
                t = int(rng.integers(start + 1800, end - 1800))
            else:
                day = bdays[int(rng.integers(0, len(bdays)))]
                gap = 300 + int(rng.uniform(0, 1) * (1 - 0.8 * near) * 4 * 3600)
                t = min(end + gap, 23 * 3600 + 3540) if rng.random() < 0.7 else max(start - gap, 5 * 3600)
        place(idx, day, t, ev)
        b.add_defect(idx, kind, "OFF_HOURS", evidence, int(e["debit_cents"][idx]))

    _sanitise(b, planted, start, end)


def _outside_window(rng, ev: dict, near: float) -> int:
    """A time on a memo date outside the memo's hours (and so outside business hours too)."""
    gap = 600 + int(rng.uniform(0, 1) * (1 - 0.8 * near) * 2 * 3600)
    late = min(ev["w1"] + gap, 23 * 3600 + 3540)
    if ev["evening"] or rng.random() < 0.6:
        return late if late >= ev["w1"] else ev["w1"]
    return max(ev["w0"] - gap, 5 * 3600)


def _sanitise(b, planted: np.ndarray, start: int, end: int) -> None:
    """Base manual entries stay inside the posting window (the base is built that way; this keeps
    it so whatever the stated hours): move any stray one to a business day within business hours."""
    e = b.e
    bad = e["manual"] & ~planted & off_hours(e["entry_date"], e["time_s"], _HOLIDAYS, start, end)
    rows = np.flatnonzero(bad)
    if len(rows) == 0:
        return
    bdays = business_days(PERIOD_START, PERIOD_END)
    day = bdays[b.rng.integers(0, len(bdays), len(rows))]
    e["entry_date"][rows] = day
    e["post_date"][rows] = day
    e["doc_date"][rows] = np.minimum(e["doc_date"][rows], day)
    e["time_s"][rows] = b.rng.integers(max(start, 8 * 3600 + 1800), min(end, 17 * 3600 + 1800), len(rows))


# ---------------------------------------------------------------------------- strategies
_HOURS = re.compile(r"Friday, from (\d\d):(\d\d) to (\d\d):(\d\d)")


def _find(docs: list[dict], doc_type: str, words: str) -> list[str]:
    return [d["doc_id"] for d in docs if d["doc_type"] == doc_type and words in d["title"].lower()]


def _rules(kit: Kit):
    """(documents, policy id, start, end, holidays) read from the support pack and the calendar."""
    docs = yield from kit.documents()
    pol = _find(docs, "policy", "posting window")
    start, end = 8 * 3600, 18 * 3600
    if pol:
        m = _HOURS.search((yield from kit.open(pol[0])).get("body", ""))
        if m:
            h0, m0, h1, m1 = (int(x) for x in m.groups())
            start, end = h0 * 3600 + m0 * 60, h1 * 3600 + m1 * 60
    cal = yield from kit.master("calendar")
    holidays = sorted(r["date"] for r in cal if r.get("kind") == "holiday")
    return docs, (pol[0] if pol else None), start, end, holidays


def _candidates(kit: Kit, start: int, end: int, holidays: list[str]):
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "line_no", "op": "eq", "value": 1}],
                                 columns=["entry_id", "entry_timestamp", "posting_date", "preparer"])
    if not rows:
        return []
    day = np.array([r["entry_timestamp"][:10] for r in rows], dtype="datetime64[D]")
    t = np.array([_secs(r["entry_timestamp"]) for r in rows])
    hit = off_hours(day, t, np.array(holidays, dtype="datetime64[D]"), start, end)
    return [rows[i] for i in np.flatnonzero(hit)]


def _secs(ts: str) -> int:
    hh, mm, ss = ts[11:19].split(":")
    return int(hh) * 3600 + int(mm) * 60 + int(ss)


def _why(ts: str, start: int, end: int, holidays: list[str]) -> str:
    d = dt.date.fromisoformat(ts[:10])
    if ts[:10] in holidays:
        return f"keyed on {ts[:10]}, a public holiday in the company calendar"
    if d.weekday() >= 5:
        return f"keyed on a {d:%A} ({ts[:10]})"
    return f"keyed at {ts[11:16]} on {d:%A} {ts[:10]}, outside business hours {hhmm(start)}-{hhmm(end)}"


def naive(kit: Kit):
    """Flags every manual entry keyed on a weekend, a holiday or after hours, reading no memo."""
    _docs, pol, start, end, holidays = yield from _rules(kit)
    cands = yield from _candidates(kit, start, end, holidays)
    ev = [x for x in (pol, "master:calendar") if x]
    for r in cands:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(r["entry_id"], "OFF_HOURS", ev,
                            f"Manual entry {r['entry_id']} by {r['preparer']} was "
                            f"{_why(r['entry_timestamp'], start, end, holidays)}.")
    yield from kit.submit(f"Flagged {len(cands)} manual entries keyed outside the posting window.")


_USERS = re.compile(r"Authorised users: (.*)")
_DATES = re.compile(r"Dates covered: (.*)")
_WINDOW = re.compile(r"Hours: (\d\d):(\d\d) to (\d\d):(\d\d)")


def _parse_memo(body: str) -> dict:
    users, dates, win = _USERS.search(body), _DATES.search(body), _WINDOW.search(body)
    h0, m0, h1, m1 = (int(x) for x in win.groups()) if win else (0, 0, 0, 0)
    return {
        "users": set(re.findall(r"\(([A-Z_]+)\)", users.group(1))) if users else set(),
        "dates": set(re.findall(r"\d{4}-\d\d-\d\d", dates.group(1))) if dates else set(),
        "start": h0 * 3600 + m0 * 60,
        "end": h1 * 3600 + m1 * 60,
    }


def careful(kit: Kit):
    """Reads the policy hours, the holiday calendar and every close-work memo, opens each manual
    entry keyed outside the window, clears those a memo covers (user, date and hours) and flags
    the rest, citing the memo that covers the date when a memo exists but does not cover it."""
    docs, pol, start, end, holidays = yield from _rules(kit)
    cands = yield from _candidates(kit, start, end, holidays)
    cand_dates = {r["entry_timestamp"][:10] for r in cands}
    memos: dict[str, dict] = {}
    for d in docs:
        if d["doc_type"] != "memo" or "authorisation of close work" not in d["title"].lower():
            continue
        # a memo is issued shortly before the work it authorises: skip those far from any candidate
        issued = dt.date.fromisoformat(d["date"])
        if not any(0 <= (dt.date.fromisoformat(c) - issued).days <= 21 for c in cand_dates):
            continue
        if kit.calls_left <= 2 * len(cands) + 2:
            break
        memos[d["doc_id"]] = _parse_memo((yield from kit.open(d["doc_id"])).get("body", ""))
    base_ev = [x for x in (pol,) if x]
    n_flag = n_clear = 0
    # entries on dates no memo covers first: if the budget runs short, what is left undisposed
    # are the likely authorised ones (undisposed counts as approved)
    memo_days = {d for m in memos.values() for d in m["dates"]}
    for r in sorted(cands, key=lambda x: (x["entry_timestamp"][:10] in memo_days, x["entry_id"])):
        if kit.calls_left <= 3:
            break
        eid = r["entry_id"]
        entry = yield from kit.call("get_entry", entry_id=eid)
        ts = str(entry.get("entry_timestamp") or r["entry_timestamp"])
        prep = entry.get("preparer", r["preparer"])
        day, t = ts[:10], _secs(ts)
        same_day = [k for k, m in memos.items() if day in m["dates"]]
        cover = next((k for k in same_day if prep in memos[k]["users"]
                      and memos[k]["start"] <= t < memos[k]["end"]), None)
        if cover:
            m = memos[cover]
            yield from kit.clear(
                eid, [*base_ev, cover, eid],
                f"Entry {eid} by {prep} was keyed at {ts[11:16]} on {day} (posting date {entry.get('posting_date')}), "
                f"outside normal hours, but {cover} authorises {prep} to post on {day} between "
                f"{hhmm(m['start'])} and {hhmm(m['end'])} for close work (policy {pol} section 4).")
            n_clear += 1
        else:
            why = _why(ts, start, end, holidays)
            if same_day:
                m = memos[same_day[0]]
                scope = (f"{same_day[0]} covers {day} only for {', '.join(sorted(m['users']))} between "
                         f"{hhmm(m['start'])} and {hhmm(m['end'])}, which does not include {prep} at {ts[11:16]}")
            else:
                scope = "no close-work memo authorises work on that date"
            yield from kit.flag(
                eid, "OFF_HOURS", [*base_ev, "master:calendar", *same_day, eid],
                f"Manual entry {eid} by {prep} was {why}, against the posting window policy {pol} "
                f"(business days {hhmm(start)}-{hhmm(end)}); {scope}.")
            n_flag += 1
    yield from kit.submit(f"Reviewed {len(cands)} manual entries keyed outside the posting window: flagged {n_flag} "
                          f"without authorisation, cleared {n_clear} covered by close-work memos.")
