"""JE-14 (L4): estimate releases.

The books' allowance review (``jeval_ray.books.close``) sets the allowance for doubtful accounts
(1190, a contra account with a credit balance) at every month end: a general provision by aging
bucket and specific provisions per customer, keyed by the senior accountant within the close. The
AR subledger gives the open invoices and their aging at each month end; they tie to account 1100
and roll forward.

Planted, per release: a customer disputes some of its invoices, and at a month end the senior
accountant books a specific provision of their open amount (Dr 6500 Bad Debt Expense / Cr 1190,
an ``AL`` allowance adjustment keyed within the close, with the credit committee's note listing
the invoices). Some months later the accounting manager releases the reserve as a top-side entry
(Dr 1190 / Cr 6500, ``AL``, posted to a month end, keyed one to three business days *after* that
period's close date in ``master:calendar``, approved by the Controller or the CFO) with a memo
stating the reserve held, the invoices it covers and the basis for the release. The estimate
policy lets a specific reserve be released only to the extent that the invoices it covers were
collected, credited or written off by the period end. The AR open-items report of that month end
(from the books' subledger, reconciled to account 1100) shows which of them are still open.

* **Defect** (``unsupported_reserve_release``): at least one of the disputed invoices is still
  open at the period end, so the reserve left after the release is below their open amount. The
  misstatement is the allowance's shortfall for the dispute after the release,
  ``open amount - (held - release)``: less than the release when part of the invoices was paid.
* **Decoy** (``supported_reserve_release``): the same entry, memo and basis, but the invoices it
  releases were paid by the period end (receipts in the ledger; not on the open-items report), so
  what is left still covers the invoices still open (with ``near_miss`` >= 0.5 some releases leave
  exactly the open amount).

Whatever reserve a release leaves is released by the senior accountant's review (within the close)
at the first month end by which all the disputed invoices are paid, so no reserve outlives its
invoices. The release's basis in the memo (a settlement, a payment plan, a credit improvement ...)
is drawn from one list for both: only the figures decide. Release months (February-November), amounts,
preparer, approver, keying lag and wording come from one distribution.

Decisive facts (the key's ``facts``): the reserve held (memo), the open amount of the disputed
invoices at the period end (open-items report), the release, and for a defect the shortfall.

Unplanted look-alikes: the books' own allowance review releases the reserve (Dr 1190 / Cr 6500, a
manual ``AL`` entry by the senior accountant) whenever the required allowance falls, and releases
what a planted release left once the disputed invoices are paid: 369 such entries over seeds 0-49
(7.4 a world), all keyed within the close. The red-flag filter (manual allowance releases keyed
after the close of the period they are posted to) caught none of the 45,502 unplanted entries of
those worlds (0 %); a wider surface rule, "every manual release of the allowance", catches those
7.4 a world, and they are not exceptions: the review's own adjustments, keyed before the close,
leaving the allowance at the policy's requirement.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import doc_number
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import COMPANY_NAME, MONTH_ABBR, month_close_dates
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (DATE, INT, LINE, MONEY, NAME, TOKEN, Disposition, Form, Many, SurfaceRule, Task,
                                     clear, flag, review, roles, surface_naive, tally)

SPEC = spec(
    "JE-14",
    "L4",
    'Estimate releases',
    objective='Find top-side, post-closing releases of estimates (such as the bad-debt allowance) that the evidence does not support; state the misstatement.',
    defect='top-side post-closing release of an estimate that the documents do not support',
    decoys='a documented, supported estimate change',
    required_evidence='management memo, AR open items, estimate policy',
    sources=('general_ledger', 'management_memos', 'ar_open_items', 'estimate_policy', 'close_calendar'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('ESTIMATE_RELEASE', 'top-side post-closing release of an estimate that the documents do not support',
         'the shortfall of the reserve left (the open amount of the disputed invoices less the reserve left after the release)'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
)

KEY_RATIONALE = (
    key("defect", "unsupported_reserve_release",
        evidence="the release memo, the AR open-items report at the period end, the estimate policy, master:calendar",
        facts="the specific reserve held (memo), the open amount at the period end of the disputed invoices the memo "
              "lists (open-items report), the release, and the shortfall open amount - (held - release)",
        conclusion="A top-side release keyed after the period's close reduced the specific reserve below the open amount "
                   "of the disputed invoices it covers; the policy allows a release only for invoices collected, credited "
                   "or written off by the period end. The allowance is understated (net receivables "
                   "overstated) and bad debt expense understated by the shortfall; propose an adjustment restoring the reserve.",
        standard="AS 2401.58-.62 (journal entries and other adjustments, top-side and post-closing); AS 2401.63-.65 "
                 "(reviewing accounting estimates for bias); ISA 240.32(a)-(b)"),
    key("decoy", "supported_reserve_release",
        evidence="the release memo, the AR open-items report at the period end, the estimate policy",
        facts="the reserve held, the open amount at the period end of the invoices listed (nil or no more than what the "
              "release leaves), the release",
        conclusion="The release only removes the reserve on disputed invoices the customer paid by the period end (they are "
                   "no longer on the open-items report); the reserve left covers the invoices still open. Supported; no "
                   "exception.",
        standard="AS 2401.58-.62; AS 2501 (auditing accounting estimates)"),
)

ALLOWANCE, BAD_DEBT, AR = "1190", "6500", "1100"
POLICY_TITLE = "Allowance for doubtful accounts - estimate policy"
#: what management gives as the basis for a release (the same wording for supported and unsupported ones)
REASONS = (
    "the dispute was settled with the customer's purchasing team and the invoices are being paid",
    "a payment plan agreed with the customer's finance director",
    "an improvement in the customer's credit position reported by the sales team",
    "partial settlement of the disputed invoices following the quality review",
    "receipts from the customer confirmed in a call with its treasurer",
)


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Policy:
    """The estimate policy for the allowance (fixed text)."""


@dataclass(frozen=True)
class DisputeTitle:
    """The title of a dispute's credit committee note or release memo: the voucher, customer, period."""
    ref: str
    customer: str
    period: str


