"""JE-3 (L1): postings to invalid accounts (not open at the posting date).

The ERP checks an account when an entry is keyed, not against the posting date the preparer
types. So the exception an ERP lets through is backdating: an entry keyed after a new account
took effect but dated before it (a month-end accrual keyed during the close of the prior month
and posted into it, to an account that only exists from the new month). Postings to accounts
that did not exist, or that were blocked when keyed, are rejected by the ERP and are not planted.

Every candidate is a month-end posting to an account changed during FY2025 (opened, or closed),
dated the last business day of a month and keyed in the first business days of the next, within
that month's close: all drawn from one pool (manual postings to expense accounts) in groups that
share an account, and each group made a defect or a decoy at random, so timing, amounts, texts
and account codes are alike. Only the chart of accounts (``master:accounts``: ``status``,
``opened``, ``closed``) tells them apart; the chart-of-accounts maintenance log corroborates it.

* Defects (``posting_before_account_opened``): the account took effect on the first day of the
  month after the posting date; the entry was keyed after that (so the ERP accepted it) but
  dated before it. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_opened_before_posting``: the account took effect on or before the first day
  of the posting month. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_closed_after_posting``: an account closed at the end of a later month,
  posted while still open. Decisive facts: the account, its closing date and the posting date.

Red-flag rule: the entry posts to an account that is not a standing active account (opened or
closed during the period). The base chart has every account active since 2015 and the base
entries post only to it; ``plant`` adds the changed accounts and re-checks that no base entry
uses them. Required evidence: ``master:accounts``. ``near_miss`` raises the share of decoy
accounts opened on the first day of the posting month itself.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import HOLIDAY_DATES, month_close_dates

SPEC = spec(
    "JE-3",
    "L1",
    'Postings to invalid accounts',
    objective='Find entries posted to accounts that were not open for posting (not yet opened, closed or blocked) at the posting date.',
    defect='posting dated before the account was opened (keyed after it took effect)',
    decoys='postings to accounts opened, or closed, during the year that were open at the posting date',
    required_evidence='chart of accounts',
    sources=('general_ledger', 'chart_of_accounts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('INVALID_ACCOUNT', 'posting to an account that was not open for posting at the posting date'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

LOG_TITLE = "Chart of accounts maintenance log"
#: Debit accounts whose postings may move to a changed account.
EXPENSE_DEBITS = ("6200", "6300", "6400", "6600", "6700", "6900", "7000", "7100")
# (account, name, split out of): expense accounts changed during FY2025; which are opened or
# closed, and which carry defects or decoys, is drawn per seed
CHANGED = (
    ("6210", "Utilities - Denver Site", "6200"),
    ("6250", "Utilities - Warehouse", "6200"),
    ("6310", "Travel - Regional Sales Offices", "6300"),
    ("6350", "Travel - Trade Fairs", "6300"),
    ("6410", "Consulting - Merger Advisory", "6400"),
    ("6450", "Consulting - ERP Implementation", "6400"),
    ("6650", "Repairs - Leased Premises", "6600"),
    ("6750", "Marketing - Digital Campaigns", "6700"),
    ("6760", "Marketing - Trade Shows", "6700"),
    ("6910", "Office Supplies - Denver Site", "6900"),
    ("7050", "Insurance - Fleet Policy", "7000"),
    ("7150", "Cloud Hosting Services", "7100"),
    ("7160", "Software Subscriptions", "7100"),
    ("6220", "Utilities - Water and Waste", "6200"),
    ("6420", "Legal Fees - Litigation", "6400"),
    ("6620", "Repairs - Production Equipment", "6600"),
    ("6720", "Marketing - Sponsorships", "6700"),
    ("6920", "Office Supplies - Printing", "6900"),
    ("7020", "Insurance - Cyber Policy", "7000"),
)
#: share of decoy accounts that were closed (the rest were opened) during the year
CLOSED_SHARE = 0.3


def split_in_groups(n: int, rng, least: int) -> list[int]:
    """Split ``n`` entries into groups of ``least`` or ``least + 1`` (entries sharing an account here,
    a user in JE-4): a group is all defects or all decoys, so no order within it gives the key away."""
    out = []
    while n > 0:
        g = min(n, int(rng.integers(least, least + 2)))
        out.append(g)
        n -= g
    return out


def _first(month: int) -> np.datetime64:
    return np.datetime64(f"2025-{month:02d}-01")


def plant(b) -> None:
    """Add the changed accounts to the chart; plant month-end postings to them, keyed in the next
    month's close, dated before (defect) or after (decoy) the account's change."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    closes = {int(p[5:7]): np.datetime64(c) for p, c in month_close_dates()}
    # groups of at least ``least`` entries keep the number of changed accounts within CHANGED
    least = max(1, -(-(b.n_defects + b.n_decoys) // (len(CHANGED) - 2)))
    groups = [(g, True) for g in split_in_groups(b.n_defects, rng, least)]
    groups += [(g, False) for g in split_in_groups(b.n_decoys, rng, least)]
    groups = [groups[i] for i in rng.permutation(len(groups))]
    accounts = [CHANGED[i] for i in sorted(rng.choice(len(CHANGED), size=len(groups), replace=False))]
    pool = e["manual"] & np.isin(e["debit_account"], EXPENSE_DEBITS)
    rows: list[dict] = []
    log: list[tuple[str, str]] = []
    for (size, is_defect), (code, name, like) in zip(groups, accounts):
        month = int(rng.integers(2, 12))  # posted at the end of Feb-Nov, keyed in the next month's close
        where = pool & (e["debit_account"] == like)
        if int((where & ~b.used).sum()) < size:
            where = pool if int((pool & ~b.used).sum()) >= size else None
        idxs = b.pick(size, where=where, what="manual expense postings")
        keyed_days = np.arange(_first(month + 1), closes[month] + 1, dtype="datetime64[D]")
        keyed_days = keyed_days[np.is_busday(keyed_days, holidays=HOLIDAY_DATES)]
        for idx in idxs:
            b.post_late(int(idx), month, keyed_days[int(rng.integers(0, len(keyed_days)))])
            e["debit_account"][idx] = code
        posted = [b.date_str(e["post_date"][i]) for i in idxs]
        cr = f"CR-2025-{int(rng.integers(10, 99)):03d}"
        if is_defect:
            opened = _first(month + 1)
            _opened(b, rows, log, code, name, like, opened, cr)
            for idx, p in zip(idxs, posted):
                b.add_defect(int(idx), "posting_before_account_opened", "INVALID_ACCOUNT", ["master:accounts"],
                             facts=[code, str(opened), p])
        elif rng.random() >= CLOSED_SHARE:
            back = 0 if rng.random() < near else int(rng.integers(1, 3))
            opened = _first(max(1, month - back))
            _opened(b, rows, log, code, name, like, opened, cr)
            for idx, p in zip(idxs, posted):
                b.add_decoy(int(idx), "account_opened_before_posting", ["master:accounts"], facts=[code, str(opened), p])
        else:
            # the end of the month after the posting month, or of the month after that
            later = int(rng.integers(0, min(2, 12 - month)))
            closed = (np.datetime64(f"2025-{month:02d}", "M") + 2 + later).astype("datetime64[D]") - 1
            rows.append({"account": code, "name": name, "type": "expense", "status": "closed", "opened": "2015-01-01",
                         "closed": str(closed)})
            log.append((str(closed - int(rng.integers(3, 10))), f"{cr}  Close account {code} {name}: valid for postings "
                        f"dated up to {closed}; later postings to {like}. Approved by IBROWN."))
            for idx, p in zip(idxs, posted):
                b.add_decoy(int(idx), "account_closed_after_posting", ["master:accounts"], facts=[code, str(closed), p])

    # the changed accounts are new rows, so no base entry can use them; keep it so if the base changes
    planted = {i for i, *_ in b.defects} | {i for i, *_ in b.decoys}
    changed = sorted(r["account"] for r in rows)
    stray = [int(i) for i in np.flatnonzero(np.isin(e["debit_account"], changed) | np.isin(e["credit_account"], changed))
             if int(i) not in planted]
    if stray:
        raise RuntimeError(f"JE-3 base entries {stray} post to a changed account")

    for a in b.accounts:
        a["closed"] = a["closed"] or ""  # empty text, not None: world/_hash.py fills nulls of a text column with 0
        a.pop("blocked_on", None)
    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])
    b.add_document(
        "memo", LOG_TITLE,
        "Chart of accounts changes processed by the General Ledger team in FY2025 (date processed, change request, "
        "change):\n" + "\n".join(f"{d}  {text}" for d, text in sorted(log))
        + "\nThe ERP checks that an account exists and is open when an entry is keyed; the posting date typed by the "
        "preparer must also fall within the account's validity in the chart of accounts, which is authoritative.",
        "2025-12-31",
    )


