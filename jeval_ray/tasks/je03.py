"""JE-3 (L1): postings to invalid accounts (not open at the posting date).

The ERP checks an account when an entry is keyed, not against the posting date the preparer
types. So the exception an ERP lets through is backdating: an entry keyed after a new account
took effect but dated before it (a month-end posting keyed during the close of the prior month
and dated into it, to an account that only exists from the new month). Postings to accounts
that did not exist, or that were blocked when keyed, are rejected by the ERP and are not planted.

Every candidate is one of the books' own month-end postings keyed by a person during that
month's close (dated the last day of a month, keyed in the first business days of the next):
bank charges (``BC``, Dr 6950), bank interest (``BI``, Cr 4900), allowance reviews (``AL``, 6500
on either side) and the year-end top-side adjustments keyed in January (``TS``). Planting moves
the posting's profit-and-loss line to a sub-account split out of that account during FY2025
(6951 Bank Charges - Lockbox Fees, 4920 Interest Income - Money Market Sweep, 6430 Audit and
Assurance Fees ...), one posting per changed account; nothing else about the entry changes (its
dates, amount, people and text are the books'). All are drawn from one pool and made a defect
or a decoy at random, so timing, amounts, texts and account codes are alike. Only the chart of
accounts (``master:accounts``: ``status``, ``opened``, ``closed``) tells them apart; the
chart-of-accounts maintenance log states the same dates, each processed a few days before it
took effect.

* Defects (``posting_before_account_opened``): the account took effect on the first day of the
  month after the posting date; the entry was keyed after that (so the ERP accepted it) but
  dated before it. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_opened_before_posting``: the account took effect on or before the first day
  of the posting month. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_closed_after_posting``: an account closed at the end of a later month,
  posted while still open. Decisive facts: the account, its closing date and the posting date.

Red-flag rule: the entry posts to an account that is not a standing active account (opened or
closed during the period). The books post only to the standing chart and the changed accounts
are new rows; the only unplanted entries the rule catches are the transfers that empty a closed
account into its parent on the day it closes (one per ``account_closed_after_posting`` decoy, a
top-side reclass dated the closing date, so valid), which leave nothing on the account for the
year-end closing entry, and the closing entry itself (dated 2025-12-31, within every open
account's validity). ``tests/test_key_audit_je03.py`` checks that nothing else posts to a changed
account; ``plant`` re-checks that no base entry uses one. Candidates are January-November
postings (a defect's account opens the month after its posting, and must be open by the year-end
close). Required evidence: ``master:accounts``. ``near_miss``
raises the share of decoy accounts opened on the first day of the posting month itself. One
posting per changed account limits ``n_defects + n_decoys`` to the year's room (about 22; more
raises a ``ConfigError``).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import month_close_dates
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (ACCOUNT_OPEN, DATE, NAME, TOKEN, Form, Lines, LinesForm, SurfaceRule, Task, clear,
                                     dispose, flag, roles, surface_naive)

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

_STD = "AS 2401.58-.61; ISA 240.32(a)"
KEY_RATIONALE = (
    key("defect", "posting_before_account_opened",
        evidence="master:accounts (the maintenance log corroborates)",
        facts="the account opened on the first day of the month after the posting date; the entry was keyed after "
              "the opening, during the close of the posting month",
        conclusion="The entry was backdated into a period in which its account did not exist: the ERP accepted it "
                   "only because it checks the account at keying. Exception: posting to an account not open at the "
                   "posting date.",
        standard=_STD),
    key("decoy", "account_opened_before_posting",
        evidence="master:accounts",
        facts="the account opened on or before the first day of the posting month, so it was open at the posting date",
        conclusion="A posting to a newly opened account within its validity; no exception.",
        standard=_STD),
    key("decoy", "account_closed_after_posting",
        evidence="master:accounts",
        facts="the account was closed at the end of a month after the posting date (and after the keying date)",
        conclusion="A posting to an account later closed, made while it was open; no exception.",
        standard=_STD),
)

LOG_TITLE = "Chart of accounts maintenance log"
#: month-end postings keyed by people during the next month's close, with no vendor: bank charges,
#: bank interest, allowance reviews and year-end top-side adjustments
POOL_CODES = ("BC", "BI", "AL", "TS")
#: sub-accounts split out of the profit-and-loss account of those postings during FY2025 (code, name);
#: which are opened or closed, and which carry defects or decoys, is drawn per seed
CHANGED = {
    "6950": (("6951", "Bank Charges - Lockbox Fees"), ("6952", "Bank Charges - Wire Transfer Fees"),
             ("6953", "Bank Charges - Account Analysis Fees"), ("6954", "Bank Charges - Card Processing Fees"),
             ("6955", "Bank Charges - ACH Fees"), ("6956", "Bank Charges - Sweep Account Fees")),
    "4900": (("4910", "Interest Income - Operating Account"), ("4920", "Interest Income - Money Market Sweep"),
             ("4930", "Interest Income - Term Deposits"), ("4940", "Other Income - Bank Rebates"),
             ("4950", "Interest Income - Overnight Investments"), ("4960", "Interest Income - Treasury Bills")),
    "6500": (("6510", "Bad Debt Expense - Specific Provisions"), ("6520", "Bad Debt Expense - General Provision"),
             ("6530", "Bad Debt Expense - Export Customers"), ("6540", "Bad Debt Expense - Distributors"),
             ("6550", "Bad Debt Expense - OEM Customers"), ("6560", "Bad Debt Expense - Aftermarket Customers")),
    "6000": (("6010", "Salaries - Year-end Bonus"), ("6020", "Salaries - Sales Commissions"),
             ("6030", "Salaries - Retention Awards")),
    "6400": (("6410", "Consulting - Merger Advisory"), ("6420", "Legal Fees - Litigation"),
             ("6430", "Audit and Assurance Fees")),
    "6700": (("6710", "Marketing - Digital Campaigns"), ("6720", "Marketing - Sponsorships"),
             ("6760", "Marketing - Trade Shows")),
}
#: share of decoy accounts that were closed (the rest were opened) during the year
CLOSED_SHARE = 0.3




@dataclass(frozen=True)
class Opened:
    """A line of the maintenance log: an account split out of ``parent``, valid from ``opened``."""
    processed: str
    cr: str
    account: str
    name: str
    parent: str
    opened: str


@dataclass(frozen=True)
class Closed:
    """A line of the maintenance log: an account valid up to ``closed``, later postings to ``parent``."""
    processed: str
    cr: str
    account: str
    name: str
    closed: str
    parent: str


OPENED = Form(Opened, "{processed}  {cr}  Open account {account} {name} (split out of {parent}), valid for postings "
              "dated from {opened}. Requested by FNGUYEN, approved by IBROWN.",
              processed=DATE, cr=TOKEN, account=TOKEN, name=NAME, parent=TOKEN, opened=DATE)
CLOSED = Form(Closed, "{processed}  {cr}  Close account {account} {name}: valid for postings dated up to {closed}; "
              "later postings to {parent}. Approved by IBROWN.",
              processed=DATE, cr=TOKEN, account=TOKEN, name=NAME, closed=DATE, parent=TOKEN)
#: the chart-of-accounts maintenance log: the changes processed in the year, in order
LOG = LinesForm("Chart of accounts changes processed by the General Ledger team in FY2025 (date processed, change "
                "request, change):\n", "\nThe ERP checks that an account exists and is open when an entry is keyed; "
                "the posting date typed by the preparer must also fall within the account's validity in the chart of "
                "accounts, which is authoritative.", OPENED, CLOSED)
#: the change request a log line holds until the lines are numbered in the order they were processed
_UNNUMBERED = "{CR}"


def _first_of_next_month(d: Any) -> np.datetime64:
    return (np.datetime64(d, "M") + 1).astype("datetime64[D]")


def _pool(b: WorldBuilder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the candidate postings, each one's profit-and-loss account, whether that is its debit side)."""
    c = b.cols
    closes = {p: np.datetime64(d) for p, d in month_close_dates()}
    # candidates: the (few) manual postings of the pool's document types, checked one by one below
    cand = np.flatnonzero(c.manual & np.isin(c.doc_code, POOL_CODES))
    # the profit-and-loss side of each posting (bank interest and allowance releases credit it)
    pnl_debit = np.zeros(b.n, dtype=bool)
    pnl_debit[cand[np.isin(c.debit_account[cand], list(CHANGED))]] = True
    pnl = np.full(b.n, "", dtype="<U6")
    pnl[cand] = np.where(pnl_debit[cand], c.debit_account[cand], c.credit_account[cand])
    # keyed after the posting date, within that month's close: the ERP checks the account at keying
    close_of = np.array([closes.get(str(m), np.datetime64("1970-01-01"))
                         for m in c.post_date[cand].astype("datetime64[M]").astype(str).tolist()], dtype="datetime64[D]")
    pool = np.zeros(b.n, dtype=bool)
    # January-November postings only: a defect's account opens the month after its posting, and a
    # December posting would leave it opening in 2026, after the year-end closing entry that closes
    # it (decoys come from the same months, so the month does not tell them apart)
    pool[cand] = (np.isin(pnl[cand], list(CHANGED)) & (c.entry_date[cand] > c.post_date[cand])
                  & (c.post_date[cand] < np.datetime64("2025-12-01")) & (c.entry_date[cand] <= close_of))
    return pool, pnl, pnl_debit