@dataclass(frozen=True)
class AsOf:
    """The title of the AR open-items report at a month end."""
    date: str


@dataclass(frozen=True)
class EntryText:
    """The description of a provision or release entry: the customer and the month (``Mar``)."""
    customer: str
    month: str


@dataclass(frozen=True)
class Disputed:
    """An invoice on the credit committee's note: its number, date and open amount."""
    number: str
    dated: str
    amount: int


@dataclass(frozen=True)
class Note:
    """The credit committee's note of a dispute: the invoices provided for and the provision."""
    entered: str
    customer: str
    customer_id: str
    invoices: tuple[Disputed, ...]
    provided_at: str
    amount: int
    ref: str
    preparer: str
    approver: str
    approver_role: str


@dataclass(frozen=True)
class Invoice:
    """An invoice a release memo names."""
    number: str


@dataclass(frozen=True)
class Memo:
    """The accounting manager's memo proposing a release: the reserve held, the invoices, the release."""
    period: str
    preparer: str
    ref: str
    customer: str
    customer_id: str
    invoices: tuple[Invoice, ...]
    provision: str
    held: int
    basis: str
    release: int
    approver: str
    approver_role: str
    approved: str


@dataclass(frozen=True)
class AgingHead:
    """The column heads of the aging (fixed text)."""


@dataclass(frozen=True)
class AgingTotal:
    """The aging's total line: receivables by aging bucket."""
    current: int
    d30: int
    d60: int
    d90: int
    over90: int
    total: int


@dataclass(frozen=True)
class Aging(AgingTotal):
    """A customer's line of the aging."""
    customer: str
    customer_id: str


@dataclass(frozen=True)
class DetailHead:
    """The heading of the open invoices of the customers under specific review (fixed text)."""


@dataclass(frozen=True)
class OpenInvoice:
    """An open invoice of a customer under specific review."""
    invoice: str
    customer_id: str
    dated: str
    due: str
    days_past_due: int
    amount: int


@dataclass(frozen=True)
class Report:
    """The AR open-items report at a month end: the aging of every customer, then the review's detail."""
    date: str
    total: int
    lines: tuple[Any, ...]


