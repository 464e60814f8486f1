"""JE-5 (L2): approval-limit avoidance (split purchases).

Every manual entry is released by another user whose approval limit (``master:users``) covers
its amount, and a purchase order is approved the same way before it is placed. The approval
authority matrix (a policy document) adds that a purchase is approved at its full amount:
splitting one purchase (one requisition, one vendor quotation) into several orders or invoices so
that each part stays within the approver's limit is prohibited, while a purchase order approved
for its full amount by a user whose limit covers it authorises the purchase even when the vendor
invoices it in instalments, and separate requisitions are separate purchases.

Red-flag rule (what ``naive`` applies): two or more manual vendor invoices keyed by one preparer
for one vendor, each posted at most three days after the one before, that together exceed the
preparer's approval limit. Every planted entry is such a run (a *unit* of two or three invoices),
drawn from one process for defects and decoys: a vendor bought from under purchase orders
(freight, maintenance, marketing), an AP preparer, parts of 36-86 % of an approval tier (25,000,
or 100,000 one time in five) that together exceed it, each part released by the approver of
that tier (whose limit covers the part but not the total), posted on the same or adjacent
business days. Planting is a perturbation of the books: each part is one of the books' own manual
vendor invoices without a goods receipt (``VN``, two lines: Dr the vendor's cost account,
Cr 2000) for an ad-hoc purchase (freight, maintenance, marketing, office, travel: no rent,
subscription, premium or accrued service whose schedule would show the gap; in a year too small
for the planted count, 6 of seeds 0-99 at default knobs, bills of accrued services as well),
moved to the unit's vendor, preparer, approver, date and amount; its reference stays. Only
invoices the books paid in one payment (or had not paid by the year end) are re-used, and the
payment moves with its invoice (one is added where the books had none): it pays the part at its own amount, names the unit's vendor, and goes out in the Thursday payment
run on or just before the part's due date, as the books pay (the units are dated so that run
falls in the year). Payables therefore tie per invoice and per vendor; the parts cost more than
the invoices they re-use, so the world's opening cash is what the books' own rule gives for the
planted year (``WorldBuilder.fund_opening_cash``), retained earnings taking the other side. Each
part's vendor invoice (titled like the books' own, citing its purchase order) and the purchase
orders are added to the support pack; only those documents tell the kinds apart.

* Defect ``split_purchase`` (criteria ``LIMIT_AVOIDANCE``): the unit's purchase orders were raised
  the same day under one requisition and one vendor quotation whose total (the sum of the parts)
  exceeds the limit of every user who approved the orders and the invoices. Decisive facts: the
  quotation, its total and the approvers' limit (from the orders and ``master:users``).
* Decoy ``order_approved_in_full``: all parts invoice one purchase order for the total, approved
  before the invoices by a user whose limit covers the total (the accounting manager or the
  controller). Decisive facts: the order, its total, its approver and that approver's limit.
* Decoy ``separate_purchases``: each part bills its own purchase order, raised on its own date
  (weeks apart; closer as ``near_miss`` rises) under its own requisition and quotation, for
  other goods or services. Decisive facts: each order, its own quotation and its amount.

Required evidence: the matrix, ``master:users``, the part's vendor invoice and its purchase order;
a decoy is cleared by the same. There are no contracts in this task (an earlier version cleared
near-limit amounts by statements of work that the ledger contradicted).

Unplanted look-alikes: the rule also catches runs in the books themselves (an AP clerk, limit
5,000, keying two invoices of one supplier within three days). Over seeds 0-49 at default knobs
it returns 26 unplanted entries in 11 of 50 worlds (4.4 % of its 586 hits; 0.6 % of the 4,078
unplanted manual vendor invoices). None is an exception: in most, the user who approved each
invoice holds a limit covering the whole run (``master:users`` clears them); for the others
(16 entries) the books' own invoices and purchase orders are added to the pack, and they show
separate purchase orders raised on different days or one order approved by a user whose limit
covers it (at most ``MAX_DOCUMENTED_INVOICES`` invoices: in a slice of a million entries the runs
merge into chains of thousands, which the pack does not document one by one). ``plant`` keeps planted units from running into the books' invoices (no other invoice
of the unit's preparer and vendor within three days of it).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (APPROVAL_LIMIT, DATE, INT, LEADER, LINE, MONEY, NAME, TOKEN, WHOLE_MONEY,
                                     Disposition, Form, Many, SurfaceRule, Task, clear, flag, review_groups,
                                     surface_naive, tally)

SPEC = spec(
    "JE-5",
    "L2",
    'Approval-limit avoidance',
    step_budget=100,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective="Find purchases recorded in parts so that each part stayed within the approval limit of the user who "
              "released it while the purchase as a whole exceeded it.",
    defect="one purchase split into several orders and invoices, each within the approver's limit, together above it",
    decoys="runs of invoices of one vendor keyed close together that were approved at their full amount or are "
           "separate purchases",
    required_evidence='approval authority matrix, user limits, the vendor invoices and purchase orders',
    sources=('general_ledger', 'user_master', 'approval_limit_matrix', 'invoices', 'purchase_orders'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('LIMIT_AVOIDANCE', "one purchase recorded in parts that each stay within the approver's limit while together "
                            "they exceed it"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

#: examining journal entries and the controls over them for management override (AS 2401, ISA 240)
_STANDARD = "AS 2401 .58-.62; ISA 240 .32(a), A41-A45"
KEY_RATIONALE = (
    key("defect", "split_purchase",
        evidence="the part's vendor invoice (its purchase order), the purchase orders of the run, master:users, "
                 "the approval authority matrix",
        facts="the orders were raised the same day under one requisition and one vendor quotation; the quotation's "
              "total (= the sum of the parts); the limit of the user who approved the orders and invoices, below "
              "that total",
        conclusion="One purchase was split into orders and invoices that each stay within the approver's limit; the "
                   "purchase as a whole needed a higher approver and never had one. Breach of the matrix's section 3; "
                   "every part is an exception.",
        standard=_STANDARD),
    key("decoy", "order_approved_in_full",
        evidence="the part's vendor invoice and its one purchase order, master:users",
        facts="one order for the run's total, approved before the invoices by a user (the accounting manager or "
              "the controller) whose limit covers that total",
        conclusion="The purchase was approved at its full amount; the vendor invoiced it in instalments, each "
                   "released within its approver's limit. No exception.",
        standard=_STANDARD),
    key("decoy", "separate_purchases",
        evidence="the vendor invoices and their purchase orders, master:users",
        facts="each invoice bills its own order, raised on its own date under its own requisition and quotation "
              "for other goods or services, approved within its approver's limit",
        conclusion="Separate purchases that happened to be invoiced within days of each other; each was approved at "
                   "its full amount. No exception.",
        standard=_STANDARD),
)
POLICY_TITLE = "Approval authority matrix - purchases and manual journal entries"
#: the red-flag rule's run: invoices of one preparer and vendor at most this many days apart
RUN_GAP_DAYS = 3
#: vendor categories bought under purchase orders without a goods receipt (the books' two-way flow)
UNIT_CATEGORIES = ("freight", "maintenance", "marketing")
#: categories whose ad-hoc invoices a unit may re-use (no schedule, accrual or recurring fee shows the gap)
REUSED_CATEGORIES = ("freight", "maintenance", "marketing", "office", "travel")
#: categories re-used only when a small year lacks ad-hoc invoices
FALLBACK_CATEGORIES = ("professional", "utilities")
#: the smallest part, as a share of the tier (``_parts``)
MIN_PART_SHARE = 0.36
#: the books' own invoices in runs whose documents are added to the pack, at most (a default slice
#: has none to three; in a slice of a million entries the runs merge into long chains of tens of
#: thousands of invoices, which no review reads one by one)
MAX_DOCUMENTED_INVOICES = 300
#: users who key vendor invoices in the books
INVOICE_PREPARERS = tuple(u.user_id for u in md.USERS if "VN" in u.posts)
#: the approval tiers a unit's parts sit under (their weights), and who releases a part of each
TIERS = ((25_000_00, 0.8), (100_000_00, 0.2))
BUYER = next(u for u in md.USERS if u.posts == ("PO",))
_USER = {u.user_id: u for u in md.USERS}
_GOODS = {
    "freight": ("haulage of the relocated press line", "dedicated trucking for the plant shutdown",
                "expedited deliveries to the Commerce City warehouse", "crating and shipping of the test rig"),
    "maintenance": ("overhaul of production line 2", "roof repairs at the Denver plant", "servicing of the compressors",
                    "replacement of the dock levellers", "repainting of the warehouse floor"),
    "marketing": ("design and print of the product catalogue", "trade-show booth and artwork", "product photography",
                  "online campaign for the new valve range", "distributor brochures"),
}
_REQUESTERS = ("Plant maintenance", "Warehouse", "Production planning", "Sales operations", "Facilities", "Logistics")


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Limit:
    """A line of the matrix's standard limits: a role, the dots leading to its limit, the limit in USD."""
    role: str
    leader: str
    usd: int


