"""JE-6 (L2): off-hours manual postings.

The posting-window policy (a policy document) allows manual entries only on business days
(Monday to Friday, not on the public holidays of ``master:calendar``) within stated business
hours, judged on the ERP entry timestamp. Automated postings by system users run as night jobs and
are outside the rule. For a period close, the Controller may authorise named users, in a memo, to
key entries on named dates within stated hours, up to the period's close date (``master:calendar``).

Planted as perturbations of the books' own close: every entry the rule catches is one of the
year's month-end close entries (an accrual, an allowance review, bank charges or interest:
manual, posted to the last day of a month of January-November and keyed in that month's close
window by the GL accountant or senior accountant who keys them) whose *entry time* alone was
moved, to a weekend day or public holiday of the window between 08:30 and 19:30, or to a
business-day evening at least an hour after business hours end. Its posting date, amount,
accounts, preparer and approver stay the books'; an accrual's reversal, which the batch records
the night the accrual is keyed, follows it. Each is then made a defect or a decoy at random, and
every closing month with such entries has a close-work memo (its title names the month); only the
memo's text decides.

Decoys (``authorised_close_work``): the memo names the entry's preparer and lists the day it was
keyed, with hours (08:00-20:00 for weekend and holiday days, from the end of business hours to
23:30 for evenings) that include its time, and the day is after the month end and on or before
the period's close date in ``master:calendar``. Decisive facts: the memo, the user, the day and
the close date.

Planted defects (criteria ``OFF_HOURS``):
  * ``date_not_authorised``: the memo of that close does not list the day the entry was keyed;
  * ``user_not_authorised``: the memo lists the day but does not name the preparer (more of these
    as ``near_miss`` rises: the memo then lists the defect's day too);
  * ``hours_not_authorised``: only in a close so crowded (large ``n_defects``/``n_decoys``) that its
    memo names the preparer on every day of the window: keyed after the memo's hours that day.
Decisive facts: the user, the day and the memo. Required evidence: the policy,
``master:calendar``, the memo and the entry; a decoy is cleared by the policy, its memo,
``master:calendar`` (the close date) and the entry. No planted time sits within minutes of the
stated hours: a business-day defect is keyed an hour or more after they end.

Unplanted look-alikes: the books key every manual entry on a business day between 08:30 and
17:30, inside every posting window a policy states, so the rule (manual entries outside the
window) catches no unplanted entry (0 of the 8,381 unplanted manual entries of seeds 0-49). A filter on the
timestamp alone, without the policy's scope, also catches the system postings, 72 %
of the unplanted entries (the night batch, the evening interfaces and their weekend runs), which
section 5 of the policy puts outside it.
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (DATE, HHMM, NAME, POSTING_WINDOW, TOKEN, Disposition, Form, Many, SurfaceRule,
                                     Task, clear, flag, hhmm, read_while, review, surface_naive, tally)

SPEC = spec(
    "JE-6",
    "L2",
    'Off-hours manual postings',
    step_budget=70,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find manual entries posted on weekends, public holidays or outside business hours that no memo authorises.',
    defect='manual posting on a weekend, holiday or after hours',
    decoys='close work on a weekend, holiday or evening authorised by a memo',
    required_evidence='holiday calendar, close dates and the close memo',
    sources=('general_ledger', 'holiday_calendar', 'close_memos'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OFF_HOURS', 'manual posting on a weekend, public holiday or outside business hours without authorisation'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "date_not_authorised",
        evidence="the posting-window policy, master:calendar, the close-work memo of the entry's close and the entry",
        facts="the entry timestamp falls on a weekend, a public holiday or outside the stated hours; the memo for "
              "that close does not list the day it was keyed",
        conclusion="Manual entry keyed outside the posting window on a day no close-work authorisation covers: a "
                   "deviation from the posting-window policy, reported as an exception.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("defect", "user_not_authorised",
        evidence="the posting-window policy, master:calendar, the close-work memo of the entry's close and the entry",
        facts="the entry was keyed outside the window on a day the memo lists, but the memo does not name its "
              "preparer",
        conclusion="The close-work authorisation covers other users only; the preparer keyed a manual entry outside "
                   "the window without authorisation: an exception.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("defect", "hours_not_authorised",
        evidence="the posting-window policy, master:calendar, the close-work memo of the entry's close and the entry",
        facts="the memo names the preparer and lists the day, but the entry time is after the hours it grants that day",
        conclusion="Keyed outside the hours the close-work memo authorises: not covered by the authorisation, an "
                   "exception.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("decoy", "authorised_close_work",
        evidence="the close-work memo of the entry's close (with the policy's section 4 and master:calendar) and the entry",
        facts="the memo, issued before the close began, names the preparer and lists the day with hours that include "
              "the entry time; the day is after the month end and on or before the period's close date",
        conclusion="Close work keyed outside business hours under a written authorisation that covers user, day and "
                   "time within the close: no exception.",
        standard="AS 2401.58; ISA 240.32(a)"),
)

POLICY_TITLE = "Journal entry posting window policy"
MEMO_TITLE = "Authorisation of close work outside business hours"
#: business-hour windows (seconds after midnight) a world may state; the base keys 08:30-17:30
HOUR_OPTIONS = (cal.BUSINESS_HOURS, (7 * 3600 + 1800, 18 * 3600), (8 * 3600, 18 * 3600 + 1800), (7 * 3600, 19 * 3600))
_NAMES = {u.user_id: u.name for u in md.USERS}
#: the people who key month-end close entries (accruals, allowance reviews, bank charges and interest)
CLOSE_PREPARERS = tuple(u.user_id for u in md.USERS if set(u.posts) & {"AC", "AL", "BC", "BI"})
_MONTH = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Policy:
    """Policy FIN-11: the business hours manual entries may be keyed in."""
    start: int
    end: int


@dataclass(frozen=True)
class AuthorisedUser:
    """A user a close-work memo names."""
    name: str
    user_id: str


@dataclass(frozen=True)
class Slot:
    """A day a close-work memo covers, and the hours on it."""
    weekday: str
    date: str
    start: int
    end: int


@dataclass(frozen=True)
class Memo:
    """The Controller's authorisation of close work outside business hours for one period's close."""
    period: str
    users: tuple[AuthorisedUser, ...]
    slots: tuple[Slot, ...]


POLICY = Form(Policy, (
    "Policy FIN-11 Posting window for manual journal entries. Effective 2024-01-01. Owner: Controller.\n\n"
    "1. Business hours. Manual journal entries may be keyed and posted only on business days, Monday to "
    "Friday, from {start} to {end} (local time).\n"
    "2. Weekends and public holidays. No manual entries may be keyed on Saturdays, Sundays or on the public "
    "holidays listed in the company calendar (master data: calendar, kind 'holiday').\n"
    "3. The time that counts is the entry timestamp recorded by the ERP system when the entry is keyed, "
    "not the posting date chosen for the entry.\n"
    "4. Close work. During a period close the Controller may authorise named users in a written memo to key "
    "manual entries outside business hours on named dates, up to the close date of the period in the company "
    "calendar (master data: calendar, kind 'period_close'), within stated hours. The memo lists the users, "
    "the dates and the hours covered. Entries by other users, on other dates or outside those hours are not "
    "covered and fall under sections 1 and 2.\n"
    "5. Scope. This policy applies to manual entries only. Automated postings by system users "
    "(SYS_BATCH, SYS_INTERFACE) run as scheduled night jobs and are outside this policy."), start=HHMM, end=HHMM)
USER = Form(AuthorisedUser, "{name} ({user_id})", name=NAME, user_id=TOKEN)
SLOT = Form(Slot, "    {weekday} {date}, {start} to {end}", weekday=NAME, date=DATE, start=HHMM, end=HHMM)
MEMO = Form(Memo, (
    "To: General Ledger and Accounts Payable teams\n"
    "From: Isabel Brown, Controller\n"
    "Subject: " + MEMO_TITLE + " - {period} close\n\n"
    "To complete the {period} close on schedule, I authorise the users below to key and post manual journal "
    "entries outside normal business hours, under section 4 of the posting window policy.\n"
    "  Authorised users: {users}\n"
    "  Dates and hours covered:\n{slots}\n"
    "Entries keyed under this authorisation follow the normal approval workflow. The authorisation does "
    "not extend to any other user, date or time."), period=NAME, users=Many((USER,), ", "), slots=Many((SLOT,)))


# ---------------------------------------------------------------------------- planting
def _memo(users: list[str], slots: list[tuple[np.datetime64, int, int]], period: str) -> str:
    return MEMO.render(Memo(period, tuple(AuthorisedUser(_NAMES[u], u) for u in users),
                            tuple(Slot(f"{dt.date.fromisoformat(str(d)):%A}", str(d), w0, w1) for d, w0, w1 in slots)))


def close_window(month: int) -> np.ndarray:
    """The days after the end of ``month`` (2025) up to and including its close date."""
    close = np.datetime64(dict(cal.month_close_dates())[f"2025-{month:02d}"])
    first = np.datetime64(f"2025-{month + 1:02d}-01", "D")
    return np.arange(first, close + 1, dtype="datetime64[D]")


def _window_hours(day: Any, end: int) -> tuple[int, int]:
    """The hours a close memo grants on ``day``: daytime on weekends and holidays, the evening otherwise."""
    if not cal.is_business_day(day):
        return 8 * 3600, 20 * 3600
    return end, 23 * 3600 + 1800


def _draw_time(rng: np.random.Generator, day: Any, end: int) -> tuple[np.datetime64, int]:
    """A keying time on ``day``: 08:30-19:30 on a weekend or holiday, else at least an hour after business hours."""
    if not cal.is_business_day(day):
        return day, int(rng.integers(8 * 3600 + 1800, 19 * 3600 + 1800))
    return day, int(rng.integers(end + 3600, 23 * 3600))


#: the close entries of the books: manual, posted to the last day of a month, keyed in its close window
CLOSE_TYPES = ("AC", "AL", "BC", "BI")


def _close_entries(b: WorldBuilder, months: list[int]) -> np.ndarray:
    """Month-end close entries of ``months`` (accruals, allowance reviews, bank charges and interest)."""
    col = b.cols
    month = col.post_date.astype("datetime64[M]").astype(np.int64) - (2025 - 1970) * 12 + 1
    return (col.manual & np.isin(col.doc_code, CLOSE_TYPES) & (col.post_date == cal.last_day_of_month(col.post_date))
            & (col.entry_date > col.post_date) & np.isin(month, list(months)))


def plant(b: WorldBuilder) -> None:
    """State the posting window; move some closes' month-end entries to off-hours keying times; write
    one close-work memo per close covering its decoys' users and days, and not its defects'."""
    rng, col = b.rng, b.cols
    start, end = HOUR_OPTIONS[int(rng.integers(0, len(HOUR_OPTIONS)))]
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy(start, end)), "2023-12-12")
    n = b.n_defects + b.n_decoys
    months = [int(m) for m in rng.permutation(np.arange(1, 12))]
    n_periods = min(len(months), max(2, math.ceil(n / 4))) if n else 0
    chosen = months[:n_periods]
    # 1. the candidates are the books' own close entries of some closes; only when keyed changes
    pool = _close_entries(b, chosen)
    if int((pool & ~b.used).sum()) < n:
        chosen = months
        pool = _close_entries(b, chosen)
    idxs = b.pick(n, pool, what="month-end close entries (accruals, allowance, bank charges and interest)")
    cands = []
    for idx in idxs.tolist():
        month = int(str(col.post_date[idx])[5:7])
        win = close_window(month)
        busy = cal.is_business_day(win)
        off = win[~busy]
        on = win[busy]
        day = off[int(rng.integers(0, len(off)))] if len(off) and (rng.random() < 0.5 or not len(on)) \
            else on[int(rng.integers(0, len(on)))]
        day, t = _draw_time(rng, day, end)
        cands.append({"idx": idx, "month": month, "day": day, "t": t, "user": str(col.preparer[idx])})
    is_defect = np.zeros(n, dtype=bool)
    is_defect[rng.permutation(n)[: b.n_defects]] = True

    # 2. one memo per closing month: the decoys' users and days; a defect's day at near_miss
    events: dict[int, dict] = {}
    for month in sorted({c["month"] for c in cands}):
        mine = [(c, d) for c, d in zip(cands, is_defect) if c["month"] == month]
        users = {c["user"] for c, d in mine if not d}
        days = {str(c["day"]) for c, d in mine if not d}
        if not users:
            users = {str(u) for u in rng.choice(CLOSE_PREPARERS, size=2, replace=False)}
        for c, d in mine:
            # near miss: the memo lists the defect's day, but not its preparer
            if d and c["user"] not in users and rng.random() < b.knobs.near_miss:
                days.add(str(c["day"]))
        if not days:
            win = close_window(month)
            days = {str(win[int(rng.integers(0, len(win)))])}
        # a defect the memo would cover is keyed on a day the memo does not list instead
        for c, d in mine:
            if d and str(c["day"]) in days and c["user"] in users:
                free = [x for x in close_window(month) if str(x) not in days]
                if free:
                    c["day"], c["t"] = _draw_time(rng, free[int(rng.integers(0, len(free)))], end)
                else:
                    # a close so crowded that the memo names its user on every day: keyed after its hours
                    w1 = _window_hours(c["day"], end)[1]
                    c["t"] = int(rng.integers(w1 + 600, min(w1 + 3 * 3600, 24 * 3600 - 60)))
        events[month] = {"users": sorted(users), "days": sorted(days)}
    # a memo for a close without off-hours entries, so a memo alone points at nothing
    spare = [m for m in months if m not in events]
    if spare:
        m = spare[0]
        win = close_window(m)
        events[m] = {"users": sorted(str(u) for u in rng.choice(CLOSE_PREPARERS, size=2, replace=False)),
                     "days": [str(win[int(rng.integers(0, len(win)))])]}
    for month, ev in events.items():
        slots = [(np.datetime64(d), *_window_hours(np.datetime64(d), end)) for d in ev["days"]]
        period = f"{_MONTH[month - 1]} 2025"
        # issued before the close starts, so that no entry of the close was keyed before its memo
        issued = str(np.datetime64(f"2025-{month + 1:02d}-01", "D") - int(rng.integers(2, 7)))
        ev["doc"] = b.add_document("memo", f"{MEMO_TITLE} - {period} close", _memo(ev["users"], slots, period), issued)

    # every planted keying time, defect or decoy, is outside the window (the memo decides)
    assert not cands or POSTING_WINDOW.outside([c["day"] for c in cands], [c["t"] for c in cands], cal.HOLIDAY_DATES,
                                               start, end).all()
    # 3. plant: the close entry keeps its posting date (the month end) and is keyed at the drawn time;
    # an accrual's reversal (recorded by the batch the night the accrual is keyed) follows it
    reversal = _reversals(b)
    for c, d in zip(cands, is_defect):
        ev = events[c["month"]]
        idx = c["idx"]
        col.entry_date[idx] = c["day"]
        col.time_s[idx] = c["t"]
        rv = reversal.get(int(col.books_doc[idx]))
        b.claim("JE-6", entries=[idx] + ([rv] if rv is not None else []), documents=[policy, ev["doc"]])
        if rv is not None:
            col.entry_date[rv] = c["day"]
            col.time_s[rv] = max(int(col.time_s[rv]), min(c["t"] + 60, 24 * 3600 - 1))
        day = str(c["day"])
        if not d:
            b.add_decoy(idx, "authorised_close_work", [policy, ev["doc"], "master:calendar", "entry"],
                        facts=[f"{{D:{ev['doc']}}}", c["user"], day,
                               dict(cal.month_close_dates())[f"2025-{c['month']:02d}"]])
            continue
        kind = ("date_not_authorised" if day not in ev["days"] else
                "user_not_authorised" if c["user"] not in ev["users"] else "hours_not_authorised")
        b.add_defect(idx, kind, "OFF_HOURS", [policy, "master:calendar", ev["doc"], "entry"], int(col.debit_cents[idx]),
                     facts=[c["user"], day, f"{{D:{ev['doc']}}}"])


def _reversals(b: WorldBuilder) -> dict[int, int]:
    """{books document of an accrual: the entry of its reversal} (reversals are linked to what they reverse)."""
    col = b.cols
    rv = np.flatnonzero(col.doc_code == "RV")
    parent = b.books.docs.parent[col.books_doc[rv]]
    return dict(zip(parent.tolist(), rv.tolist()))



# ---------------------------------------------------------------------------- strategies
def _find(docs: list[dict[str, Any]], doc_type: str, words: str) -> list[str]:
    return [d["doc_id"] for d in docs if d["doc_type"] == doc_type and words in d["title"].lower()]


def _rules(kit: Kit) -> Generator[Step, Any, tuple[list[dict[str, Any]], str | None, int, int, list[str],
                                                     dict[str, str]]]:
    """(documents, policy id, start, end, holidays, {period: close date}) from the support pack and the calendar."""
    docs = yield from kit.documents()
    pol = _find(docs, "policy", "posting window")
    start, end = cal.BUSINESS_HOURS
    if pol:
        stated = POLICY.parse((yield from kit.open(pol[0])).get("body", ""))
        if stated:
            start, end = stated.start, stated.end
    cal_rows = yield from kit.master("calendar")
    holidays = sorted(r["date"] for r in cal_rows if r.get("kind") == "holiday")
    closes = {r["description"].split()[-1]: r["date"] for r in cal_rows if r.get("kind") == "period_close"}
    return docs, (pol[0] if pol else None), start, end, holidays, closes


def _candidates(kit: Kit, start: int, end: int, holidays: list[str]) -> Generator[Step, Any, list[dict[str, Any]]]:
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "line_no", "op": "eq", "value": 1}],
                                 columns=["entry_id", "entry_timestamp", "posting_date", "preparer"])
    if not rows:
        return []
    day = np.array([r["entry_timestamp"][:10] for r in rows], dtype="datetime64[D]")
    t = np.array([_secs(r["entry_timestamp"]) for r in rows])
    hit = POSTING_WINDOW.outside(day, t, np.array(holidays, dtype="datetime64[D]"), start, end)
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


def _off_window(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """Manual entries keyed outside the posting window, in ledger order, with why and the policy's id."""
    _docs, pol, start, end, holidays, _closes = yield from _rules(kit)
    cands = yield from _candidates(kit, start, end, holidays)
    return {r["entry_id"]: {**r, "why": _why(r["entry_timestamp"], start, end, holidays), "policy": pol or ""}
            for r in cands}