POLICY = Form(Policy, (
    f"1. Scope. This policy sets how {COMPANY_NAME} estimates the allowance for doubtful accounts (account "
    f"{ALLOWANCE}, a contra account to {AR} Accounts Receivable - Trade) and bad debt expense (account {BAD_DEBT}). "
    "2. General provision. At every month end the allowance holds 1% of current receivables, 4% of receivables 1-90 "
    "days past due and 20% of receivables more than 90 days past due, computed on the accounts receivable aging. "
    "3. Specific provisions. Invoices identified as uncollectible are provided in full once more than 60 days past due. "
    "Invoices a customer disputes are provided in full, on the credit committee's note listing them, from the month "
    "end at which the dispute is known; the general provision stays as computed. "
    "4. Releases. A specific provision may be released only to the extent that the invoices it covers were collected, "
    "credited or written off by the period end, as shown by the accounts receivable open items at that date: the "
    "reserve left must be at least the open amount of the invoices it still covers. Settlements not yet paid, payment "
    "plans, expected receipts and changes in credit sentiment do not reduce the required reserve. "
    "5. Approval and timing. A release is proposed by memo stating the reserve held, the invoices covered and the "
    "basis, approved by the Controller or the CFO, and may be recorded as a top-side adjustment after the period close "
    "until the reporting package is issued; the memo and the open-items report are retained with the journal voucher."))
_TITLE_KINDS: dict[str, Any] = dict(ref=TOKEN, customer=NAME, period=TOKEN)
NOTE_TITLE = Form(DisputeTitle, "Credit committee note: disputed invoices {ref} - {customer} ({period})",
                  **_TITLE_KINDS)
MEMO_TITLE = Form(DisputeTitle, "Memo: release of specific reserve {ref} - {customer} ({period})", **_TITLE_KINDS)
OPEN_ITEMS_TITLE = Form(AsOf, "Accounts receivable open items and aging as of {date}", date=DATE)
RELEASE_TEXT = Form(EntryText, "Release specific reserve {customer} - {month} close", customer=NAME, month=TOKEN)
PROVISION_TEXT = Form(EntryText, "Specific provision disputed invoices {customer} {month}", customer=NAME, month=TOKEN)
PAID_TEXT = Form(EntryText, "Release specific provision {customer} {month} - disputed invoices paid", customer=NAME,
                 month=TOKEN)
NOTE = Form(Note, (
    "Credit committee, {entered}. Customer: {customer} ({customer_id}). The customer disputes the following invoices "
    "(quality and delivery claims under review): {invoices}. Under the estimate policy section 3 they are provided in "
    "full at {provided_at}: specific provision USD {amount}, journal voucher {ref}, prepared by {preparer} (Senior "
    "Accountant), approved by {approver} ({approver_role}) on {entered}."),
    entered=DATE, customer=NAME, customer_id=TOKEN, provided_at=DATE, amount=MONEY, ref=TOKEN, preparer=NAME,
    approver=NAME, approver_role=NAME,
    invoices=Many((Form(Disputed, "{number} dated {dated}, open USD {amount}", number=TOKEN, dated=DATE,
                        amount=MONEY),), "; "))
MEMO = Form(Memo, (
    "To: Accounting file, period {period}. From: {preparer}, Accounting Manager. Subject: journal voucher {ref}, "
    "release of the specific reserve held against {customer} ({customer_id}) for the disputed invoices {invoices} "
    "(provided by {provision}). Specific reserve held before this entry: USD {held}. Basis for the release: {basis}. "
    "Management releases USD {release} of the reserve to bad debt expense as a top-side adjustment to period "
    "{period}, recorded after the close. Approved: {approver}, {approver_role}, on {approved}."),
    period=TOKEN, preparer=NAME, ref=TOKEN, customer=NAME, customer_id=TOKEN, provision=TOKEN, held=MONEY, basis=LINE,
    release=MONEY, approver=NAME, approver_role=NAME, approved=DATE,
    invoices=Many((Form(Invoice, "{number}", number=TOKEN),), ", "))
_BUCKETS: dict[str, Any] = dict(current=MONEY, d30=MONEY, d60=MONEY, d90=MONEY, over90=MONEY, total=MONEY)
_ROW = " | {current} | {d30} | {d60} | {d90} | {over90} | {total}"
OPEN_INVOICE = Form(OpenInvoice, "{invoice} | {customer_id} | {dated} | {due} | {days_past_due} | {amount}",
                    invoice=TOKEN, customer_id=TOKEN, dated=DATE, due=DATE, days_past_due=INT, amount=MONEY)
REPORT = Form(Report, (
    f"{COMPANY_NAME} - accounts receivable open items and aging by customer as of {{date}}, in USD, days past due. "
    f"Prepared by the AR team from the billing subledger; the total agrees to account {AR} Accounts Receivable - Trade "
    "at {date} (USD {total}). Invoices not listed were paid, credited or written off by that date.\n{lines}"),
    date=DATE, total=MONEY, lines=Many((
        Form(AgingHead, "Customer | Current | 1-30 | 31-60 | 61-90 | Over 90 | Total"),
        Form(Aging, "{customer} ({customer_id})" + _ROW, customer=NAME, customer_id=TOKEN, **_BUCKETS),
        Form(AgingTotal, "Total" + _ROW, **_BUCKETS),
        Form(DetailHead, "Open invoices of customers under specific review (invoice | customer | invoice date | due "
                         "date | days past due | open amount USD):"),
        OPEN_INVOICE)))