@dataclass(frozen=True)
class Matrix:
    """The approval authority matrix (policy FIN-07): its standard limits by role."""
    limits: tuple[Limit, ...]


@dataclass(frozen=True)
class Order:
    """A purchase order: its requisition and the vendor's quotation, the amount ordered, its approval."""
    po: str
    date: str
    vendor: str
    vendor_id: str
    req: str
    requester: str
    req_date: str
    goods: str
    quote: str
    quote_date: str
    quote_total: int
    ordered: str
    amount: int
    buyer_name: str
    buyer: str
    approver_name: str
    approver: str
    approver_role: str
    approved: str


@dataclass(frozen=True)
class Invoice:
    """A vendor invoice without a goods receipt, citing its purchase order (``po``)."""
    ref: str
    doc_date: str
    post: str
    vendor: str
    vendor_id: str
    po: str
    ext: int
    account: str
    account_name: str
    amount: int
    due: str
    preparer_name: str
    preparer: str
    approver_name: str
    approver: str
    approver_role: str
    approved: str


@dataclass(frozen=True)
class OrderTitle:
    po: str
    vendor: str


@dataclass(frozen=True)
class InvoiceTitle:
    """A vendor invoice's title (the books' own say ``matched to goods receipt`` or ``no goods receipt``)."""
    receipt: str
    ref: str
    vendor: str


@dataclass(frozen=True)
class Field:
    """A ``Label: value`` line of a purchase order or a vendor invoice (the books' own and the planted alike)."""
    label: str
    value: str


@dataclass(frozen=True)
class Approval:
    """An approval as the ``Approved by`` line states it: ``(user, role) on date``."""
    user: str
    role: str
    date: str


@dataclass(frozen=True)
class Usd:
    """An amount in USD as a document prints it."""
    cents: int


LIMIT = Form(Limit, "   {role} {leader} USD {usd}", role=NAME, leader=LEADER, usd=WHOLE_MONEY)
MATRIX = Form(Matrix, (
    "Policy FIN-07 Approval authority for purchases and manual journal entries. Effective 2024-07-01. "
    "Owner: Controller.\n\n"
    "1. Individual limits. Every user holds an individual approval limit recorded in the user master (master "
    "data: users, field approval_limit). Standard limits by role:\n{limits}\n"
    "2. Release. A purchase order is approved before it is placed, and a manual journal entry (a vendor invoice "
    "keyed in Accounts Payable included) before it is posted, each by a user other than its preparer whose own "
    "limit covers its full amount.\n"
    "3. Splitting. A purchase is approved at its full amount. Splitting one purchase - one requisition or one "
    "vendor quotation - into several purchase orders or invoices so that each part stays within the approver's "
    "limit is prohibited; the parts are assessed together against the limit of whoever approved them, and each "
    "of them is in breach of this policy. A purchase order approved for its full amount by a user whose limit "
    "covers it authorises the purchase even when the vendor invoices it in instalments. Separate requisitions, "
    "ordered on their own dates, are separate purchases.\n"
    "4. Evidence. Purchase orders (which cite their requisition and the vendor's quotation) and vendor invoices "
    "are kept in the support pack."), limits=Many((LIMIT,)))
_APPROVED = "Approved by: {approver_name} ({approver}, {approver_role}) on {approved}"
_PEOPLE: dict[str, Any] = dict(vendor=LINE, vendor_id=TOKEN, amount=MONEY, approver_name=NAME, approver=TOKEN,
                               approver_role=NAME, approved=DATE)
