"""JE-3 (L1): postings to invalid accounts.

Planted: entries whose debit line posts to an account that was not open for posting at the
posting date: an account blocked for posting, an account closed before the posting date, an
account opened only after the posting date, or an account code that does not exist in the chart
(a keying transposition of a real code). Decoys: postings to accounts opened during the year
(posted after the opening date) or closed during the year (posted before the closing date), i.e.
accounts that were active at the posting date. Required evidence: the chart of accounts
(``master:accounts``); a chart-of-accounts maintenance log corroborates the changes.

Red-flag rule: the account is missing from the chart, or is not a standing active account
(status other than active, or opened/closed inside the period). The base chart has every account
active since 2015 and the base entries post only to it, so the base never trips the rule;
``plant`` adds the changed accounts and re-checks that no base entry uses them.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-3",
    "L1",
    'Postings to invalid accounts',
    objective='Find entries posted to accounts that were blocked, closed or did not exist in the chart of accounts at the posting date.',
    defect='posting to a blocked, closed or non-existent account',
    decoys='account opened mid-period, active at the posting date',
    required_evidence='chart of accounts',
    sources=('general_ledger', 'chart_of_accounts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('INVALID_ACCOUNT', 'posting to a blocked, closed or non-existent account at the posting date'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

LOG_TITLE = "Chart of accounts maintenance log"
#: Debit accounts that may be swapped for a changed account of the same nature.
EXPENSE_DEBITS = ("6200", "6300", "6400", "6600", "6700", "6900", "7000", "7100")

# (account, name, replaces) — new accounts opened during FY2025
OPENED = (
    ("6750", "Marketing - Digital Campaigns", "6700"),
    ("7150", "Cloud Hosting Services", "7100"),
    ("6450", "Consulting - ERP Implementation", "6400"),
    ("6650", "Repairs - Leased Premises", "6600"),
)
# accounts closed during FY2025 (a restructuring of the cost-centre structure)
CLOSED_IN_YEAR = (
    ("6310", "Travel - Regional Sales Offices", "6300"),
    ("6910", "Office Supplies - Denver Site", "6900"),
    ("7050", "Insurance - Legacy Fleet Policy", "7000"),
)
# accounts closed before FY2025
CLOSED_BEFORE = (
    ("6250", "Utilities - Old Warehouse", "6200", "2024-06-30"),
    ("6410", "Consulting - Merger Advisory", "6400", "2024-09-30"),
)
# accounts blocked for posting (status blocked since a date before FY2025)
BLOCKED = (
    ("6390", "Travel Suspense (do not use)", "6300", "2024-10-01"),
    ("6990", "Miscellaneous Expense - Blocked", "6900", "2024-03-15"),
    ("7190", "IT Clearing (blocked)", "7100", "2024-12-01"),
)
DEFECT_KINDS = ("blocked", "closed", "not_yet_open", "nonexistent")


def _mistyped(code: str, taken: set[str], rng) -> str:
    """A keying error on ``code`` giving a code that is not in the chart: two adjacent digits
    swapped, or (when no swap works, e.g. 7000) the last digit mistyped."""
    swaps = [code[:i] + code[i + 1] + code[i] + code[i + 2:] for i in range(len(code) - 1)]
    opts = sorted({c for c in swaps if c != code and c not in taken and c[0] != "0"})
    if not opts:
        opts = sorted({code[:-1] + d for d in "123456789" if code[:-1] + d not in taken})
    return str(rng.choice(opts))


def plant(b) -> None:
    """Add changed accounts to the chart, plant postings to invalid accounts and to accounts that
    were opened (or closed) during the year but active at the posting date."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    post = e["post_date"].astype("datetime64[D]")
    base_codes = {a["account"] for a in b.accounts}
    for a in b.accounts:
        a["blocked_on"] = None
    pool = np.isin(e["debit_account"], EXPENSE_DEBITS)
    rows: list[dict] = []
    log: list[str] = []

    def add_account(code, name, status, opened, closed=None, blocked=None):
        rows.append({"account": code, "name": name, "type": "expense", "status": status, "opened": opened,
                     "closed": closed, "blocked_on": blocked})

    def swap(idx: int, code: str) -> None:
        e["debit_account"][idx] = code

    # --- decoys first: their dates fix the opening / closing dates of the changed accounts
    opened = [OPENED[i] for i in sorted(rng.choice(len(OPENED), size=2, replace=False))]
    closed_mid = CLOSED_IN_YEAR[int(rng.integers(0, len(CLOSED_IN_YEAR)))]
    gap_max = 2 + int(round((1 - near) * 45))
    n_closed_decoys = int(rng.binomial(b.n_decoys, 0.3)) if b.n_decoys else 0
    n_open_decoys = b.n_decoys - n_closed_decoys
    # decoy postings sit well inside the year, so opening and closing dates stay inside FY2025
    open_window = (post >= np.datetime64("2025-03-01")) & (post <= np.datetime64("2025-11-30"))
    close_window = (post >= np.datetime64("2025-02-15")) & (post <= np.datetime64("2025-10-15"))
    open_dates: dict[str, np.datetime64] = {}
    for k, (code, name, like) in enumerate(opened):
        share = n_open_decoys // 2 + (n_open_decoys % 2 if k == 0 else 0)
        where = pool & open_window & (e["debit_account"] == like)
        if int((where & ~b.used).sum()) < share:
            where = pool & open_window
        idxs = b.pick(share, where=where, what="expense postings") if share else np.array([], dtype=int)
        if len(idxs):
            opened_on = post[idxs].min() - int(rng.integers(1, gap_max + 1))
        else:
            opened_on = np.datetime64("2025-03-01") + int(rng.integers(0, 180))
        open_dates[code] = opened_on
        add_account(code, name, "active", str(opened_on))
        log.append(f"{str(opened_on)}  CR-2025-{int(rng.integers(10, 99)):03d}  Open account {code} "
                   f"{name} (split out of {like}). Requested by FNGUYEN, approved by IBROWN.")
        for idx in idxs:
            swap(idx, code)
            b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"])

    c_code, c_name, c_like = closed_mid
    idxs = b.pick(n_closed_decoys, where=pool & close_window, what="expense postings") if n_closed_decoys else np.array([], dtype=int)
    if len(idxs):
        closed_on = post[idxs].max() + int(rng.integers(1, gap_max + 1))
    else:
        closed_on = np.datetime64("2025-04-30") + int(rng.integers(0, 150))
    add_account(c_code, c_name, "closed", "2015-01-01", str(closed_on))
    log.append(f"{str(closed_on)}  CR-2025-{int(rng.integers(10, 99)):03d}  Close account {c_code} {c_name}; "
               f"future postings to {c_like}. Approved by IBROWN.")
    for idx in idxs:
        swap(idx, c_code)
        b.add_decoy(idx, "account_closed_after_posting", ["master:accounts"])

    pre_code, pre_name, pre_like, pre_closed = CLOSED_BEFORE[int(rng.integers(0, len(CLOSED_BEFORE)))]
    add_account(pre_code, pre_name, "closed", "2015-01-01", pre_closed)
    blk_code, blk_name, blk_like, blk_on = BLOCKED[int(rng.integers(0, len(BLOCKED)))]
    add_account(blk_code, blk_name, "blocked", "2015-01-01", None, blk_on)
    log.append(f"{blk_on}  CR-2024-{int(rng.integers(10, 99)):03d}  Block account {blk_code} {blk_name} for posting. "
               "Approved by IBROWN.")

    # --- defects: kinds cycle from a random start, so every kind appears once there are four defects
    order = rng.permutation(len(DEFECT_KINDS))
    kinds = [DEFECT_KINDS[order[i % len(DEFECT_KINDS)]] for i in range(b.n_defects)]
    taken = base_codes | {r["account"] for r in rows}
    for kind in kinds:
        if kind == "not_yet_open":
            code = str(rng.choice(sorted(open_dates)))
            where = pool & (post < open_dates[code])
            if int((where & ~b.used).sum()) == 0:
                kind = "blocked"
        if kind == "closed":
            if rng.random() < 0.5:
                code, where = pre_code, pool
            else:
                code, where = c_code, pool & (post > closed_on)
                if int((where & ~b.used).sum()) == 0:
                    code, where = pre_code, pool
        elif kind == "blocked":
            code, where = blk_code, pool
        elif kind == "nonexistent":
            where = pool
        idx = int(b.pick(1, where=where, what="expense postings")[0])
        if kind == "nonexistent":
            code = _mistyped(str(e["debit_account"][idx]), taken, rng)
        swap(idx, code)
        b.add_defect(idx, {"blocked": "posting_to_blocked_account", "closed": "posting_to_closed_account",
                           "not_yet_open": "posting_before_account_opened",
                           "nonexistent": "posting_to_nonexistent_account"}[kind], "INVALID_ACCOUNT",
                     ["master:accounts"])

    # the changed accounts are new rows, so no base entry can use them; keep it so if the base changes
    planted = {i for i, *_ in b.defects} | {i for i, *_ in b.decoys}
    changed = {r["account"] for r in rows}
    stray = [int(i) for i in np.flatnonzero(np.isin(e["debit_account"], sorted(changed)) | np.isin(e["credit_account"], sorted(changed)))
             if int(i) not in planted]
    if stray:
        raise RuntimeError(f"JE-3 base entries {stray} post to a changed account")

    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])
    for a in b.accounts:
        # empty text, not None: world/_hash.py fills nulls of a text column with 0 and raises
        a["closed"] = a["closed"] or ""
        a["blocked_on"] = a["blocked_on"] or ""
    b.add_document(
        "memo", LOG_TITLE,
        "Chart of accounts changes processed by the General Ledger team since October 2024 (date, change request, "
        "change):\n"
        + "\n".join(sorted(log))
        + "\nAccount status in the ERP chart of accounts is authoritative: blocked and closed accounts are not to be "
        "used for postings dated on or after their block date, or after their close date.",
        "2025-12-31",
    )