# ---------------------------------------------------------------------------- planting
def _approver_for(cents: int, preparer: str) -> str:
    """The lowest approver (other than the preparer) whose limit covers the amount."""
    for a in md.APPROVERS:
        if a != preparer and md.USERS[md.USER[a]].approval_limit_cents >= cents:
            return a
    return "JWRIGHT"


def _limit(user: str) -> int:
    return md.USERS[md.USER[user]].approval_limit_cents


class _OpenItems:
    """The books' AR open items at the month ends, looked up by (day, invoice)."""

    def __init__(self, books: Any):
        oi = books.ar_open
        self.oi = oi
        self.key = oi.at.astype(np.int64) * (1 << 32) + oi.item.astype(np.int64)
        self.order = np.argsort(self.key, kind="stable")
        self.sorted = self.key[self.order]

    def amount(self, day: int, items: np.ndarray) -> np.ndarray:
        k = np.int64(day) * (1 << 32) + np.asarray(items, dtype=np.int64)
        pos = np.searchsorted(self.sorted, k)
        pos = np.minimum(pos, len(self.sorted) - 1)
        hit = self.sorted[pos] == k
        return np.where(hit, self.oi.amount[self.order[pos]], 0).astype(np.int64)

    def at(self, day: int) -> np.ndarray:
        """Row indices of the items open at ``day``."""
        return np.flatnonzero(self.oi.at == day)


def _excluded(books: Any, oi: _OpenItems) -> set[int]:
    """Invoices the books treat as doubtful (written off, or still unpaid well past due at year end):
    the allowance review provides for them already."""
    d = books.docs
    wo = d.of("WO")
    out = set(d.parent[wo].tolist())
    last = oi.at(md.YEAR_END)
    late = last[oi.oi.days_past_due[last] > 25]
    out |= set(oi.oi.item[late].tolist())
    return out


@dataclass
class _Dispute:
    """One planted dispute: a customer's invoices provided for at the end of month ``m0`` (``held``:
    their open amounts then) and a release of ``release`` at the end of month ``mm`` (``still``:
    their open amounts then); the vouchers, keying days and approvers are set when it is booked."""
    defect: bool
    customer: int
    m0: int
    mm: int
    items: np.ndarray
    held: np.ndarray
    still: np.ndarray
    release: int
    p_ref: str = ""
    p_entered: int = 0
    p_app: str = ""
    r_ref: str = ""
    r_entered: int = 0
    r_app: str = ""


def plant(b: WorldBuilder) -> None:
    """State the estimate policy; per dispute (a defect or a decoy, roles drawn first) book the
    provision and the top-side release after the close (and the review's release of what is left
    once the invoices are paid), the credit committee's note, the release memo, and one AR
    open-items report per release month."""
    rng = b.rng
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-10-15")
    oi = _OpenItems(b.books)
    excluded = _excluded(b.books, oi)
    used: set[int] = set()
    disputes = [_dispute(b, oi, excluded, used, defect) for defect in roles(b.n_defects, b.n_decoys, rng)]
    ref_no = len(b.books.docs)  # new documents are numbered after the books' own
    rows: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    for dp in disputes:
        ref_no = _book(b, dp, oi, ref_no, rows, later)
    idx = b.add_entries(rows + later)  # one batch: the releases stay at odd positions of rows
    names = {u["user_id"]: (u["name"], u["role"]) for u in b.users}
    docs = [policy]
    for dp in disputes:
        docs += _note_and_memo(b, dp, names)
    by_month = sorted({dp.mm for dp in disputes})
    reports = {mm: _open_items_report(b, oi, int(md.MONTH_ENDS[mm - 1]),
                                      sorted({dp.customer for dp in disputes if dp.mm == mm})) for mm in by_month}
    b.claim("JE-14", entries=idx.tolist(), documents=docs + list(reports.values()))
    for j, dp in enumerate(disputes):
        s0, open_m, x = int(dp.held.sum()), int(dp.still.sum()), dp.release
        # the invoices the reserve covers are decisive too: which of them the open-items report still lists
        facts: list[Any] = [s0 / 100, open_m / 100, x / 100] + [doc_number("CI", int(i)) for i in dp.items]
        ev: list[Any] = [docs[2 + 2 * j], reports[dp.mm], policy]
        if dp.defect:
            short = open_m - (s0 - x)
            b.add_defect(int(idx[2 * j + 1]), "unsupported_reserve_release", "ESTIMATE_RELEASE",
                         ev + ["master:calendar"], short, facts=facts[:3] + [short / 100] + facts[3:])
        else:
            b.add_decoy(int(idx[2 * j + 1]), "supported_reserve_release", ev, facts=facts)


