"""JE-9 (L3): year-end cut-off and the year-end close.

An annual audit tests cut-off and the entries of the close at the year end (AS 2401.58-.62: entries
made at the end of a reporting period and post-closing entries; ISA 240.32(a)): a misstatement
between two months of the same year does not change the year's figures, so everything here sits at
the FY2025 year end, in the simulated company's own books. Four procedures, one per kind of
planted entry; each candidate's kind is drawn first (sales 35 %, post-closing 35 %, top-side 20 %,
accruals 10 %, within what the books hold: four top-side entries, the December accruals) and its
label (defect or decoy) independently, so defects and decoys of a kind share one listing surface
and only the documents tell them apart. A year end holding fewer candidates than the seed's default
counts (one unpaid December product sale at seed 40525, 2 of seeds 40000-42999 at the default size)
takes as many defects and decoys as it holds, still as many decoys as defects and at least
``MIN_DEFAULT`` (3) of each; counts set by the knobs that the year cannot hold raise a ``ConfigError``
stating what it holds of each kind. Every misstatement in the key is above the brief's clearly
trivial amount (sales and accruals are drawn among those above it, a top-side excess is kept above
it); an unauthorised post-closing entry is reported whatever its amount.

**Sales cut-off.** Product sales are billed by the interface the evening their goods issue
(shipment, COGS) posts. The policy keeps, for every product sale billed in the last ten days of
the year (2025-12-22 to 2025-12-31), the delivery note the carrier signs when it takes the goods:
its ship date is when control passes (FCA warehouse). Candidates are December sales still unpaid at
the year end, moved with their goods issue to a later day of the window (nothing else of the
chain moves). Delivery notes of a few ordinary sales earlier in the year complete the shipping file.
* defect ``revenue_before_shipment`` (criteria ``CUTOFF``): the carrier took the goods in January
  2026 (first business days, closer to 1 January as ``near_miss`` rises): the goods issue and the
  billing were recorded before the goods left. Misstatement: the product revenue line (the net
  amount; tax and COGS move with it). Decisive facts: the delivery note, its ship date, the billing
  date, the revenue.
* decoy ``year_end_revenue_shipped``: the carrier took the goods on the goods-issue date, within
  the year. Decisive facts: the delivery note, its ship date, the billing date.

**Post-closing entries.** Manual December entries with nothing after them in the year (vendor
invoices not yet paid, bank charges and interest, allowance reviews, sales tax remittances,
write-offs) are recorded 2-11 business days after the year-end close date of
``master:calendar`` (2026-01-09), still posted to December. The policy allows this only under a
post-closing adjustment request approved by the Controller and the CFO before the entry is
recorded, for the amount posted.
* defect ``post_closing_entry_unauthorised`` (``CUTOFF``, misstated at the entry's total): no
  request, or (with probability ``near_miss``) one that was rejected, approved only after the
  entry was recorded, or approved for a smaller amount. Where a request approved part of the entry,
  the amount posted and the unapproved excess (posted less approved) both earn full amount credit
  (the key's ``also_accepted``): the whole entry was posted without the approval the policy asks
  for, and the excess is what no approval covers. Decisive facts: the recording date, the
  close date, the amount (and the request, with its approval date, "rejected" or the amount it
  approved).
* decoy ``post_closing_entry_approved``: a request approved after the close, before the entry was
  recorded, for the amount posted. Decisive facts: the request, its approval date, the recording
  date.
The system's closing entry (YC) follows them: the policy has the close job re-run it at the first
full hour after any posting into the closed year, and the pack holds the job's run log (the first
run at the close, each re-run with its time and the postings behind it; the last run is the closing
entry's entry time), so the one entry recorded after the close outside the key is explained.

**Top-side adjustments.** The books' four year-end top-side accruals (bonus, audit fee, legal fees,
marketing campaign) are keyed in January by the accounting manager or the controller and posted to
31 December. Each has its support in the pack under its reference (the bonus pool approved by the
compensation committee, the audit engagement letter, outside counsel's letter, the agency's
statement), which states the one figure the accrual rests on.
* defect ``topside_unsupported`` (criteria ``UNSUPPORTED``): the support states a smaller figure
  (30 % of what was booked up to 70 % at the default ``near_miss``, 85 % at 1): the excess is a
  management cushion. Misstatement: booked less supported. Decisive facts: the support, the amount booked,
  the amount supported, the excess.
* decoy ``topside_supported``: the support states exactly the amount booked. Decisive facts: the
  support and the amount.

**Year-end accruals reversed in the next period.** Services billed a month late are accrued at
each month end and reversed on the first day of the next month, when the invoice comes; the
December accrual's reversal (1 January) and invoice fall in January 2026, so the pack holds each
accrued vendor's statement of account at 2026-01-31.
* defect ``year_end_accrual_unsupported`` (``UNSUPPORTED``, misstatement = the accrual): the
  statement shows no December service: the engagement or supply ended in November, so there is
  no later invoice for the accrual to meet. Decisive facts: the statement, the date the service
  ended, the accrual.
* decoy ``year_end_accrual_supported``: the statement shows the January invoice for the December
  service within the policy's 10 % estimate tolerance (within 3 % at ``near_miss`` 0, 5.5 % at
  the default, 8 % at 1). Decisive facts: the statement and the invoice amount.

**Unplanted look-alikes.** Nothing of the books is sanitised. Every product sale billed in the window
gets its (true) delivery note; every top-side entry and December accrual not drawn gets support
that agrees. The naive surface rule (product revenue billed in the window, and every FY2025 entry
recorded after the year end) therefore also catches ordinary close work keyed in January before
the close date (December allowance reviews, accruals, top-side entries, bank charges and interest
that are not in the key) and in-time window sales: over seeds 0-49 at default knobs it catches
5.8 unplanted look-alikes per world, 35 % of its hits (``tests/test_key_audit_je09.py`` measures
it). None of them is an exception under the policy (the key-audit test checks it): recorded on or
before the close date, shipped within the year, supported.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, close as books_close, master as md
from jeval_ray.books.documents import TYPE
from jeval_ray.books.tables import doc_numbers
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import closing_rerun_time
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (CLOSED_PERIOD, COUNT, DATE, INT, LINE, MONEY, NAME, REF, TIMESTAMP, TOKEN,
                                     Disposition, Form, Many, SurfaceRule, Task, clear, entry_ref, flag, parse_any,
                                     review, surface_naive, tally)


SPEC = spec(
    "JE-9",
    "L3",
    'Year-end cut-off and close',
    step_budget=100,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Test the FY2025 year end: sales cut-off, entries posted into FY2025 after the year-end close, and the '
              'year-end top-side adjustments and accruals; state the misstatement amount of each exception.',
    defect='cut-off: revenue recorded before shipment / entry after close; year-end adjustment or accrual beyond its support',
    decoys='year-end sales shipped in time; approved post-closing entries; supported top-side adjustments and accruals',
    required_evidence='close calendar, delivery notes, post-closing requests, top-side support, vendor statements',
    sources=('general_ledger', 'close_calendar', 'shipping_documents', 'close_binder', 'vendor_statements'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('CUTOFF', 'a transaction recorded in the wrong fiscal year, or an entry posted into a closed period without authorisation',
         'the net revenue billed before shipment, or the amount of an entry posted after the close (where a request '
         'approved part of it, the amount posted or the unapproved excess)'),
        ('UNSUPPORTED', 'a year-end adjustment or accrual recorded above what its documentation supports',
         'the amount booked less the amount its documentation supports'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
)

_STD_CLOSE = "AS 2401.58-.62 (entries at the end of a reporting period, post-closing entries); ISA 240.32(a), A41-A45"
_STD_EST = "AS 2401.58-.62 (top-side and period-end adjustments); AS 2401.63-.65 and ISA 240.32(b) (estimates reviewed for bias); ISA 240.A41-A45"
KEY_RATIONALE = (
    key("defect", "revenue_before_shipment",
        evidence="the carrier-signed delivery note of the sale (filed under its billing reference), the billing entry, the cut-off policy",
        facts="ship date on the delivery note in January 2026; billing and goods issue dated in the last days of December 2025; the product revenue line",
        conclusion="Revenue and the goods issue were recorded in FY2025 although control passed on shipment in FY2026: revenue is overstated by the net amount billed (cost of sales and inventory move with it).",
        standard="AS 2401.41 (presumed revenue-recognition risk), " + _STD_CLOSE),
    key("decoy", "year_end_revenue_shipped",
        evidence="the carrier-signed delivery note, the cut-off policy",
        facts="ship date on or before 2025-12-31, equal to the goods-issue and billing date",
        conclusion="Year-end sale shipped within FY2025: cut-off is correct, no exception.",
        standard=_STD_CLOSE),
    key("defect", "post_closing_entry_unauthorised",
        evidence="the entry (its entry timestamp), master:calendar (year-end close 2026-01-09), the close policy, and the post-closing request where one exists",
        facts="recorded after 2026-01-09 but posted to December 2025; no request, or a request rejected, approved only after the entry was recorded, or approved for less than posted",
        conclusion="An entry was posted into the closed FY2025 period after the close without the required authorisation: an override of the close control that changed the closed year's figures, reported at the amount posted (or, where a request approved part of it, at the unapproved excess).",
        standard=_STD_CLOSE),
    key("decoy", "post_closing_entry_approved",
        evidence="the post-closing adjustment request, master:calendar, the close policy",
        facts="request for the entry's reference approved by the Controller and the CFO after the close and before the entry was recorded, for the amount posted",
        conclusion="Post-closing entry authorised as the policy requires: no exception.",
        standard=_STD_CLOSE),
    key("defect", "topside_unsupported",
        evidence="the top-side support filed under the entry's reference (committee approval, engagement letter, counsel's letter or agency statement), the entry, the close policy",
        facts="the amount booked; the one figure the support states, lower; the difference",
        conclusion="A year-end top-side accrual exceeds its support: expense and accrued liabilities are overstated by the unsupported excess (a management cushion).",
        standard=_STD_EST),
    key("decoy", "topside_supported",
        evidence="the top-side support filed under the entry's reference, the close policy",
        facts="the support states exactly the amount booked",
        conclusion="Top-side accrual agrees with its support: no exception.",
        standard=_STD_EST),
    key("defect", "year_end_accrual_unsupported",
        evidence="the accrued vendor's statement of account at 2026-01-31, the accrual entry, the close policy",
        facts="no invoice for December 2025 services; the service ended in November 2025; the accrual amount",
        conclusion="The December accrual, reversed on 1 January, meets no later invoice: it accrues a cost that was never incurred, so expense and accrued liabilities are overstated by the accrual.",
        standard=_STD_EST),
    key("decoy", "year_end_accrual_supported",
        evidence="the accrued vendor's statement of account at 2026-01-31, the close policy",
        facts="the January 2026 invoice for December 2025 services, within 10 % of the accrual",
        conclusion="The accrual is an estimate within the policy's tolerance of the invoice that followed: no exception.",
        standard=_STD_EST),
)

POLICY_TITLE = "Revenue recognition, period-end cut-off and close policy"
REQUEST_TITLE = "Post-closing adjustment request"
CLOSE_LOG_TITLE = "Year-end close job run log FY2025"
STATEMENT_TITLE = "Statement of account"
REVENUE_ACCOUNT = "4000"
#: the year-end cut-off window: product sales billed in these days are vouched to their delivery notes
WINDOW_START, YEAR_END = "2025-12-22", cal.iso(cal.YEAR_END)
FY_END_CLOSE = cal.iso(cal.YEAR_END_CLOSE)
#: the accrual estimate tolerance the policy allows against the invoice that follows
ACCRUAL_TOLERANCE = 0.10
_CARRIERS = ("UPS Freight", "FedEx Freight", "XPO Logistics", "Bluegate Logistics", "Yellowstone Freight")
_REASONS = {
    "VN": ("vendor invoice for December services received after the close",
           "unrecorded December liability found in the January invoice review"),
    "VI": ("vendor invoice for goods received in December, matched after the close",
           "December goods receipt not invoiced at the close, found in the GR/IR review"),
    "BC": ("December bank charges from the statement received late",),
    "BI": ("December interest credited by the bank, advice received late",),
    "AL": ("allowance review of the December receivables completed after the close",
           "specific provision for a doubtful receivable identified after the close"),
    # an allowance entry that releases (Dr the allowance): a reason that lowers it, not a new provision
    "AL release": ("allowance review of the December receivables completed after the close: the required "
                   "allowance fell",),
    "TX": ("December sales tax remittance recorded from the bank statement after the close",),
    "WO": ("write-off of an uncollectible receivable approved in December, recorded after the close",),
}
#: the top-side adjustments of the books (``close.TOP_SIDE`` order) and who documents each one
_TOPSIDE_SUPPORT = (
    ("FY2025 bonus pool approval", "Compensation Committee of the Board", "bonus pool for FY2025 approved, payable in March 2026"),
    ("Engagement letter - FY2025 audit", "Ridgeway & Stone LLP, independent auditors", "fee agreed for the audit of the FY2025 financial statements, billed on completion"),
    ("Outside counsel letter - open litigation", "Hartwell & Crane LLP", "fees for services rendered through 2025-12-31 on the open litigation, not yet billed"),
    ("Agency statement - Q4 campaign", "Brightline Media Group", "Q4 2025 campaign costs incurred through 2025-12-31 and not yet invoiced"),
)
assert len(_TOPSIDE_SUPPORT) == len(books_close.TOP_SIDE)



@dataclass(frozen=True)
class Policy:
    """The cut-off and close policy: the cut-off window, the year-end close date, the accrual tolerance (%)."""
    start: str
    end: str
    close: str
    tolerance: int


POLICY = Form(Policy, (
    "1. Scope. This policy applies to all revenue and to every journal entry posted to a period of FY2025, "
    "and in particular to the fiscal year end (2025-12-31).\n"
    "2. Product revenue (account 4000) is recognised when control of the goods passes to the customer. Under "
    "the company's standard terms of sale (FCA our warehouse) control passes on the ship date recorded on the "
    "delivery note, when the carrier signs for the goods. Goods that leave the warehouse after the last day "
    "of a fiscal year may not be billed into that year.\n"
    "3. Year-end cut-off. Delivery notes for all product sales billed in the last ten days of the fiscal year "
    "({start} to {end}) are retained in the audit support pack under the billing reference.\n"
    "4. Period close. Each period is closed on the close date set in the financial close calendar (master data "
    "calendar, kind period_close). Entries recorded up to and including the close date may still be posted "
    "into the period being closed; this is normal close work. After the close date the period is locked: "
    "entries recorded later are posted to the current open period. An entry may be posted into a closed "
    "period only under a post-closing adjustment request approved by the Controller and the CFO before the "
    "entry is recorded, for the reference and the amount approved. The FY2025 year-end close date is "
    "{close}. The year-end closing entry (document type YC, system user SYS_BATCH) carries every "
    "revenue and expense balance to retained earnings: the system runs it at the year-end close and runs it "
    "again at the first full hour after any posting into the closed year, so that it closes the year's final "
    "balances. Each run replaces the closing entry of the run before it (the ledger holds one closing entry, "
    "timed at the last run); the close job's run log is kept in the close binder. A re-run is system "
    "processing, not a post-closing adjustment; the postings that trigger it need their own authorisation.\n"
    "5. Top-side adjustments (document type TS) are keyed by the Accounting Manager or the Controller. Each one "
    "is supported by the calculation or third-party document it rests on, filed in the close binder under the "
    "adjustment's reference; the amount booked is the amount that document supports.\n"
    "6. Accruals. Services billed in arrears are accrued at each month end from the expected invoice and "
    "reversed on the first day of the next month, when the invoice is recorded. An accrual within "
    "{tolerance}% of the invoice that follows is an acceptable estimate. For the year end, the "
    "statements of account of the accrued vendors at 2026-01-31 are retained in the audit support pack.\n"
    "7. Cut-off errors are corrected in the period to which the transaction belongs; the misstatement is the "
    "amount recorded in the wrong period. An entry posted into a closed period without authorisation is "
    "reported at the amount posted. An adjustment or accrual above its support is misstated by the amount it "
    "exceeds the support."), start=DATE, end=DATE, close=DATE, tolerance=INT)


@dataclass(frozen=True)
class RejectedRequest:
    """A post-closing adjustment request the Controller rejected."""
    no: int
    close: str
    reference: str
    account: str
    requested: int
    reason: str
    preparer: str
    asked: str
    decided: str


@dataclass(frozen=True)
class ApprovedRequest(RejectedRequest):
    """A post-closing adjustment request approved by the Controller and the CFO, for ``amount``."""
    amount: int


_REQUEST = ("Post-closing adjustment request PCA-26-{no}\n"
            "Closed period: 2025-12 (FY2025 year-end close {close})\n"
            "Entry reference: {reference}\n"
            "Account: {account}    Amount requested: USD {requested}\n"
            "Reason: {reason}\n"
            "Requested by {preparer} on {asked}.\n"
            "Decision: ")
_REQUEST_KINDS = dict(no=INT, close=DATE, reference=TOKEN, account=TOKEN, requested=MONEY, reason=LINE, preparer=TOKEN,
                      asked=DATE, decided=DATE)
APPROVED = Form(ApprovedRequest, _REQUEST + "Approved by Isabel Brown, Controller, and James Wright, CFO, on "
                "{decided}, for USD {amount}.", amount=MONEY, **_REQUEST_KINDS)
REJECTED = Form(RejectedRequest, _REQUEST + "Rejected by Isabel Brown, Controller, on {decided}: post in the open "
                "period 2026-01.", **_REQUEST_KINDS)


@dataclass(frozen=True)
class FirstRun:
    """The close job's first run, at the year-end close."""
    no: int
    at: str