ORDER = Form(Order, "Purchase order {po}\nDocument date: {date}\nVendor: {vendor} ({vendor_id})\nRequisition: {req} "
             "raised by {requester} on {req_date} for {goods}\nVendor quotation: {quote} of {quote_date}, USD "
             "{quote_total} for {goods}\nOrdered: {ordered}\nAmount: USD {amount}\nPrepared by: {buyer_name} "
             "({buyer})\n" + _APPROVED, po=TOKEN, date=DATE, req=TOKEN, requester=NAME, req_date=DATE, goods=LINE,
             quote=TOKEN, quote_date=DATE, quote_total=MONEY, ordered=LINE, buyer_name=NAME, buyer=TOKEN, **_PEOPLE)
INVOICE = Form(Invoice, "Vendor invoice (no goods receipt) {ref}\nDocument date: {doc_date}\nPosting date: {post}\n"
               "Vendor: {vendor} ({vendor_id})\nReference document: {po}\nVendor invoice number: {ext}\nAccount: "
               "{account} {account_name}\nAmount: USD {amount}\nDue date: {due}\nPrepared by: {preparer_name} "
               "({preparer})\n" + _APPROVED, ref=TOKEN, doc_date=DATE, post=DATE, po=TOKEN, ext=INT, account=TOKEN,
               account_name=LINE, due=DATE, preparer_name=NAME, preparer=TOKEN, **_PEOPLE)
ORDER_TITLE = Form(OrderTitle, "Purchase order {po} - {vendor}", po=TOKEN)
INVOICE_TITLE = Form(InvoiceTitle, "Vendor invoice ({receipt}) {ref} - {vendor}", receipt=NAME, ref=TOKEN)
#: how the careful auditor reads an order or an invoice, planted or the books' own: line by line
FIELD = Form(Field, "{label}: {value}", label=NAME)
APPROVAL = Form(Approval, "({user}, {role}) on {date}", user=TOKEN, role=NAME, date=DATE)
USD = Form(Usd, "USD {cents}", cents=MONEY)


