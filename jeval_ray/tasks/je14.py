"""JE-14 (L4): estimate releases.

The books' allowance review (``jeval_ray.books.close``) sets the allowance for doubtful accounts
(1190, a contra account with a credit balance) at every month end: a general provision by aging
bucket and specific provisions per customer, keyed by the senior accountant within the close. The
AR subledger gives the open invoices and their aging at each month end; they tie to account 1100
and roll forward.

Planted, per release: a customer disputes some of its invoices, and at a month end (October to
December) the senior accountant books a specific provision of their open amount (Dr 6500 Bad Debt
Expense / Cr 1190, an ``AL`` allowance adjustment keyed within the close, with the credit committee's
note listing the invoices). After the year-end close the accounting manager releases the reserve as
a top-side entry (Dr 1190 / Cr 6500, ``AL``, posted to 2025-12-31, keyed one to three business days
after the 2026-01-09 close, approved by the Controller or the CFO) with a memo stating the reserve
held, the invoices it covers and the basis for the release. Every planted release, defect or decoy,
is such a year-end release. The estimate policy lets a specific reserve be released only to the
extent that the invoices it covers are collected, credited or written off; at the year end the
receipts after the year end up to the end of the audit fieldwork count (subsequent receipts). The
pack holds the AR open-items report at 2025-12-31 (from the books' subledger, reconciled to account
1100) and the cash receipts from 2026-01-01 to the end of fieldwork (a date the brief and the
receipts listing state, 2026-02-13, -20 or -27) on the open invoices of the customers under review.

* **Defect** (``unsupported_reserve_release``): disputed invoices are open at the year end and still
  unpaid at the end of fieldwork, so the reserve left after the release is below what remains
  unpaid. The misstatement is the allowance's shortfall after the subsequent receipts,
  ``(open amount at the year end - receipts to the end of fieldwork) - (held - release)``, always
  above clearly trivial. None of a defect's invoices was paid, even in part, before the release was
  recorded; some are paid (in full or in part) after it, before the end of fieldwork, which lowers
  the shortfall.
* **Decoy** (``supported_reserve_release``): the same entry, memo and basis, but the invoices it
  releases were either paid by the year end (not on the open-items report) or are on it and were
  collected before the end of fieldwork (on the receipts listing, some before the release was
  recorded), so what is left still covers what remains unpaid (with ``near_miss`` >= 0.5 some
  releases leave exactly the amount of one invoice still unpaid).

The release's basis in the memo (a settlement, a payment plan, a credit improvement ...) is drawn
from one list for both: only the figures decide. Amounts, preparer, approver, keying lag and wording
come from one distribution; defects and the decoys cured by receipts draw their invoices from the
same pool (open at the year end).

The default world is a year of about 2,000 entries (``default_knobs``): the minimum year leaves
about a dozen invoices open at the year end, too few for up to eight defects and the decoys cured by
receipts. A decoy drawn to be cured by receipts is one paid by the year end when the invoices open at
the year end run out; a defect always takes invoices open at the year end, and a year with none left
for one raises a ``ConfigError`` naming the knobs.

Decisive facts (the key's ``facts``), the figures the documents print: the reserve held and the
release (memo), the open amount at the year end of each disputed invoice still open (open-items
report), each receipt on them after the year end to the end of fieldwork (receipts listing), for a
defect the shortfall, and the disputed invoices.

Unplanted look-alikes: the books' own allowance review releases the reserve (Dr 1190 / Cr 6500, a
manual ``AL`` entry by the senior accountant) whenever the required allowance falls: 290 such entries
over seeds 0-49 (5.8 a world), 28 of them posted to the year end, all keyed within the close. The
red-flag filter (manual allowance releases keyed after the close of the period they are posted to)
caught none of the 111,664 unplanted entries of those worlds (0 %); a wider surface rule, "every
manual release of the allowance", catches those 5.8 a world, and they are not exceptions: the
review's own adjustments, keyed before the close, leaving the allowance at the policy's requirement.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import doc_number
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import COMPANY_NAME, MONTH_ABBR
from jeval_ray.builder.spec import Knobs, key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (DATE, INT, LINE, MONEY, NAME, TOKEN, Disposition, Form, Many, SurfaceRule, Task,
                                     clear, flag, review, surface_naive, tally)

SPEC = spec(
    "JE-14",
    "L4",
    'Estimate releases',
    step_budget=120,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find top-side, post-closing releases of estimates (such as the bad-debt allowance) that the evidence does not support; state the misstatement.',
    defect='top-side post-closing release of an estimate that the documents do not support',
    decoys='a documented, supported estimate change',
    required_evidence='management memo, AR open items, subsequent cash receipts, estimate policy',
    sources=('general_ledger', 'management_memos', 'ar_open_items', 'subsequent_receipts', 'estimate_policy',
             'close_calendar'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('ESTIMATE_RELEASE', 'top-side post-closing release of an estimate that the documents do not support',
         'the shortfall of the reserve left (the open amount of the disputed invoices less the reserve left after the release)'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
    default_knobs=Knobs(n_entries=2000),
)

KEY_RATIONALE = (
    key("defect", "unsupported_reserve_release",
        evidence="the release memo, the AR open-items report at the year end, the cash receipts after the year end to "
                 "the end of fieldwork, the estimate policy, master:calendar",
        facts="the specific reserve held and the release (memo), the disputed invoices the memo lists, the open amount "
              "at the year end of each (open-items report), each receipt on them after the year end up to the end of "
              "fieldwork (receipts listing), and the shortfall: open amount less receipts less (held - release), above "
              "clearly trivial",
        conclusion="A top-side release keyed after the year-end close reduced the specific reserve below what remains "
                   "unpaid of the disputed invoices it covers after the receipts up to the end of fieldwork; the policy "
                   "allows a release only for invoices collected, credited or written off. The allowance is understated "
                   "(net receivables overstated) and bad debt expense understated by the shortfall, which is above "
                   "clearly trivial; propose an adjustment restoring the reserve.",
        standard="AS 2401.58-.62 (journal entries and other adjustments, top-side and post-closing); AS 2401.63-.65 "
                 "(reviewing accounting estimates for bias); AS 2501 (events after the year end as evidence of an "
                 "estimate); ISA 240.32(a)-(b); ISA 540"),
    key("decoy", "supported_reserve_release",
        evidence="the release memo, the AR open-items report at the year end, the estimate policy; the cash receipts "
                 "after the year end when a disputed invoice is still open at the year end",
        facts="the reserve held and the release (memo), the invoices listed, the open amount at the year end of those "
              "still open (open-items report) and each receipt on them to the end of fieldwork (receipts listing): what "
              "remains unpaid is nil or no more than what the release leaves",
        conclusion="The release only removes the reserve on disputed invoices the customer paid by the year end (no "
                   "longer on the open-items report) or after it, before the end of fieldwork (on the receipts "
                   "listing); the reserve left covers what remains unpaid. Supported; no exception.",
        standard="AS 2401.58-.62; AS 2501 (auditing accounting estimates, events after the year end)"),
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
    "4. Releases. A specific provision may be released only to the extent that the invoices it covers are collected, "
    "credited or written off. At a month end the reserve left must be at least the open amount of the invoices it "
    "still covers, as shown by the accounts receivable open items at that date. At the year end the cash received on "
    "those invoices after the year end, up to the end of the auditors' fieldwork, counts as collected (subsequent "
    "receipts, on the lockbox remittance records): the reserve left must be at least what remains unpaid of them. "
    "Settlements not yet paid, payment plans, expected receipts and changes in credit sentiment do not reduce the "
    "required reserve. "
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


@dataclass(frozen=True)
class Window:
    """The title of the receipts listing: the days it covers (the day after the year end to the end of fieldwork)."""
    start: str
    end: str


@dataclass(frozen=True)
class ReceiptsHead:
    """The column heads of the receipts listing (fixed text)."""


@dataclass(frozen=True)
class Receipt:
    """A cash receipt applied to an invoice after the year end."""
    receipt: str
    dated: str
    customer_id: str
    invoice: str
    amount: int


@dataclass(frozen=True)
class Receipts:
    """The cash receipts after the year end up to the end of fieldwork on the open invoices of the
    customers under specific review."""
    start: str
    end: str
    total: int
    lines: tuple[Any, ...]


RECEIPTS_TITLE = Form(Window, "Cash receipts after the year end {start} to {end} - customers under specific review",
                      start=DATE, end=DATE)
RECEIPT = Form(Receipt, "{receipt} | {dated} | {customer_id} | {invoice} | {amount}", receipt=TOKEN, dated=DATE,
               customer_id=TOKEN, invoice=TOKEN, amount=MONEY)
RECEIPTS = Form(Receipts, (
    f"{COMPANY_NAME} - cash receipts from {{start}} to {{end}}, the end of the audit fieldwork, applied to the invoices "
    f"open at {md.iso(md.YEAR_END)} of the customers under specific review, in USD (USD {{total}} in all). Prepared by "
    "the AR team from the bank's lockbox remittance records; receipts after {end} are not included.\n{lines}"),
    start=DATE, end=DATE, total=MONEY, lines=Many((
        Form(ReceiptsHead, "Receipt | date received | customer | invoice | amount USD"), RECEIPT)))


# ---------------------------------------------------------------------------- planting
#: the end of the audit fieldwork (a Friday), one drawn per world: the receipts listing runs to it
FIELDWORK_ENDS = ("2026-02-13", "2026-02-20", "2026-02-27")
DEFECT, CURED, PAID = "defect", "cured", "paid"


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
class _Year:
    """What the disputes are drawn from: the open items, the invoices not to dispute (doubtful in the
    books, or already disputed), clearly trivial (cents) and the end of fieldwork (a day number)."""
    oi: _OpenItems
    excluded: set[int]
    used: set[int]
    trivial: int
    fieldwork: int


@dataclass
class _Dispute:
    """One planted dispute: a customer's invoices provided for at the end of month ``m0`` (``held``:
    their open amounts then), open ``still`` at the year end, ``unpaid`` at the end of fieldwork
    after the ``receipts`` (day, invoice, cents) since the year end; a year-end release of ``release``
    keyed on ``r_entered``. The vouchers, the provision's keying day and the approvers are set when
    it is booked."""
    kind: str
    customer: int
    m0: int
    items: np.ndarray
    held: np.ndarray
    still: np.ndarray
    unpaid: np.ndarray
    receipts: list[tuple[int, int, int]]
    release: int
    r_entered: int
    p_ref: str = ""
    p_entered: int = 0
    p_app: str = ""
    r_ref: str = ""
    r_app: str = ""

    @property
    def defect(self) -> bool:
        return self.kind == DEFECT


def plant(b: WorldBuilder) -> None:
    """State the estimate policy; draw the disputes (the defects first, then the decoys, each cured by
    receipts after the year end or paid by it) and, in a random order, book each one's provision and
    year-end top-side release after the close, the credit committee's note and the release memo; then
    the AR open-items report at the year end and the cash receipts after it up to the end of fieldwork."""
    rng = b.rng
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-10-15")
    oi = _OpenItems(b.books)
    fieldwork = FIELDWORK_ENDS[int(rng.integers(0, len(FIELDWORK_ENDS)))]
    year = _Year(oi, _excluded(b.books, oi), set(), int(round(b.facts["clearly_trivial"] * 100)), md.day(fieldwork))
    b.facts["brief_notes"] = {"end of fieldwork": (
        f"fieldwork ends on {fieldwork}; the support pack holds the cash receipts from 2026-01-01 to that date on the "
        "open invoices of the customers under specific review")}
    kinds = [DEFECT] * b.n_defects + [CURED if rng.random() < 0.6 else PAID for _ in range(b.n_decoys)]
    drawn = [_dispute(b, year, kind) for kind in kinds]  # the defects draw first from the invoices open at the year end
    disputes = [drawn[int(k)] for k in rng.permutation(len(drawn))]  # booked (vouchers numbered) in a random order
    ref_no = len(b.books.docs)  # new documents are numbered after the books' own
    rows: list[dict[str, Any]] = []
    for dp in disputes:
        ref_no = _book(b, dp, ref_no, rows)
    idx = b.add_entries(rows)  # the releases at odd positions
    names = {u["user_id"]: (u["name"], u["role"]) for u in b.users}
    docs = [policy]
    for dp in disputes:
        docs += _note_and_memo(b, dp, names)
    review_of = sorted({dp.customer for dp in disputes})
    report = _open_items_report(b, oi, md.YEAR_END, review_of)
    receipts = _receipts_listing(b, year, disputes, review_of, ref_no)
    b.claim("JE-14", entries=idx.tolist(), documents=docs + [report, receipts])
    for j, dp in enumerate(disputes):
        s0, open_y, unpaid, x = int(dp.held.sum()), int(dp.still.sum()), int(dp.unpaid.sum()), dp.release
        # the figures the documents print: the reserve held and the release (memo), the open amount of each covered
        # invoice still open at the year end (report), each receipt on them after it (listing); then the invoices
        facts: list[Any] = [s0 / 100, x / 100] + [int(a) / 100 for a in dp.still if a] + [
            c / 100 for _d, _i, c in sorted(dp.receipts)]
        invoices = [doc_number("CI", int(i)) for i in dp.items]
        ev: list[Any] = [docs[2 + 2 * j], report] + ([receipts] if open_y else []) + [policy]
        if dp.defect:
            short = unpaid - (s0 - x)
            assert short > year.trivial and all(day > dp.r_entered for day, _i, _c in dp.receipts)
            b.add_defect(int(idx[2 * j + 1]), "unsupported_reserve_release", "ESTIMATE_RELEASE",
                         ev + ["master:calendar"], short, facts=facts + [short / 100] + invoices)
        else:
            assert unpaid <= s0 - x
            b.add_decoy(int(idx[2 * j + 1]), "supported_reserve_release", ev, facts=facts + invoices)


def _dispute(b: WorldBuilder, year: _Year, kind: str) -> _Dispute:
    """Draw a dispute of ``kind``: a provision month (October-December), a customer with invoices of
    the year open then, which of them it disputes, the receipts on them after the year end and how
    much the year-end release takes (a defect leaves less than what is unpaid at the end of fieldwork,
    by more than clearly trivial; a decoy releases only what was paid). A decoy to be cured by
    receipts becomes one paid by the year end when no invoice open at the year end is left for it."""
    for _attempt in range(400):
        dp = _draw(b, year, kind)
        if dp is not None:
            year.used.update(int(i) for i in dp.items)
            return dp
    if kind == CURED:
        return _dispute(b, year, PAID)
    raise ConfigError(f"impossible knobs for JE-14: no disputed invoices left for a {'defect' if kind == DEFECT else 'decoy'}"
                      "; lower n_defects/n_decoys or raise n_entries")


def _draw(b: WorldBuilder, year: _Year, kind: str) -> _Dispute | None:
    """One attempt at a dispute of ``kind``; ``None`` when the draw does not fit."""
    rng, d, ends, oi = b.rng, b.books.docs, md.MONTH_ENDS, year.oi
    m0 = int(rng.integers(10, 13))
    rows = oi.at(int(ends[m0 - 1]))
    items = oi.oi.item[rows]
    # invoices of the year (in the listing), not already disputed, not doubtful in the books
    ok = (d.post_date[items] >= md.YEAR_START) & np.array(
        [i not in year.used and i not in year.excluded for i in items.tolist()], dtype=bool)
    rows, items = rows[ok], items[ok]
    if not len(rows):
        return None
    cust = oi.oi.partner[rows]
    c = int(cust[int(rng.integers(0, len(cust)))])
    mine = cust == c
    its, a0 = items[mine], oi.oi.amount[rows[mine]]
    am = oi.amount(md.YEAR_END, its)
    r_entered = int(md.business_offset(md.YEAR_END_CLOSE + 1, int(rng.integers(0, 3))))
    picked = _disputed(b, kind, am, int(rng.integers(1, 4)), year.trivial)
    if picked is None:
        return None
    sel, keep = picked
    gross = d.amount[its[sel]] + d.tax[its[sel]] + d.variance[its[sel]]
    if kind == DEFECT and (am[sel] != gross).any():
        return None  # no invoice of a defect was paid, even in part, before its release was recorded
    receipts = _collect(b, kind, its[sel], am[sel], keep, r_entered, year)
    got = {i: 0 for i in its[sel].tolist()}
    for _day, i, cents in receipts:
        got[i] += cents
    s0, unpaid = int(a0[sel].sum()), am[sel] - np.array([got[i] for i in its[sel].tolist()], dtype=np.int64)
    x = _release(b, kind, s0, int(unpaid.sum()), year.trivial)
    if s0 < 500_00 or x is None:
        return None
    return _Dispute(kind, c, m0, its[sel], a0[sel], am[sel], unpaid, receipts, x, r_entered)


def _disputed(b: WorldBuilder, kind: str, am: np.ndarray, k: int, trivial: int) -> tuple[np.ndarray, int] | None:
    """Which of a customer's invoices (open amounts ``am`` at the year end) the dispute covers, about
    ``k``, and the position in it of the one left unpaid at the end of fieldwork (-1: none): a
    defect's are all open at the year end, the one left unpaid above clearly trivial; a decoy cured
    by receipts has at least one open at the year end, a decoy paid by the year end has none but
    (with near_miss) the one left unpaid. ``None`` when the customer has none fitting."""
    rng = b.rng
    paid, still = np.flatnonzero(am == 0), np.flatnonzero(am > 0)
    near = b.knobs.near_miss >= 0.5 and rng.random() < 0.4
    if kind == DEFECT:
        big = still[am[still] > trivial]
        if not len(big):
            return None
        first = int(rng.choice(big))
        rest = np.setdiff1d(still, [first])
        sel = [first] + (list(rng.choice(rest, size=min(len(rest), k - 1), replace=False)) if k > 1 else [])
    elif kind == CURED:
        if not len(still) or (near and len(still) < 2):
            return None
        sel = list(rng.choice(still, size=min(len(still), max(k, 1 + int(near))), replace=False))
        first = int(sel[-1]) if near else -1
        if len(paid) and rng.random() < 0.3:
            sel.append(int(rng.choice(paid)))
    else:
        if not len(paid):
            return None
        sel = list(rng.choice(paid, size=min(len(paid), max(1, k - int(near))), replace=False))
        first = int(rng.choice(still)) if near and len(still) else -1
        if first >= 0:
            sel.append(first)
    order = sorted(int(s) for s in sel)
    return np.array(order), (order.index(first) if first >= 0 else -1)


def _pay_day(b: WorldBuilder, lo: int, hi: int) -> int:
    """A business day from ``lo`` to ``hi`` (day numbers; ``hi`` a business day)."""
    day = int(md.business_offset(int(b.rng.integers(lo, hi + 1)), 0))
    return day if day <= hi else int(md.business_offset(hi, 0, roll="backward"))


def _collect(b: WorldBuilder, kind: str, items: np.ndarray, am: np.ndarray, keep: int, r_entered: int,
             year: _Year) -> list[tuple[int, int, int]]:
    """The receipts (day, invoice, cents) after the year end up to the end of fieldwork on a
    dispute's invoices (open amounts ``am`` at the year end; ``keep``: the one left unpaid). A decoy
    cured by receipts has every other invoice paid in full, any day; a defect's others are paid in
    full or not at all, and the one kept may be paid in part, always after the release was recorded."""
    rng, out = b.rng, []
    start = md.YEAR_END + 1
    for j, (i, a) in enumerate(zip(items.tolist(), am.tolist())):
        if not a or kind == PAID:
            continue
        if kind == CURED:
            if j != keep:
                out.append((_pay_day(b, start, year.fieldwork), i, a))
        elif j != keep and rng.random() < 0.5:
            out.append((_pay_day(b, r_entered + 1, year.fieldwork), i, a))
        elif j == keep and rng.random() < 0.3:
            part = int(a * rng.uniform(0.2, 0.6))
            if a - part > year.trivial:
                out.append((_pay_day(b, r_entered + 1, year.fieldwork), i, part))
    return out


def _release(b: WorldBuilder, kind: str, s0: int, unpaid: int, trivial: int) -> int | None:
    """The release: a decoy's takes what was paid (the reserve left is what is unpaid); a defect's
    leaves less than the unpaid amount by more than clearly trivial (sometimes a partial release).
    ``None`` when no release fits."""
    if kind != DEFECT:
        x = s0 - unpaid
        return x if x > 0 else None
    if unpaid < s0 and b.rng.random() < 0.5:
        x = s0 - int(unpaid * b.rng.uniform(0.1, 0.8))
        if unpaid - (s0 - x) > trivial:
            return x
    return s0 if unpaid > trivial else None


def _book(b: WorldBuilder, dp: _Dispute, ref_no: int, rows: list[dict[str, Any]]) -> int:
    """Add the rows of a dispute's provision and its year-end release to ``rows``; the next free
    document number."""
    rng, m, ends = b.rng, b.books.master, md.MONTH_ENDS
    s0, x = int(dp.held.sum()), dp.release
    cname = m.customer_name[dp.customer]
    dp.p_entered = int(md.business_offset(int(ends[dp.m0 - 1]) + 1, int(rng.integers(0, 3))))
    dp.p_app = _approver_for(s0, "FNGUYEN")
    dp.p_ref, dp.r_ref = doc_number("AL", ref_no), doc_number("AL", ref_no + 1)
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
    rows.append({**common, "post_date": md.iso(md.YEAR_END), "entry_date": md.iso(dp.r_entered),
                 "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "HJOHANSSON", "approver": r_app,
                 "reference": dp.r_ref, "description": RELEASE_TEXT.render(EntryText(cname, MONTH_ABBR[11])),
                 "lines": [(ALLOWANCE, x), (BAD_DEBT, -x)]})
    return ref_no + 2


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
    period = md.iso(md.YEAR_END)[:7]
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


def _receipts_listing(b: WorldBuilder, year: _Year, disputes: list[_Dispute], review_of: list[int], ref_no: int) -> int:
    """The cash receipts from the day after the year end to the end of fieldwork on the invoices open at
    the year end of the customers under review: the disputes' receipts, and for every other invoice a
    lockbox receipt around its due date as the books draw them (a few in two instalments), when it
    falls by the end of fieldwork; the doubtful invoices are not paid."""
    rng, oi, m, d = b.rng, year.oi, b.books.master, b.books.docs
    got = [r for dp in disputes for r in dp.receipts]
    mine = {int(i) for dp in disputes for i in dp.items}
    rows = oi.at(md.YEAR_END)
    start = md.YEAR_END + 1
    for r in rows[np.isin(oi.oi.partner[rows], review_of)].tolist():
        i, a = int(oi.oi.item[r]), int(oi.oi.amount[r])
        if i in mine or i in year.excluded:
            continue
        due = int(oi.oi.due[r]) + int(round(rng.normal(-2, 8)))
        day = int(md.business_offset(max(due, int(d.doc_date[i]) + 3, start), 0))
        part = int(a * rng.uniform(0.4, 0.8)) if rng.random() < 0.05 else a
        later = int(md.business_offset(day + int(rng.integers(10, 30)), 0))
        got += [(dd, i, c) for dd, c in ((day, part), (later, a - part)) if c and dd <= year.fieldwork]
    got.sort(key=lambda g: (g[0], int(oi.oi.partner[rows][oi.oi.item[rows] == g[1]][0]), g[1]))
    lines: list[Any] = [ReceiptsHead()]
    lines += [Receipt(doc_number("CR", ref_no + n), md.iso(day), m.customer_id(int(d.partner[i])), doc_number("CI", i), c)
              for n, (day, i, c) in enumerate(got)]
    window = Window(md.iso(start), md.iso(year.fieldwork))
    return b.add_document("cash_receipts", RECEIPTS_TITLE.render(window),
                          RECEIPTS.render(Receipts(window.start, window.end, sum(c for _d, _i, c in got), tuple(lines))),
                          window.end)


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
    still open at the period end on the open-items report and what was received on them after it up
    to the end of fieldwork (the receipts listing), and flags the shortfall the release leaves against
    what remains unpaid; clears releases that leave at least that."""
    late = yield from _late_releases(kit)
    listing = yield from kit.documents()
    by_title = {d["title"]: d["doc_id"] for d in listing}
    policy = by_title.get(POLICY_TITLE)
    cash = next((d["doc_id"] for d in listing if RECEIPTS_TITLE.parse(d["title"])), None)
    # the release's memo and the open-items report of its period end, by their titles
    todo = [(eid, r, ids) for eid, r in sorted(late.items(), key=lambda kv: (kv[1]["posting_date"], kv[0]))
            if policy and (ids := _papers(r, by_title))]
    reports = sorted({ids[1] for _e, _r, ids in todo})
    bodies = yield from kit.open_all(([policy] if policy else []) + reports + ([cash] if cash and todo else []))
    open_items = {rid: _open_invoices(bodies[rid]) for rid in reports}
    receipts = RECEIPTS.parse(bodies.get(cash or "", ""))
    paid = [x for x in (receipts.lines if receipts else ()) if isinstance(x, Receipt)]

    def decide(item: tuple[str, dict[str, Any], tuple[str, str]]) -> Generator[Step, Any, Disposition | None]:
        eid, r, (memo_id, report_id) = item
        memo = MEMO.parse((yield from kit.open(memo_id)).get("body", ""))
        after = {"id": cash, "paid": [x for x in paid if x.dated > r["posting_date"]]}
        return _judge(eid, r, memo, (memo_id, report_id, str(policy)), open_items[report_id], after) if memo else None

    flags, clears = tally((yield from review(kit, todo, decide, reserve=2,
                                             reads=lambda item: [("open_document", {"doc_id": item[2][0]})])))
    yield from kit.submit(f"Examined {len(late)} post-closing allowance releases against the open items at the period "
                          f"end and the receipts after it to the end of fieldwork: flagged {flags} unsupported, "
                          f"cleared {clears} supported by the policy.")