@dataclass(frozen=True)
class Rerun:
    """A re-run of the close job after postings into the closed year (``postings``: ``POSTING`` texts)."""
    no: int
    at: str
    postings: str


@dataclass(frozen=True)
class Posting:
    """A posting into the closed year a re-run names."""
    entry: str
    reference: str
    posted: str
    recorded: str


@dataclass(frozen=True)
class CloseLog:
    """The year-end close job's run log."""
    ref: str
    year_end: str
    runs: tuple[FirstRun | Rerun, ...]
    n_runs: int


FIRST_RUN = Form(FirstRun, "Run {no}  {at}  year-end close FY2025 (period 2025-12 locked)", no=INT, at=TIMESTAMP)
RERUN = Form(Rerun, "Run {no}  {at}  re-run after posting into the closed FY2025: {postings}", no=INT, at=TIMESTAMP,
             postings=LINE)
#: one posting a re-run names; a re-run's postings are these, joined by ", " (read back with ``find_all``)
POSTING = Form(Posting, "entry {entry} ({reference}, posted {posted}, recorded {recorded})", entry=REF,
               reference=TOKEN, posted=DATE, recorded=TIMESTAMP)
CLOSE_LOG = Form(CloseLog, (
    "Job: year-end closing FY2025, system user SYS_BATCH. Closing entry {ref}, posted {year_end}: every "
    "revenue and expense balance to retained earnings (account 3100). Each run replaces the closing entry of "
    "the run before it.\n{runs}\nCompleted: {n_runs} run(s); the closing entry {ref} stands as of the last run."),
    ref=TOKEN, year_end=DATE, runs=Many((FIRST_RUN, RERUN)), n_runs=INT)