# ----------------------------------------------------------------- strategies
def _valid(acct: dict | None, posted: str) -> tuple[bool, str]:
    """Whether ``acct`` accepted postings on ``posted`` (ISO date), with the reason."""
    if acct is None:
        return False, "the account does not exist in the chart of accounts"
    if acct.get("status") == "blocked" and (not acct.get("blocked_on") or posted >= acct["blocked_on"]):
        return False, f"the account is blocked for posting (since {acct.get('blocked_on') or 'before the period'})"
    if acct.get("opened") and posted < acct["opened"]:
        return False, f"the account was only opened on {acct['opened']}"
    if acct.get("closed") and posted > acct["closed"]:
        return False, f"the account was closed on {acct['closed']}"
    if (acct.get("opened") or "") >= "2025-01-01":
        return True, f"the account was opened on {acct['opened']}, before the posting date"
    if acct.get("closed"):
        return True, f"the account was closed only on {acct['closed']}, after the posting date"
    return True, f"the account was blocked only from {acct.get('blocked_on')}, after the posting date"


def _standing(acct: dict | None) -> bool:
    """A plain active account, unchanged during FY2025 (what the naive rule trusts)."""
    return bool(acct) and acct.get("status") == "active" and (acct.get("opened") or "") < "2025-01-01" \
        and not acct.get("closed") and not acct.get("blocked_on")