RULE = SurfaceRule("a manual entry keyed on a weekend, a holiday or after hours", "OFF_HOURS", _off_window,
                   "Manual entry {entry_id} by {preparer} was {why}.",
                   "Flagged {n} manual entries keyed outside the posting window.", ("{policy}", "master:calendar"),
                   in_order=False)
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy hours, the calendar (holidays, close dates) and the close-work memos, opens
    each manual entry keyed outside the window, clears those a memo covers (user named, day listed,
    time within that day's hours, on or before the period's close date) and flags the rest, citing
    the memo of the entry's close."""
    docs, pol, start, end, holidays, closes = yield from _rules(kit)
    cands = yield from _candidates(kit, start, end, holidays)
    titles = {d["doc_id"]: d["title"] for d in docs}
    months = {dt.date.fromisoformat(r["posting_date"][:7] + "-01").strftime("%B %Y") for r in cands}
    # only the memos of the closes the candidates were posted into
    ids = [d["doc_id"] for d in docs if d["doc_type"] == "memo" and "authorisation of close work" in d["title"].lower()
           and any(m in d["title"] for m in months)]
    memos = {k: MEMO.parse(body) for k, body in (yield from read_while(kit, ids, reserve=2 * len(cands) + 2)).items()}

    def decide(r: dict[str, Any]) -> Generator[Step, Any, Disposition]:
        entry = yield from kit.call("get_entry", entry_id=r["entry_id"])
        return _judge(r, entry, pol, start, end, holidays, closes, memos, titles)

    flags, clears = tally((yield from review(kit, cands, decide, reserve=3)))
    yield from kit.submit(f"Reviewed {len(cands)} manual entries keyed outside the posting window: flagged {flags} "
                          f"without authorisation, cleared {clears} covered by close-work memos.")