@dataclass(frozen=True)
class DeliveryNote:
    """The carrier-signed delivery note of a sale: ``ship`` is when control passed."""
    dn: int
    company: str
    customer: str
    customer_id: str
    reference: str
    ship: str
    carrier: str
    pro: int
    units: int
    pallets: int


@dataclass(frozen=True)
class NoteTitle:
    """A delivery note's title: the note, the billing reference it is filed under, the customer."""
    dn: int
    reference: str
    customer: str


NOTE = Form(DeliveryNote, (
    "Delivery note DN-{dn}\n"
    "Shipper: {company}, finished goods warehouse, " + md.WAREHOUSE.split(", ", 1)[1] + "\n"
    "Customer: {customer} ({customer_id})\n"
    "Billing reference: {reference}\n"
    "Ship date (goods handed to carrier, carrier signature): {ship}\n"
    "Carrier: {carrier}, pro number {pro}\n"
    "Terms: FCA Commerce City warehouse\n"
    "Contents: {units} units, {pallets} pallets\n"
    "Goods received in good order by the carrier; signed by the dispatch supervisor."),
    dn=INT, company=LINE, customer=LINE, customer_id=TOKEN, reference=TOKEN, ship=DATE, carrier=NAME, pro=INT,
    units=COUNT, pallets=INT)
NOTE_TITLE = Form(NoteTitle, "Delivery note DN-{dn} - {reference} {customer}", dn=INT, reference=TOKEN, customer=LINE)


@dataclass(frozen=True)
class TopsideSupport:
    """The close-binder support of a top-side adjustment: the one figure (``amount``) it rests on."""
    title: str
    issuer: str
    company: str
    dated: str
    what: str
    amount: int
    reference: str
    description: str


TOPSIDE = Form(TopsideSupport, (
    "{title}\n"
    "Issued by: {issuer}\n"
    "Addressed to: {company}, Finance\n"
    "Date: {dated}\n"
    "Subject: {what}: USD {amount}\n"
    "Filed in the FY2025 close binder under top-side adjustment {reference} ({description})."),
    title=LINE, issuer=LINE, company=LINE, dated=DATE, what=LINE, amount=MONEY, reference=TOKEN, description=LINE)