def _dispute(b: WorldBuilder, oi: _OpenItems, excluded: set[int], used: set[int], defect: bool) -> _Dispute:
    """Draw a dispute: a release month (February-November), the provision 1-3 months before, a
    customer with invoices of the year open then, which of them it disputes and how much is released
    (a defect leaves less than the open amount at the release; a decoy releases only what was paid)."""
    rng, d, ends = b.rng, b.books.docs, md.MONTH_ENDS
    for _attempt in range(400):
        mm = int(rng.integers(2, 12))  # release month, February-November (December's close ends the year)
        m0 = mm - int(rng.integers(1, 4))
        if m0 < 1:
            continue
        rows = oi.at(int(ends[m0 - 1]))
        items = oi.oi.item[rows]
        # invoices of the year (in the listing), not already disputed, not doubtful in the books
        ok = (d.post_date[items] >= md.YEAR_START) & np.array(
            [i not in used and i not in excluded for i in items.tolist()], dtype=bool)
        rows, items = rows[ok], items[ok]
        if not len(rows):
            continue
        cust = oi.oi.partner[rows]
        c = int(cust[int(rng.integers(0, len(cust)))])
        mine = cust == c
        its, a0 = items[mine], oi.oi.amount[rows[mine]]
        am = oi.amount(int(ends[mm - 1]), its)
        sel = _disputed(b, defect, am, int(rng.integers(1, 4)))
        if sel is None:
            continue
        s0, open_m = int(a0[sel].sum()), int(am[sel].sum())
        if s0 < 500_00:
            continue
        if not defect:
            x = s0 - open_m
        elif open_m < s0 and rng.random() < 0.5:
            # a partial release that still leaves less than the open amount
            x = s0 - int(open_m * rng.uniform(0.1, 0.8))
        else:
            x = s0
        if x <= 0:
            continue
        used.update(int(i) for i in its[sel])
        return _Dispute(defect, c, m0, mm, its[sel], a0[sel], am[sel], x)
    kind = "defect" if defect else "decoy"
    raise ConfigError(f"impossible knobs for JE-14: no disputed invoices left for a {kind}; lower n_defects/n_decoys "
                      "or raise n_entries")


def _disputed(b: WorldBuilder, defect: bool, am: np.ndarray, k: int) -> np.ndarray | None:
    """Which of a customer's invoices (open amounts ``am`` at the release) the dispute covers, about
    ``k``: a decoy's include paid ones (with near_miss, one still open whose amount the release
    leaves), a defect's at least one still open. ``None`` when the customer has none fitting."""
    rng = b.rng
    paid, still = np.flatnonzero(am == 0), np.flatnonzero(am > 0)
    if not defect:
        take_open = len(still) and b.knobs.near_miss >= 0.5 and rng.random() < 0.4
        if not len(paid):
            return None
        sel = list(rng.choice(paid, size=min(len(paid), max(1, k - int(take_open))), replace=False))
        if take_open:
            sel.append(int(rng.choice(still)))
    else:
        if not len(still):
            return None
        sel = [int(rng.choice(still))]
        rest = np.setdiff1d(np.arange(len(am)), sel)
        if k > 1 and len(rest):
            sel += list(rng.choice(rest, size=min(len(rest), k - 1), replace=False))
    return np.array(sorted(int(s) for s in sel))