def plant(b: WorldBuilder) -> None:
    """Add the changed accounts to the chart; move planted month-end postings' profit-and-loss line
    to them, each posting dated before (defect) or within (decoy) its account's validity."""
    rng, c = b.rng, b.cols
    pool, pnl, pnl_debit = _pool(b)
    free = {base: [CHANGED[base][i] for i in rng.permutation(len(CHANGED[base]))] for base in CHANGED}
    k = b.n_defects + b.n_decoys
    room = sum(min(int((pool & (pnl == base)).sum()), len(names)) for base, names in CHANGED.items())
    if k > room:
        raise ConfigError(f"impossible knobs for JE-3: n_defects + n_decoys = {k}, but the year has room for {room} "
                          "postings to changed accounts (one per account, from its month-end bank, allowance and "
                          "top-side postings); lower n_defects/n_decoys")
    rows: list[dict[str, Any]] = []
    log: list[Opened | Closed] = []
    transfers: list[tuple[str, str, int, np.datetime64]] = []
    base_row = {a["account"]: a for a in b.accounts}
    for is_defect in roles(b.n_defects, b.n_decoys, rng):
        # one posting per changed account, so no account holds both a defect and a decoy
        idx = int(b.pick(1, where=pool & np.isin(pnl, [a for a, left in free.items() if left]),
                         what="month-end bank, allowance and top-side postings")[0])
        base = str(pnl[idx])
        code, name = free[base].pop()
        side: Literal["debit", "credit"] = "debit" if pnl_debit[idx] else "credit"
        c.account(side)[idx] = code
        row = {"account": code, "name": name, "type": base_row[base]["type"],
               "normal_balance": base_row[base]["normal_balance"], "contra_of": None}
        change = _change(b, idx, bool(is_defect), row, base)
        rows.append(row)
        log.append(change)
        b.claim("JE-3", entries=[idx], rows=[("accounts", code)])
        if isinstance(change, Closed):
            signed = int(c.debit_cents[idx]) if side == "debit" else -int(c.credit_cents[idx])
            transfers.append((code, base, signed, np.datetime64(change.closed)))
    _check_no_stray_postings(b, sorted(r["account"] for r in rows))
    for a in b.accounts:
        a["closed"] = a["closed"] or ""  # empty text, not None: builder/_hash.py fills nulls of a text column with 0
        a.pop("blocked_on", None)
    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])
    _transfer_closed_balances(b, transfers)
    # change requests are numbered in the order they were processed, with other requests between them
    numbers = np.cumsum(rng.integers(3, 15, size=len(log)))
    numbered = tuple(replace(ch, cr=f"CR-{ch.processed[:4]}-{int(no):03d}")
                     for ch, no in zip(LOG.in_order(log), numbers))
    b.claim("JE-3", documents=[b.add_document("memo", LOG_TITLE, LOG.render(Lines(numbered)), "2025-12-31")])