def _postings(kit: Kit):
    rows = yield from kit.ledger(columns=["entry_id", "line_no", "account", "debit", "credit", "posting_date"])
    return entries_of(rows)


def naive(kit: Kit):
    """Flags every entry touching an account that is missing from the chart or not a standing active
    account, without comparing the posting date with the account's dates."""
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    ents = yield from _postings(kit)
    hits = sorted(k for k, v in ents.items() if any(not _standing(chart.get(a)) for a in v["accounts"]))
    for eid in hits:
        if kit.calls_left <= 1:
            break
        odd = [a for a in ents[eid]["accounts"] if not _standing(chart.get(a))]
        yield from kit.flag(eid, "INVALID_ACCOUNT", ["master:accounts"],
                            f"Entry {eid} posts to account {', '.join(odd)}, which is not a standard active account.")
    yield from kit.submit(f"Flagged {len(hits)} entries posting to non-standard accounts.")


def careful(kit: Kit):
    """Compares every line's account with the chart of accounts at the posting date: flags postings to
    missing, blocked, closed or not-yet-opened accounts, clears postings to changed accounts that were
    active at the posting date."""
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    log = yield from kit.find_document("chart of accounts", "chart of accounts", "maintenance", require_title=True)
    if log:
        yield from kit.open(log)
    ents = yield from _postings(kit)
    flags, clears = [], []
    for eid in sorted(ents):
        v = ents[eid]
        odd = [a for a in dict.fromkeys(v["accounts"]) if not _standing(chart.get(a))]
        if not odd:
            continue
        verdicts = [(a, *_valid(chart.get(a), v["posting_date"])) for a in odd]
        bad = [(a, why) for a, ok, why in verdicts if not ok]
        (flags if bad else clears).append((eid, bad or [(a, why) for a, _ok, why in verdicts]))
    ev = ["master:accounts"] + ([log] if log else [])
    for eid, bad in flags:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        why = "; ".join(f"account {a}: {r}" for a, r in bad)
        yield from kit.flag(eid, "INVALID_ACCOUNT", ev,
                            f"Entry {eid} (USD {v['total_debit']:.2f}) posted on {v['posting_date']} to an account not "
                            f"open for posting per the chart of accounts: {why}.")
    for eid, ok in clears:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        why = "; ".join(f"account {a}: {r}" for a, r in ok)
        yield from kit.clear(eid, ev,
                             f"Entry {eid} (USD {v['total_debit']:.2f}) posted on {v['posting_date']} to an account "
                             f"that was active at that date per the chart of accounts: {why}.")
    yield from kit.submit(f"Compared every posting with the chart of accounts: flagged {len(flags)} postings to "
                          f"invalid accounts, cleared {len(clears)} postings to accounts active at the posting date.")