def _open_invoices(body: str) -> dict[str, float]:
    """The open invoices an open-items report lists in its detail (invoice -> open amount)."""
    report = REPORT.parse(body)
    return {x.invoice: x.amount / 100 for x in (report.lines if report else ()) if isinstance(x, OpenInvoice)}


def _papers(r: dict[str, Any], by_title: dict[str, str]) -> tuple[str, str] | None:
    """(the memo, the open-items report) of release ``r``, found by their titles; ``None`` when either is missing."""
    text = RELEASE_TEXT.parse(r["description"] or "")
    if text is None:
        return None
    memo = by_title.get(MEMO_TITLE.render(DisputeTitle(r["reference"], text.customer, r["posting_date"][:7])))
    report = by_title.get(OPEN_ITEMS_TITLE.render(AsOf(r["posting_date"])))
    return (memo, report) if memo and report else None


def _judge(eid: str, r: dict[str, Any], memo: Memo, papers: tuple[str, str, str], open_items: dict[str, float],
           after: dict[str, Any]) -> Disposition:
    """Flag the shortfall of the reserve a release leaves against what remains unpaid of the invoices it
    covers after the receipts following the period end (the policy's section 4), or clear a release
    that leaves at least that."""
    memo_id, report_id, policy = papers
    held = memo.held / 100
    invoices = [i.number for i in memo.invoices]
    still = {i: open_items[i] for i in invoices if i in open_items}
    got = {i: sum(x.amount for x in after["paid"] if x.invoice == i) / 100 for i in still}
    required = round(sum(still.values()), 2)
    received = round(sum(min(got[i], still[i]) for i in still), 2)
    unpaid, left = round(required - received, 2), round(held - r["amount"], 2)
    short = round(unpaid - left, 2)
    cash = [after["id"]] if still and after["id"] else []
    calc = (f"specific reserve held {held:,.2f} per memo {memo_id} for invoices {', '.join(invoices)}; still open at "
            f"{r['posting_date']} per open-items report {report_id}: "
            + (", ".join(f"{i} {v:,.2f}" for i, v in still.items()) or "none of them") + f" (open amount {required:,.2f})")
    if still:
        paid = [x for x in after["paid"] if x.invoice in still]
        calc += (f"; received on them after {r['posting_date']} up to the end of fieldwork per receipts listing "
                 f"{after['id']}: " + (", ".join(f"{x.invoice} {x.amount / 100:,.2f}" for x in paid) + f" (in all "
                                       f"{received:,.2f})" if paid else "nothing") + f", unpaid {unpaid:,.2f}")
    calc += f"; reserve left after the release {left:,.2f}" if left else "; the release takes the whole reserve"
    if short > 0.005:
        return flag(eid, "ESTIMATE_RELEASE", [memo_id, report_id, *cash, policy, "master:calendar"],
                    f"Entry {eid}: top-side release of {r['amount']:,.2f} entered "
                    f"{r['entry_timestamp'][:10]} after the {r['close']} close; {calc}. The policy allows a release only "
                    f"for invoices collected: the reserve is short of what remains unpaid by {short:,.2f} (misstatement).",
                    amount=short)
    return clear(eid, [memo_id, report_id, *cash, policy],
                 f"Entry {eid}: release of {r['amount']:,.2f}; {calc}, which covers what remains unpaid: supported "
                 "by the policy.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="the specific reserve the release leaves (the memo's reserve held less the release) against what remains "
                     "unpaid of the disputed invoices it covers: their open amount at the year end (the AR open-items "
                     "report) less the receipts on them after it up to the end of fieldwork (the receipts listing)")
