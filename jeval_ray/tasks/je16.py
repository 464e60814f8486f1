"""JE-16 (L4): mixed engagement with completeness.

One world holds the exceptions of six criteria at once, plus one entry missing from the listing.
``n_defects`` counts them all: the missing entry is one of them (when ``n_defects`` >= 1) and the
others cycle through the criteria from a seed-chosen start, so every criterion appears once there
are seven defects. Decoys cycle through the matching legitimate look-alikes the same way.

| criteria | planted exception (required evidence) | decoy (clearing evidence) |
|---|---|---|
| UNBALANCED | credit side keyed wrong by more than the policy's rounding tolerance (entry, journal entry policy) | difference within the tolerance (entry, policy) |
| SELF_APPROVAL | manual entry approved by its own preparer (`master:users`, policy) | automated posting stamped by its system user, which the policy allows (same) |
| INVALID_ACCOUNT | posting to a blocked, closed, not-yet-open or non-existent account (`master:accounts`) | posting to an account opened during the year before the posting date (`master:accounts`) |
| UNAUTHORISED_USER | keyed by a user without posting rights, or by a leaver after the termination date (`master:users`) | keyed by the leaver before the termination date (`master:users`) |
| OFF_HOURS | manual entry keyed on a weekend, a holiday or outside 08:00-18:00 without authorisation; near misses: an authorised weekend but an unlisted user, or outside the authorised hours (`master:calendar`, posting-window policy) | weekend work by a user named in a weekend work authorisation, inside its hours (the authorisation memo, policy) |
| CUTOFF | entry recorded after its period's close date (entry, `master:calendar`, policy) | entry recorded after the period end but on or before the close date (`master:calendar`, policy) |
| COMPLETENESS_GAP | an entry left out of the listing: a gap in the consecutive numbering, and the two accounts it moved do not roll forward from opening to closing balance (`master:balances` via `get_balances`) | none |

DUPLICATE is offered as a criteria code but not planted: an engagement's test list is broader
than its findings. The misstatement is the entry amount, the keying difference for UNBALANCED,
and the amount of the missing entry (the roll-forward difference) for COMPLETENESS_GAP; the gap
is reported by flagging the missing id, which ``flag_entry`` accepts inside the numbering range.
``premature_penalty`` (0.05 off the process score per disposition made before its required or
clearing evidence was opened) makes the order of work part of the score. ``near_miss`` moves
rounding decoys towards the tolerance, opened-account decoys towards the opening date, leaver
decoys towards the termination date, weekend decoys towards the end of the authorised hours and
close-window decoys towards the close date, and from 0.5 adds the near-miss OFF_HOURS variants.

The base population trips none of the rules (balanced, approver != preparer, standing accounts,
active staff with posting rights, manual work on business days 08:30-17:30, entries recorded on
their posting date); ``plant`` asserts the properties it relies on.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import BUSINESS_HOURS, HOLIDAY_DATES, HOLIDAYS_2025, month_close_dates

SPEC = spec(
    "JE-16",
    "L4",
    'Mixed engagement with completeness',
    objective="Test the full listing against several criteria at once and roll the balances forward to find any entry missing from the listing. Open every flagged entry's evidence before you dispose of it.",
    defect='several criteria at once, plus an entry missing from the listing (roll-forward gap)',
    decoys='all of the above kinds',
    required_evidence="every flagged entry's evidence, opened before its disposition",
    sources=('general_ledger', 'trial_balance', 'user_master', 'chart_of_accounts', 'holiday_calendar', 'close_calendar', 'invoices', 'policies'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'get_balances', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits differ beyond tolerance'),
        ('SELF_APPROVAL', 'manual entry approved by its preparer'),
        ('INVALID_ACCOUNT', 'posting to a blocked, closed or non-existent account'),
        ('UNAUTHORISED_USER', 'posted without rights or after termination'),
        ('OFF_HOURS', 'manual posting off hours without authorisation'),
        ('DUPLICATE', 'same invoice posted twice'),
        ('CUTOFF', 'entry recorded after period close'),
        ('COMPLETENESS_GAP', 'an entry missing from the listing, revealed by the roll-forward of balances'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    premature_penalty=0.05,
    available=True,
)

JE_POLICY_TITLE = "Journal entry policy - balancing and approval (FIN-POL-010)"
CLOSE_POLICY_TITLE = "Posting windows and period-close policy (FIN-POL-014)"
MEMO_TITLE = "Weekend work authorisation"
KINDS = ("UNBALANCED", "SELF_APPROVAL", "INVALID_ACCOUNT", "UNAUTHORISED_USER", "OFF_HOURS", "CUTOFF")
EXPENSE_DEBITS = ("6200", "6300", "6400", "6600", "6700", "6900", "7000", "7100")
AR_TEMPLATES = ("customer_invoice", "customer_receipt")
#: accounts opened during FY2025 (code, name, split out of)
OPENED = (("6750", "Marketing - Digital Campaigns", "6700"), ("7150", "Cloud Hosting Services", "7100"),
          ("6450", "Consulting - ERP Implementation", "6400"), ("6650", "Repairs - Leased Premises", "6600"))
BLOCKED = (("6390", "Travel Suspense (do not use)", "2024-10-01"), ("6990", "Miscellaneous Expense - Blocked", "2024-03-15"),
           ("7190", "IT Clearing (blocked)", "2024-12-01"))
CLOSED_BEFORE = (("6250", "Utilities - Old Warehouse", "2024-06-30"), ("6410", "Consulting - Merger Advisory", "2024-09-30"))
LEAVERS = (("NWALSH", "Nora Walsh", "AP Clerk", "Accounts Payable", 5_000),
           ("OBAKER", "Omar Baker", "GL Accountant", "General Ledger", 10_000),
           ("PROSSI", "Paolo Rossi", "AP Clerk", "Accounts Payable", 5_000))
WEEKEND_REASONS = ("the month-end close of period {p}", "the quarter-end close of period {p}",
                   "the ERP upgrade cut-over reconciliations", "the physical inventory count adjustments")
HOURS = (BUSINESS_HOURS[0] // 3600, BUSINESS_HOURS[1] // 3600)  # 08:00-18:00
MEMO_HOURS = (8, 20)
#: the year-end close runs into January 2026: its holidays too (New Year's Day, Martin Luther King Jr. Day)
_HOL_CLOSE = np.concatenate([HOLIDAY_DATES, np.array(["2026-01-01", "2026-01-19"], dtype="datetime64[D]")])


# ----------------------------------------------------------------------------- world
def plant(b) -> None:
    """Plant the missing entry, the exceptions and decoys of every criterion, and their documents."""
    rng = b.rng
    _assert_clean_base(b)
    tol_cents = int(rng.choice([100, 200, 500]))
    closes = dict(month_close_dates())
    pol_je = b.add_document("policy", JE_POLICY_TITLE, _je_policy(b, tol_cents), "2024-11-20")
    pol_close = b.add_document("policy", CLOSE_POLICY_TITLE, _close_policy(b), "2024-11-29")
    b.facts["brief_notes"] = {
        "journal numbering": "the ERP numbers journal entries consecutively; report an entry missing from the listing by "
                             "flagging its entry id",
        "trial balance": "opening and closing balances per account come from get_balances (cite master:balances)",
        "year end close": f"the FY2025 books were closed on {b.facts['year_end_close']}",
    }

    n_kinds = max(0, b.n_defects - 1)
    start = int(rng.integers(0, len(KINDS)))
    def_kinds = [KINDS[(start + i) % len(KINDS)] for i in range(n_kinds)]
    start = int(rng.integers(0, len(KINDS)))
    dec_kinds = [KINDS[(start + i) % len(KINDS)] for i in range(b.n_decoys)]

    def count(kinds: list[str], kind: str) -> int:
        return sum(x == kind for x in kinds)

    if b.n_defects >= 1:
        _plant_gap(b)
    ctx = {"tol": tol_cents, "pol_je": pol_je, "pol_close": pol_close, "closes": closes}
    _plant_unbalanced(b, ctx, count(def_kinds, "UNBALANCED"), count(dec_kinds, "UNBALANCED"))
    _plant_self_approval(b, ctx, count(def_kinds, "SELF_APPROVAL"), count(dec_kinds, "SELF_APPROVAL"))
    _plant_accounts(b, count(def_kinds, "INVALID_ACCOUNT"), count(dec_kinds, "INVALID_ACCOUNT"))
    _plant_users(b, count(def_kinds, "UNAUTHORISED_USER"), count(dec_kinds, "UNAUTHORISED_USER"))
    _plant_off_hours(b, ctx, count(def_kinds, "OFF_HOURS"), count(dec_kinds, "OFF_HOURS"))
    _plant_cutoff(b, ctx, count(def_kinds, "CUTOFF"), count(dec_kinds, "CUTOFF"))
    for u in b.users:
        # empty text, not None: a text column with nulls does not hash (world/_hash.py)
        u["termination_date"] = u["termination_date"] or ""


def _assert_clean_base(b) -> None:
    """The properties of the base population this task relies on (the rules must not fire on it)."""
    e = b.e
    manual = e["manual"]
    if (e["debit_cents"] != e["credit_cents"]).any():
        raise RuntimeError("JE-16 base has unbalanced entries")
    if (manual & (e["approver"] == e["preparer"])).any():
        raise RuntimeError("JE-16 base has self-approved manual entries")
    if (e["entry_date"] != e["post_date"]).any():
        raise RuntimeError("JE-16 base has entries recorded on another day than their posting date")
    day = e["entry_date"].astype("datetime64[D]")
    off = manual & (~np.is_busday(day, holidays=HOLIDAY_DATES) | (e["time_s"] < HOURS[0] * 3600) | (e["time_s"] >= HOURS[1] * 3600))
    if off.any():
        raise RuntimeError("JE-16 base has manual entries outside the posting window")
    no_rights = [u["user_id"] for u in b.users if not u["posting_rights"] or u["status"] != "active"]
    if np.isin(e["preparer"], no_rights).any():
        raise RuntimeError("JE-16 base has entries by users without posting rights")


def _je_policy(b, tol_cents: int) -> str:
    system_users = sorted(u["user_id"] for u in b.users if u["role"] == "System")
    return (
        "1. Scope. All journal entries posted to the general ledger of Northwind Components Inc.\n"
        "2. Balancing. Every journal entry must balance: total debits must equal total credits. Differences of up "
        f"to USD {tol_cents / 100:.2f} per entry that arise from currency conversion rounding are tolerated and are "
        "cleared monthly to the rounding account by the GL team. Any larger difference is a keying error and must be "
        "corrected before period close.\n"
        "3. Approval. Every manual journal entry must be approved in the ERP workflow by a user other than its "
        "preparer whose approval limit covers the amount. A preparer may never approve his or her own entry.\n"
        f"4. Automated postings by the system users ({', '.join(system_users)}; role 'System' in the user master) "
        "are covered by the automated interface control ITGC-07. Where a run is released through the workflow the "
        "ERP stamps the system user itself as approver; that stamp records the automated release under ITGC-07 and is "
        "not a self-approval.\n"
        "5. Posting rights. Only users with posting rights in the user master may post; access ends on the "
        "termination date."
    )


def _close_policy(b) -> str:
    return (
        "1. Posting window. Manual journal entries are keyed on business days (Monday to Friday, excluding the "
        f"company holidays in the calendar master data) between {HOURS[0]:02d}:00 and {HOURS[1]:02d}:00 local time, "
        "as shown by the entry timestamp.\n"
        "2. Work outside the window (weekends, holidays, evenings) requires a prior written weekend work "
        "authorisation from the Controller naming the users, the dates and the hours. Entries keyed outside the "
        "window by anyone not so authorised are to be investigated.\n"
        "3. Automated postings by the system users run overnight on the batch schedule and are not subject to the "
        "manual posting window.\n"
        "4. Period close. Each monthly period is closed on the close date set in the financial close calendar "
        "(calendar master data, kind period_close). Entries recorded up to and including the close date may still be "
        "posted into the period being closed; this is normal close work. After the close date the period is locked "
        "and entries may not be back-dated into it.\n"
        f"5. The FY2025 year-end close date is {b.facts['year_end_close']}."
    )


def _plant_gap(b) -> None:
    """Leave one ordinary manual entry out of the listing, well inside the numbering range."""
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    where = e["manual"] & (post >= np.datetime64("2025-02-03")) & (post <= np.datetime64("2025-11-28")) & \
        np.isin(e["template"], ("accrual", "vendor_invoice", "reclass"))
    idx = int(b.pick(1, where=where, what="manual entries")[0])
    b.hide(idx)
    b.add_defect(idx, "entry_missing_from_listing", "COMPLETENESS_GAP", ["master:balances"], int(e["debit_cents"][idx]))


def _plant_unbalanced(b, ctx: dict, n_def: int, n_dec: int) -> None:
    rng = b.rng
    e = b.e
    tol = ctx["tol"]
    for idx in b.pick(n_def, what="entries") if n_def else []:
        if rng.random() < 0.5:
            diff = int(tol * rng.uniform(1.5, 20))
        else:
            diff = max(tol * 2, int(e["debit_cents"][idx] * rng.uniform(0.01, 0.2)))
        e["credit_cents"][idx] += diff if rng.random() < 0.5 else -diff
        b.add_defect(idx, "unbalanced_entry", "UNBALANCED", ["entry", ctx["pol_je"]], diff)
    for idx in b.pick(n_dec, what="entries") if n_dec else []:
        lo = max(1, int(tol * 0.05))
        hi = max(lo + 1, int(tol * (0.3 + 0.69 * b.knobs.near_miss)))
        diff = int(rng.integers(lo, hi + 1))
        e["credit_cents"][idx] += diff if rng.random() < 0.5 else -diff
        b.add_decoy(idx, "rounding_within_tolerance", ["entry", ctx["pol_je"]])


def _plant_self_approval(b, ctx: dict, n_def: int, n_dec: int) -> None:
    e = b.e
    system = sorted(u["user_id"] for u in b.users if u["role"] == "System")
    human = e["manual"] & ~np.isin(e["preparer"], system)
    for idx in b.pick(n_def, where=human, what="manual entries") if n_def else []:
        e["approver"][idx] = e["preparer"][idx]
        b.add_defect(idx, "self_approved_manual_entry", "SELF_APPROVAL", ["master:users", ctx["pol_je"]])
    automated = ~e["manual"] & np.isin(e["preparer"], system)
    for idx in b.pick(n_dec, where=automated, what="automated postings") if n_dec else []:
        e["approver"][idx] = e["preparer"][idx]
        b.add_decoy(idx, "system_release_under_interface_control", ["master:users", ctx["pol_je"]])


def _plant_accounts(b, n_def: int, n_dec: int) -> None:
    """Add changed accounts to the chart; plant postings to invalid ones and to newly opened ones."""
    rng = b.rng
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    pool = np.isin(e["debit_account"], EXPENSE_DEBITS)
    gap_max = 2 + int(round((1 - b.knobs.near_miss) * 45))
    rows = []
    opened = [OPENED[i] for i in sorted(rng.choice(len(OPENED), size=2, replace=False))]
    window = pool & (post >= np.datetime64("2025-03-01")) & (post <= np.datetime64("2025-11-30"))
    open_dates = {}
    for k, (code, name, _like) in enumerate(opened):
        share = n_dec // 2 + (n_dec % 2 if k == 0 else 0)
        idxs = b.pick(share, where=window, what="expense postings") if share else np.array([], dtype=int)
        opened_on = (post[idxs].min() - int(rng.integers(1, gap_max + 1))) if len(idxs) else \
            np.datetime64("2025-03-01") + int(rng.integers(0, 180))
        open_dates[code] = opened_on
        rows.append({"account": code, "name": name, "type": "expense", "status": "active", "opened": str(opened_on),
                     "closed": "", "blocked_on": ""})
        for idx in idxs:
            e["debit_account"][idx] = code
            b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"])
    blk_code, blk_name, blk_on = BLOCKED[int(rng.integers(0, len(BLOCKED)))]
    rows.append({"account": blk_code, "name": blk_name, "type": "expense", "status": "blocked", "opened": "2015-01-01",
                 "closed": "", "blocked_on": blk_on})
    cl_code, cl_name, cl_on = CLOSED_BEFORE[int(rng.integers(0, len(CLOSED_BEFORE)))]
    rows.append({"account": cl_code, "name": cl_name, "type": "expense", "status": "closed", "opened": "2015-01-01",
                 "closed": cl_on, "blocked_on": ""})
    taken = {a["account"] for a in b.accounts} | {r["account"] for r in rows}
    kinds = ("blocked", "closed", "nonexistent", "not_yet_open")
    first = int(rng.integers(0, len(kinds)))
    for i in range(n_def):
        kind = kinds[(first + i) % len(kinds)]
        where = pool
        if kind == "not_yet_open":
            code = str(rng.choice(sorted(open_dates)))
            where = pool & (post < open_dates[code])
            if int((where & ~b.used).sum()) == 0:
                kind, where = "blocked", pool
        idx = int(b.pick(1, where=where, what="expense postings")[0])
        if kind == "blocked":
            code = blk_code
        elif kind == "closed":
            code = cl_code
        elif kind == "nonexistent":
            code = _mistyped(str(e["debit_account"][idx]), taken, rng)
        e["debit_account"][idx] = code
        b.add_defect(idx, f"posting_to_{kind}_account", "INVALID_ACCOUNT", ["master:accounts"])
    for a in b.accounts:
        a["closed"] = a["closed"] or ""
        a["blocked_on"] = a["blocked_on"] or ""
    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])


def _mistyped(code: str, taken: set[str], rng) -> str:
    """A keying error on ``code`` (two adjacent digits swapped, else the last digit) not in the chart."""
    swaps = [code[:i] + code[i + 1] + code[i] + code[i + 2:] for i in range(len(code) - 1)]
    opts = sorted({c for c in swaps if c != code and c not in taken and c[0] != "0"})
    if not opts:
        opts = sorted({code[:-1] + d for d in "123456789" if code[:-1] + d not in taken})
    return str(rng.choice(opts))


def _plant_users(b, n_def: int, n_dec: int) -> None:
    """A leaver (terminated mid-year): postings after the termination are exceptions, before are not;
    users without posting rights also appear as preparers."""
    rng = b.rng
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    uid, name, role, dept, limit = LEAVERS[int(rng.integers(0, len(LEAVERS)))]
    term = np.datetime64("2025-06-02") + int(rng.integers(0, 110))
    fits = e["manual"] & ~np.isin(e["template"], AR_TEMPLATES) & (e["debit_cents"] < int(limit * 80))
    n_after = (n_def + 1) // 2 if n_def >= 2 else n_def
    n_rights = n_def - n_after
    w = 7 + int(round((1 - b.knobs.near_miss) * 90))
    while int((fits & ~b.used & (post < term) & (post >= term - w)).sum()) < n_dec and w < 400:
        w += 14
    for idx in b.pick(n_dec, where=fits & (post < term) & (post >= term - w), what="manual entries before a termination") if n_dec else []:
        e["preparer"][idx] = uid
        b.add_decoy(idx, "posted_before_termination", ["master:users"])
    for idx in b.pick(n_after, where=fits & (post > term), what="manual entries after a termination") if n_after else []:
        e["preparer"][idx] = uid
        b.add_defect(idx, "posted_after_termination", "UNAUTHORISED_USER", ["master:users"])
    no_rights = sorted(u["user_id"] for u in b.users if not u["posting_rights"])
    for idx in b.pick(n_rights, where=e["manual"], what="manual entries") if n_rights else []:
        e["preparer"][idx] = str(rng.choice(no_rights))
        b.add_defect(idx, "no_posting_rights", "UNAUTHORISED_USER", ["master:users"])
    b.users.append({"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
                    "approval_limit": float(limit), "status": "terminated",
                    "hire_date": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800))),
                    "termination_date": str(term), "bank_account": b.bank_account()})


def _weekends() -> list[tuple[np.datetime64, np.datetime64]]:
    """(Saturday, Sunday) pairs of FY2025 from February to November."""
    d = np.arange(np.datetime64("2025-02-01"), np.datetime64("2025-11-30"), dtype="datetime64[D]")
    return [(s, s + 1) for s in d[np.is_busday(d, weekmask="0000010")]]


def _plant_off_hours(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """Manual entries keyed on weekends, holidays or evenings; decoys are weekend work that a
    weekend work authorisation covers (named users, dates and hours)."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    system = sorted(u["user_id"] for u in b.users if u["role"] == "System")
    staff = e["manual"] & ~np.isin(e["preparer"], system)
    weekends = _weekends()
    n_memos = min(n_dec, 1 + int(rng.random() < 0.5)) if n_dec else int(near >= 0.5 and n_def > 0)
    chosen = [weekends[i] for i in sorted(rng.choice(len(weekends), size=n_memos, replace=False))] if n_memos else []
    memos = []
    decoys = b.pick(n_dec, where=staff, what="manual entries") if n_dec else []
    groups = [[] for _ in chosen]
    for k, idx in enumerate(decoys):
        groups[k % len(chosen)].append(int(idx))
    for (sat, sun), idxs in zip(chosen, groups):
        users = sorted({str(e["preparer"][i]) for i in idxs} | {str(rng.choice(("DPATEL", "EMUELLER", "FNGUYEN")))})
        memos.append({"days": (sat, sun), "users": users, "handle": None})
        for idx in idxs:
            day = sat if rng.random() < 0.6 else sun
            latest = MEMO_HOURS[0] + 1 + near * (MEMO_HOURS[1] - MEMO_HOURS[0] - 1.5)
            _move(b, idx, day, int(rng.uniform(MEMO_HOURS[0] + 1, latest) * 3600))
    for m in memos:
        sat, sun = m["days"]
        period = str(np.datetime64(sat, "M") - 1)
        reason = WEEKEND_REASONS[int(rng.integers(0, len(WEEKEND_REASONS)))].format(p=period)
        m["handle"] = b.add_document(
            "memo", f"{MEMO_TITLE} - {sat} / {sun}",
            f"From: IBROWN (Controller)\nTo: Finance team, IT operations\nDate: {sat - int(rng.integers(2, 6))}\n\n"
            f"The following users are authorised to work on Saturday {sat} and Sunday {sun}, between "
            f"{MEMO_HOURS[0]:02d}:00 and {MEMO_HOURS[1]:02d}:00, for {reason}, and to post the resulting journal entries "
            f"in the ERP on those days.\nAuthorised users: {', '.join(m['users'])}\n"
            "Every entry keyed during this window follows the normal approval workflow.",
            str(sat - 3),
        )
    for idx in decoys:
        m = next(m for m in memos if e["entry_date"][idx] in m["days"])
        b.add_decoy(idx, "authorised_weekend_work", [m["handle"], ctx["pol_close"]])

    authorised = {d for m in memos for d in m["days"]}
    free_weekends = [d for w in weekends for d in w if d not in authorised]
    holidays = [np.datetime64(h) for h, _ in HOLIDAYS_2025 if np.is_busday(np.datetime64(h))]
    variants = ["weekend", "holiday", "evening"] + (["unlisted_user", "outside_memo_hours"] if memos and near >= 0.5 else [])
    first = int(rng.integers(0, len(variants)))
    for i, idx in enumerate(b.pick(n_def, where=staff, what="manual entries") if n_def else []):
        kind = variants[(first + i) % len(variants)]
        if kind == "weekend":
            _move(b, idx, free_weekends[int(rng.integers(0, len(free_weekends)))], int(rng.integers(9 * 3600, 17 * 3600)))
        elif kind == "holiday":
            _move(b, idx, holidays[int(rng.integers(0, len(holidays)))], int(rng.integers(9 * 3600, 17 * 3600)))
        elif kind == "evening":
            t = int(rng.integers(19 * 3600, 23 * 3600)) if rng.random() < 0.7 else int(rng.integers(5 * 3600, 7 * 3600))
            _move(b, idx, e["post_date"][idx], t)
        else:
            m = memos[int(rng.integers(0, len(memos)))]
            day = m["days"][int(rng.integers(0, 2))]
            if kind == "unlisted_user":
                outsiders = sorted({"AKIM", "BOKAFOR", "DPATEL", "EMUELLER", "GSILVA"} - set(m["users"]))
                e["preparer"][idx] = str(rng.choice(outsiders))
                if e["approver"][idx] == e["preparer"][idx]:
                    e["approver"][idx] = "JWRIGHT"
                _move(b, idx, day, int(rng.integers(10 * 3600, 16 * 3600)))
            else:
                e["preparer"][idx] = str(rng.choice(m["users"]))
                if e["approver"][idx] == e["preparer"][idx]:
                    e["approver"][idx] = "JWRIGHT"
                _move(b, idx, day, int(rng.integers(MEMO_HOURS[1] * 3600 + 900, 23 * 3600)))
        b.add_defect(idx, f"off_hours_{kind}", "OFF_HOURS", ["master:calendar", ctx["pol_close"]])