def _matrix() -> Matrix:
    """The matrix's standard limits: every role holding a limit (the AR clerk's is not stated)."""
    limits = {u.role: u.approval_limit_cents for u in md.USERS
              if u.kind == "human" and u.approval_limit_cents and u.role != "AR Clerk"}
    return Matrix(tuple(Limit(r, "." * (30 - len(r)), c // 100) for r, c in limits.items()))


# ---------------------------------------------------------------------------- the rule
def runs(prep: np.ndarray, vendor: np.ndarray, day: np.ndarray, gap: int = RUN_GAP_DAYS) -> list[np.ndarray]:
    """Positions of runs of two or more invoices by one preparer for one vendor, each at most
    ``gap`` days after the one before (entries without a vendor never run)."""
    order, starts, stops = _runs(prep, vendor, day, gap)
    return [order[a:z] for a, z in zip(starts.tolist(), stops.tolist())]


def _runs(prep: np.ndarray, vendor: np.ndarray, day: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``runs`` as (positions in run order, each run's start and stop in it), runs of two or more only."""
    idx = np.flatnonzero(vendor != "")
    if len(idx) < 2:
        return idx, np.zeros(0, np.int64), np.zeros(0, np.int64)
    p = np.unique(prep[idx], return_inverse=True)[1]
    v = np.unique(vendor[idx], return_inverse=True)[1]
    o = np.lexsort((day[idx], v, p))
    order, p, v, d = idx[o], p[o], v[o], day[idx][o]
    link = (p[1:] == p[:-1]) & (v[1:] == v[:-1]) & (d[1:] - d[:-1] <= gap)
    starts = np.flatnonzero(np.concatenate([[True], ~link]))
    stops = np.append(starts[1:], len(order))
    two = stops - starts >= 2
    return order, starts[two], stops[two]


def flagged_runs(prep: np.ndarray, vendor: np.ndarray, day: np.ndarray, cents: np.ndarray,
                 prep_limit_cents: np.ndarray) -> list[np.ndarray]:
    """The red-flag rule: runs whose total exceeds the preparer's approval limit."""
    order, starts, stops = _runs(prep, vendor, day, RUN_GAP_DAYS)
    if not len(starts):
        return []
    total = np.cumsum(np.concatenate([[0], np.asarray(cents, dtype=np.int64)[order]]))
    over = total[stops] - total[starts] > np.asarray(prep_limit_cents)[order[starts]]
    return [order[a:z] for a, z in zip(starts[over].tolist(), stops[over].tolist())]


# ---------------------------------------------------------------------------- planting
def _approver_for(cents: int, preparer: str, rng: np.random.Generator) -> str:
    """The user of the lowest tier whose limit covers ``cents`` (never the preparer), as the books route it."""
    for a in md.APPROVERS:
        if a != preparer and _USER[a].approval_limit_cents >= cents:
            same = [b for b in md.APPROVERS if b != preparer
                    and _USER[b].approval_limit_cents == _USER[a].approval_limit_cents]
            return same[int(rng.integers(0, len(same)))]
    raise ValueError(f"no approver covers {cents} cents")


def _parts(rng: np.random.Generator, tier: int, k: int, near: float) -> list[int]:
    """``k`` amounts of 34-86 % of ``tier`` that together exceed it (by less as ``near_miss`` rises)."""
    lo, hi = (0.52, 0.86) if k == 2 else (0.36, 0.62)
    while True:
        parts = [int(tier * rng.uniform(lo, hi)) + int(rng.integers(1, 99)) for _ in range(k)]
        parts = [p + 1_737 if p % 10_000 == 0 else p for p in parts]
        if tier * (1.03 + 0.1 * (1 - near)) < sum(parts) < 4 * tier:
            return parts


def _units(rng: np.random.Generator, n: int) -> list[int]:
    """Sizes (2 or 3 parts) of the units holding ``n`` planted entries; the same process for
    defects and decoys, so both have the same mix of shapes (a lone entry joins a unit of two)."""
    sizes: list[int] = []
    while n > 0:
        k = 3 if n >= 3 and rng.random() < 0.3 else 2
        k = n if n <= 3 else k
        if n - k == 1:
            k = 3 if k == 2 else 2
        sizes.append(min(k, n))
        n -= min(k, n)
    return sizes


@dataclass
class _Unit:
    """A planted unit: its invoices (entry indices), preparer, vendor, posting days and amounts."""
    group: list[int]
    prep: str
    vendor: dict[str, Any]
    days: list[np.datetime64]
    parts: list[int]
    approver: str
    account: str
    goods: list[str]
    requesters: list[str]

    @property
    def total(self) -> int:
        return sum(self.parts)


class _Docs:
    """The unit's purchase orders and vendor invoices, worded like the books' own
    (``jeval_ray.books.wording.render``)."""

    def __init__(self, b: WorldBuilder):
        self.b = b
        self.next_po = len(b.books.docs.type) + 1  # numbers above every books document: no collision
        self.handles: list[int] = []

    def po_number(self) -> str:
        n, self.next_po = self.next_po, self.next_po + 1 + int(self.b.rng.integers(0, 40))
        return f"PO-{n:07d}"

    def purchase_order(self, po: str, vendor: dict[str, Any], date: Any, req: tuple[str, str, str],
                       quote: tuple[str, str, int], goods: str, ordered: str, cents: int, approver: str,
                       approved_on: Any) -> int:
        a = _USER[approver]
        order = Order(po, str(date), vendor["name"], vendor["vendor_id"], req[0], req[1], req[2], goods, quote[0],
                      quote[1], quote[2], ordered, cents, BUYER.name, BUYER.user_id, a.name, a.user_id, a.role,
                      str(approved_on))
        h = self.b.add_document("purchase order", ORDER_TITLE.render(OrderTitle(po, vendor["name"])),
                                ORDER.render(order), str(date))
        self.handles.append(h)
        return h

    def invoice(self, idx: int, vendor: dict[str, Any], po: str, ext: int, account: str, approved_on: Any) -> int:
        c = self.b.cols
        ref = str(c.reference[idx])
        prep, appr = _USER[str(c.preparer[idx])], _USER[str(c.approver[idx])]
        doc_date = c.doc_date[idx]
        inv = Invoice(ref, str(doc_date), str(c.post_date[idx]), vendor["name"], vendor["vendor_id"], po, ext, account,
                      chart.ACCOUNTS[chart.CODE[account]].name, int(c.debit_cents[idx]),
                      str(doc_date + int(vendor["payment_terms_days"])), prep.name, prep.user_id, appr.name,
                      appr.user_id, appr.role, str(approved_on))
        h = self.b.add_document("invoice", INVOICE_TITLE.render(InvoiceTitle("no goods receipt", ref, vendor["name"])),
                                INVOICE.render(inv), str(doc_date))
        self.handles.append(h)
        return h


def _workday_on_or_before(d: Any) -> np.datetime64:
    """The buyer raises orders on business days."""
    return cal.business_offset(np.datetime64(d, "D"), 0, roll="backward")


def _busday(d: Any, offset: int = 0) -> np.datetime64:
    return cal.business_offset(np.datetime64(d, "D"), offset)


def plant(b: WorldBuilder) -> None:
    """Plant units of two or three vendor invoices (defects: one purchase split; decoys: one order
    approved in full, or separate purchases), then add the books' own documents behind the runs
    of the books that the rule catches."""
    rng = b.rng
    policy = b.add_document("policy", POLICY_TITLE, MATRIX.render(_matrix()), "2024-06-20")
    docs = _Docs(b)
    vendors = [v for v in b.vendors if v["category"] in UNIT_CATEGORIES]
    if not vendors:
        raise ConfigError("JE-5 needs a vendor bought from under purchase orders (freight, maintenance, marketing); "
                          "raise n_entries")
    limit = {u["user_id"]: int(round(u["approval_limit"] * 100)) for u in b.users}
    units = [(k, True) for k in _units(rng, b.n_defects)] + [(k, False) for k in _units(rng, b.n_decoys)]
    units = [units[int(i)] for i in rng.permutation(len(units))]
    # each re-used invoice takes its payment with it (re-dated and re-amounted below; one the books had
    # not paid by the year end gets one), so invoices the books paid in two instalments are left alone
    paid_inv, pay = _payments_of(b)
    pay_of = np.full(b.n, -1, dtype=np.int64)
    pay_of[paid_inv] = pay
    pool = _reusable(b, paid_inv)
    new_payments: list[dict[str, Any]] = []
    for k, defect in units:
        unit = _place(b, pool, vendors, k)
        inv_dates, exts = _move(b, unit)
        b.claim("JE-5", entries=unit.group + [int(pay_of[i]) for i in unit.group if pay_of[i] >= 0])
        _move_payments(b, unit, pay_of, new_payments)
        # the orders: dated before the first invoice, approved on their own date
        ordered_by = _workday_on_or_before(min(inv_dates) - int(rng.integers(6, 30)))
        if defect:
            _split_purchase(b, docs, unit, exts, ordered_by, policy)
        elif rng.random() < 0.5:
            _order_in_full(b, docs, unit, exts, ordered_by, policy)
        else:
            _separate_purchases(b, docs, unit, exts, ordered_by, policy)
    b.claim("JE-5", entries=b.add_entries(new_payments).tolist(), documents=[policy, *docs.handles])
    b.claim("JE-5", documents=_document_book_runs(b, limit))
    # the parts cost more than the invoices they re-use: the opening cash the books' rule gives for this year
    b.fund_opening_cash()


def _reusable(b: WorldBuilder, paid_inv: np.ndarray) -> np.ndarray:
    """The books' manual invoices without a goods receipt that a unit may re-use: of vendors bought
    from ad hoc (not rent, subscriptions, insurance premiums or accrued services, whose schedules
    would show the gap), below the smallest part (every part raises the invoice it re-uses), paid
    in at most one payment."""
    c = b.cols
    reusable = c.manual & (c.doc_code == "VN") & (c.debit_cents < MIN_PART_SHARE * TIERS[0][0]) \
        & (np.bincount(paid_inv, minlength=b.n) <= 1)

    def of_categories(names: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(b.n, dtype=bool)
        idx = np.flatnonzero(reusable)
        out[idx] = np.isin(c.vendor_id[idx], [v["vendor_id"] for v in b.vendors if v["category"] in names])
        return out

    pool = of_categories(REUSED_CATEGORIES)
    if int(pool.sum()) < b.n_defects + b.n_decoys + 4:
        # a small year with few ad-hoc invoices: bills of accrued services too (their accrual then
        # reverses without the month's invoice)
        pool |= of_categories(FALLBACK_CATEGORIES)
    return pool


def _place(b: WorldBuilder, pool: np.ndarray, vendors: list[dict[str, Any]], k: int) -> _Unit:
    """A unit of ``k`` re-usable invoices, then a preparer, vendor and days early enough for the
    payment run before the parts' due date to fall in the year, with no other invoice of that
    preparer and vendor within the run's gap; its amounts and approver."""
    rng, c = b.rng, b.cols
    invoices = c.manual & np.isin(c.doc_code, ("VI", "VN"))
    first, last = np.datetime64("2025-02-03"), np.datetime64("2025-12-10")
    year_end = np.datetime64(md.iso(md.YEAR_END))
    group: list[int] = []
    for _attempt in range(500):
        free = np.flatnonzero(pool & ~b.used)
        if len(free) < k:
            break
        group = [int(i) for i in rng.choice(free, size=k, replace=False)]
        prep = str(INVOICE_PREPARERS[int(rng.integers(0, len(INVOICE_PREPARERS)))])
        vendor = vendors[int(rng.integers(0, len(vendors)))]
        latest = min(last, year_end - int(vendor["payment_terms_days"]) - 7)
        if latest < first:
            continue
        days = [_busday(first + int(rng.integers(0, int((latest - first).astype(np.int64)) + 1)))]
        for _p in range(k - 1):
            nxt = _busday(days[-1], int(rng.random() < 0.5))
            # the next business day, unless a long weekend puts it beyond the run's gap
            days.append(nxt if int((nxt - days[-1]).astype(np.int64)) <= RUN_GAP_DAYS else days[-1])
        lo, hi = int(days[0].astype(np.int64)), int(days[-1].astype(np.int64))
        day = c.post_date.astype(np.int64)  # as moved by the units placed so far
        others = invoices & (c.preparer == prep) & (c.vendor_id == vendor["vendor_id"])
        others[group] = False
        if not (others & (day >= lo - RUN_GAP_DAYS - 1) & (day <= hi + RUN_GAP_DAYS + 1)).any():
            b.used[group] = True
            break
    if len(group) < k or not b.used[group].all():
        raise ConfigError(f"impossible knobs for JE-5: the slice has too few manual vendor invoices of ad-hoc "
                          f"purchases to re-use for {b.n_defects + b.n_decoys} planted entries; lower "
                          "n_defects/n_decoys or raise n_entries")
    tier = TIERS[0][0] if rng.random() < TIERS[0][1] else TIERS[1][0]
    parts = _parts(rng, tier, k, b.knobs.near_miss)
    approver = _approver_for(max(parts), prep, rng)
    if _USER[approver].approval_limit_cents >= sum(parts):
        approver = _approver_for(tier, prep, rng)  # the tier's own approver: covers each part, not the total
    account = chart.ACCOUNTS[chart.idx(md.CATEGORIES[md.CATEGORY[vendor["category"]]].account)].code
    goods = [str(g) for g in rng.permutation(_GOODS[vendor["category"]])]
    requesters = [str(r) for r in rng.permutation(_REQUESTERS)]
    return _Unit(group, prep, vendor, days, parts, approver, account, goods, requesters)


def _move(b: WorldBuilder, u: _Unit) -> tuple[list[np.datetime64], list[int]]:
    """Move the unit's invoices to its vendor, preparer, approver, days and amounts; (their
    document dates, the vendor's invoice numbers)."""
    rng, c = b.rng, b.cols
    inv_dates = []
    for idx, d, cents in zip(u.group, u.days, u.parts):
        doc_date = _workday_on_or_before(max(d - int(rng.integers(0, 5)), np.datetime64("2025-01-02")))
        inv_dates.append(doc_date)
        c.vendor_id[idx] = u.vendor["vendor_id"]
        c.preparer[idx], c.approver[idx] = u.prep, u.approver
        c.post_date[idx] = c.entry_date[idx] = d
        c.doc_date[idx] = doc_date
        c.time_s[idx] = int(rng.integers(*cal.OFFICE_HOURS))
        c.debit_account[idx], c.credit_account[idx] = u.account, "2000"
        c.debit_cents[idx] = c.credit_cents[idx] = cents
    exts = [int(x) for x in rng.integers(100_000, 999_999, len(u.group))]
    for idx, ext in zip(u.group, exts):
        c.description[idx] = (f"Invoice {ext} {u.vendor['name']} - {chart.ACCOUNTS[chart.CODE[u.account]].name.lower()}"
                              if rng.random() < b.knobs.description_quality else
                              str(rng.choice(["Adj", "Per JV", "See file", "Entry"])))
    return inv_dates, exts


def _move_payments(b: WorldBuilder, u: _Unit, pay_of: np.ndarray, new_payments: list[dict[str, Any]]) -> None:
    """The re-used invoices' payments move with them: paid at the part's amount in the Thursday
    payment run before its due date, as the books pay (``books.purchasing.payment_runs``)."""
    rng, c = b.rng, b.cols
    vendor = u.vendor
    for idx, cents in zip(u.group, u.parts):
        p = int(pay_of[idx])
        run = _payment_run(rng, c.doc_date[idx] + int(vendor["payment_terms_days"]), c.post_date[idx])
        text = f"Payment run {vendor['name']} invoice {c.reference[idx]}"
        if p < 0:
            new_payments.append({
                "doc_code": "VP", "post_date": run, "entry_date": run, "time_s": int(md.night_batch(rng, 1)[0]),
                "preparer": "SYS_BATCH", "approver": "", "manual": False, "vendor_id": vendor["vendor_id"],
                "reference": f"VP-{len(b.books.docs.type) + 1 + len(new_payments):07d}",  # above every books number
                "description": text, "lines": [("2000", cents), ("1000", -cents)]})
            continue
        c.post_date[p] = c.entry_date[p] = c.doc_date[p] = run
        c.debit_cents[p] = c.credit_cents[p] = cents
        c.vendor_id[p] = vendor["vendor_id"]
        c.description[p] = text


def _requisition(rng: np.random.Generator, requester: str, on: np.datetime64, quoted: int) -> tuple[
        tuple[str, str, str], tuple[str, str, int]]:
    """A requisition raised a few days before ``on`` and the vendor's quotation of ``quoted`` cents before it."""
    req = (f"REQ-{int(rng.integers(20_000, 29_999))}", requester, str(on - int(rng.integers(1, 6))))
    return req, (f"Q-{int(rng.integers(50_000, 99_999))}", str(on - int(rng.integers(6, 12))), quoted)


def _split_purchase(b: WorldBuilder, docs: _Docs, u: _Unit, exts: list[int], ordered_by: np.datetime64,
                    policy: int) -> None:
    """Defects: one requisition and quotation for the total, ordered the same day in lots."""
    rng = b.rng
    limit = _USER[u.approver].approval_limit_cents
    assert all(APPROVAL_LIMIT.covers(limit, cents) for cents in u.parts) and not APPROVAL_LIMIT.covers(limit, u.total)
    req, quote = _requisition(rng, u.requesters[0], ordered_by, u.total)
    for p, (idx, cents, ext) in enumerate(zip(u.group, u.parts, exts)):
        po = docs.po_number()
        po_doc = docs.purchase_order(po, u.vendor, ordered_by, req, quote, u.goods[0], f"{u.goods[0]} (lot {p + 1})",
                                     cents, u.approver, ordered_by)
        inv_doc = docs.invoice(idx, u.vendor, po, ext, u.account, _approval_day(rng, idx, b))
        b.add_defect(idx, "split_purchase", "LIMIT_AVOIDANCE", [policy, "master:users", inv_doc, po_doc], cents,
                     facts=[quote[0], u.total / 100, _USER[u.approver].approval_limit_cents / 100])


def _order_in_full(b: WorldBuilder, docs: _Docs, u: _Unit, exts: list[int], ordered_by: np.datetime64,
                   policy: int) -> None:
    """Decoys: one order for the total, approved by a user whose limit covers it, invoiced in instalments."""
    rng = b.rng
    po = docs.po_number()
    full = _approver_for(u.total, u.prep, rng)
    assert APPROVAL_LIMIT.covers(_USER[full].approval_limit_cents, u.total)
    req, quote = _requisition(rng, u.requesters[0], ordered_by, u.total)
    po_doc = docs.purchase_order(po, u.vendor, ordered_by, req, quote, u.goods[0],
                                 f"{u.goods[0]}, invoiced in {len(u.group)} instalments", u.total, full, ordered_by)
    for idx, ext in zip(u.group, exts):
        inv_doc = docs.invoice(idx, u.vendor, po, ext, u.account, _approval_day(rng, idx, b))
        b.add_decoy(idx, "order_approved_in_full", [policy, "master:users", inv_doc, po_doc],
                    facts=[po, u.total / 100, full, _USER[full].approval_limit_cents / 100])


def _separate_purchases(b: WorldBuilder, docs: _Docs, u: _Unit, exts: list[int], ordered_by: np.datetime64,
                        policy: int) -> None:
    """Decoys: each part its own requisition, quotation and order, on dates weeks apart (closer as
    ``near_miss`` rises)."""
    rng = b.rng
    gap = 5 + int(round((1 - b.knobs.near_miss) * 25))
    dates = [ordered_by]
    for _p in range(len(u.group) - 1):
        dates.append(_workday_on_or_before(dates[-1] - gap - int(rng.integers(0, gap))))
    dates.reverse()
    for p, (idx, cents, ext) in enumerate(zip(u.group, u.parts, exts)):
        od = dates[p]
        req, quote = _requisition(rng, u.requesters[p], od, cents)
        po = docs.po_number()
        po_doc = docs.purchase_order(po, u.vendor, od, req, quote, u.goods[p], u.goods[p], cents, u.approver, od)
        inv_doc = docs.invoice(idx, u.vendor, po, ext, u.account, _approval_day(rng, idx, b))
        b.add_decoy(idx, "separate_purchases", [policy, "master:users", inv_doc, po_doc],
                    facts=[po, quote[0], cents / 100])


def _payment_run(rng: np.random.Generator, due: np.datetime64, posted: np.datetime64) -> np.datetime64:
    """The Thursday payment run on or just before ``due`` (at least two days after the posting)."""
    earliest = max(due - int(rng.integers(0, 8)), posted + 2)
    return cal.business_offset(earliest + int((3 - cal.weekday(earliest)) % 7), 0)


def _payments_of(b: WorldBuilder) -> tuple[np.ndarray, np.ndarray]:
    """(invoice entry, payment entry) pairs: the books' payments (``VP``) and the entries they pay."""
    c, parent = b.cols, b.books.docs.parent
    vp = np.flatnonzero(c.doc_code == "VP")
    docs = c.books_doc
    # entries are in books-document order (the books post document by document); sort if not
    order = np.arange(len(docs)) if bool(np.all(docs[1:] > docs[:-1])) else np.argsort(docs, kind="stable")
    paid = parent[docs[vp]]
    pos = np.clip(np.searchsorted(docs[order], paid), 0, len(order) - 1)
    found = docs[order][pos] == paid
    return order[pos[found]], vp[found]


def _approval_day(rng: np.random.Generator, idx: int, b: WorldBuilder) -> np.datetime64:
    """The invoice's approval: on or after its document date, by the day it was keyed."""
    lo, hi = b.cols.doc_date[idx], b.cols.entry_date[idx]
    return _workday_on_or_before(lo + int(rng.integers(0, int((hi - lo).astype(np.int64)) + 1)))


def _limits_of(users: np.ndarray, limit: dict[str, int]) -> np.ndarray:
    """Each user's limit in cents (0 for a user without one): a sorted search among the few users with one."""
    keys = np.array(sorted(limit))
    if not len(keys) or not len(users):
        return np.zeros(len(users), dtype=np.int64)
    at = np.searchsorted(keys, users).clip(0, len(keys) - 1)
    return np.where(keys[at] == users, np.array([limit[k] for k in keys.tolist()], dtype=np.int64)[at], 0)


def _document_book_runs(b: WorldBuilder, limit: dict[str, int]) -> list[int]:
    """Add the books' own invoices and purchase orders behind the unplanted runs the rule catches
    whose total some approver's limit does not cover, so an auditor can vouch them; their handles."""
    c = b.cols
    planted = np.zeros(b.n, dtype=bool)
    planted[[d[0] for d in b.defects] + [d[0] for d in b.decoys]] = True
    inv = np.flatnonzero(c.manual & np.isin(c.doc_code, ("VI", "VN")) & ~planted)
    if len(inv) < 2:
        return []
    prep = c.preparer[inv]
    cents = c.debit_cents[inv]
    plim = _limits_of(prep, limit)
    alim = _limits_of(c.approver[inv], limit)
    d = b.books.docs
    added: set[int] = set()
    handles: list[int] = []
    found = [g for g in flagged_runs(prep, c.vendor_id[inv], c.post_date[inv].astype(np.int64), cents, plim)
             if alim[g].min() < cents[g].sum()]  # (a run every approver's limit covers is cleared by master:users)
    budget = MAX_DOCUMENTED_INVOICES
    for g in found:
        budget -= len(g)
        if budget < 0:
            break
        for i in inv[g]:
            handles.append(b.source_document(int(i)))
            parent = int(d.parent[int(c.books_doc[i])])
            if parent >= 0 and parent not in added:
                added.add(parent)
                r = b.books.document(parent)
                handles.append(b.add_document(r["doc_type"], r["title"], r["body"], r["date"]))
    return handles


# ---------------------------------------------------------------------------- strategies
_LEDGER_COLS = ["entry_id", "posting_date", "preparer", "approver", "vendor_id", "debit", "reference", "document_type"]
Record = dict[str, Any]


def _invoice_entries(kit: Kit) -> Generator[Step, Any, list[Record]]:
    """Manual vendor invoices, one record per entry (its total debits as the amount)."""
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "document_type", "op": "in", "value": ["VI", "VN"]}],
                                 columns=_LEDGER_COLS)
    return list(entries_of(rows).values())


def find_runs(ents: list[Record], limits: dict[str, float]) -> list[list[Record]]:
    """The red-flag rule over manual vendor-invoice entries and the users' limits (in USD)."""
    if not ents:
        return []
    prep = np.array([r["preparer"] for r in ents])
    vend = np.array([r.get("vendor_id") or "" for r in ents])
    day = np.array([str(r["posting_date"])[:10] for r in ents], dtype="datetime64[D]").astype(np.int64)
    cents = np.rint(np.array([r["total_debit"] for r in ents]) * 100).astype(np.int64)
    lim = np.rint(np.array([limits.get(p, 0.0) for p in prep]) * 100).astype(np.int64)
    return [[ents[i] for i in g] for g in flagged_runs(prep, vend, day, cents, lim)]


def _limits(users: list[Record]) -> dict[str, float]:
    return {u["user_id"]: float(u.get("approval_limit") or 0) for u in users}


def _runs_over_limit(kit: Kit) -> Generator[Step, Any, dict[str, Record]]:
    """The entries of the runs the rule catches, run by run, each with its run (``run``, ``run_size``,
    ``run_total``) and its preparer's limit (``limit``)."""
    limits = _limits((yield from kit.master("users")))
    out: dict[str, Record] = {}
    for n, g in enumerate(find_runs((yield from _invoice_entries(kit)), limits)):
        total = sum(r["total_debit"] for r in g)
        out.update({r["entry_id"]: {**r, "run": n, "run_size": len(g), "run_total": total,
                                    "limit": limits[r["preparer"]]} for r in g})
    return out


RULE = SurfaceRule("two or more manual vendor invoices keyed by one preparer for one vendor, each posted at most three "
                   "days after the one before, that together exceed the preparer's approval limit", "LIMIT_AVOIDANCE",
                   _runs_over_limit, "Entry {entry_id} is one of {run_size} invoices {preparer} keyed for vendor "
                   "{vendor_id} within days, together USD {run_total:,.2f}, above the preparer's USD {limit:,.2f} "
                   "limit.", "Flagged {issued} invoices in {runs} runs above the preparer's limit.",
                   ("master:users",), in_order=False,
                   counts=lambda hits: {"runs": len({h["run"] for h in hits.values()})})
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the matrix and the user limits and finds the runs the rule catches. A run whose every
    approver holds a limit covering its total is within authority. Otherwise it vouches each
    invoice to its purchase order: one order approved in full by a user whose limit covers it, or
    separate requisitions and quotations, clear the run; orders under one requisition or quotation
    whose total exceeds their approvers' limits are one purchase split, and every part is flagged."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs
                   if d["doc_type"] == "policy" and "approval authority" in d["title"].lower()), None)
    if policy:
        yield from kit.open(policy)
    limits = _limits((yield from kit.master("users")))
    found = find_runs((yield from _invoice_entries(kit)), limits)
    pack = _Pack(kit, docs)
    # a run every part of which was released by a user whose limit covers the whole run is within authority
    over = [g for g in found
            if not all(APPROVAL_LIMIT.covers(limits.get(r["approver"], 0.0), round(sum(x["total_debit"] for x in g), 2))
                       for r in g)]

    def decide(g: list[Record]) -> Generator[Step, Any, list[Disposition]]:
        yield from pack.prefetch(g)
        vouched = []
        for r in g:
            vouched.append((r, *(yield from pack.vouch(r))))
        return _judge(vouched, limits, [x for x in (policy, "master:users") if x], policy)

    done = yield from review_groups(kit, over, decide, reserve=lambda g: 3 * len(g) + 1)
    n_flag, n_clear = tally(done)
    yield from kit.submit(f"Reviewed {len(found)} runs of invoices above the preparer's limit: flagged {n_flag} "
                          f"invoices of split purchases, cleared {n_clear} (orders approved in full, separate "
                          "purchases).")


class _Pack:
    """The support pack as the careful auditor reads it: each invoice found by its reference in the
    titles, its purchase order by the number the invoice cites; every document opened once."""

    def __init__(self, kit: Kit, docs: list[Record]):
        self.kit = kit
        by_title = {d["title"]: d["doc_id"] for d in docs}
        self.invoices: dict[str, str] = {}
        self.orders: dict[str, str] = {}
        for title, doc_id in by_title.items():
            inv, po = INVOICE_TITLE.parse(title), ORDER_TITLE.parse(title)
            if inv:
                self.invoices.setdefault(inv.ref, doc_id)
            if po:
                self.orders.setdefault(po.po, doc_id)
        self.read: dict[str, str] = {}

    def fields(self, doc_id: str) -> Generator[Step, Any, dict[str, str]]:
        """The document's ``Label: value`` lines (labels in lower case)."""
        if doc_id not in self.read:
            self.read[doc_id] = (yield from self.kit.open(doc_id)).get("body", "")
        lines = (FIELD.parse(line) for line in self.read[doc_id].split("\n"))
        return {f.label.strip().lower(): f.value.strip() for f in lines if f}

    def prefetch(self, run: list[Record]) -> Generator[Step, Any, None]:
        """Open a run's invoices in one reply, then the purchase orders they cite in another."""
        for stage in (lambda r: self.invoices.get(r["reference"]), self._order_doc):
            ids = [d for d in dict.fromkeys(stage(r) for r in run) if d and d not in self.read]
            self.read.update((yield from self.kit.open_all(ids)))

    def _order_doc(self, r: Record) -> str | None:
        """The purchase order an entry's invoice cites, once the invoice is read (None before, or without one)."""
        inv = self.invoices.get(r["reference"])
        if not inv or inv not in self.read:
            return None
        lines = (FIELD.parse(line) for line in self.read[inv].split("\n"))
        po_no = next((f.value.strip() for f in lines if f and f.label.strip().lower() == "reference document"), "")
        return self.orders.get(po_no) if po_no else None

    def vouch(self, r: Record) -> Generator[Step, Any, tuple[str | None, str | None, str, Record]]:
        """The invoice of entry ``r``, its purchase order, the order's number and what the order says."""
        inv = self.invoices.get(r["reference"])
        po_no = (yield from self.fields(inv)).get("reference document", "") if inv else ""
        po_doc = self.orders.get(po_no) if po_no else None
        order = _order((yield from self.fields(po_doc))) if po_doc else {}
        return inv, po_doc, po_no if po_doc else "no purchase order", order


def _usd(text: str) -> float | None:
    v = USD.search(text or "")
    return v.cents / 100 if v else None


def _order(f: dict[str, str]) -> Record:
    """What a purchase order's fields say: its amount, approver, quotation and requisition, date."""
    appr = APPROVAL.search(f.get("approved by", ""))
    quote = f.get("vendor quotation", "")
    return {"amount": _usd(f.get("amount", "")), "approver": appr.user if appr else "",
            "quote": quote.split(" ")[0] if quote else "", "quote_total": _usd(quote),
            "requisition": (f.get("requisition") or " ").split(" ")[0], "date": f.get("document date", "")}


def _judge(vouched: list[tuple[Record, str | None, str | None, str, Record]], limits: dict[str, float],
           base_ev: list[str], policy: str | None) -> list[Disposition]:
    """The run's dispositions: cleared when one order approved in full covers it or its orders are
    separate purchases; every part flagged when orders under one requisition or quotation exceed
    the limits of those who approved them."""
    total = round(sum(v[0]["total_debit"] for v in vouched), 2)
    orders = {v[2]: v[4] for v in vouched if v[2]}
    one = len(orders) == 1 and all(v[2] for v in vouched)
    shared = {o["quote"] for o in orders.values() if o["quote"]}
    reqs = {o["requisition"] for o in orders.values() if o["requisition"]}
    if one:
        (o,) = orders.values()
        ok = (o["amount"] or 0) >= total - 0.005 \
            and APPROVAL_LIMIT.covers(limits.get(o["approver"], 0.0), o["amount"] or 0)
    else:
        split = len(orders) >= 2 and (len(shared) == 1 and len(shared) < len(orders)
                                      or len(reqs) == 1 and len(reqs) < len(orders))
        quote_total = max((x["quote_total"] or 0) for x in orders.values()) if orders else 0.0
        over = [x["approver"] for x in orders.values()
                if not APPROVAL_LIMIT.covers(limits.get(x["approver"], 0.0), quote_total)]
        ok = not (split and over)
    return [_disposition(r, [*base_ev, *[x for x in (inv, po_doc) if x]], po_no, order, ok, one, len(vouched),
                         len(orders), limits, policy) for r, inv, po_doc, po_no, order in vouched]


def _disposition(r: Record, ev: list[str], po_no: str, order: Record, ok: bool, one: bool, n: int, n_orders: int,
                 limits: dict[str, float], policy: str | None) -> Disposition:
    """One invoice's disposition, in the words of its run's finding."""
    eid, amt = r["entry_id"], r["total_debit"]
    if ok and one:
        return clear(eid, ev, f"Entry {eid} (USD {amt:,.2f}) is one of {n} instalments of purchase order {po_no} for "
                     f"USD {order['amount']:,.2f}, approved in full by {order['approver']}, whose limit of "
                     f"USD {limits.get(order['approver'], 0.0):,.2f} covers it: the purchase was approved at its full "
                     f"amount (section 3 of {policy}). Not a split.")
    if ok:
        own = (f"under its own requisition {order['requisition']} and quotation {order['quote']} "
               if order.get("quote") else "")
        basis = (f"bills purchase order {po_no}, raised on {order.get('date')} {own}for "
                 f"USD {order.get('amount') or 0:,.2f}" if order else "cites no purchase order")
        return clear(eid, ev, f"Entry {eid} (USD {amt:,.2f}) {basis}; the other invoices of the run bill other orders: "
                     f"separate purchases, each approved within its approver's limit (section 3 of {policy}). Not a "
                     "split.")
    lim = limits.get(r["approver"], 0.0)
    return flag(eid, "LIMIT_AVOIDANCE", ev,
                f"Entry {eid} (USD {amt:,.2f}) bills purchase order {po_no}, one of {n_orders} orders raised "
                f"on {order.get('date')} under requisition {order.get('requisition')} and vendor quotation "
                f"{order.get('quote')} for USD {order.get('quote_total') or 0:,.2f}: one purchase split into parts "
                f"that each stay within the USD {lim:,.2f} limit of {r['approver']}, who approved them, while the "
                f"purchase exceeds it (section 3 of {policy}).")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=MATRIX.template, rules=(APPROVAL_LIMIT,),
            decisive="the purchase orders behind a run of invoices: one requisition or vendor quotation whose total "
                     "exceeds the limit of every user who approved the orders and invoices (split), against one order "
                     "approved in full by a user whose limit covers it, or separate requisitions (matrix section 3)")