@dataclass(frozen=True)
class Ended:
    """A vendor's statement at 2026-01-31 showing no January invoice: the service ended on ``ended``."""
    vendor: str
    vendor_id: str
    company: str
    service: str
    what: str
    ended: str


@dataclass(frozen=True)
class Invoiced:
    """A vendor's statement at 2026-01-31 showing the January invoice for December services."""
    vendor: str
    vendor_id: str
    company: str
    service: str
    number: int
    dated: str
    amount: int


_STATEMENT = (STATEMENT_TITLE + " at 2026-01-31\nFrom: {vendor} ({vendor_id})\nTo: {company}, Accounts Payable\n"
              "Service: {service}, billed monthly in arrears\n")
_STATEMENT_END = "\nPayments are due 30 days from the invoice date."
INVOICED = Form(Invoiced, _STATEMENT + "Invoices issued in January 2026:\n  Invoice {number} dated {dated}, for "
                "December 2025 {service}: USD {amount}" + _STATEMENT_END, vendor=LINE, vendor_id=TOKEN, company=LINE,
                service=LINE, number=INT, dated=DATE, amount=MONEY)
ENDED = Form(Ended, _STATEMENT + "Invoices issued in January 2026: none.\nNote: {what} on {ended}; no services were "
             "provided after that date and no further invoice will be issued. The November 2025 invoice was the "
             "final one." + _STATEMENT_END, vendor=LINE, vendor_id=TOKEN, company=LINE, service=LINE, what=LINE,
             ended=DATE)


def _business(days: np.ndarray) -> np.ndarray:
    """The warehouse ships, and the office works, on the company's business days."""
    return days[cal.is_business_day(days)]


def plant(b: WorldBuilder) -> None:
    """Plant the four year-end procedures' defects and decoys into the year's books (see the module
    docstring) and the documents every in-scope entry needs, planted or not."""
    rng, c = b.rng, b.cols
    near = b.knobs.near_miss
    d = b.books.docs
    close = np.datetime64(FY_END_CLOSE)
    year_end, window_start = np.datetime64(YEAR_END), np.datetime64(WINDOW_START)
    stated = Policy(WINDOW_START, YEAR_END, FY_END_CLOSE, int(round(ACCRUAL_TOLERANCE * 100)))
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(stated), "2024-11-29")
    b.claim("JE-9", documents=[policy])
    b.facts["brief_notes"] = {"year end close": f"the FY2025 books were closed on {FY_END_CLOSE}"}

    # entries by books document, and the documents with something after them in the year (a payment, a receipt)
    at = np.full(len(d.type), -1, dtype=np.int64)
    at[c.books_doc] = np.arange(b.n)
    followed = np.zeros(len(d.type), dtype=bool)
    child = np.flatnonzero((d.parent >= 0) & (at >= 0))
    followed[d.parent[child]] = True
    followed_e = followed[c.books_doc]
    sh_of = np.where(d.parent[c.books_doc] >= 0, at[np.maximum(d.parent[c.books_doc], 0)], -1)
    post, code = c.post_date, c.doc_code
    december = post >= np.datetime64("2025-12-01")

    is_sale = (code == "CI") & (c.credit_account == REVENUE_ACCOUNT)
    # a sale the planting may move: billed the day its goods issue (its parent) posted
    safe_sh = np.zeros(b.n, dtype=bool)
    safe_sh[is_sale] = sh_of[is_sale] >= 0
    has = is_sale & safe_sh
    safe_sh[has] = (post[sh_of[has]] == post[has]) & (code[sh_of[has]] == "SH")
    # a misstatement the key reports is above clearly trivial (a post-closing entry is a control
    # deviation, reported whatever its amount)
    trivial = int(round(b.facts["clearly_trivial"] * 100))
    above_trivial = d.amount[c.books_doc] >= trivial
    pools = {
        "rev": is_sale & december & ~followed_e & safe_sh & above_trivial,
        "late": c.manual & december & ~followed_e & np.isin(code, list(_REASONS)),
        "topside": code == "TS",
        "accrual": (code == "AC") & (post == year_end) & above_trivial,
    }
    picked = _draw_kinds(b, pools)

    _plant_sales(b, *picked["rev"], sh_of, policy, near)
    _plant_post_closing(b, *picked["late"], policy, near, close)
    _plant_topside(b, *picked["topside"], np.flatnonzero(pools["topside"]), policy, near, trivial)
    _plant_accruals(b, *picked["accrual"], np.flatnonzero((code == "AC") & (post == year_end)), policy, near)

    b.claim("JE-9", documents=[_close_log(b)])

    # every product sale billed in the window has its delivery note; so do a few ordinary sales earlier in the year
    window_sales = np.flatnonzero(is_sale & (c.post_date >= window_start) & ~b.used)
    for idx in window_sales:
        _delivery_note(b, int(idx), c.post_date[sh_of[idx]] if sh_of[idx] >= 0 else c.post_date[idx])
    others = np.flatnonzero(is_sale & (c.post_date < window_start) & ~b.used & (sh_of >= 0))
    if len(others):
        for idx in np.sort(rng.choice(others, size=min(len(others), int(rng.integers(3, 7))), replace=False)):
            _delivery_note(b, int(idx), c.post_date[sh_of[idx]])


#: the fewest defects (and decoys) of a world at default counts (the default draw is 3-8)
MIN_DEFAULT = 3
#: the share of candidates of each kind (drawn within what the books hold)
_WEIGHTS = {"rev": 0.35, "late": 0.35, "topside": 0.2, "accrual": 0.1}