def _opened(b, rows: list[dict], log: list, code: str, name: str, like: str, opened: np.datetime64, cr: str) -> None:
    """Add an account opened during the year (valid from ``opened``) to the chart rows and the log."""
    rows.append({"account": code, "name": name, "type": "expense", "status": "active", "opened": str(opened), "closed": ""})
    log.append((str(opened - int(b.rng.integers(3, 10))), f"{cr}  Open account {code} {name} (split out of {like}), "
                f"valid for postings dated from {opened}. Requested by FNGUYEN, approved by IBROWN."))


# ----------------------------------------------------------------- strategies
def _valid(acct: dict | None, posted: str) -> tuple[bool, str]:
    """Whether ``acct`` was open for postings dated ``posted`` (ISO date), with the reason."""
    if acct is None:
        return False, "the account does not exist in the chart of accounts"
    if acct.get("status") not in ("active", "closed"):
        return False, f"the account's status is {acct.get('status')}"
    if acct.get("opened") and posted < acct["opened"]:
        return False, f"the account was opened only on {acct['opened']}, after the posting date {posted}"
    if acct.get("closed") and posted > acct["closed"]:
        return False, f"the account was closed on {acct['closed']}, before the posting date {posted}"
    if acct.get("closed"):
        return True, f"the account was closed only on {acct['closed']}, after the posting date {posted}"
    return True, f"the account was opened on {acct['opened']}, on or before the posting date {posted}"