def _book(b: WorldBuilder, dp: _Dispute, oi: _OpenItems, ref_no: int, rows: list[dict[str, Any]],
          later: list[dict[str, Any]]) -> int:
    """Add the rows of a dispute's provision and release to ``rows``, and to ``later`` the review's
    release of what the release leaves at the first month end by which the invoices are all paid (so
    no reserve outlives its invoices); the next free document number."""
    rng, m, ends = b.rng, b.books.master, md.MONTH_ENDS
    closes = {int(p[5:7]): md.day(c) for p, c in month_close_dates()}
    s0, x = int(dp.held.sum()), dp.release
    cname = m.customer_name[dp.customer]
    dp.p_entered = int(md.business_offset(int(ends[dp.m0 - 1]) + 1, int(rng.integers(0, 3))))
    dp.p_app = _approver_for(s0, "FNGUYEN")
    dp.p_ref, dp.r_ref = doc_number("AL", ref_no), doc_number("AL", ref_no + 1)
    dp.r_entered = int(md.business_offset(closes[dp.mm] + 1, int(rng.integers(0, 3))))
    r_app = _approver_for(x, "HJOHANSSON")
    if r_app == "HJOHANSSON" or _limit(r_app) < _limit("IBROWN"):
        r_app = "IBROWN" if x <= _limit("IBROWN") else "JWRIGHT"
    if rng.random() < 0.3 and r_app == "IBROWN":
        r_app = "JWRIGHT"
    dp.r_app = r_app
    common = {"doc_code": "AL", "customer_id": m.customer_id(dp.customer)}
    rows.append({**common, "post_date": md.iso(int(ends[dp.m0 - 1])), "entry_date": md.iso(dp.p_entered),
                 "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "FNGUYEN", "approver": dp.p_app,
                 "reference": dp.p_ref, "description": PROVISION_TEXT.render(EntryText(cname, MONTH_ABBR[dp.m0 - 1])),
                 "lines": [(BAD_DEBT, s0), (ALLOWANCE, -s0)]})
    rows.append({**common, "post_date": md.iso(int(ends[dp.mm - 1])), "entry_date": md.iso(dp.r_entered),
                 "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "HJOHANSSON", "approver": r_app,
                 "reference": dp.r_ref, "description": RELEASE_TEXT.render(EntryText(cname, MONTH_ABBR[dp.mm - 1])),
                 "lines": [(ALLOWANCE, x), (BAD_DEBT, -x)]})
    ref_no += 2
    left = s0 - x
    paid_by = [k for k in range(dp.mm + 1, 13) if left > 0 and int(oi.amount(int(ends[k - 1]), dp.items).sum()) == 0]
    if paid_by:
        k = paid_by[0]
        later.append({**common, "post_date": md.iso(int(ends[k - 1])),
                      "entry_date": md.iso(int(md.business_offset(int(ends[k - 1]) + 1, int(rng.integers(0, 3))))),
                      "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "FNGUYEN",
                      "approver": _approver_for(left, "FNGUYEN"), "reference": doc_number("AL", ref_no),
                      "description": PAID_TEXT.render(EntryText(cname, MONTH_ABBR[k - 1])),
                      "lines": [(ALLOWANCE, left), (BAD_DEBT, -left)]})
        ref_no += 1
    return ref_no


def _note_and_memo(b: WorldBuilder, dp: _Dispute, names: dict[str, tuple[str, str]]) -> list[int]:
    """Add the credit committee's note of a dispute and the release memo; their handles."""
    m, d = b.books.master, b.books.docs
    cname, cid = m.customer_name[dp.customer], m.customer_id(dp.customer)
    inv = [doc_number("CI", int(i)) for i in dp.items]
    s0 = int(dp.held.sum())
    entered = md.iso(dp.p_entered)
    note = NOTE.render(Note(
        entered, cname, cid, tuple(Disputed(n, md.iso(d.doc_date[int(i)]), int(a)) for n, i, a in zip(inv, dp.items,
                                                                                                     dp.held)),
        md.iso(int(md.MONTH_ENDS[dp.m0 - 1])), s0, dp.p_ref, names["FNGUYEN"][0], *names[dp.p_app]))
    h_note = b.add_document("memo", NOTE_TITLE.render(DisputeTitle(dp.p_ref, cname, f"2025-{dp.m0:02d}")), note,
                            entered)
    period = f"2025-{dp.mm:02d}"
    memo = MEMO.render(Memo(
        period, names["HJOHANSSON"][0], dp.r_ref, cname, cid, tuple(Invoice(n) for n in inv), dp.p_ref, s0,
        REASONS[int(b.rng.integers(0, len(REASONS)))], dp.release, *names[dp.r_app], md.iso(dp.r_entered)))
    h_memo = b.add_document("memo", MEMO_TITLE.render(DisputeTitle(dp.r_ref, cname, period)), memo,
                            md.iso(dp.r_entered))
    return [h_note, h_memo]