def _change(b: WorldBuilder, idx: int, is_defect: bool, row: dict[str, Any], base: str) -> Opened | Closed:
    """Make the changed account of posting ``idx`` open after (defect) or within (decoy: opened, or
    closed later) its posting date: completes ``row``, records the entry, returns the log line."""
    rng, posted = b.rng, b.cols.post_date[idx]
    code, month = row["account"], int(str(posted)[5:7])
    if is_defect:
        opened = _first_of_next_month(posted)
    elif month == 12 or rng.random() >= CLOSED_SHARE:
        back = 0 if rng.random() < b.knobs.near_miss else int(rng.integers(1, 3))
        opened = max(np.datetime64(posted, "M") - back, np.datetime64("2025-01")).astype("datetime64[D]")
    else:
        # the end of the month after the posting month, or of the month after that
        later = int(rng.integers(0, min(2, 12 - month)))
        closed = (np.datetime64(posted, "M") + 2 + later).astype("datetime64[D]") - 1
        row.update(status="closed", opened="2015-01-01", closed=str(closed))
        b.add_decoy(idx, "account_closed_after_posting", ["master:accounts"], facts=[code, str(closed), str(posted)])
        return Closed(str(closed - int(rng.integers(3, 10))), _UNNUMBERED, code, row["name"], str(closed), base)
    row.update(status="active", opened=str(opened), closed="")
    assert ACCOUNT_OPEN.check(row, str(posted)).ok is not is_defect
    facts = [code, str(opened), str(posted)]
    if is_defect:
        b.add_defect(idx, "posting_before_account_opened", "INVALID_ACCOUNT", ["master:accounts"], facts=facts)
    else:
        b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"], facts=facts)
    return Opened(str(opened - int(rng.integers(3, 10))), _UNNUMBERED, code, row["name"], base, str(opened))


