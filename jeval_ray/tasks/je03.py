"""JE-3 (L1): postings to invalid accounts (not open at the posting date).

The ERP checks an account when an entry is keyed, not against the posting date the preparer
types. So the exception an ERP lets through is backdating: an entry keyed after a new account
took effect but dated before it (a month-end posting keyed during the close of the prior month
and dated into it, to an account that only exists from the new month). Postings to accounts
that did not exist, or that were blocked when keyed, are rejected by the ERP and are not planted.

Every planted posting is one of the books' own month-end postings keyed by a person during that
month's close (dated the last day of a month, keyed in the first business days of the next), from
three monthly streams: bank charges (``BC``, Dr 6950), bank interest (``BI``, Cr 4900) and the
general provision of the allowance review (``AL``, 6500 on either side). During FY2025 the company
split sub-accounts out of these accounts, each named for what the stream posts (6953 Bank Charges -
Service Charges, 4920 Interest Income - Bank Deposits, 6510 Bad Debt Expense - General Provision
...), and used each as a real sub-account: a stream's postings move to a new sub-account from its
first posting on, until the next sub-account of that stream takes over (the last keeps it to
December); a closed sub-account (in the chart since 2015) held its stream from January up to its
last posting, after which the stream went back to the parent. Every changed account has two
postings or more; the planted posting is an opened account's first posting or a closed account's
last, and the other postings of its run are unplanted, valid postings (nothing else about an entry
changes: its dates, amount, people and text are the books'). Defects and decoys are drawn from one
pool and dealt evenly over the streams, so timing (the posting month too), amounts, texts, account
codes, the number of postings and the place of the planted posting in its account (first) are
alike. Only the chart of
accounts (``master:accounts``: ``status``, ``opened``, ``closed``) tells them apart; the
chart-of-accounts maintenance log states the same dates, each processed on a business day a few
days before it took effect.

* Defects (``posting_before_account_opened``): the account took effect on the first day of the
  month after the posting date; the entry was keyed after that (so the ERP accepted it) but
  dated before it. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_opened_before_posting``: the account took effect on or before the first day
  of the posting month. Decisive facts: the account, its opening date and the posting date.
* Decoys ``account_closed_after_posting``: an account closed at the end of a later month,
  posted while still open. Decisive facts: the account, its closing date and the posting date.

Red-flag rule: the entry posts to an account that is not a standing active account (opened or
closed during the period). The books post only to the standing chart and the changed accounts are
new rows; the unplanted entries the rule catches are the other postings of each changed account's
run (valid at their dates: about two thirds of what the rule returns), the transfers that empty a
closed account into its parent on the last business day up to its closing (one per
``account_closed_after_posting`` decoy, a top-side reclass, so valid), which leave nothing on the
account for the year-end closing entry, and the closing entry itself (dated 2025-12-31, within
every open account's validity). ``tests/test_key_audit_je03.py`` checks that nothing else posts to
a changed account; ``plant`` checks that no base entry uses one. Planted postings are
January-November postings (a defect's account opens the month after its posting, and must be open
by the year-end close). Required evidence: ``master:accounts``. ``near_miss`` raises the share of
decoy accounts opened on the first day of the posting month itself. Each run takes two months or
more of its stream and a stream holds at most one closed account, so ``n_defects + n_decoys`` is
limited to about 18 (six a stream; more raises a ``ConfigError``). The careful solver clears the
postings nearest their account's opening or closing first, within its budget.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, close
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import PERIOD_END, PERIOD_START, month_close_dates
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (ACCOUNT_OPEN, DATE, NAME, TOKEN, Form, Lines, LinesForm, SurfaceRule, Task, clear,
                                     dispose, flag, roles, surface_naive)

SPEC = spec(
    "JE-3",
    "L1",
    'Postings to invalid accounts',
    step_budget=70,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
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
#: the month-end postings keyed by people during the next month's close, one a month each, and the
#: profit-and-loss account each uses: bank charges (Dr 6950), bank interest (Cr 4900) and the
#: general provision of the allowance review (6500, a charge or a release)
STREAMS = (("BC", "6950"), ("BI", "4900"), ("AL", "6500"))
POOL_CODES = tuple(code for code, _ in STREAMS)
#: the part of an allowance review that is the general provision (the books' ``ext_ref`` of an AL document)
GENERAL_PROVISION = close.ALLOWANCE_PARTS.index("general provision")
#: sub-accounts split out of each stream's profit-and-loss account during FY2025 (code, name), each
#: named for what the stream posts (the whole monthly bank charge or interest of the operating
#: account, the general provision); which are opened or closed, and which carry defects or decoys,
#: is drawn per seed
CHANGED = {
    "6950": (("6951", "Bank Charges - Operating Account"), ("6952", "Bank Charges - Account Analysis Fees"),
             ("6953", "Bank Charges - Service Charges"), ("6954", "Bank Charges - Treasury Management Fees"),
             ("6955", "Bank Charges - Cash Management Fees"), ("6956", "Bank Charges - Monthly Account Fees")),
    "4900": (("4910", "Interest Income - Operating Account"), ("4920", "Interest Income - Bank Deposits"),
             ("4930", "Interest Income - Interest-bearing Checking"), ("4940", "Interest Income - Cash Balances"),
             ("4950", "Interest Income - Demand Deposits"), ("4960", "Interest Income - Deposit Accounts")),
    "6500": (("6510", "Bad Debt Expense - General Provision"), ("6520", "Bad Debt Expense - General Allowance"),
             ("6530", "Bad Debt Expense - Collective Allowance"), ("6540", "Bad Debt Expense - Portfolio Allowance"),
             ("6550", "Bad Debt Expense - Aging Reserve"), ("6560", "Bad Debt Expense - Expected Credit Losses")),
}
#: share of decoy accounts that were closed (the rest were opened) during the year; at most one a stream
CLOSED_SHARE = 0.3
#: months a stream's planted postings may fall in (January-November: a defect's account opens the
#: month after its posting and must be open by the year-end close)
PLANT_MONTHS = 11


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


@dataclass(frozen=True)
class _Stream:
    """A stream's postings by month (``by_month[0]`` January ... ``[11]`` December) and the months
    whose posting may be planted (one posting, keyed after its date within that month's close)."""
    base: str
    by_month: tuple[tuple[int, ...], ...]
    plantable: frozenset[int]


def _streams(b: WorldBuilder) -> tuple[dict[str, _Stream], np.ndarray]:
    """Each stream's month-end postings, and per entry whether its profit-and-loss line is its debit."""
    c = b.cols
    closes = {p: np.datetime64(d) for p, d in month_close_dates()}
    bases = dict(STREAMS)
    cand = np.flatnonzero(c.manual & np.isin(c.doc_code, POOL_CODES) & (c.post_date >= PERIOD_START)
                          & (c.post_date <= PERIOD_END))
    pnl_debit = np.zeros(b.n, dtype=bool)
    pnl_debit[cand[np.isin(c.debit_account[cand], list(CHANGED))]] = True
    months: dict[str, list[list[int]]] = {base: [[] for _ in range(12)] for _, base in STREAMS}
    keyed_in_close: set[int] = set()
    for i in cand.tolist():
        code, posted = str(c.doc_code[i]), c.post_date[i]
        base = bases[code]
        pnl = c.debit_account[i] if pnl_debit[i] else c.credit_account[i]
        if pnl != base or (code == "AL" and int(b.books.docs.ext_ref[c.books_doc[i]]) != GENERAL_PROVISION):
            continue
        month = int(str(posted)[5:7]) - 1
        months[base][month].append(i)
        # keyed after the posting date, within that month's close: the ERP checks the account at keying
        if posted < c.entry_date[i] <= closes.get(str(posted)[:7], np.datetime64("1970-01-01")):
            keyed_in_close.add(i)
    return {base: _Stream(base, tuple(tuple(m) for m in ms),
                          frozenset(k for k in range(PLANT_MONTHS) if len(ms[k]) == 1 and ms[k][0] in keyed_in_close))
            for base, ms in months.items()}, pnl_debit


@dataclass(frozen=True)
class _Run:
    """A changed account's use: the months (0 = January) whose stream postings it takes, the planted
    one (an opened account's first posting, a closed account's last), its role and whether it closed."""
    base: str
    months: tuple[int, ...]
    planted: int
    is_defect: bool
    closed: bool


def _room(stream: _Stream, closed_month: int | None) -> int:
    """How many opened accounts fit on ``stream`` after a closed account's last month (0 = January):
    each planted in a month that may be, by November, and taking two months or more and two
    postings or more (the greatest number, laid from the earliest month on)."""
    n, pos = 0, 0 if closed_month is None else closed_month + 1
    while True:
        start = min((m for m in stream.plantable if m >= pos), default=None)
        if start is None:
            return n
        postings = np.cumsum([len(stream.by_month[m]) for m in range(start, 12)])
        ends = [start + k for k, p in enumerate(postings.tolist()) if p >= 2 and k >= 1]
        if not ends:
            return n
        n, pos = n + 1, ends[0] + 1


def _deal(rng: np.random.Generator, streams: dict[str, _Stream], n_defects: int,
          n_decoys: int) -> dict[str, tuple[int | None, list[bool]]]:
    """Deal the roles over the streams: per stream, the month (0 = January) of its closed account's
    last posting (``None``: no closed account) and its opened accounts' roles (True: a defect).

    A decoy is a closed account with probability ``CLOSED_SHARE``, at most one a stream; its last
    month is drawn uniformly from the stream's February-November months; when the opened accounts
    would not fit after it, the latest closed account is an opened one instead (lowering its month
    would push closed accounts to the first months, and the month would tell them from defects).
    The opened accounts, defects and decoys in one random order, are dealt over the streams (in a
    random order) evenly, the streams without a closed account first."""
    order = [STREAMS[i][1] for i in rng.permutation(len(STREAMS))]
    kinds = [(d, not d and rng.random() < CLOSED_SHARE) for d in roles(n_defects, n_decoys, rng)]
    n_closed = min(len(order), sum(shut for _, shut in kinds))
    opened = [d for d, shut in kinds if not shut] + [False] * (sum(shut for _, shut in kinds) - n_closed)
    months: dict[str, int | None] = {base: None for base in order}
    # a closed account's last month: one the stream can plant in, with two postings or more up to it (no
    # changed account has a single posting)
    ends = {base: sorted(m for m in streams[base].plantable
                         if m >= 1 and sum(len(streams[base].by_month[k]) for k in range(m + 1)) >= 2)
            for base in order}
    for base in order[:n_closed]:
        if ends[base]:
            months[base] = ends[base][int(rng.integers(0, len(ends[base])))]
        else:
            opened.append(False)

    def room() -> int:
        return sum(_room(streams[b], m) for b, m in months.items())

    while room() < len(opened) and any(m is not None for m in months.values()):
        # no room after the latest closed account: its decoy is an opened account instead
        late = max((b for b in order if months[b] is not None), key=lambda b: months[b] or 0)
        months[late] = None
        opened.append(False)
    if room() < len(opened):
        raise ConfigError(f"impossible knobs for JE-3: n_defects + n_decoys = {n_defects + n_decoys}, but the year's "
                          "monthly bank charge, interest and general-provision postings have room for "
                          f"{sum(_room(streams[b], None) for b in order)} changed accounts (each takes two months or "
                          "more); lower n_defects/n_decoys")
    dealt: dict[str, list[bool]] = {base: [] for base in order}
    for is_defect in opened:
        # the stream with room holding the fewest, those without a closed account first: a closed
        # account's stream takes opened accounts only after it, so it takes them last
        base = min((b for b in order if len(dealt[b]) < _room(streams[b], months[b])),
                   key=lambda b: (months[b] is not None, len(dealt[b]), order.index(b)))
        dealt[base].append(is_defect)
    return {base: (months[base], dealt[base]) for base in order}


def _runs(rng: np.random.Generator, stream: _Stream, closed_month: int | None, opened: list[bool]) -> list[_Run]:
    """Lay a stream's changed accounts on its year: a closed account takes the stream from January
    to ``closed_month`` (its planted, last posting); each opened account (``opened``: its role) from
    its planted month (its first posting) to the next opened account's, the last to December; other
    months post to the parent. Every run holds two months or more, so no changed account has a
    single posting."""
    runs: list[_Run] = []
    if closed_month is not None:
        runs.append(_Run(stream.base, tuple(range(closed_month + 1)), closed_month, False, True))
    first = 0 if closed_month is None else closed_month + 1
    spare = PLANT_MONTHS - first - max(0, 2 * len(opened) - 1)
    for _ in range(100 if spare >= 0 else 0):
        cuts = np.sort(rng.integers(0, spare + 1, size=len(opened)))
        starts = (first + cuts + 2 * np.arange(len(opened))).tolist()
        laid = runs + [_Run(stream.base, tuple(range(start, starts[j + 1] if j + 1 < len(starts) else 12)), start,
                            is_defect, False) for j, (start, is_defect) in enumerate(zip(starts, opened))]
        if all(r.planted in stream.plantable and sum(len(stream.by_month[m]) for m in r.months) >= 2 for r in laid):
            return laid
    raise ConfigError(f"impossible knobs for JE-3: no room on the {stream.base} postings for {len(opened)} opened "
                      "accounts; lower n_defects/n_decoys")


def plant(b: WorldBuilder) -> None:
    """Add the changed accounts to the chart and move each one's stream postings to it, the planted
    posting dated before (defect) or within (decoy) the account's validity."""
    rng, c = b.rng, b.cols
    streams, pnl_debit = _streams(b)
    _check_unused(b, sorted(code for names in CHANGED.values() for code, _ in names))
    free = {base: [CHANGED[base][i] for i in rng.permutation(len(CHANGED[base]))] for base in CHANGED}
    dealt = _deal(rng, streams, b.n_defects, b.n_decoys)
    rows: list[dict[str, Any]] = []
    log: list[Opened | Closed] = []
    transfers: list[tuple[str, str, int, np.datetime64]] = []
    base_row = {a["account"]: a for a in b.accounts}
    for base, (closed_month, opened) in dealt.items():
        for run in _runs(rng, streams[base], closed_month, opened):
            code, name = free[base].pop()
            moved = [i for m in run.months for i in streams[base].by_month[m]]
            for i in moved:
                c.account("debit" if pnl_debit[i] else "credit")[i] = code
            b.used[moved] = True
            (idx,) = streams[base].by_month[run.planted]
            row = {"account": code, "name": name, "type": base_row[base]["type"],
                   "normal_balance": base_row[base]["normal_balance"], "contra_of": None}
            change = _change(b, idx, run, row, base)
            rows.append(row)
            log.append(change)
            b.claim("JE-3", entries=moved, rows=[("accounts", code)])
            if isinstance(change, Closed):
                signed = sum(int(c.debit_cents[i]) if pnl_debit[i] else -int(c.credit_cents[i]) for i in moved)
                transfers.append((code, base, signed, np.datetime64(change.closed)))
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


def _processed(effective: np.datetime64, rng: np.random.Generator) -> str:
    """The day the General Ledger team processed a change effective ``effective``: 3-9 days before,
    on a business day."""
    return str(cal.business_offset(effective - int(rng.integers(3, 10)), 0, roll="backward"))


def _change(b: WorldBuilder, idx: int, run: _Run, row: dict[str, Any], base: str) -> Opened | Closed:
    """Make the changed account of posting ``idx`` open after (defect) or within (decoy: opened, or
    closed later) its posting date: completes ``row``, records the entry, returns the log line."""
    rng, posted = b.rng, b.cols.post_date[idx]
    code, month = row["account"], int(str(posted)[5:7])
    if run.closed:
        # the end of the month after the posting month, or of the month after that
        later = int(rng.integers(0, min(2, 12 - month)))
        closed = (np.datetime64(posted, "M") + 2 + later).astype("datetime64[D]") - 1
        row.update(status="closed", opened="2015-01-01", closed=str(closed))
        b.add_decoy(idx, "account_closed_after_posting", ["master:accounts"], facts=[code, str(closed), str(posted)])
        return Closed(_processed(closed, rng), _UNNUMBERED, code, row["name"], str(closed), base)
    if run.is_defect:
        opened = _first_of_next_month(posted)
    else:
        back = 0 if rng.random() < b.knobs.near_miss else int(rng.integers(1, 3))
        opened = max(np.datetime64(posted, "M") - back, np.datetime64("2025-01")).astype("datetime64[D]")
    row.update(status="active", opened=str(opened), closed="")
    assert ACCOUNT_OPEN.check(row, str(posted)).ok is not run.is_defect
    facts = [code, str(opened), str(posted)]
    if run.is_defect:
        b.add_defect(idx, "posting_before_account_opened", "INVALID_ACCOUNT", ["master:accounts"], facts=facts)
    else:
        b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"], facts=facts)
    return Opened(_processed(opened, rng), _UNNUMBERED, code, row["name"], base, str(opened))


def _check_unused(b: WorldBuilder, changed: list[str]) -> None:
    """The changed accounts are new rows, so no base entry can use them; keep it so if the base changes."""
    c = b.cols
    stray = np.flatnonzero(np.isin(c.debit_account, changed) | np.isin(c.credit_account, changed))
    if len(stray):
        raise RuntimeError(f"JE-3 base entries {stray.tolist()[:10]} post to a changed account")


def _transfer_closed_balances(b: WorldBuilder, transfers: list[tuple[str, str, int, np.datetime64]]) -> None:
    """A closed account's balance is moved back to its parent on the last business day up to its
    closing (a top-side reclass keyed by the accounting manager), so nothing is left on it for the
    closing entry."""
    transfers = [t for t in transfers if t[2]]
    if not transfers:
        return
    rows = []
    for code, base, signed, closed in transfers:
        v = abs(signed)
        day = cal.business_offset(closed, 0, roll="backward")
        rows.append({"doc_code": "TS", "post_date": day, "entry_date": day, "time_s": 16 * 3600,
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


def _margin(accounts: list[dict[str, Any]], posted: Any) -> int:
    """Days between a posting and the nearest opening (in the year) or closing of its changed accounts."""
    day = dt.date.fromisoformat(str(posted)[:10])
    edges = [a[k] for a in accounts for k in ("opened", "closed") if a.get(k) and a[k] >= ACCOUNT_OPEN.standing_since]
    return min((abs((dt.date.fromisoformat(str(e)[:10]) - day).days) for e in edges), default=0)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Compares every posting to a changed account with the chart of accounts at the posting date:
    flags postings dated before the account opened (or after it closed), clears the rest, those
    nearest the account's opening or closing first."""
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
            clears.append((_margin([chart[a] for a in odd], v["posting_date"]), eid, clear(
                eid, ["master:accounts"], f"{head} dated {v['posting_date']} posts to an account that was open at "
                f"that date per master:accounts: {why}.")))
    # the postings nearest their account's opening or closing first: those the validity could have missed
    yield from dispose(kit, flags + [d for *_, d in sorted(clears)])
    yield from kit.submit(f"Compared every posting with the chart of accounts: flagged {len(flags)} postings dated "
                          f"before their account was open, cleared {len(clears)} postings to accounts open at the "
                          "posting date.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, rules=(ACCOUNT_OPEN,),
            decisive="the posting date against the account's validity in master:accounts (opened, closed)")