def _open_items_report(b: WorldBuilder, oi: _OpenItems, day: int, detail_for: list[int]) -> int:
    """The books' AR aging at a month end (every customer) with the open invoices of the customers
    under specific review; the total ties to account 1100."""
    m, d = b.books.master, b.books.docs
    rows = oi.at(day)
    part, buck, amt, item = oi.oi.partner[rows], oi.oi.bucket[rows], oi.oi.amount[rows], oi.oi.item[rows]
    n_c = m.n_customers
    grid = np.bincount(part * 5 + buck, weights=amt, minlength=n_c * 5).astype(np.int64).reshape(n_c, 5)
    lines: list[Any] = [AgingHead()]
    for c in np.flatnonzero(grid.any(axis=1)).tolist():
        b0, b1, b2, b3, b4 = grid[c].tolist()
        lines.append(Aging(b0, b1, b2, b3, b4, b0 + b1 + b2 + b3 + b4, m.customer_name[c], m.customer_id(c)))
    total = int(amt.sum())
    b0, b1, b2, b3, b4 = (int(amt[buck == k].sum()) for k in range(5))
    lines.append(AgingTotal(b0, b1, b2, b3, b4, total))
    lines.append(DetailHead())
    for c in detail_for:
        for r in np.flatnonzero(part == c).tolist():
            i = int(item[r])
            lines.append(OpenInvoice(doc_number("CI", i), m.customer_id(c), md.iso(d.doc_date[i]),
                                     md.iso(oi.oi.due[rows[r]]), int(day - oi.oi.due[rows[r]]), int(amt[r])))
    date = md.iso(day)
    return b.add_document("aging_report", OPEN_ITEMS_TITLE.render(AsOf(date)),
                          REPORT.render(Report(date, total, tuple(lines))), date)


# ---------------------------------------------------------------------------- strategies
def _releases(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """Entries debiting the allowance and crediting bad debt expense, with their header fields."""
    rows = yield from kit.ledger(
        filters=[{"column": "account", "op": "in", "value": [ALLOWANCE, BAD_DEBT]}],
        columns=["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "preparer",
                 "source", "document_type", "description", "reference"],
    )
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["entry_id"], []).append(r)
    out = {}
    for eid, lines in by.items():
        dr = [r for r in lines if r["account"] == ALLOWANCE and (r["debit"] or 0) > 0]
        cr = [r for r in lines if r["account"] == BAD_DEBT and (r["credit"] or 0) > 0]
        if dr and cr:
            out[eid] = {**lines[0], "amount": dr[0]["debit"]}
    return out