def _check_no_stray_postings(b: WorldBuilder, changed: list[str]) -> None:
    """The changed accounts are new rows, so no base entry can use them; keep it so if the base changes."""
    c = b.cols
    planted = {i for i, *_ in b.defects} | {i for i, *_ in b.decoys}
    stray = [int(i) for i in np.flatnonzero(np.isin(c.debit_account, changed) | np.isin(c.credit_account, changed))
             if int(i) not in planted]
    if stray:
        raise RuntimeError(f"JE-3 base entries {stray} post to a changed account")


def _transfer_closed_balances(b: WorldBuilder, transfers: list[tuple[str, str, int, np.datetime64]]) -> None:
    """A closed account's balance is moved back to its parent on the day it closes (a top-side
    reclass keyed by the accounting manager), so nothing is left on it for the closing entry."""
    if not transfers:
        return
    rows = []
    for code, base, signed, closed in transfers:
        v = abs(signed)
        rows.append({"doc_code": "TS", "post_date": closed, "entry_date": closed, "time_s": 16 * 3600,
                     "preparer": "HJOHANSSON", "approver": "IBROWN", "reference": f"RCL-{code}",
                     "description": f"Transfer balance of closed account {code} to {base}",
                     "lines": [(base, v), (base, -v)]})
    new = b.add_entries(rows)
    for i, (code, _, signed, _) in zip(new.tolist(), transfers):
        # the sub-account's side: credited when it holds a debit balance, debited when a credit one
        b.cols.account("credit" if signed > 0 else "debit")[i] = code
        b.claim("JE-3", entries=[i])


# ----------------------------------------------------------------- strategies
def _postings(kit: Kit, filters: list[dict] | None = None) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    rows = yield from kit.ledger(filters, columns=["entry_id", "line_no", "account", "debit", "credit", "posting_date"])
    return entries_of(rows)


def _off_chart(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """Entries touching an account that is not a standing active account, with those accounts (``odd``)."""
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    ents = yield from _postings(kit)
    odd = {k: [a for a in v["accounts"] if not ACCOUNT_OPEN.standing(chart.get(a))] for k, v in ents.items()}
    return {k: {**v, "odd": ", ".join(odd[k])} for k, v in ents.items() if odd[k]}


RULE = SurfaceRule("the entry posts to an account missing from the chart or not a standing active account",
                   "INVALID_ACCOUNT", _off_chart,
                   "Entry {entry_id} posts to account {odd}, which is not a standard active account.",
                   "Flagged {n} entries posting to non-standard accounts.", ("master:accounts",))
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Compares every posting to a changed account with the chart of accounts at the posting date:
    flags postings dated before the account opened (or after it closed), clears the rest."""
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    log = yield from kit.find_document("chart of accounts", "chart of accounts", "maintenance", require_title=True)
    if log:
        yield from kit.open(log)
    # only postings to accounts that are not standing active ones (or missing from the chart) need a check
    standing = sorted(a for a, row in chart.items() if ACCOUNT_OPEN.standing(row))
    ents = yield from _postings(kit, [{"column": "account", "op": "not_in", "value": standing}])
    flags, clears = [], []
    for eid in sorted(ents):
        v = ents[eid]
        odd = [a for a in dict.fromkeys(v["accounts"]) if not ACCOUNT_OPEN.standing(chart.get(a))]
        verdicts = [(a, ACCOUNT_OPEN.check(chart.get(a), v["posting_date"])) for a in odd]
        bad = "; ".join(f"account {a}: {r.why}" for a, r in verdicts if not r.ok)
        why = bad or "; ".join(f"account {a}: {r.why}" for a, r in verdicts)
        head = f"Entry {eid} (USD {v['total_debit']:.2f})"
        if bad:
            flags.append(flag(eid, "INVALID_ACCOUNT", ["master:accounts"], f"{head} is dated {v['posting_date']} but "
                              f"posts to an account that was not open at that date per master:accounts: {why}."))
        elif odd:
            clears.append(clear(eid, ["master:accounts"], f"{head} dated {v['posting_date']} posts to an account "
                                f"that was open at that date per master:accounts: {why}."))
    yield from dispose(kit, flags + clears)
    yield from kit.submit(f"Compared every posting with the chart of accounts: flagged {len(flags)} postings dated "
                          f"before their account was open, cleared {len(clears)} postings to accounts open at the "
                          "posting date.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, rules=(ACCOUNT_OPEN,),
            decisive="the posting date against the account's validity in master:accounts (opened, closed)")