def _standing(acct: dict | None) -> bool:
    """A plain active account, unchanged during FY2025 (what the naive rule trusts)."""
    return bool(acct) and acct.get("status") == "active" and (acct.get("opened") or "") < "2025-01-01" \
        and not acct.get("closed")


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
    """Compares every posting to a changed account with the chart of accounts at the posting date:
    flags postings dated before the account opened (or after it closed), clears the rest."""
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
    for eid, bad in flags:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        why = "; ".join(f"account {a}: {r}" for a, r in bad)
        yield from kit.flag(eid, "INVALID_ACCOUNT", ["master:accounts"],
                            f"Entry {eid} (USD {v['total_debit']:.2f}) is dated {v['posting_date']} but posts to an "
                            f"account that was not open at that date per master:accounts: {why}.")
    for eid, ok in clears:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        why = "; ".join(f"account {a}: {r}" for a, r in ok)
        yield from kit.clear(eid, ["master:accounts"],
                             f"Entry {eid} (USD {v['total_debit']:.2f}) dated {v['posting_date']} posts to an account "
                             f"that was open at that date per master:accounts: {why}.")
    yield from kit.submit(f"Compared every posting with the chart of accounts: flagged {len(flags)} postings dated "
                          f"before their account was open, cleared {len(clears)} postings to accounts open at the "
                          "posting date.")