def _post_closing(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """Manual allowance releases entered after the close of the period they are posted to (close
    dates from the calendar), each with the close date and the day it was entered."""
    releases = yield from _releases(kit)
    cal = yield from kit.master("calendar")
    closes = {r["description"].split()[-1]: r["date"] for r in cal if r.get("kind") == "period_close"}
    late = {}
    for eid, r in releases.items():
        close = closes.get(r["posting_date"][:7])
        if close and r["entry_timestamp"][:10] > close and r["source"] == "manual":
            late[eid] = {**r, "close": close, "entered": r["entry_timestamp"][:10]}
    return late



def _late_releases(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """``_post_closing`` with server-side filters: the manual debits to the allowance (a few columns),
    those entered after their period's close, and of those the ones crediting bad debt expense."""
    cal = yield from kit.master("calendar")
    closes = {r["description"].split()[-1]: r["date"] for r in cal if r.get("kind") == "period_close"}
    manual = {"column": "source", "op": "eq", "value": "manual"}
    rows = yield from kit.ledger([{"column": "account", "op": "eq", "value": ALLOWANCE},
                                  {"column": "debit", "op": "gt", "value": 0}, manual],
                                 ["entry_id", "debit", "posting_date", "entry_timestamp", "preparer", "description",
                                  "reference"])
    late = {r["entry_id"]: {**r, "source": "manual", "amount": r["debit"], "close": close,
                            "entered": r["entry_timestamp"][:10]}
            for r in rows if (close := closes.get(r["posting_date"][:7])) and r["entry_timestamp"][:10] > close}
    if not late:
        return {}
    cr = yield from kit.ledger([{"column": "account", "op": "eq", "value": BAD_DEBT},
                                {"column": "credit", "op": "gt", "value": 0},
                                {"column": "entry_id", "op": "in", "value": sorted(late)}], ["entry_id"])
    return {eid: late[eid] for eid in sorted({r["entry_id"] for r in cr})}

RULE = SurfaceRule("a manual release of the allowance entered after the close of the period it is posted to",
                   "ESTIMATE_RELEASE", _post_closing,
                   "Entry {entry_id}: top-side release of {amount:,.2f} from the allowance, entered {entered} after "
                   "the {close} close.", "Flagged {n} post-closing allowance releases.", ("master:calendar",),
                   amount="amount")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """For each post-closing release, reads the memo (reserve held, invoices covered), finds the invoices
    still open at the period end on the open-items report, and flags the shortfall the release leaves
    against their open amount; clears releases that leave at least that."""
    late = yield from _late_releases(kit)
    by_title = {d["title"]: d["doc_id"] for d in (yield from kit.documents())}
    policy = by_title.get(POLICY_TITLE)
    if policy:
        yield from kit.open(policy)
    # the release's memo and the open-items report of its period end, by their titles
    todo = [(eid, r, ids) for eid, r in sorted(late.items(), key=lambda kv: (kv[1]["posting_date"], kv[0]))
            if policy and (ids := _papers(r, by_title))]
    reports: dict[str, dict[str, float]] = {}

    def decide(item: tuple[str, dict[str, Any], tuple[str, str]]) -> Generator[Step, Any, Disposition | None]:
        eid, r, (memo_id, report_id) = item
        memo = MEMO.parse((yield from kit.open(memo_id)).get("body", ""))
        if report_id not in reports:
            report = REPORT.parse((yield from kit.open(report_id)).get("body", ""))
            reports[report_id] = {x.invoice: x.amount / 100 for x in (report.lines if report else ())
                                  if isinstance(x, OpenInvoice)}
        return _judge(eid, r, memo, memo_id, report_id, reports[report_id], str(policy)) if memo else None

    flags, clears = tally((yield from review(kit, todo, decide, reserve=4)))
    yield from kit.submit(f"Examined {len(late)} post-closing allowance releases: flagged {flags} unsupported, "
                          f"cleared {clears} supported by the open items and the policy.")


def _papers(r: dict[str, Any], by_title: dict[str, str]) -> tuple[str, str] | None:
    """(the memo, the open-items report) of release ``r``, found by their titles; ``None`` when either is missing."""
    text = RELEASE_TEXT.parse(r["description"] or "")
    if text is None:
        return None
    memo = by_title.get(MEMO_TITLE.render(DisputeTitle(r["reference"], text.customer, r["posting_date"][:7])))
    report = by_title.get(OPEN_ITEMS_TITLE.render(AsOf(r["posting_date"])))
    return (memo, report) if memo and report else None


def _judge(eid: str, r: dict[str, Any], memo: Memo, memo_id: str, report_id: str, open_items: dict[str, float],
           policy: str) -> Disposition:
    """Flag the shortfall of the reserve a release leaves against the open amount of the invoices it
    covers (the policy's section 4), or clear a release that leaves at least that."""
    held = memo.held / 100
    invoices = [i.number for i in memo.invoices]
    still = {i: open_items[i] for i in invoices if i in open_items}
    required = round(sum(still.values()), 2)
    left = round(held - r["amount"], 2)
    short = round(required - left, 2)
    open_txt = ", ".join(still) or "none of them"
    calc = (f"specific reserve held {held:,.2f} per memo {memo_id} for invoices {', '.join(invoices)}; still open at "
            f"{r['posting_date']} per open-items report {report_id}: {open_txt}, open amount {required:,.2f}; reserve "
            f"left after the release {left:,.2f}")
    if short > 0.005:
        return flag(eid, "ESTIMATE_RELEASE", [memo_id, report_id, policy, "master:calendar"],
                    f"Entry {eid}: top-side release of {r['amount']:,.2f} by {r['preparer']} entered "
                    f"{r['entry_timestamp'][:10]} after the {r['close']} close; {calc}. The policy allows a release only "
                    f"for invoices collected by the period end: the reserve is short by {short:,.2f} (misstatement).",
                    amount=short)
    return clear(eid, [memo_id, report_id, policy],
                 f"Entry {eid}: release of {r['amount']:,.2f}; {calc}, which covers the invoices still open: supported "
                 "by the policy.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="the specific reserve the release leaves (the memo's reserve held less the release) against the "
                     "open amount at the period end of the disputed invoices it covers (the AR open-items report)")