def _draw_kinds(b: WorldBuilder, pools: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One surface per kind: each candidate's kind is drawn first (within what the books hold), its
    label independently. {kind: (the entries picked, their labels: True for a defect)}."""
    rng = b.rng
    room = {k: int(v.sum()) for k, v in pools.items()}
    _fit_counts(b, room)
    n_all = b.n_defects + b.n_decoys
    labels = rng.permutation(np.array([True] * b.n_defects + [False] * b.n_decoys, dtype=bool))
    drawn = []
    for _ in range(n_all):
        open_kinds = [k for k in _WEIGHTS if room[k] > 0]
        p = np.array([_WEIGHTS[k] for k in open_kinds])
        k = open_kinds[int(rng.choice(len(open_kinds), p=p / p.sum()))]
        room[k] -= 1
        drawn.append(k)
    kinds = np.array(drawn)
    return {k: (b.pick(int((kinds == k).sum()), pools[k], what=f"{k} candidates"), labels[kinds == k])
            for k in _WEIGHTS}


def _fit_counts(b: WorldBuilder, room: dict[str, int]) -> None:
    """Fit the counts to the year end's candidates: a small year (seed 40525 at the default size: one
    unpaid December sale) may hold fewer than the seed's default ``n_defects + n_decoys``. Default
    counts then take the most the year holds, still as many decoys as defects and at least
    ``MIN_DEFAULT`` of each; counts set by the knobs that the year cannot hold are a ``ConfigError``."""
    held = sum(room.values())
    if b.n_defects + b.n_decoys <= held:
        return
    if b.knobs.n_defects is None and b.knobs.n_decoys is None and held // 2 >= MIN_DEFAULT:
        b.n_defects = b.n_decoys = held // 2
        return
    raise ConfigError(
        f"impossible knobs for JE-9: n_defects + n_decoys = {b.n_defects + b.n_decoys} year-end candidates, but the "
        f"year of {b.n} entries holds {held}: {room['rev']} December product sales unpaid at the year end, "
        f"{room['late']} manual December entries with nothing after them, {room['topside']} top-side entries and "
        f"{room['accrual']} December accruals; raise n_entries or lower n_defects/n_decoys")


def _plant_sales(b: WorldBuilder, idx_all: np.ndarray, bad_all: np.ndarray, sh_of: np.ndarray, policy: int,
                 near: float) -> None:
    """Move December sales (with their goods issue) to a later day of the window; defects ship in January."""
    rng, c = b.rng, b.cols
    window = _business(np.arange(np.datetime64(WINDOW_START), np.datetime64(YEAR_END) + 1))
    for idx, bad in zip(idx_all, bad_all):
        later = window[window >= c.post_date[idx]]
        day = later[int(rng.integers(0, len(later)))]
        for i in (idx, sh_of[idx]):
            c.post_date[i] = c.doc_date[i] = c.entry_date[i] = day
        b.claim("JE-9", entries=[int(idx), int(sh_of[idx])])
        if bad:
            # the carrier took the goods in January: the goods issue and the billing came first
            ship = cal.business_offset(np.datetime64("2026-01-02") + int(rng.integers(0, 1 + int(round((1 - near) * 8)))), 0)
        else:
            ship = day
        doc = _delivery_note(b, int(idx), ship)
        revenue = -sum(v for a, v in b.lines_of(idx) if a == REVENUE_ACCOUNT)
        facts = [f"{{D:{doc}}}", b.date_str(ship), b.date_str(day)]
        if bad:
            b.add_defect(idx, "revenue_before_shipment", "CUTOFF", [doc, "entry", policy], revenue,
                         facts=[*facts, revenue / 100])
        else:
            b.add_decoy(idx, "year_end_revenue_shipped", [doc, policy], facts=facts)


def _plant_post_closing(b: WorldBuilder, idx_all: np.ndarray, bad_all: np.ndarray, policy: int, near: float,
                        close: np.datetime64) -> None:
    """Record December entries after the year-end close; decoys under an approved request."""
    rng, c = b.rng, b.cols
    for idx, bad in zip(idx_all, bad_all):
        k = int(rng.integers(2, 12))
        recorded = cal.business_offset(close, k)
        # a decision in time falls after the close and before the entry is recorded
        in_time = cal.business_offset(close, int(rng.integers(1, k)))
        c.entry_date[idx] = recorded
        c.time_s[idx] = int(rng.integers(9 * 3600, 17 * 3600))
        b.claim("JE-9", entries=[int(idx)])
        cents = int(c.debit_cents[idx])
        base = ["entry", "master:calendar", policy]
        facts = [b.date_str(recorded), FY_END_CLOSE, cents / 100]
        rec = b.date_str(recorded)
        assert CLOSED_PERIOD.after_close(rec, b.date_str(c.post_date[idx]), {YEAR_END[:7]: FY_END_CLOSE})
        if not bad:
            h = _request(b, idx, in_time, "approved", cents)
            assert CLOSED_PERIOD.check(rec, cents / 100, "PCA", True, b.date_str(in_time), cents / 100).ok
            b.add_decoy(idx, "post_closing_entry_approved", [h, "master:calendar", policy],
                        facts=[f"{{D:{h}}}", b.date_str(in_time), rec])
        elif rng.random() < near:
            # a request exists, but it does not authorise what was posted
            how = ("late", "rejected", "amount")[int(rng.integers(0, 3))]
            extra: list[Any]
            if how == "late":
                approved = cal.business_offset(recorded, int(rng.integers(2, 8)))
                h = _request(b, idx, approved, "approved", cents, asked=in_time)
                extra = [f"{{D:{h}}}", b.date_str(approved)]
                verdict = CLOSED_PERIOD.check(rec, cents / 100, "PCA", True, b.date_str(approved), cents / 100)
            elif how == "rejected":
                h = _request(b, idx, in_time, "rejected", cents)
                extra = [f"{{D:{h}}}", "rejected"]
                verdict = CLOSED_PERIOD.check(rec, cents / 100, "PCA", False, b.date_str(in_time))
            else:
                allowed = int(cents * rng.uniform(0.3, 0.8))
                h = _request(b, idx, in_time, "approved", allowed)
                extra = [f"{{D:{h}}}", allowed / 100]
                verdict = CLOSED_PERIOD.check(rec, cents / 100, "PCA", True, b.date_str(in_time), allowed / 100)
            assert not verdict.ok
            # approved for part of it: the amount posted and the unapproved excess are both defensible
            b.add_defect(idx, "post_closing_entry_unauthorised", "CUTOFF", [*base, h], cents, facts=[*facts, *extra],
                         also_accepted_cents=(cents - allowed,) if how == "amount" else ())
        else:
            b.add_defect(idx, "post_closing_entry_unauthorised", "CUTOFF", base, cents, facts=facts)


def _close_log(b: WorldBuilder) -> int:
    """The year-end close job's run log: the first run at the close, then a re-run at the first full
    hour after each posting into the closed year (the policy's rule), naming the entries behind it.
    Its last run is the time the listing gives the closing entry (``build`` times it by the same
    ``closing_rerun_time``), so the log is what explains a closing entry recorded after the close."""
    c, d = b.cols, b.books.docs
    yc = int(np.flatnonzero(d.type == TYPE["YC"])[0])
    ref = doc_numbers(d, np.array([yc]))[0].as_py()
    first = np.datetime64(int(d.entry_date[yc]), "D").astype("datetime64[s]") + np.timedelta64(int(d.entry_time[yc]), "s")
    ts = c.entry_date.astype("datetime64[s]") + c.time_s.astype("timedelta64[s]")
    late = np.flatnonzero(ts >= first)
    late = late[np.argsort(ts[late], kind="stable")]
    rerun = closing_rerun_time(ts[late])
    runs: list[FirstRun | Rerun] = [FirstRun(1, str(first)[:16].replace("T", " "))]
    for at in np.unique(rerun):
        named = ", ".join(POSTING.render(Posting(entry_ref(int(i)), str(c.reference[i]), b.date_str(c.post_date[i]),
                                                 str(ts[i]).replace("T", " "))) for i in late[rerun == at])
        runs.append(Rerun(len(runs) + 1, str(at.astype("datetime64[m]")).replace("T", " "), named))
    last = rerun.max() if len(late) else first
    body = CLOSE_LOG.render(CloseLog(str(ref), YEAR_END, tuple(runs), len(runs)))
    return b.add_document("report", CLOSE_LOG_TITLE, body, b.date_str(last))


def _plant_topside(b: WorldBuilder, idx_all: np.ndarray, bad_all: np.ndarray, every: np.ndarray, policy: int,
                   near: float, trivial: int) -> None:
    """Support for every top-side entry; a defect's support states less than was booked."""
    rng, c = b.rng, b.cols
    label = {int(i): bool(x) for i, x in zip(idx_all, bad_all)}
    for idx in every:
        booked = int(c.debit_cents[idx])
        bad = label.get(int(idx), False)
        supported = booked
        if bad:
            share = rng.uniform(0.30, 0.55 + 0.30 * near)
            supported = int(min(booked - 10_000, max(10_000, round(booked * share / 100_000) * 100_000)))
            # the excess is more than clearly trivial (whole thousands below what was booked)
            supported = min(supported, max(0, (booked - trivial) // 100_000 * 100_000))
        doc = _topside_support(b, idx, supported)
        if int(idx) not in label:
            continue
        b.claim("JE-9", entries=[int(idx)])
        if bad:
            b.add_defect(idx, "topside_unsupported", "UNSUPPORTED", [doc, "entry", policy], booked - supported,
                         facts=[f"{{D:{doc}}}", booked / 100, supported / 100, (booked - supported) / 100])
        else:
            b.add_decoy(idx, "topside_supported", [doc, policy], facts=[f"{{D:{doc}}}", booked / 100])


def _plant_accruals(b: WorldBuilder, idx_all: np.ndarray, bad_all: np.ndarray, every: np.ndarray, policy: int,
                    near: float) -> None:
    """A statement of account for every December accrual's vendor; a defect's shows no December service."""
    rng, c = b.rng, b.cols
    label = {int(i): bool(x) for i, x in zip(idx_all, bad_all)}
    for idx in every:
        accrued = int(c.debit_cents[idx])
        bad = label.get(int(idx), False)
        spread = 0.03 + 0.05 * near
        invoice = None if bad else int(round(accrued / rng.uniform(1 - spread, 1 + spread)))
        doc, ended = _statement(b, idx, invoice)
        if int(idx) not in label:
            continue
        b.claim("JE-9", entries=[int(idx)])
        if bad:
            b.add_defect(idx, "year_end_accrual_unsupported", "UNSUPPORTED", [doc, "entry", policy], accrued,
                         facts=[f"{{D:{doc}}}", ended, accrued / 100])
        else:
            b.add_decoy(idx, "year_end_accrual_supported", [doc, policy], facts=[f"{{D:{doc}}}", (invoice or 0) / 100])


def _request(b: WorldBuilder, idx: int, decided: np.datetime64, status: str, cents: int,
             asked: np.datetime64 | None = None) -> int:
    """A post-closing adjustment request for entry ``idx`` (its reference), asked shortly before
    ``asked`` (default: the decision) and decided on ``decided``."""
    rng, c = b.rng, b.cols
    no = int(rng.integers(100, 999))
    asked = max(cal.business_offset(decided if asked is None else asked, -int(rng.integers(0, 3)), roll="backward"),
                np.datetime64(FY_END_CLOSE) + 1)
    code = str(c.doc_code[idx])
    reasons = _REASONS["AL release" if code == "AL" and str(c.debit_account[idx]) == "1190" else code]
    reason = reasons[int(rng.integers(0, len(reasons)))]
    head: dict[str, Any] = dict(no=no, close=FY_END_CLOSE, reference=str(c.reference[idx]),
                                account=str(c.debit_account[idx]), requested=int(c.debit_cents[idx]), reason=reason,
                                preparer=str(c.preparer[idx]), asked=b.date_str(asked), decided=b.date_str(decided))
    body = (APPROVED.render(ApprovedRequest(**head, amount=cents)) if status == "approved" else
            REJECTED.render(RejectedRequest(**head)))
    doc = b.add_document("memo", f"{REQUEST_TITLE} PCA-26-{no}", body, b.date_str(asked))
    b.claim("JE-9", documents=[doc])
    return doc


def _by_id(b: WorldBuilder, rows: str, key: str) -> dict[str, dict[str, Any]]:
    """``b.<rows>`` (customers, vendors) by id, built once per world."""
    memo = b.__dict__.setdefault("_je09_by_id", {})
    if rows not in memo:
        memo[rows] = {r[key]: r for r in getattr(b, rows)}
    return memo[rows]


def _customer_name(b: WorldBuilder, idx: int) -> str:
    cid = str(b.cols.customer_id[idx])
    row = _by_id(b, "customers", "customer_id").get(cid)
    return row["name"] if row else cid


def _delivery_note(b: WorldBuilder, idx: int, ship: np.datetime64) -> int:
    """The carrier-signed delivery note of the sale billed by entry ``idx``, shipped on ``ship``."""
    rng, c = b.rng, b.cols
    ref = str(c.reference[idx])
    customer = _customer_name(b, idx)
    dn = int(rng.integers(80_000, 99_999))
    qty = b.books.docs.quantity[int(c.books_doc[idx])]
    carrier = _CARRIERS[int(rng.integers(0, len(_CARRIERS)))]
    pro = int(rng.integers(10**8, 10**9))
    note = DeliveryNote(dn, b.facts["company_name"], customer, str(c.customer_id[idx]), ref, b.date_str(ship), carrier,
                        pro, int(qty), int(rng.integers(1, 12)))
    # a delivery note is raised when the order is released to the warehouse (on or before the goods
    # issue): the listing shows that date, the ship date is read in the note
    raised = cal.business_offset(c.doc_date[idx], -int(rng.integers(0, 3)), roll="backward")
    doc = b.add_document("shipping_document", NOTE_TITLE.render(NoteTitle(dn, ref, customer)), NOTE.render(note),
                         b.date_str(raised))
    b.claim("JE-9", documents=[doc])
    return doc


def _topside_support(b: WorldBuilder, idx: int, cents: int) -> int:
    """The close-binder support of top-side entry ``idx``, stating ``cents`` as the one figure it rests on."""
    rng, c = b.rng, b.cols
    purpose = int(b.books.docs.ext_ref[int(c.books_doc[idx])])
    title, issuer, what = _TOPSIDE_SUPPORT[purpose]
    ref = str(c.reference[idx])
    entered = c.entry_date[idx]
    if purpose == 1:  # the engagement letter is signed before the audit starts
        dated = cal.business_offset(np.datetime64("2025-09-01") + int(rng.integers(0, 45)), 0)
    else:  # committee minutes and statements at the year end, before the adjustment was keyed
        lo = np.datetime64("2025-12-15") if purpose == 0 else np.datetime64("2026-01-02")
        days = _business(np.arange(lo, entered))
        dated = days[int(rng.integers(0, len(days)))] if len(days) else entered
    body = TOPSIDE.render(TopsideSupport(title, issuer, b.facts["company_name"], b.date_str(dated), what, cents, ref,
                                         str(c.description[idx])))
    doc = b.add_document("memo", f"{title} ({ref})", body, b.date_str(dated))
    b.claim("JE-9", documents=[doc])
    return doc


def _statement(b: WorldBuilder, idx: int, invoice_cents: int | None) -> tuple[int, str]:
    """The statement of account at 2026-01-31 of the vendor accrued by entry ``idx``: the January
    invoice for December services, or none because the service ended in November. Returns the
    document and the date the service ended ("" when it did not)."""
    rng, c = b.rng, b.cols
    vid = str(c.vendor_id[idx])
    vendor = _by_id(b, "vendors", "vendor_id")[vid]
    service = "utility supply" if vendor["category"] == "utilities" else "professional services"
    who = dict(vendor=vendor["name"], vendor_id=vid, company=b.facts["company_name"], service=service)
    ended = ""
    if invoice_cents is not None:
        inv_day = _business(np.arange(np.datetime64("2026-01-05"), np.datetime64("2026-01-24")))
        day = inv_day[int(rng.integers(0, len(inv_day)))]
        body = INVOICED.render(Invoiced(**who, number=int(rng.integers(10_000, 99_999)), dated=b.date_str(day),
                                        amount=invoice_cents))
    else:
        ended = str(cal.business_offset(np.datetime64("2025-11-30"), 0, roll="backward"))
        what = "the supply account was closed" if service == "utility supply" else "the engagement was completed"
        body = ENDED.render(Ended(**who, what=what, ended=ended))
    title = f"{STATEMENT_TITLE} - {vendor['name']} ({vid}) at 2026-01-31"
    doc = b.add_document("vendor_statement", title, body, "2026-01-31")
    b.claim("JE-9", documents=[doc])
    return doc, ended


# ----------------------------------------------------------------------------- strategies
Head = dict[str, Any]


def _scan(kit: Kit, start: str, end: str) -> Generator[Step, Any, tuple[dict[str, Head], list[Head]]]:
    """Entry headers (line 1) of the slice and the product revenue lines billed in the cut-off window."""
    heads = yield from kit.ledger(filters=[{"column": "line_no", "op": "eq", "value": 1}],
                                  columns=["entry_id", "posting_date", "entry_timestamp", "debit", "source", "reference",
                                           "document_type", "vendor_id", "description"])
    rev = yield from kit.ledger(filters=[{"column": "account", "op": "eq", "value": REVENUE_ACCOUNT},
                                         {"column": "posting_date", "op": "ge", "value": start}],
                                columns=["entry_id", "account", "posting_date", "credit", "reference"])
    return entries_of(heads), [r for r in rev if start <= r["posting_date"][:10] <= end and r["credit"]]


def _year_end_and_late(kit: Kit) -> Generator[Step, Any, dict[str, Head]]:
    """Product revenue billed in the last ten days of the year, then every FY2025 entry recorded after
    the year end (by entry id), each with the amount a flag reports and why it was caught."""
    heads, rev = yield from _scan(kit, WINDOW_START, YEAR_END)
    out = {r["entry_id"]: {**r, "amount": r["credit"], "why": f"Revenue {r['reference']} of {r['credit']:.2f} "
                                                              f"booked at the year end on {r['posting_date']}."}
           for r in rev}
    for eid, h in sorted(heads.items()):
        if h["posting_date"][:4] == "2025" and h["entry_timestamp"][:10] > YEAR_END and h["document_type"] != "YC":
            out[eid] = {**h, "amount": h["total_debit"], "why": f"Entry recorded {h['entry_timestamp'][:10]} after "
                                                                f"the year end, posted {h['posting_date']}."}
    return out


RULE = SurfaceRule("product revenue billed in the last ten days of the year, and every FY2025 entry recorded after "
                   "the year end", "CUTOFF", _year_end_and_late, "Entry {entry_id}: {why}",
                   "Flagged {n} year-end and late-recorded entries.", in_order=False, amount="amount")
naive = surface_naive(RULE)


def _policy(kit: Kit, docs: list[dict[str, Any]]) -> Generator[Step, Any, tuple[list[str], str, str, float]]:
    """([the policy's id] or [], the cut-off window's first and last day, the accrual tolerance) as the
    policy states them (the defaults when there is none)."""
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "cut-off" in d["title"].lower()), None)
    if not policy:
        return [], WINDOW_START, YEAR_END, ACCRUAL_TOLERANCE
    stated = POLICY.parse((yield from kit.open(policy)).get("body", ""))
    if stated is None:
        return [policy], WINDOW_START, YEAR_END, ACCRUAL_TOLERANCE
    return [policy], stated.start, stated.end, stated.tolerance / 100


def _in_scope(heads: dict[str, Head], closes: dict[str, str],
              end: str) -> tuple[list[tuple[str, Head, str]], list[tuple[str, Head]], list[tuple[str, Head]]]:
    """(entries recorded after their period's close, with the close date; top-side entries; the
    accruals posted on the year end), by entry id."""
    late, topside, accruals = [], [], []
    for eid, h in sorted(heads.items()):
        posted = h["posting_date"][:10]
        close = CLOSED_PERIOD.after_close(h["entry_timestamp"][:10], posted, closes)
        if close and h["document_type"] != "YC":
            late.append((eid, h, close))
        elif h["document_type"] == "TS":
            topside.append((eid, h))
        elif h["document_type"] == "AC" and posted == end:
            accruals.append((eid, h))
    return late, topside, accruals


def _requests(kit: Kit, docs: list[dict[str, Any]]) -> Generator[Step, Any, dict[str, tuple[str, RejectedRequest]]]:
    """{entry reference: (request id, the request)} of every post-closing adjustment request in the pack."""
    out = {}
    for d in docs:
        if d["title"].startswith(REQUEST_TITLE):
            req = parse_any((yield from kit.open(d["doc_id"])).get("body", ""), (APPROVED, REJECTED))
            if req is not None:
                out[req.reference] = (d["doc_id"], req)
    return out


def _targeted(kit: Kit, closes: dict[str, str], start: str,
              end: str) -> Generator[Step, Any, tuple[dict[str, Head], list[Head]]]:
    """The entry headers (line 1) that can be in scope, by filters: the year's entries recorded after the
    year-end close (the close under test), the top-side entries and the accruals posted on the year end;
    and the product revenue lines billed in the cut-off window."""
    cols = ["entry_id", "posting_date", "entry_timestamp", "debit", "reference", "document_type", "vendor_id"]
    first = [{"column": "line_no", "op": "eq", "value": 1}]
    heads: list[Head] = []
    if end[:7] in closes:
        heads += yield from kit.ledger(first + [{"column": "posting_date", "op": "ge", "value": end[:4] + "-01-01"},
                                                {"column": "posting_date", "op": "le", "value": end},
                                                {"column": "entry_timestamp", "op": "gt",
                                                 "value": closes[end[:7]] + "T23:59:59"},
                                                {"column": "document_type", "op": "ne", "value": "YC"}], cols)
    heads += yield from kit.ledger(first + [{"column": "document_type", "op": "eq", "value": "TS"}], cols)
    heads += yield from kit.ledger(first + [{"column": "document_type", "op": "eq", "value": "AC"},
                                            {"column": "posting_date", "op": "eq", "value": end}], cols)
    rev = yield from kit.ledger([{"column": "account", "op": "eq", "value": REVENUE_ACCOUNT},
                                 {"column": "posting_date", "op": "ge", "value": start},
                                 {"column": "posting_date", "op": "le", "value": end},
                                 {"column": "credit", "op": "gt", "value": 0}],
                                ["entry_id", "posting_date", "credit", "reference"])
    return entries_of(heads), rev


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy (window, tolerance) and the close calendar; checks entries recorded after the
    close against the post-closing requests; agrees each top-side adjustment to its support and each
    year-end accrual to the vendor's statement of the following month; vouches year-end sales to their
    delivery notes."""
    docs = yield from kit.documents()
    pol, start, end, tol = yield from _policy(kit, docs)
    cal_rows = yield from kit.master("calendar")
    closes = {r["description"].split()[-1]: r["date"][:10] for r in cal_rows if r.get("kind") == "period_close"}
    heads, rev = yield from _targeted(kit, closes, start, end)
    late, topside, accruals = _in_scope(heads, closes, end)
    titles = {d["doc_id"]: d["title"] for d in docs}
    notes: dict[str, str] = {}
    for d in docs:
        title = NOTE_TITLE.parse(d["title"]) if d["doc_type"] == "shipping_document" else None
        if title:
            notes.setdefault(title.reference, d["doc_id"])
    requests = (yield from _requests(kit, docs)) if late else {}
    done = yield from review(kit, late, lambda it: _post_closing(kit, *it, requests, pol), reserve=3)
    done += yield from review(kit, topside, lambda it: _topside(kit, *it, titles, pol), reserve=3)
    done += yield from review(kit, accruals, lambda it: _accrual(kit, *it, titles, pol, tol), reserve=3)
    done += yield from review(kit, rev, lambda r: _sale(kit, r, notes, end, pol), reserve=3)
    flags, clears = tally(done)
    yield from kit.submit(
        f"Year-end review: {flags} exceptions flagged (sales cut-off, post-closing entries, top-side adjustments and "
        f"accruals beyond their support); {clears} items vouched and cleared; other close work recorded on or before "
        "the close date noted.")


def _post_closing(kit: Kit, eid: str, h: Head, close: str, requests: dict[str, tuple[str, RejectedRequest]],
                  pol: list[str]) -> Generator[Step, Any, Disposition]:
    """An entry recorded after its period's close: cleared under a request approved before it was
    recorded for the amount posted, flagged otherwise."""
    rec = h["entry_timestamp"][:10]
    entry = yield from kit.call("get_entry", entry_id=eid)
    amount = entry["total_debit"] if "total_debit" in entry else h["total_debit"]
    doc, req = requests.get(h.get("reference", ""), ("", None))
    approved = req.amount / 100 if isinstance(req, ApprovedRequest) else None
    verdict = CLOSED_PERIOD.check(rec, amount, doc, isinstance(req, ApprovedRequest), req.decided if req else "",
                                  approved)
    if verdict.ok and req is not None:
        return clear(eid, [doc, "master:calendar", *pol],
                     f"Entry {eid} was posted into the closed period {h['posting_date'][:7]} and recorded on {rec}, "
                     f"after the close date {close}, under post-closing adjustment request {doc}, approved by the "
                     f"Controller and the CFO on {req.decided} (before it was recorded) for the amount posted, "
                     f"{amount:,.2f}.")
    return flag(eid, "CUTOFF", [eid, "master:calendar", *pol, *([doc] if doc else [])],
                f"Entry {eid} is posted into the closed period {h['posting_date'][:7]} but was recorded on {rec}, "
                f"after that period's close date {close}; the policy locks closed periods, so {amount:.2f} was "
                f"posted into the closed year without authorisation. {verdict.why}", amount=amount)


def _topside(kit: Kit, eid: str, h: Head, titles: dict[str, str],
             pol: list[str]) -> Generator[Step, Any, Disposition | None]:
    """A top-side adjustment agreed to the support filed under its reference (none: nothing to issue)."""
    ref = h.get("reference", "")
    doc_id = next((i for i, t in titles.items() if ref and f"({ref})" in t), None)
    if doc_id is None:
        return None
    support = TOPSIDE.parse((yield from kit.open(doc_id)).get("body", ""))
    if support is None:
        return None
    supported, booked = support.amount / 100, h["total_debit"]
    if booked - supported <= 0.005:
        return clear(eid, [doc_id, *pol], f"Top-side adjustment {eid} ({ref}) of {booked:.2f} agrees with its "
                                          f"support {doc_id}, which states {supported:.2f}.")
    entry = yield from kit.call("get_entry", entry_id=eid)
    booked = entry["total_debit"] if "total_debit" in entry else booked
    excess = round(booked - supported, 2)
    return flag(eid, "UNSUPPORTED", [doc_id, eid, *pol],
                f"Top-side adjustment {eid} ({ref}) books {booked:.2f} at the year end, but its support {doc_id} "
                f"states {supported:.2f}; the excess of {excess:.2f} is not supported and overstates expense and "
                "accrued liabilities.", amount=excess)


def _accrual(kit: Kit, eid: str, h: Head, titles: dict[str, str], pol: list[str],
             tol: float) -> Generator[Step, Any, Disposition | None]:
    """A year-end accrual agreed to the vendor's statement of January (none filed: nothing to issue)."""
    vid = h.get("vendor_id") or ""
    doc_id = next((i for i, t in titles.items() if vid and t.startswith(STATEMENT_TITLE) and f"({vid})" in t), None)
    if doc_id is None:
        return None
    statement = parse_any((yield from kit.open(doc_id)).get("body", ""), (INVOICED, ENDED))
    accrued = h["total_debit"]
    inv = statement if isinstance(statement, Invoiced) else None
    if inv and abs(accrued - inv.amount / 100) <= tol * (inv.amount / 100):
        return clear(eid, [doc_id, *pol], f"Year-end accrual {eid} of {accrued:.2f} is followed by invoice "
                                          f"{inv.number} of {inv.amount / 100:.2f} dated {inv.dated} for December "
                                          f"2025 ({doc_id}), within the policy's {tol:.0%} estimate tolerance.")
    entry = yield from kit.call("get_entry", entry_id=eid)
    accrued = entry.get("total_debit", accrued)
    if inv:
        why = f"the only December invoice is {inv.amount / 100:.2f}, outside the {tol:.0%} tolerance"
    else:
        why = "no invoice for December 2025 services was issued" + (
            f"; the service ended on {statement.ended}" if isinstance(statement, Ended) else "")
    return flag(eid, "UNSUPPORTED", [doc_id, eid, *pol],
                f"Year-end accrual {eid} of {accrued:.2f} for vendor {vid} is reversed on 1 January but the vendor's "
                f"statement {doc_id} shows {why}: the accrual is unsupported and overstates expense and accrued "
                f"liabilities by {accrued:.2f}.", amount=accrued)


def _sale(kit: Kit, r: Head, notes: dict[str, str], end: str,
          pol: list[str]) -> Generator[Step, Any, Disposition | None]:
    """A sale billed in the cut-off window vouched to its delivery note (none found: nothing to issue)."""
    doc_id = notes.get(r["reference"])
    if doc_id is None and kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query=f"delivery note {r['reference']}")).get("documents", [])
        doc_id = hits[0]["doc_id"] if hits else None
    if doc_id is None:
        return None
    note = NOTE.parse((yield from kit.open(doc_id)).get("body", ""))
    if note is None:
        return None
    ship, eid = note.ship, r["entry_id"]
    if ship <= end:
        return clear(eid, [doc_id, *pol], f"Entry {eid}: revenue {r['reference']} billed on {r['posting_date']}; "
                                          f"delivery note {doc_id} shows shipment on {ship}, within the year, so "
                                          "cut-off is correct.")
    yield from kit.call("get_entry", entry_id=eid)
    return flag(eid, "CUTOFF", [doc_id, eid, *pol],
                f"Entry {eid} books revenue {r['reference']} of {r['credit']:.2f} on {r['posting_date']}, but delivery "
                f"note {doc_id} shows the carrier took the goods on {ship}, after the year end; under the policy "
                f"revenue is recognised at shipment, so {r['credit']:.2f} of revenue is recorded in the wrong year.",
                amount=r["credit"])


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template, rules=(CLOSED_PERIOD,),
            decisive="per kind: the delivery note's ship date against the year end; the entry timestamp against the "
                     "period's close date (master:calendar) and the post-closing request's decision, date and "
                     "amount; the top-side support's figure and the vendor's January statement against the amount "
                     "booked")