def _move(b, idx: int, day, time_s: int) -> None:
    """Post and record entry ``idx`` on ``day`` at ``time_s`` seconds after midnight."""
    e = b.e
    day = np.datetime64(day, "D")
    e["post_date"][idx] = day
    e["entry_date"][idx] = day
    e["doc_date"][idx] = min(e["doc_date"][idx], day)
    e["time_s"][idx] = time_s


def _plant_cutoff(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """Entries posted into a month but recorded after its close date; decoys recorded in the close window."""
    rng = b.rng
    e = b.e
    closes = ctx["closes"]
    pool = e["manual"] & ~np.isin(e["template"], AR_TEMPLATES)
    for idx in b.pick(n_def, where=pool, what="manual entries") if n_def else []:
        m = int(rng.integers(1, 13))
        close = np.datetime64(closes[f"2025-{m:02d}"])
        b.post_late(idx, m, np.busday_offset(close, int(rng.integers(1, 9)), roll="forward", holidays=_HOL_CLOSE))
        b.add_defect(idx, "entry_after_close", "CUTOFF", ["entry", "master:calendar", ctx["pol_close"]])
    for idx in b.pick(n_dec, where=pool, what="manual entries") if n_dec else []:
        m = int(rng.integers(1, 13))
        close = np.datetime64(closes[f"2025-{m:02d}"])
        me = (np.datetime64(f"2025-{m:02d}", "M") + 1).astype("datetime64[D]")
        window = np.arange(me, close + 1, dtype="datetime64[D]")
        window = window[np.is_busday(window, holidays=_HOL_CLOSE)]
        lo = int(b.knobs.near_miss * (len(window) - 1))
        b.post_late(idx, m, window[int(rng.integers(lo, len(window)))])
        b.add_decoy(idx, "recorded_before_close", ["master:calendar", ctx["pol_close"]])


# ----------------------------------------------------------------------------- strategies
_SCAN_COLUMNS = ["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "preparer",
                 "approver", "source"]


def _period_end(day: str) -> str:
    return str((np.datetime64(day[:7], "M") + 1).astype("datetime64[D]") - 1)


def _standing(acct: dict | None) -> bool:
    """A plain active account, unchanged during FY2025."""
    return bool(acct) and acct.get("status") == "active" and (acct.get("opened") or "") < "2025-01-01" \
        and not acct.get("closed") and not acct.get("blocked_on")


def _account_ok(acct: dict | None, posted: str) -> tuple[bool, str]:
    """Whether ``acct`` accepted postings on ``posted``, with the reason."""
    if acct is None:
        return False, "does not exist in the chart of accounts"
    if acct.get("status") == "blocked" and (not acct.get("blocked_on") or posted >= acct["blocked_on"]):
        return False, f"is blocked for posting since {acct.get('blocked_on') or 'before the period'}"
    if acct.get("opened") and posted < acct["opened"]:
        return False, f"was only opened on {acct['opened']}"
    if acct.get("closed") and posted > acct["closed"]:
        return False, f"was closed on {acct['closed']}"
    if acct.get("status") not in ("active", "blocked", "closed"):
        return False, f"has status {acct.get('status')}"
    return True, f"was opened on {acct.get('opened')}, before the posting date"


def _user_ok(user: dict | None, posted: str) -> tuple[bool, str]:
    if user is None:
        return False, "is not in the user master"
    if not user.get("posting_rights"):
        return False, f"has no posting rights ({user.get('role')})"
    term = user.get("termination_date") or ""
    if term and posted > term:
        return False, f"was terminated on {term}"
    if term:
        return True, f"was terminated only on {term}, after the posting date"
    return True, "is active with posting rights"


def _off_window(ts: str, holidays: set[str]) -> str | None:
    """Why a manual entry keyed at ``ts`` is outside the posting window (None when inside)."""
    day = ts[:10]
    hour = int(ts[11:13]) + int(ts[14:16]) / 60
    if day in holidays:
        return f"keyed on the holiday {day}"
    if not np.is_busday(np.datetime64(day)):
        return f"keyed on a weekend day ({day})"
    if hour < HOURS[0] or hour >= HOURS[1]:
        return f"keyed at {ts[11:16]}, outside {HOURS[0]:02d}:00-{HOURS[1]:02d}:00"
    return None


def _scan(kit: Kit):
    """Every line of the listing, grouped by entry."""
    rows = yield from kit.ledger(columns=_SCAN_COLUMNS)
    return entries_of(rows), rows


def _gap_ids(kit: Kit, ents: dict) -> list[str]:
    present = {int(k) for k in ents}
    if not present:
        return []
    return [str(i) for i in range(min(present), max(present) + 1) if i not in present]


def _rules(ents: dict, users: dict, chart: dict, holidays: set[str], period_ends: bool = True) -> dict[str, list[str]]:
    """Candidates per criterion by the naive red-flag rules (no documents)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for eid in sorted(ents):
        h = ents[eid]
        if abs(h["total_debit"] - h["total_credit"]) > 0.004:
            out["UNBALANCED"].append(eid)
        if h.get("approver") and h["approver"] == h["preparer"]:
            out["SELF_APPROVAL"].append(eid)
        if any(not _standing(chart.get(a)) for a in h["accounts"]):
            out["INVALID_ACCOUNT"].append(eid)
        u = users.get(h["preparer"])
        if h["source"] == "manual" and (u is None or not u.get("posting_rights") or u.get("status") != "active"):
            out["UNAUTHORISED_USER"].append(eid)
        if h["source"] == "manual" and _off_window(h["entry_timestamp"], holidays):
            out["OFF_HOURS"].append(eid)
        if period_ends and h["entry_timestamp"][:10] > _period_end(h["posting_date"]):
            out["CUTOFF"].append(eid)
    return out


def naive(kit: Kit):
    """Applies every red-flag rule to the listing and flags all hits, without reading the policies,
    the weekend authorisations or the balances; reports the numbering gap without an amount."""
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    holidays = {r["date"][:10] for r in (yield from kit.master("calendar")) if r.get("kind") == "holiday"}
    ents, _rows = yield from _scan(kit)
    hits = _rules(ents, users, chart, holidays)
    done = set()
    n = 0
    for crit in KINDS:
        for eid in hits[crit]:
            if eid in done or kit.calls_left <= 2:
                continue
            done.add(eid)
            h = ents[eid]
            amount = abs(h["total_debit"] - h["total_credit"]) if crit == "UNBALANCED" else h["total_debit"]
            yield from kit.flag(eid, crit, [], f"Entry {eid} ({h['total_debit']:.2f}) trips the {crit} rule.", amount=amount)
            n += 1
    for gap in _gap_ids(kit, ents):
        if kit.calls_left > 1:
            yield from kit.flag(gap, "COMPLETENESS_GAP", [], f"Entry number {gap} is missing from the listing.")
            n += 1
    yield from kit.submit(f"Flagged {n} entries that trip a red-flag rule.")


def _docs(kit: Kit):
    """Open the two policies and every weekend work authorisation; returns (tolerance, ids, memos)."""
    pol = yield from kit.documents("policy")
    ids = {}
    for key, words in (("je", "balancing and approval"), ("close", "period-close")):
        doc = next((d for d in pol if words in d["title"].lower()), None)
        ids[key] = doc["doc_id"] if doc else None
    tol = 0.0
    if ids["je"]:
        body = (yield from kit.open(ids["je"])).get("body", "")
        m = re.search(r"up to USD ([\d,]+\.\d\d)", body)
        tol = float(m.group(1).replace(",", "")) if m else 0.0
    if ids["close"]:
        yield from kit.open(ids["close"])
    memos = []
    for d in (yield from kit.documents("memo")):
        if MEMO_TITLE.lower() not in d["title"].lower():
            continue
        body = (yield from kit.open(d["doc_id"])).get("body", "")
        days = set(re.findall(r"(?:Saturday|Sunday) (\d{4}-\d{2}-\d{2})", body))
        win = re.search(r"between (\d\d):(\d\d) and (\d\d):(\d\d)", body)
        users = re.search(r"Authorised users: ([A-Z_, ]+)", body)
        if days and win and users:
            memos.append({"doc_id": d["doc_id"], "days": days, "users": {u.strip() for u in users.group(1).split(",")},
                          "from": int(win.group(1)) + int(win.group(2)) / 60, "to": int(win.group(3)) + int(win.group(4)) / 60})
    return tol, ids, memos


def careful(kit: Kit):
    """Reads the whole listing, the balances, the user master, the chart, the calendar, the policies
    and the weekend authorisations first; then judges every rule hit against its evidence, rolls the
    balances forward to size the missing entry, and disposes of everything with what it opened."""
    ents, rows = yield from _scan(kit)
    balances = (yield from kit.call("get_balances")).get("rows", [])
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    cal = yield from kit.master("calendar")
    holidays = {r["date"][:10] for r in cal if r.get("kind") == "holiday"}
    closes = {}
    for r in cal:
        m = re.search(r"(\d{4}-\d{2})", r.get("description", ""))
        if r.get("kind") == "period_close" and m:
            closes[m.group(1)] = r["date"][:10]
    tol, pol, memos = yield from _docs(kit)
    pj = [pol["je"]] if pol["je"] else []
    pc_ = [pol["close"]] if pol["close"] else []

    hits = _rules(ents, users, chart, holidays)
    flags: dict[str, tuple] = {}   # eid -> (criteria, evidence, rationale, amount, needs_entry)
    clears: dict[str, tuple] = {}  # eid -> (evidence, rationale, needs_entry)
    for eid in hits["UNBALANCED"]:
        h = ents[eid]
        d = round(abs(h["total_debit"] - h["total_credit"]), 2)
        if d > tol + 1e-9:
            flags[eid] = ("UNBALANCED", [eid, *pj], f"debits {h['total_debit']:.2f} vs credits {h['total_credit']:.2f}: the "
                          f"difference of {d:.2f} exceeds the USD {tol:.2f} rounding tolerance of the journal entry policy", d, True)
        else:
            clears[eid] = ([eid, *pj], f"the difference of {d:.2f} between debits and credits is within the USD {tol:.2f} "
                           "rounding tolerance of the journal entry policy", True)
    for eid in hits["SELF_APPROVAL"]:
        h = ents[eid]
        u = users.get(h["preparer"], {})
        if h["source"] == "automated" and u.get("role") == "System":
            clears.setdefault(eid, (["master:users", *pj], f"automated posting by {h['preparer']}, a System user in the user "
                                    "master; the policy says the system stamp records the release under the interface "
                                    "control and is not a self-approval", False))
        else:
            flags.setdefault(eid, ("SELF_APPROVAL", ["master:users", *pj], f"manual entry of {h['total_debit']:.2f} prepared and "
                                   f"approved by the same user {h['preparer']}, which the journal entry policy forbids",
                                   h["total_debit"], False))
    for eid in hits["INVALID_ACCOUNT"]:
        h = ents[eid]
        odd = [a for a in dict.fromkeys(h["accounts"]) if not _standing(chart.get(a))]
        verdicts = [(a, *_account_ok(chart.get(a), h["posting_date"])) for a in odd]
        bad = [f"account {a} {why}" for a, ok, why in verdicts if not ok]
        if bad:
            flags.setdefault(eid, ("INVALID_ACCOUNT", ["master:accounts"], f"posted on {h['posting_date']} to an account not "
                                   f"open for posting: {'; '.join(bad)}", h["total_debit"], False))
        else:
            why = "; ".join(f"account {a} {r}" for a, _ok, r in verdicts)
            clears.setdefault(eid, (["master:accounts"], f"posted on {h['posting_date']} to an account active at that date "
                                    f"per the chart of accounts: {why}", False))
    for eid in hits["UNAUTHORISED_USER"]:
        h = ents[eid]
        ok, why = _user_ok(users.get(h["preparer"]), h["posting_date"])
        if ok:
            clears.setdefault(eid, (["master:users"], f"keyed on {h['posting_date']} by {h['preparer']}, who {why}", False))
        else:
            flags.setdefault(eid, ("UNAUTHORISED_USER", ["master:users"], f"keyed on {h['posting_date']} by {h['preparer']}, "
                                   f"who {why}", h["total_debit"], False))
    for eid in hits["OFF_HOURS"]:
        h = ents[eid]
        ts = h["entry_timestamp"]
        why = _off_window(ts, holidays)
        hour = int(ts[11:13]) + int(ts[14:16]) / 60
        memo = next((m for m in memos if ts[:10] in m["days"] and h["preparer"] in m["users"]
                     and m["from"] <= hour < m["to"]), None)
        if memo:
            clears.setdefault(eid, ([memo["doc_id"], *pc_], f"{why}, but weekend work authorisation {memo['doc_id']} names "
                                    f"{h['preparer']} for {ts[:10]} within its hours", False))
        else:
            flags.setdefault(eid, ("OFF_HOURS", ["master:calendar", *pc_], f"manual entry of {h['total_debit']:.2f} {why} by "
                                   f"{h['preparer']}, with no weekend work authorisation covering that user, day and hour",
                                   h["total_debit"], False))
    for eid in hits["CUTOFF"]:
        h = ents[eid]
        rec, posted = h["entry_timestamp"][:10], h["posting_date"]
        close = closes.get(posted[:7])
        if close and rec > close:
            flags.setdefault(eid, ("CUTOFF", [eid, "master:calendar", *pc_], f"posted on {posted} but recorded on {rec}, after "
                                   f"the period's close date {close}; the period was locked", h["total_debit"], True))
        else:
            clears.setdefault(eid, (["master:calendar", *pc_], f"recorded on {rec}, after the period end but on or before the "
                                    f"close date {close}: normal close work", False))
    clears = {k: v for k, v in clears.items() if k not in flags}

    # roll-forward: closing - opening minus the listed movements = what the listing is missing
    moved: dict[str, float] = {}
    for r in rows:
        moved[r["account"]] = moved.get(r["account"], 0.0) + (r.get("debit") or 0.0) - (r.get("credit") or 0.0)
    diffs = {b["account"]: round(b["closing_balance"] - b["opening_balance"] - moved.get(b["account"], 0.0), 2) for b in balances}
    diffs = {a: d for a, d in diffs.items() if abs(d) > 0.005}
    gaps = _gap_ids(kit, ents)
    gap_amount = max((abs(d) for d in diffs.values()), default=0.0)

    for eid in sorted(flags, key=lambda k: (not flags[k][4], k)):
        if kit.calls_left <= 2 + len(gaps):
            break
        crit, ev, why, amount, needs_entry = flags[eid]
        if needs_entry:
            entry = yield from kit.call("get_entry", entry_id=eid)
            if crit == "UNBALANCED" and "total_debit" in entry:
                amount = round(abs(entry["total_debit"] - entry["total_credit"]), 2)
        yield from kit.flag(eid, crit, ev, f"Entry {eid}: {why}.", amount=amount)
    for gap in gaps:
        if kit.calls_left <= 2:
            break
        dr = ", ".join(f"{a} {d:+,.2f}" for a, d in sorted(diffs.items()))
        yield from kit.flag(gap, "COMPLETENESS_GAP", ["master:balances"],
                            f"Entry number {gap} is missing from the consecutively numbered listing, and the roll-forward of "
                            f"the trial balance (closing - opening - listed movements) does not agree for: {dr}. The missing "
                            f"entry moved {gap_amount:,.2f}.", amount=gap_amount)
    for eid in sorted(clears):
        if kit.calls_left <= 1:
            break
        ev, why, needs_entry = clears[eid]
        if needs_entry:
            if kit.calls_left <= 2:
                continue
            yield from kit.call("get_entry", entry_id=eid)
        yield from kit.clear(eid, ev, f"Entry {eid} (USD {ents[eid]['total_debit']:,.2f}): {why}.")
    by = {}
    for crit, *_ in flags.values():
        by[crit] = by.get(crit, 0) + 1
    yield from kit.submit(
        "Flagged " + ", ".join(f"{n} {c}" for c, n in sorted(by.items())) + (f"; {len(gaps)} entry missing from the listing "
        f"(roll-forward difference {gap_amount:,.2f})" if gaps else "") + f". Cleared {len(clears)} look-alikes with their evidence.")