def _judge(r: dict[str, Any], entry: dict[str, Any], pol: str | None, start: int, end: int, holidays: list[str],
           closes: dict[str, str], memos: dict[str, Memo | None], titles: dict[str, str]) -> Disposition:
    """Whether a close-work memo covers entry ``r`` keyed outside the window (clear) or none does (flag)."""
    eid = r["entry_id"]
    ts = str(entry.get("entry_timestamp") or r["entry_timestamp"])
    prep = entry.get("preparer", r["preparer"])
    posted = str(entry.get("posting_date") or r["posting_date"])
    day, t = ts[:10], _secs(ts)
    close = closes.get(posted[:7], "")
    month = dt.date.fromisoformat(posted[:7] + "-01").strftime("%B %Y")
    memo = next((k for k in memos if month in titles[k]), None)
    m = memos.get(memo) if memo else None
    users = {u.user_id for u in m.users} if m else set()
    slot = next(((s.start, s.end) for s in m.slots if s.date == day), None) if m else None
    if memo is not None and slot and prep in users and slot[0] <= t < slot[1] and close and day <= close:
        return clear(eid, [x for x in (pol, memo, "master:calendar", eid) if x],
                     f"Entry {eid} by {prep} was keyed at {ts[11:16]} on {day}, outside business hours, and posted to "
                     f"{posted}; {memo} authorises {prep} to post on {day} from {hhmm(slot[0])} to {hhmm(slot[1])} "
                     f"for the {month} close, and {day} is on or before that period's close date {close} in "
                     f"master:calendar (policy {pol} section 4).")
    if memo is None:
        scope = "no close-work memo covers that close"
    elif not slot:
        scope = f"{memo}, the close-work memo for {month}, does not list {day}"
    elif prep not in users:
        scope = f"{memo} lists {day} but names only {', '.join(sorted(users))}, not {prep}"
    elif not (close and day <= close):
        scope = f"{day} is after the period close date {close}"
    else:
        scope = f"{memo} covers {day} only from {hhmm(slot[0])} to {hhmm(slot[1])}, not {ts[11:16]}"
    return flag(eid, "OFF_HOURS", [x for x in (pol, "master:calendar", memo, eid) if x],
                f"Manual entry {eid} by {prep} was {_why(ts, start, end, holidays)}, against the posting window policy "
                f"{pol} (business days {hhmm(start)}-{hhmm(end)}); {scope}.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template, rules=(POSTING_WINDOW,),
            decisive="the entry timestamp against the posting window (policy hours, master:calendar holidays and "
                     "close dates) and the close-work memo of its period (users, dates, hours)")
