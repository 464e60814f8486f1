"""JE-10 (L3): three-way match.

The client's accounts payable sample is vouched the way the procurement and accounts payable
policy says invoices are matched: goods (raw materials, equipment) three-way, the invoice to its
purchase order and to the goods receipts recorded against it; ordered services (freight,
maintenance, marketing) two-way, the invoice to its purchase order. The sample entries are the
books' own vendor invoices: ``VI`` (matched: Dr 2050 GR/IR at the order price of what was received,
Dr/Cr 5100 purchase price variance for the price difference, Cr 2000 payables) and ``VN`` with a
purchase order (Dr the category's cost account, Cr 2000). The support pack holds, for each sampled
invoice, the vendor's invoice (its lines, price adjustment, total and remittance details, with the
AP posting stamp) and the purchase order with its history (the goods receipts and the quantities
received); the policy states the price tolerance (a percentage of the order value of the quantity
invoiced or a USD cap, whichever is lower; the company sets both above every price difference its
ordinary invoices carry, so they vary by seed and year), that the quantity invoiced may not exceed
the quantity received, that payment goes only to the vendor-master bank account (changes through
the call-back procedure, logged in ``master:vendor_changes``), and the coding guide: the accounts
each vendor category's documents post to (``jeval_ray.books.master.ALLOWED_ACCOUNTS``), unless the
approved PO of an ordered service assigns it to another account (every two-way PO states its account
assignment).

Planted defects (criteria ``THREE_WAY_MISMATCH``), each a perturbation of one books document:

* **price over PO** (a matched invoice, raw materials): the vendor billed a price adjustment above
  the tolerance and AP posted it; the entry carries it as a purchase price variance debit (5100) and
  the payable (and the payment run, when it falls in the year) rises by it. Required evidence:
  invoice, purchase order, policy. Misstatement: the excess over the order price. Decisive facts:
  the PO (document), the invoice total, the order value of the quantity invoiced, the excess and the
  tolerance.
* **quantity over receipt** (a matched invoice whose order came in one delivery): the warehouse
  received fewer units than ordered (its goods receipt, Dr inventory / Cr GR/IR, is for fewer),
  yet the vendor billed, and AP posted, the whole order: GR/IR is left with a debit for the units
  never received. Required evidence: invoice, purchase order (its history), policy. Misstatement:
  the units billed but not received at the order price. Decisive facts: the PO (document), the
  quantity billed and the quantity received.
* **bank account mismatch** (a two-way invoice, as a bank-change decoy is; a year short of two-way
  invoices gives the rest a matched invoice with a price difference within the tolerance or a short
  delivery billed as received, where price and quantity break no rule): the invoice asks for payment
  to an account that is not the vendor's in the vendor master, and no change is logged: a
  payment-diversion (vendor impersonation) red flag. The expense and the payable are not misstated
  (the key records a misstatement of 0); the exposure is a fraudulent payment of the invoice total.
  Required evidence: invoice, ``master:vendors``, ``master:vendor_changes``, policy. Decisive facts:
  the invoice (document), the remittance account on it and the account in the vendor master.
* **misclassified account** (a two-way invoice): the one document is posted to the cost account of
  another two-way category (freight booked as repairs, repairs as marketing ...), which the coding
  guide does not allow for its vendor's category; the ERP's description names the account posted. In
  half of them the PO orders a job of the vendor's line serving its own category, assigned to that
  category's account (the PO does not assign the account posted); in the other half the PO, like a
  coded decoy's, assigns the account posted, but for a job outside the vendor's line of business (a
  marketing agency ordered conveyor repairs), which section 6 gives no effect. Required evidence:
  invoice, purchase order, ``master:vendors``, policy. Misstatement: the amount posted to the wrong
  account. Decisive facts: the invoice and the PO (documents), the account posted, the vendor's
  category and the account the guide gives it.

Decoys:

* **price variance within tolerance** (a matched invoice): a price adjustment above the order price
  but within the tolerance (``near_miss`` moves it towards the limit), posted to 5100 as the policy
  allows. Cleared by the invoice, the PO and the policy. Decisive facts: the PO (document), the
  invoice total, the order value and the tolerance.
* **short delivery invoiced as received** (a matched invoice whose order came in one delivery):
  the delivery came short (its goods receipt is for fewer units than ordered) and the vendor billed,
  and AP posted and paid, only what arrived; the PO history shows the shortage, as for a quantity
  defect. Cleared by the invoice, the PO and the policy. Decisive facts: the PO (document), the
  quantity ordered and the quantity received and billed.
* **coded per the PO's account assignment** (a two-way invoice): posted, like a misclassified
  invoice, to the cost account of another two-way category, because the buyer ordered from the vendor
  a job of its own line of business that serves that category (``WORK``: a haulier carries the
  exhibition stand to a trade show, a maintenance firm services the delivery trucks' tail-lifts, a
  print firm prints delivery notes): the PO, approved before the invoice, describes the job in the
  words of the vendor's category in the coding guide and assigns the order to that account, the
  invoice bills it, and the policy lets an ordered service post to its PO's account. Cleared by the
  invoice, the PO, ``master:vendors`` and the policy. Decisive facts: the PO (document), the account
  posted and the vendor's category. The pairs (category billed, account posted) of misclassified and
  PO-coded invoices are drawn alike, so that each account is posted as often as the sampled two-way
  invoices post it.
* **bank change verified** (a two-way invoice; no other invoice of its vendor dated before the
  change is in the sample, and no two of these share a vendor): the invoice asks for payment to an
  account that differs from the vendor master, because the vendor moved banks after issuing it;
  ``master:vendor_changes`` logs the change (old account = the one on the invoice, dated after the
  invoice, verified by call-back) and the vendor master holds the new account. Cleared by the
  invoice, ``master:vendors`` and ``master:vendor_changes``. Decisive facts: the invoice
  (document), the old and the new account and the date of the change. Where the vendors drawn hold so
  many of a small year's two-way invoices that too few are left for the misclassified and PO-coded
  invoices (seed 47736: 10 of the 13), the decoys are drawn again, each from the invoices whose
  vendor's change leaves enough; only a year where none does raises a ``ConfigError``.

Every defect kind has a decoy kind of the same face on the listing (price over PO and a tolerated
price difference, quantity over receipt and a short delivery billed as received, payee and verified
bank change, misclassified and PO-coded), drawn from the same invoices in the same numbers on
average, and a defect of a decoy's kind is drawn at the decoy's amounts: a price defect's invoice is
the one whose total as planted is nearest the total of a price decoy of the sample (paired with it;
an invoice drawn as one would be where the sample has fewer such decoys than defects), a quantity
defect's (the whole order) nearest what a short delivery of the sample billed as received comes to. Defects and decoys thus share the amounts, document types, accounts, price-variance lines and
line counts of the listing; what decides them is in the invoice, the PO and its history, the vendor
master and the change log.

Every two-way PO and invoice of the sample describe their job the same way (the coding guide's words for
a line of business, then the job) and state an account assignment, so a PO that assigns the account
posted is no answer by itself: the job must be of the vendor's line.

A few clean invoices (exact matches, price differences in the company's favour, orders delivered
in two lots and invoiced once, two-way invoices at or below their PO) complete the sample; the
change log also holds verified bank changes of vendors outside the sample.

Unplanted look-alikes: the ledger filter for this procedure, vendor invoices posted with a purchase
price variance debit (5100), also returns the books' own price differences, every one within the
tolerance (the policy is set above them): over seeds 0-49 at the default size the filter returns 6.6
entries per world, 3.8 of them (57 %, 1 to 7 per world) unplanted look-alikes. No unplanted entry
breaks a rule of the policy (``tests/test_key_audit_je10.py``).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any, Callable

import numpy as np

from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, INT, LINE, MONEY, NAME, TOKEN, Disposition, Form, Kind, Many, Task, clear,
                                     dispose, flag, parse_any, review, tally)

SPEC = spec(
    "JE-10",
    "L3",
    'Three-way match',
    step_budget=100,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective=('Vouch the vendor invoices of the client\'s accounts payable sample to their purchase orders, goods '
               'receipts and the vendor master under the procurement and accounts payable policy, and report the '
               'invoices that should not have been posted or paid as they were.'),
    defect='an invoice posted or payable against the policy: price or quantity beyond what was ordered and received, payee not the vendor, or coded to an account its vendor may not post',
    decoys='price differences the policy tolerates; short deliveries billed as received; invoices issued before a verified change of the vendor\'s bank; services posted to the account their purchase order assigns',
    required_evidence='invoice, purchase order (with its goods receipts), vendor master, policy',
    sources=('general_ledger', 'invoices', 'purchase_orders', 'goods_receipts', 'vendor_master', 'vendor_changes',
             'procurement_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('THREE_WAY_MISMATCH', 'the invoice as posted is not supported by its purchase order, goods receipts and the vendor master as the policy requires',
         'the excess over the order price, the units billed but not received at the order price, or the amount '
         'posted to the wrong account (nil for a remittance account not the vendor\'s)'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "price_over_po",
        evidence="the vendor's invoice, its purchase order and the policy's price tolerance",
        facts="the invoice total; the order value of the quantity invoiced (quantity x PO price); the excess "
              "(posted to 5100 purchase price variance); the tolerance (percentage of the order value or the USD "
              "cap, whichever is lower)",
        conclusion="The invoice exceeds the approved order price by more than the policy tolerates and was posted "
                   "and paid without a PO change: the excess is an unapproved price increase charged to purchase "
                   "price variance (misstatement = the excess).",
        standard="AS 2401.58 and .61 (examining journal entries); AS 1105.15 (inspection of records and documents)"),
    key("defect", "quantity_over_receipt",
        evidence="the vendor's invoice and the purchase order's history of goods receipts",
        facts="the quantity billed; the quantity received on the goods receipt(s)",
        conclusion="AP paid for units the warehouse never received (the invoice over-clears GR/IR); the value of "
                   "the missing units is a recoverable overpayment (misstatement = units short x order price).",
        standard="AS 1105.15 (inspection of records and documents); AS 2401.58 (examining journal entries)"),
    key("defect", "bank_account_mismatch",
        evidence="the vendor's invoice, the vendor master and the vendor change log",
        facts="the remittance account on the invoice; the vendor's account in the vendor master; no logged, "
              "verified change to the invoice's account",
        conclusion="The invoice directs payment to an account that is not the vendor's, with no verified change on "
                   "file: a payment-diversion red flag. The expense is not misstated; the exposure is a fraudulent "
                   "payment of the invoice total, to be confirmed with the vendor through its number on file.",
        standard="AS 2401.79 (evidence that fraud may exist is brought to management's attention); AS 1105.15"),
    key("defect", "misclassified_account",
        evidence="the vendor's invoice, its purchase order (the job ordered, the account assignment), the vendor "
                 "master (category) and the policy's coding guide",
        facts="the account the entry posted; the vendor's category; the account the coding guide gives that category; "
              "the PO's account assignment, which is that account, or the account posted for a job outside the "
              "vendor's line of business",
        conclusion="The invoice is posted to an account neither its vendor's category nor a valid PO assignment "
                   "allows (an order for work the vendor does not do assigns nothing under section 6 and is itself "
                   "a red flag for Procurement): the expense is misclassified (misstatement = the amount posted to "
                   "the wrong account).",
        standard="AS 2401.58 (examining journal entries); AS 1105.11 (assertions: presentation and disclosure)"),
    key("decoy", "price_variance_within_tolerance",
        evidence="the vendor's invoice, its purchase order and the policy's price tolerance",
        facts="the invoice total; the order value of the quantity invoiced; the tolerance, which the difference "
              "does not exceed; quantity within what was received",
        conclusion="The price difference is within the tolerance the policy lets AP post to purchase price "
                   "variance without a PO change: no exception.",
        standard="AS 1105.15 (inspection of records and documents)"),
    key("decoy", "short_delivery_invoiced_as_received",
        evidence="the vendor's invoice and the purchase order's history of goods receipts",
        facts="the quantity ordered; the quantity received (fewer); the quantity invoiced, equal to what was received",
        conclusion="The order came short, but the vendor billed and AP paid only the units received at the order "
                   "price: no exception (the open quantity is not a liability).",
        standard="AS 1105.15 (inspection of records and documents)"),
    key("decoy", "coded_per_po_assignment",
        evidence="the vendor's invoice, its purchase order (the job ordered, the account assignment), the vendor "
                 "master and the policy",
        facts="the account the entry posted, outside the vendor's category; the PO, approved before the invoice, "
              "orders a job of the vendor's own line of business that serves that account's category and assigns "
              "it there; the invoice bills that job",
        conclusion="The buyer ordered work the vendor does for another category's purpose (a haulier carrying an "
                   "exhibition stand) and assigned it to that category's account; section 6 lets an ordered service "
                   "post to its PO's account: no exception.",
        standard="AS 1105.15 (inspection of records and documents)"),
    key("decoy", "bank_change_verified",
        evidence="the vendor's invoice, the vendor master and the vendor change log",
        facts="the account on the invoice is the vendor's old account; the change log records its replacement by the "
              "master's account after the invoice date, verified by call-back",
        conclusion="The vendor changed banks after issuing the invoice; the change went through the call-back "
                   "procedure and payment follows the master: no exception.",
        standard="AS 1105.15 (inspection of records and documents)"),
)

POLICY_TITLE = "Procurement and accounts payable policy"
CODE = "THREE_WAY_MISMATCH"
#: the menus the company's price tolerance is set from (a percentage of the order value, a USD cap)
_PCTS = (3.0, 5.0, 7.5, 10.0, 15.0)
_CAPS = (500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000)
_BANKS = ("First Coastal Bank", "Lakeshore National Bank", "Summit Trust", "Pacific Commerce Bank")
#: categories bought on a purchase order without a goods receipt (two-way match) and their cost accounts
_TWO_WAY = tuple(c.name for c in md.CATEGORIES if c.flow == "two_way")
#: the work a two-way vendor is ordered, by its category (its line of business): (the job, the category whose
#: account it serves). Most jobs serve the vendor's own category; some serve another (a haulier carries the
#: exhibition stand to a trade show: marketing), and the buyer assigns those orders to that category's account.
WORK: dict[str, tuple[tuple[str, str], ...]] = {
    "freight": (("inbound haulage of steel coil from the mill", "freight"),
                ("outbound deliveries to customers in the Midwest", "freight"),
                ("haulage of the exhibition stand to and from the Colorado Manufacturing Expo", "marketing"),
                ("transport of the press-line gearbox to and from the repairer's workshop", "maintenance")),
    "maintenance": (("servicing of the compressors at the Denver plant", "maintenance"),
                    ("repair of the packaging line conveyors", "maintenance"),
                    ("repair and repainting of the trade-show exhibition stand", "marketing"),
                    ("servicing of the tail-lifts on the delivery trucks", "freight")),
    "marketing": (("design and print of the product catalogue", "marketing"),
                  ("digital campaign for the spring product launch", "marketing"),
                  ("printing of delivery notes and shipping labels", "freight"),
                  ("printing of safety and lockout signage for the maintenance programme", "maintenance")),
}


# ---------------------------------------------------------------------------- documents
#: a number as the policy writes it (``7.5``, ``10``: no trailing zeros), held as its text
PERCENT = Kind("percent", r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Item:
    """One item of a list written inline (an account code of the coding guide, an invoice reference)."""
    text: str


ITEM = Form(Item, "{text}", text=TOKEN)


@dataclass(frozen=True)
class Guide:
    """A line of the policy's coding guide: a vendor category, what it supplies, the account its documents
    post to and the other accounts it may post."""
    category: str
    what: str
    main: str
    main_name: str
    also: tuple[Item, ...]


GUIDE = Form(Guide, "  - {category} ({what}): {main} {main_name}; also {also}", category=TOKEN, what=NAME,
             main=TOKEN, main_name=LINE, also=Many((ITEM,), ", "))


@dataclass(frozen=True)
class Policy:
    """The procurement and accounts payable policy: the price tolerance (a percentage of the order value or a
    USD cap, in cents, whichever is lower) and the coding guide."""
    pct: str
    cap: int
    guide: tuple[Guide, ...]


POLICY = Form(Policy, (
    "Section 3 Purchase orders. Goods and ordered services are bought on an approved purchase order (PO) "
    "raised in the ERP before the order is placed; recurring fees and utility, professional, office and travel "
    "bills are invoiced without one.\n"
    "Section 5 Matching. Accounts payable posts a vendor invoice only when it agrees with the approved PO and, for "
    "goods, with the goods receipts recorded against it (shown in the PO history):\n"
    "  5.0 Quantity: the quantity invoiced may not exceed the quantity received.\n"
    "  5.1 Price: the invoice may exceed the PO price of the quantity invoiced by no more than "
    "{pct}% of that order value or USD {cap}, whichever is lower. Such small differences (surcharges, "
    "rounding) are posted to 5100 Purchase Price Variance without further approval; any larger excess requires "
    "an approved PO change before the invoice is posted. Invoices below the PO price are posted as invoiced.\n"
    "  5.2 Payee: payment is made only to the bank account held in the vendor master. Remittance details on an "
    "invoice that differ from the vendor master must not be used; bank changes go through the vendor change "
    "procedure with call-back verification and are logged in the vendor change log.\n"
    "Section 6 Coding. A vendor's documents post only to the accounts of its category in the vendor master, "
    "except that an ordered service posts to the account its approved PO assigns it to: the buyer orders work of "
    "the vendor's line of business (its category, as the guide below describes it) and, where that work serves "
    "another category (a haulier carrying an exhibition stand serves marketing), assigns the order to that "
    "category's account. A PO for work outside the vendor's line of business assigns nothing: Procurement "
    "reviews it and the invoice posts to the vendor's category.\n{guide}"),
    pct=PERCENT, cap=MONEY, guide=Many((GUIDE,), "\n"))


@dataclass(frozen=True)
class Invoice:
    """The vendor's invoice as the pack holds it: its line (quantity at the order price; a two-way invoice bills
    one unit of the work ordered), total, remittance details and the AP posting stamp."""
    number: int
    vendor: str
    vendor_id: str
    bill_to: str
    date: str
    due: str
    po: str
    what: str
    qty: int
    price: int
    value: int
    total: int
    bank_name: str
    bank: str
    ref: str
    posted: str
    preparer: str
    preparer_id: str
    approver: str
    approver_id: str
    approved: str


@dataclass(frozen=True)
class AdjustedInvoice(Invoice):
    """An invoice with a price adjustment over the order price of its line (a second line)."""
    adjustment: int


_INVOICE_HEAD = ("INVOICE {number}\nFrom: {vendor} (our vendor no. {vendor_id})\nBill to: {bill_to}, Accounts Payable\n"
                 "Invoice date: {date}    Due date: {due}\nYour purchase order: {po}\n"
                 "Line 1: {what} - quantity {qty} at USD {price} each = USD {value}\n")
_INVOICE_TAIL = ("Invoice total: USD {total}\nRemit payment to: {bank_name}, account {bank}\nAP stamp: posted as {ref} "
                 "on {posted} by {preparer} ({preparer_id}); approved by {approver} ({approver_id}) on {approved}.")
_INVOICE_KINDS: dict[str, Any] = dict(vendor_id=TOKEN, date=DATE, due=DATE, po=TOKEN, price=MONEY, value=MONEY,
                                      total=MONEY, bank_name=NAME, bank=TOKEN, ref=TOKEN, posted=DATE, preparer=NAME,
                                      preparer_id=TOKEN, approver=NAME, approver_id=TOKEN, approved=DATE)
INVOICE = Form(Invoice, _INVOICE_HEAD + _INVOICE_TAIL, **_INVOICE_KINDS)
ADJUSTED_INVOICE = Form(AdjustedInvoice, _INVOICE_HEAD + "Line 2: price adjustment = USD {adjustment}\n"
                        + _INVOICE_TAIL, adjustment=MONEY, **_INVOICE_KINDS)


@dataclass(frozen=True)
class Receipt:
    """A goods receipt in a purchase order's history."""
    gr: str
    posted: str
    qty: int
    value: int


RECEIPT = Form(Receipt, "goods receipt {gr} posted {posted}, quantity {qty} received (USD {value})", gr=TOKEN,
               posted=DATE, value=MONEY)


@dataclass(frozen=True)
class Order:
    """The approved purchase order: its line (quantity at the order price) and approval."""
    po: str
    vendor: str
    vendor_id: str
    date: str
    what: str
    qty: int
    price: int
    value: int
    buyer: str
    buyer_id: str
    approver: str
    approver_id: str
    approved: str


@dataclass(frozen=True)
class GoodsOrder(Order):
    """A purchase order of goods (three-way match): its history lists the goods receipts."""
    receipts: tuple[Receipt, ...]


@dataclass(frozen=True)
class ServiceOrder(Order):
    """A purchase order of services (two-way match): no goods receipt; the buyer's account assignment."""
    account: str
    account_name: str


_ORDER_HEAD = ("PURCHASE ORDER {po}\nVendor: {vendor} (vendor no. {vendor_id})\nOrder date: {date}\n"
               "Line 1: {what} - quantity {qty} at USD {price} each = USD {value}\nPO total: USD {value}\n")
_ORDER_APPROVAL = ("Raised by {buyer} ({buyer_id}); approved in ERP by {approver} ({approver_id}) on {approved}.\n"
                   "PO history: ")
_ORDER_KINDS: dict[str, Any] = dict(po=TOKEN, vendor_id=TOKEN, date=DATE, price=MONEY, value=MONEY, buyer=NAME,
                                    buyer_id=TOKEN, approver=NAME, approver_id=TOKEN, approved=DATE)
GOODS_ORDER = Form(GoodsOrder, _ORDER_HEAD + _ORDER_APPROVAL + "{receipts}.", receipts=Many((RECEIPT,), "; "),
                   **_ORDER_KINDS)
SERVICE_ORDER = Form(ServiceOrder, _ORDER_HEAD + "Account assignment: {account} {account_name}\n" + _ORDER_APPROVAL
                     + "no goods receipt (services ordered; matched two-way to the invoice).", account=TOKEN,
                     **_ORDER_KINDS)


@dataclass(frozen=True)
class Pbc:
    """The client's PBC list of the vouching sample."""
    n: int
    refs: tuple[Item, ...]


PBC = Form(Pbc, (
    "Provided by client (PBC) for the FY2025 audit. As requested in the audit request list, Accounts Payable has "
    "provided the vendor invoice and the approved purchase order (with its history) for each of the {n} "
    "AP invoices the auditors selected for matching: {refs}. Vendor bank details are maintained in the vendor "
    "master only; changes are in the vendor change log. Invoices outside the selection were not requested."),
    refs=Many((ITEM,), ", "))


def _tolerance_cents(order_value: int, pct: float, cap_usd: int) -> int:
    """The tolerated price difference over an order value: pct of it or the cap, whichever is lower (cents, down)."""
    return int(min(order_value * pct // 100, cap_usd * 100))


def cost_account(category: str) -> str:
    """The account a category's goods receipts or invoices debit (the coding guide's first account)."""
    return chart.ACCOUNTS[chart.idx(md.CATEGORIES[md.CATEGORY[category]].account)].code


def allowed_codes(category: str) -> list[str]:
    return sorted(chart.ACCOUNTS[i].code for i in md.ALLOWED_ACCOUNTS[category])


def _coding_guide() -> tuple[Guide, ...]:
    out = []
    for c in md.CATEGORIES:
        main = cost_account(c.name)
        rest = [a for a in allowed_codes(c.name) if a != main]
        out.append(Guide(c.name, c.what, main, chart.ACCOUNTS[chart.CODE[main]].name, tuple(Item(a) for a in rest)))
    return tuple(out)


def natural_variances(b: WorldBuilder) -> tuple[np.ndarray, np.ndarray]:
    """(order value, price difference) in cents of every matched invoice the books posted in the year."""
    d = b.books.docs
    docs = b.cols.books_doc[b.cols.doc_code == "VI"]
    return d.amount[docs].astype(np.int64), d.variance[docs].astype(np.int64)


def _policy_tolerance(b: WorldBuilder) -> tuple[float, int]:
    """The smallest menu tolerance above every price difference of the year's ordinary invoices, sometimes a step up."""
    amt, var = natural_variances(b)
    pos = var > 0
    ratio = float((var[pos] * 100 / np.maximum(amt[pos], 1)).max()) if pos.any() else 0.0
    top = int(var[pos].max()) if pos.any() else 0
    i = next((k for k, p in enumerate(_PCTS) if p > ratio), len(_PCTS) - 1)
    j = next((k for k, c in enumerate(_CAPS) if c * 100 > top), len(_CAPS) - 1)
    i = min(i + int(b.rng.random() < 0.4), len(_PCTS) - 1)
    j = min(j + int(b.rng.random() < 0.4), len(_CAPS) - 1)
    return _PCTS[i], _CAPS[j]


class _Chains:
    """The books' purchasing chains behind the year's entries: an entry's document, its order, receipts, payments."""

    def __init__(self, b: WorldBuilder):
        d = b.books.docs
        self.d = d
        self.entry_of = np.full(len(d), -1, dtype=np.int64)
        self.entry_of[b.cols.books_doc] = np.arange(b.n)
        gr = d.of("GR")
        self.gr = gr[np.argsort(d.parent[gr], kind="stable")]
        self.gr_parent = d.parent[self.gr]
        vp = d.of("VP")
        self.vp = vp[np.argsort(d.parent[vp], kind="stable")]
        self.vp_parent = d.parent[self.vp]

    def receipts(self, po: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.gr_parent, [po, po + 1])
        return self.gr[lo:hi]

    def payments(self, inv: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.vp_parent, [inv, inv + 1])
        return self.vp[lo:hi]

    def paid_whole_or_not(self) -> np.ndarray:
        """Per document: whether the payments posted in the year settle it in full, or none was posted. An invoice
        paid in instalments across the year end keeps its books amount: a changed one would be part paid."""
        d = self.d
        in_year = self.entry_of[self.vp] >= 0
        paid = np.bincount(self.vp_parent[in_year], weights=d.amount[self.vp[in_year]], minlength=len(d))
        n = np.bincount(self.vp_parent[in_year], minlength=len(d))
        return (n == 0) | (paid.astype(np.int64) == d.amount + d.tax + d.variance)

    def single_receipt(self) -> np.ndarray:
        """Per document: whether it is an order received in exactly one goods receipt, for the whole quantity."""
        d = self.d
        n = np.bincount(self.gr_parent, minlength=len(d))
        qty = np.zeros(len(d), dtype=np.int64)
        np.add.at(qty, self.gr_parent, d.quantity[self.gr])
        return (n == 1) & (qty == d.quantity)


# ---------------------------------------------------------------------------- planting
class _Pool:
    """The candidates of the sample (masks over the entries, drawn from the books' own invoices) and the
    draws that reserve them: defects and decoys of one face come from one mask."""

    def __init__(self, b: WorldBuilder, ch: _Chains, pct: float, cap: int):
        c, d = b.cols, ch.d
        self.b, self.ch, self.d, self.pct, self.cap = b, ch, d, pct, cap
        self.docs = docs = c.books_doc
        # per entry: its vendor's category (-1 without a vendor) and its approver's limit (0 without one)
        self.cat = cat = np.where(c.vendor_id != "", b.books.master.vendor_category[np.maximum(d.partner[docs], 0)], -1)
        appr_limit = np.array([u.approval_limit_cents for u in md.USERS] + [0], dtype=np.int64)[d.approver[docs]]
        self.var = var = d.variance[docs]
        self.amt = amt = d.amount[docs]
        vi = (c.doc_code == "VI") & np.isin(cat, [md.CATEGORY["raw_materials"], md.CATEGORY["capex"]])
        raw_vi = vi & (cat == md.CATEGORY["raw_materials"])
        self.two_way = ((c.doc_code == "VN") & (d.parent[docs] >= 0)
                        & np.isin(cat, [md.CATEGORY[k] for k in _TWO_WAY]))
        # room under the approver's limit for the largest price adjustment planted (30 % of the order value)
        room = appr_limit >= (amt * 13 // 10 + np.abs(var) + 100)
        parent = d.parent[docs]
        # matched invoices whose goods receipts in the books add up to what was invoiced
        self.po_of = po_of = np.maximum(parent, 0)
        recv = np.bincount(ch.gr_parent, weights=d.amount[ch.gr], minlength=len(d)).astype(np.int64)[po_of]
        vi &= (parent >= 0) & (recv == amt)
        raw_vi &= vi
        # orders received whole in one goods receipt posted in the year (the receipt a short delivery changes)
        first_gr = ch.gr[np.minimum(np.searchsorted(ch.gr_parent, po_of), len(ch.gr) - 1)]
        whole = ch.single_receipt()[po_of]
        qty_ok = raw_vi & (var == 0) & whole & (d.quantity[po_of] >= 3) & (ch.entry_of[first_gr] >= 0)
        # invoices whose amount a plant changes (price differences, short deliveries) are paid whole or not in the year
        settles = ch.paid_whole_or_not()[docs]
        self.qty_ok = qty_ok & settles
        # orders received short of what was ordered stay out of the clean items (a shortage is for the planted pairs)
        received_all = np.bincount(ch.gr_parent, weights=d.quantity[ch.gr], minlength=len(d)).astype(np.int64)[po_of]
        self.clean = (vi & (var <= 0) & (received_all == d.quantity[po_of])) | self.two_way
        self.price = raw_vi & room & (var <= 0) & settles
        self.partner = np.where(cat >= 0, d.partner[docs], -1)  # the vendor's index, -1 for entries without one
        #: vendors whose bank changed: their invoices dated up to the change name the old account, so none joins
        #: the sample
        self.locked = np.zeros(b.n, dtype=bool)
        self.vendors: set[str] = set()
        self.partners: set[int] = set()

    def take(self, k: int, where: np.ndarray, what: str, fresh_vendor: bool = False) -> list[int]:
        out = []
        for _ in range(k):
            mask = where & ~self.locked
            if fresh_vendor:
                mask &= ~np.isin(self.partner, sorted(self.partners))
            i = int(self.b.pick(1, mask, what=what)[0])
            out.append(i)
            self.vendors.add(str(self.b.cols.vendor_id[i]))
            self.partners.add(int(self.partner[i]))
        return out

    def free(self, where: np.ndarray) -> np.ndarray:
        return np.flatnonzero(where & ~self.b.used & ~self.locked)

    def miscoded(self, what: str) -> tuple[int, str]:
        """A two-way invoice and the cost account of another two-way category it is posted to. The pairs (category
        billed, account posted) are drawn so that each account is posted as often as the two-way invoices of the
        sample post it (half a turn of the categories' shares, which lands on another category while no share is
        half of them; where one is, the next category)."""
        cats = np.array([md.CATEGORY[k] for k in _TWO_WAY])
        counts = np.array([len(self.free(self.two_way & (self.cat == k))) for k in cats], dtype=float)
        if counts.sum() == 0:
            self.take(1, self.two_way, what)  # raises the builder's error: no two-way invoice is left
        edges = np.cumsum(counts / counts.sum())
        u = float(self.b.rng.uniform())
        src = min(int(np.searchsorted(edges, u, side="right")), len(cats) - 1)
        dst = min(int(np.searchsorted(edges, (u + 0.5) % 1.0, side="right")), len(cats) - 1)
        if dst == src:
            dst = (src + 1) % len(cats)
        return self.take(1, self.two_way & (self.cat == cats[src]), what)[0], cost_account(_TWO_WAY[dst])

    def take_nearest(self, where: np.ndarray, finals: Callable[[np.ndarray], np.ndarray], target: int,
                     what: str) -> int:
        """The candidate whose amount as planted (``finals`` of the candidates) is nearest ``target`` (in log)."""
        cand = self.free(where)
        if not len(cand):
            return self.take(1, where, what)[0]  # raises the builder's error on too few candidates
        j = int(cand[int(np.argmin(np.abs(np.log(finals(cand)) - np.log(max(target, 1)))))])
        return self.take(1, np.arange(self.b.n) == j, what)[0]

    def shadow(self, where: np.ndarray) -> int:
        """A candidate drawn as a decoy would be (not reserved): the amounts of matched defects follow its."""
        cand = self.free(where)
        return int(cand[int(self.b.rng.integers(len(cand)))]) if len(cand) else -1

    def decoy_price(self, i: int, u: float) -> int:
        tol = _tolerance_cents(int(self.amt[i]), self.pct, self.cap)
        return max(1, min(int(tol * u), tol))

    def defect_price(self, i: np.ndarray, u: float) -> np.ndarray:
        tol = np.minimum(self.amt[i] * self.pct // 100, self.cap * 100).astype(np.int64)
        return np.maximum(tol + 100, np.minimum((tol * u).astype(np.int64), self.amt[i] * 3 // 10))

    def short_units(self, i: int) -> int:
        return int(self.b.rng.integers(1, max(1, int(self.d.quantity[self.po_of[i]]) // 3) + 1))

    def u_decoy(self) -> float:
        """Where a tolerated price difference sits in the tolerance (``near_miss`` moves it towards the limit)."""
        near = self.b.knobs.near_miss
        return float(self.b.rng.uniform(0.15 + 0.6 * near, 0.45 + 0.5 * near))


@dataclass
class _Sample:
    """The entries drawn, by role: defects (price, quantity, payee, misclassified with the account posted),
    decoys (price, short delivery, bank change with its date, PO-coded with the account posted), the payee
    defects drawn with a matched invoice's face, and the clean items."""
    price: list[int] = field(default_factory=list)
    excess: dict[int, int] = field(default_factory=dict)
    qty: list[int] = field(default_factory=list)
    bank: list[int] = field(default_factory=list)
    mis: list[tuple[int, str]] = field(default_factory=list)
    price_dec: list[int] = field(default_factory=list)
    short_dec: list[int] = field(default_factory=list)
    bank_dec: list[int] = field(default_factory=list)
    changed_on: dict[int, np.datetime64] = field(default_factory=dict)
    coded: list[tuple[int, str]] = field(default_factory=list)
    #: misclassified invoices whose PO orders, and assigns to the account posted, work outside the vendor's line
    foreign: set[int] = field(default_factory=set)
    bank_price: list[int] = field(default_factory=list)
    bank_short: list[int] = field(default_factory=list)
    clean: list[int] = field(default_factory=list)

    def entries(self) -> list[int]:
        return sorted(set(self.price + self.qty + self.bank + [i for i, _ in self.mis] + self.price_dec
                          + self.short_dec + self.bank_dec + [i for i, _ in self.coded] + self.clean))


def plant(b: WorldBuilder) -> None:
    """Plant price, quantity, payee and coding exceptions into sampled AP invoices, their look-alikes and clean
    items: the policy, the draw of the sample, then each phase (prices, deliveries, payees, coding), the documents,
    the key and the PBC list; each phase claims what it changes."""
    ch = _Chains(b)
    pct, cap = _policy_tolerance(b)
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy(f"{pct:g}", cap * 100, _coding_guide())),
                            "2024-10-01")
    b.claim("JE-10", documents=[policy])
    pool = _Pool(b, ch, pct, cap)
    s = _draw(b, pool)
    _plant_prices(b, pool, s)
    received, billed = _plant_deliveries(b, pool, s)
    remit, changes = _plant_payees(b, pool, s)
    _plant_coding(b, s)
    vendors = {v["vendor_id"]: v for v in b.vendors}
    orders = _orders(b, pool, s)
    handles = {idx: _documents(b, ch, idx, vendors, remit.get(idx), received.get(idx), billed.get(idx),
                               orders.get(idx)) for idx in s.entries()}
    b.claim("JE-10", documents=[h for pair in handles.values() for h in pair])
    _record(b, pool, s, handles, policy, remit, changes, received, billed)
    refs = tuple(Item(r) for r in sorted(str(b.cols.reference[i]) for i in s.entries()))
    b.claim("JE-10", documents=[b.add_document("memo", "PBC list - accounts payable vouching sample",
                                               PBC.render(Pbc(len(refs), refs)), "2026-01-20")])


def _draw(b: WorldBuilder, pool: _Pool) -> _Sample:
    """The kinds of the defects and decoys (each kind in turn, from a drawn order), then the sample: bank-change
    decoys first (of distinct vendors, whose earlier invoices leave the pool), then each face's defects and decoys
    from one mask, a defect of a decoy's kind at the amounts of an invoice drawn as that decoy would be."""
    rng, s = b.rng, _Sample()
    n = b.n_defects
    kinds = ("price", "qty", "bank", "mis")
    order = rng.permutation(len(kinds))
    types = [kinds[order[i % len(kinds)]] for i in range(n)]
    decoy_kinds = ("price", "bank", "short", "coded")
    order = rng.permutation(len(decoy_kinds))
    decoy_types = [decoy_kinds[order[i % len(decoy_kinds)]] for i in range(b.n_decoys)]
    spare = (SPEC.step_budget - 10 - 3 * (n + b.n_decoys)) // 3
    n_clean = max(0, min(int(rng.integers(2, 5)), spare))
    # the misclassified and PO-coded invoices need this many two-way invoices the bank changes leave
    need = types.count("mis") + decoy_types.count("coded")
    before = b.rng.bit_generator.state, b.used.copy()
    s.bank_dec = pool.take(decoy_types.count("bank"), pool.two_way, "two-way invoices of distinct vendors",
                           fresh_vendor=True)
    for idx in s.bank_dec:
        _change_bank(b, pool, s, idx)
    if len(pool.free(pool.two_way)) < need:
        # the vendors drawn hold most of a small year's two-way invoices (seed 47736): draw again, each
        # from the invoices whose vendor's bank change leaves enough
        b.rng.bit_generator.state, b.used[:] = before
        pool.locked[:] = False
        pool.vendors.clear()
        pool.partners.clear()
        s.changed_on.clear()
        s.bank_dec = _bank_decoys_sparing(b, pool, s, decoy_types.count("bank"), need)
    # a misclassified invoice (a defect) and one coded per its PO's account assignment (a decoy) look alike on
    # the listing: a two-way vendor posting to another two-way category's account; both are drawn the same way
    s.mis = [pool.miscoded("two-way vendor invoices") for _ in range(types.count("mis"))]
    s.coded = [pool.miscoded("two-way vendor invoices") for _ in range(decoy_types.count("coded"))]
    # half the misclassified invoices carry a PO that assigns the account posted, as a coded decoy's does, but
    # for another line of business's work (a marketing agency ordered repairs): the scope decides, not the
    # assignment
    s.foreign = {i for i, _ in s.mis if rng.random() < 0.5}
    # A payee defect is a two-way invoice, as a bank-change decoy is, so that every face of the listing (two-way,
    # two-way coded elsewhere, matched with and without a price-variance line) holds defects and decoys alike;
    # a small year that runs out of two-way invoices gives the rest a matched invoice's face (a tolerated price
    # difference, a short delivery billed as received), where price and quantity break no rule.
    spare = len(pool.free(pool.two_way))
    faces = ["two_way" if k < spare else ("price", "short")[k % 2] for k in range(types.count("bank"))]
    s.price_dec = pool.take(decoy_types.count("price"), pool.price, "matched vendor invoices")
    s.bank_price = pool.take(faces.count("price"), pool.price, "matched vendor invoices")
    one_delivery = "matched invoices of orders received in one delivery"
    s.short_dec = pool.take(decoy_types.count("short"), pool.qty_ok, one_delivery)
    s.bank_short = pool.take(faces.count("short"), pool.qty_ok, one_delivery)
    _draw_matched_defects(b, pool, s, types.count("price"), types.count("qty"))
    s.bank = pool.take(faces.count("two_way"), pool.two_way, "two-way vendor invoices") + s.bank_price + s.bank_short
    s.clean = pool.take(n_clean, pool.clean, "sampled vendor invoices")
    return s


def _change_bank(b: WorldBuilder, pool: _Pool, s: _Sample, idx: int) -> None:
    """The date of the bank change after bank-change decoy ``idx``; its vendor's invoices dated up to it leave
    the pool (they name the old account)."""
    doc_date = b.cols.doc_date
    when = cal.business_offset(doc_date[idx] + int(b.rng.integers(2, 20)), 0)
    s.changed_on[idx] = min(when, np.datetime64("2025-12-31"))
    pool.locked |= (pool.partner == pool.partner[idx]) & (doc_date <= s.changed_on[idx])


def _bank_decoys_sparing(b: WorldBuilder, pool: _Pool, s: _Sample, k: int, need: int) -> list[int]:
    """``k`` bank-change decoys of distinct vendors, each drawn from the two-way invoices whose vendor's change
    (at its latest date) leaves ``need`` two-way invoices for the coding draws and one for each decoy still to
    draw; a year where none does is a ``ConfigError``."""
    doc_date, out = b.cols.doc_date, []
    latest = np.minimum(cal.business_offset(doc_date + 19, 0), np.datetime64("2025-12-31"))
    for left in range(k - 1, -1, -1):
        cand = pool.free(pool.two_way & ~np.isin(pool.partner, sorted(pool.partners)))
        spare = np.array([len(pool.free(pool.two_way & ~((pool.partner == pool.partner[i])
                                                         & (doc_date <= latest[i])))) for i in cand], dtype=np.int64)
        ok = cand[spare >= need + left]
        if not len(ok):
            raise ConfigError(
                f"impossible knobs for JE-10: n_decoys asks for {k} bank-change decoys and, with n_defects, for "
                f"{need} misclassified or PO-coded two-way invoices, but each vendor's bank change takes its earlier "
                f"invoices from the {int(pool.two_way.sum())} two-way invoices of the year of {b.n} entries; raise "
                "n_entries or lower n_defects/n_decoys")
        mask = np.zeros(b.n, dtype=bool)
        mask[ok] = True
        idx = pool.take(1, mask, "two-way invoices of distinct vendors")[0]
        _change_bank(b, pool, s, idx)
        out.append(idx)
    return out


def _draw_matched_defects(b: WorldBuilder, pool: _Pool, s: _Sample, n_price: int, n_qty: int) -> None:
    """Price and quantity defects, drawn so that their amounts as planted follow the decoys': a price defect's
    total is near the total of a price decoy of the sample, a quantity defect's (the whole order) near what a
    short delivery of the sample billed as received comes to (paired one to one; beyond the decoys, near an
    invoice drawn as one would be)."""
    rng, amt, d = b.rng, pool.amt, pool.d
    # each defect follows a decoy of its face in the sample where there is one (paired: the defect is the
    # invoice nearest that decoy's amount as planted, so the faces share their amounts world by world), else
    # an invoice drawn as such a decoy would be
    prices = s.price_dec + s.bank_price
    for k in range(n_price):
        c = prices[k] if k < len(prices) else pool.shadow(pool.price)
        u_dec = pool.u_decoy()
        u_def = float(rng.uniform(1.6, 6.0))
        target = int(amt[c]) + pool.decoy_price(c, u_dec) if c >= 0 else 0
        idx = pool.take_nearest(pool.price, lambda cand: amt[cand] + pool.defect_price(cand, u_def), target,
                                "matched vendor invoices")
        s.price.append(idx)
        s.excess[idx] = int(pool.defect_price(np.array([idx]), u_def)[0])
    shorts = s.short_dec + s.bank_short
    for k in range(n_qty):
        c = shorts[k] if k < len(shorts) else pool.shadow(pool.qty_ok)
        target = int(amt[c]) - pool.short_units(c) * (int(amt[c]) // int(d.quantity[pool.po_of[c]])) if c >= 0 else 0
        s.qty.append(pool.take_nearest(pool.qty_ok, lambda cand: amt[cand], target,
                                       "matched invoices of orders received in one delivery"))


def _pay_more(b: WorldBuilder, ch: _Chains, idx: int, cents: int) -> list[int]:
    """The payment run paid the invoice as posted: its last payment in the year carries the change (the entry
    changed, if any)."""
    c = b.cols
    pays = [int(ch.entry_of[p]) for p in ch.payments(int(c.books_doc[idx])) if ch.entry_of[p] >= 0]
    if not pays:
        return []
    last = max(pays, key=lambda j: (c.post_date[j], j))
    c.debit_cents[last] += cents
    c.credit_cents[last] += cents
    return [last]


def _plant_prices(b: WorldBuilder, pool: _Pool, s: _Sample) -> None:
    """Price defects bill an excess above the tolerance, price decoys (and payee defects of that face) a
    difference within it: 5100 carries it, the payable and the payment follow."""
    c = b.cols

    def reprice(idx: int, variance: int) -> None:
        dv = variance - int(pool.var[idx])
        b.set_line(idx, "5100", variance)
        c.credit_cents[idx] += dv
        b.claim("JE-10", entries=[idx, *_pay_more(b, pool.ch, idx, dv)])

    for idx in s.price:
        reprice(idx, s.excess[idx])
    for idx in s.price_dec + s.bank_price:
        reprice(idx, pool.decoy_price(idx, pool.u_decoy()))


def _plant_deliveries(b: WorldBuilder, pool: _Pool,
                      s: _Sample) -> tuple[dict[int, list[tuple[int, int, int]]], dict[int, int]]:
    """Short deliveries: the goods receipt (Dr inventory / Cr GR/IR) is for fewer units; a quantity defect is
    billed the whole order, a short-delivery decoy (and a payee defect of that face) only what arrived. Returns
    the goods receipts of each (document, quantity, cents) and the quantity billed."""
    c, d, ch = b.cols, pool.d, pool.ch
    received: dict[int, list[tuple[int, int, int]]] = {}
    billed: dict[int, int] = {}
    for idx in s.qty + s.short_dec + s.bank_short:
        po = int(d.parent[pool.docs[idx]])
        gr = int(ch.receipts(po)[0])
        q = int(d.quantity[po])
        short = pool.short_units(idx)
        price = int(d.amount[po]) // q
        j = int(ch.entry_of[gr])
        c.debit_cents[j] -= short * price
        c.credit_cents[j] -= short * price
        received[idx] = [(gr, q - short, (q - short) * price)]
        billed[idx] = q
        b.claim("JE-10", entries=[idx, j])
    for idx in s.short_dec + s.bank_short:
        # ... and the vendor billed, and AP posted and paid, what arrived
        got = received[idx][0][1]
        cut = (billed[idx] - got) * (int(pool.amt[idx]) // billed[idx])
        c.debit_cents[idx] -= cut
        c.credit_cents[idx] -= cut
        b.claim("JE-10", entries=_pay_more(b, ch, idx, -cut))
        billed[idx] = got
    return received, billed


def _bank_change(b: WorldBuilder, v: dict[str, Any], new: str, changed_on: str) -> dict[str, Any]:
    """Move vendor ``v`` to the bank account ``new`` (verified by call-back); the change log's row."""
    row = {"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": v["bank_account"], "new_value": new,
           "changed_on": changed_on, "changed_by": "GSILVA",
           "verification": "call-back to the vendor's number on file, confirmed by KLEE"}
    v["bank_account"] = new
    b.claim("JE-10", rows=[("vendors", v["vendor_id"]), ("vendor_changes", v["vendor_id"])])
    return row


def _plant_payees(b: WorldBuilder, pool: _Pool, s: _Sample) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """Payee defects ask for payment to a new account; bank-change decoys name the vendor's old account, which the
    change log replaces after the invoice date; vendors outside the sample change banks too. Returns each
    invoice's remittance account and the change log's rows (the decoys' first)."""
    c, rng = b.cols, b.rng
    vendors = {v["vendor_id"]: v for v in b.vendors}
    remit = {idx: b.bank_account() for idx in s.bank}
    changes = []
    for idx in s.bank_dec:
        v = vendors[str(c.vendor_id[idx])]
        new = b.bank_account()
        remit[idx] = v["bank_account"]
        changes.append(_bank_change(b, v, new, b.date_str(s.changed_on[idx])))
    # verified bank changes of vendors outside the sample, so the change log is the company's, not the sample's
    outside = [v for v in b.vendors if v["vendor_id"] not in pool.vendors]
    for k in rng.choice(len(outside), size=min(len(outside), int(rng.integers(2, 5))), replace=False).tolist():
        new = b.bank_account()  # drawn before the date of the change
        changes.append(_bank_change(b, outside[int(k)], new, str(np.datetime64("2024-11-01")
                                                                  + int(rng.integers(0, 400)))))
    b.vendor_changes.extend(sorted(changes, key=lambda r: (r["changed_on"], r["vendor_id"])))
    return remit, changes


def _plant_coding(b: WorldBuilder, s: _Sample) -> None:
    """Misclassified and PO-coded invoices post to another two-way category's account; the ERP words the entry
    from the account it was posted to."""
    c = b.cols
    for idx, wrong in s.mis + s.coded:
        old = str(c.debit_account[idx])
        c.debit_account[idx] = wrong
        c.description[idx] = str(c.description[idx]).replace(
            chart.ACCOUNTS[chart.CODE[old]].name.lower(), chart.ACCOUNTS[chart.CODE[wrong]].name.lower())
        b.claim("JE-10", entries=[idx])


def _orders(b: WorldBuilder, pool: _Pool, s: _Sample) -> dict[int, tuple[str, str]]:
    """Each sampled two-way invoice's order: (the work its PO and invoice describe, the account the PO assigns).
    An ordinary order (and a misclassified invoice's, in half of them) is a job of the vendor's line serving its
    own category, assigned to its account; a coded decoy's a job of the vendor's line serving the category of the
    account posted, assigned there; a foreign one's a job of the posted account's category, outside the vendor's
    line, assigned to the account posted."""
    rng, out = b.rng, {}
    posted = dict(s.mis + s.coded)
    coded = {i for i, _ in s.coded}
    for idx in s.entries():
        if not pool.two_way[idx]:
            continue
        cat = md.CATEGORIES[pool.cat[idx]].name
        dst = next(k for k in _TWO_WAY if cost_account(k) == posted[idx]) if idx in posted else cat
        line = cat if idx in coded else dst if idx in s.foreign else cat
        serves = dst if (idx in coded or idx in s.foreign) else cat
        jobs = [job for job, to in WORK[line] if to == serves]
        what = md.CATEGORIES[md.CATEGORY[line]].what
        out[idx] = (f"{what}: {jobs[int(rng.integers(0, len(jobs)))]}", cost_account(serves))
    return out


def _record(b: WorldBuilder, pool: _Pool, s: _Sample, handles: dict[int, tuple[int, int]], policy: int,
            remit: dict[int, str], changes: list[dict[str, Any]], received: dict[int, list[tuple[int, int, int]]],
            billed: dict[int, int]) -> None:
    """The key: each defect and decoy with the documents that decide it and its decisive facts."""
    c, d, amt = b.cols, pool.d, pool.amt
    vendors = {v["vendor_id"]: v for v in b.vendors}

    def price_facts(idx: int) -> tuple[int, int, int]:
        order_value = int(amt[idx])
        return int(c.credit_cents[idx]), order_value, _tolerance_cents(order_value, pool.pct, pool.cap)

    for idx in s.price:
        inv, po = handles[idx]
        total, order_value, tol = price_facts(idx)
        b.add_defect(idx, "price_over_po", CODE, [inv, po, policy], total - order_value,
                     facts=[f"{{D:{po}}}", total / 100, order_value / 100, (total - order_value) / 100, tol / 100])
    for idx in s.qty:
        inv, po = handles[idx]
        q = int(d.quantity[d.parent[pool.docs[idx]]])
        got = received[idx][0][1]
        b.add_defect(idx, "quantity_over_receipt", CODE, [inv, po, policy], (q - got) * (int(amt[idx]) // q),
                     facts=[f"{{D:{po}}}", q, got])
    for idx in s.bank:
        inv, _po = handles[idx]
        b.add_defect(idx, "bank_account_mismatch", CODE, [inv, "master:vendors", "master:vendor_changes", policy], 0,
                     facts=[f"{{D:{inv}}}", remit[idx], vendors[str(c.vendor_id[idx])]["bank_account"]])
    for idx, _wrong in s.mis:
        inv, po = handles[idx]
        cat = md.CATEGORIES[pool.cat[idx]].name
        b.add_defect(idx, "misclassified_account", CODE, [inv, po, "master:vendors", policy],
                     int(c.debit_cents[idx]),
                     facts=[f"{{D:{inv}}}", f"{{D:{po}}}", str(c.debit_account[idx]), cat, cost_account(cat)])
    for idx in s.price_dec:
        inv, po = handles[idx]
        total, order_value, tol = price_facts(idx)
        b.add_decoy(idx, "price_variance_within_tolerance", [inv, po, policy],
                    facts=[f"{{D:{po}}}", total / 100, order_value / 100, tol / 100])
    for idx in s.short_dec:
        inv, po = handles[idx]
        b.add_decoy(idx, "short_delivery_invoiced_as_received", [inv, po, policy],
                    facts=[f"{{D:{po}}}", int(d.quantity[d.parent[pool.docs[idx]]]), billed[idx]])
    for idx, row in zip(s.bank_dec, changes):
        inv, _po = handles[idx]
        b.add_decoy(idx, "bank_change_verified", [inv, "master:vendors", "master:vendor_changes"],
                    facts=[f"{{D:{inv}}}", row["old_value"], row["new_value"], row["changed_on"]])
    for idx, _acct in s.coded:
        inv, po = handles[idx]
        b.add_decoy(idx, "coded_per_po_assignment", [inv, po, "master:vendors", policy],
                    facts=[f"{{D:{po}}}", str(c.debit_account[idx]), md.CATEGORIES[pool.cat[idx]].name])


def _documents(b: WorldBuilder, ch: _Chains, idx: int, vendors: dict[str, dict[str, Any]], remit: str | None,
               received: list[tuple[int, int, int]] | None, billed: int | None,
               order: tuple[str, str] | None = None) -> tuple[int, int]:
    """Add the vendor's invoice behind entry ``idx`` and its purchase order with the PO history; returns their handles.

    Every figure is the entry's or the books' own: the invoice's order value and price adjustment are the
    entry's GR/IR (or cost) and 5100 lines, the PO's quantity and price the order's, the history the goods
    receipts as recorded (``received`` overrides them where a short delivery was planted). A two-way PO
    and its invoice describe the work ordered and the PO states its account assignment (``order``: the
    work and the account, from ``_orders``)."""
    c, d = b.cols, ch.d
    doc = int(c.books_doc[idx])
    v = vendors[str(c.vendor_id[idx])]
    what = md.CATEGORIES[md.CATEGORY[v["category"]]].what
    if order:  # a two-way order: the PO and the invoice describe the job ordered
        what = order[0]
    po = int(d.parent[doc])
    assert po >= 0, "every sampled invoice is matched to its purchase order"
    qty, price = int(d.quantity[po]), int(d.amount[po]) // int(d.quantity[po])
    ref, variance = str(c.reference[idx]), 0
    if str(c.doc_code[idx]) == "VI":
        variance = sum(x for a, x in b.lines_of(idx) if a == "5100")
        q = billed if billed is not None else int(sum(int(d.quantity[g]) for g in ch.receipts(po)))
        line: dict[str, Any] = dict(what=what, qty=q, price=price, value=q * price)
        total = q * price + variance
    else:
        total = int(c.debit_cents[idx])
        line = dict(what=what, qty=1, price=total, value=total)
    bank = remit or v["bank_account"]
    prep, appr = md.USERS[int(d.preparer[doc])], md.USERS[int(d.approver[doc])]
    fields = dict(number=int(d.ext_ref[doc]), vendor=v["name"], vendor_id=v["vendor_id"],
                  bill_to=b.facts["company_name"], date=md.iso(d.doc_date[doc]), due=md.iso(d.due_date[doc]),
                  po=f"PO-{po:07d}", **line, total=total, bank_name=_BANKS[int(bank[-1]) % len(_BANKS)], bank=bank,
                  ref=ref, posted=b.date_str(c.post_date[idx]), preparer=prep.name, preparer_id=prep.user_id,
                  approver=appr.name, approver_id=appr.user_id, approved=md.iso(d.approved_on[doc]))
    body = (ADJUSTED_INVOICE.render(AdjustedInvoice(**fields, adjustment=variance)) if variance
            else INVOICE.render(Invoice(**fields)))
    inv = b.add_document("invoice", f"Vendor invoice {ref} - {v['name']}", body, md.iso(d.doc_date[doc]))
    buyer, papp = md.USERS[int(d.preparer[po])], md.USERS[int(d.approver[po])]
    head: dict[str, Any] = dict(po=f"PO-{po:07d}", vendor=v["name"], vendor_id=v["vendor_id"],
                                date=md.iso(d.doc_date[po]), what=what, qty=qty, price=price, value=qty * price,
                                buyer=buyer.name, buyer_id=buyer.user_id, approver=papp.name,
                                approver_id=papp.user_id, approved=md.iso(d.approved_on[po]))
    if str(c.doc_code[idx]) == "VI":
        grs = received or [(int(g), int(d.quantity[g]), int(d.amount[g])) for g in ch.receipts(po)]
        body = GOODS_ORDER.render(GoodsOrder(**head, receipts=tuple(
            Receipt(f"GR-{g:07d}", md.iso(d.post_date[g]), gq, gc) for g, gq, gc in grs)))
    else:
        # the buyer's account assignment: the account of the category the work serves
        acct = order[1] if order else cost_account(v["category"])
        name = chart.ACCOUNTS[chart.CODE[acct]].name
        body = SERVICE_ORDER.render(ServiceOrder(**head, account=acct, account_name=name))
    pod = b.add_document("purchase_order", f"Purchase order PO-{po:07d} - {v['name']}", body, md.iso(d.doc_date[po]))
    return inv, pod


# ----------------------------------------------------------------------------- strategies
def _number_in(title: str, prefixes: tuple[str, ...]) -> str | None:
    """The first document number in ``title`` that starts with one of ``prefixes`` (``PO-0001234``, ``VI-0004321``)."""
    return next((w for w in title.split() if w[:3] in prefixes and w[3:].isascii() and w[3:].isdigit()), None)


def _sample(kit: Kit) -> Generator[Step, Any, tuple[list[dict[str, Any]], dict[str, str], dict[str, str],
                                                      dict[str, dict[str, Any]]]]:
    """The vouching sample: documents, invoice reference -> doc id, PO number -> doc id, and the sampled entries."""
    docs = yield from kit.documents()
    pos, refs = {}, {}
    for d in docs:
        po = _number_in(d["title"], ("PO-",)) if d["doc_type"] == "purchase_order" else None
        if po:
            pos[po] = d["doc_id"]
        ref = _number_in(d["title"], ("VI-", "VN-")) if d["doc_type"] == "invoice" else None
        if ref:
            refs[ref] = d["doc_id"]
    entries = {}
    if refs:
        rows = yield from kit.ledger(filters=[{"column": "reference", "op": "in", "value": sorted(refs)}],
                                     columns=["entry_id", "line_no", "reference", "account", "debit", "credit",
                                              "vendor_id"])
        ents = entries_of(sorted(rows, key=lambda r: (r["entry_id"], r["line_no"])))
        entries = {x["reference"]: x for x in ents.values()}
    return docs, refs, pos, entries


def _policy_doc(docs: list[dict[str, Any]]) -> str | None:
    pol = sorted((d for d in docs if d["doc_type"] == "policy"),
                 key=lambda d: ("procurement" not in d["title"].lower(), d["doc_id"]))
    return pol[0]["doc_id"] if pol else None


Terms = tuple[float, float, dict[str, set[str]], dict[str, str], dict[str, str]]


def _policy_terms(body: str) -> Terms:
    """(tolerance %, cap USD, category -> accounts it may post, category -> its cost account, category -> its line
    of business, as the coding guide words it) from the policy."""
    p = POLICY.parse(body)
    if p is None:
        return 0.0, 0.0, {}, {}, {}
    allowed = {g.category: {g.main, *(a.text for a in g.also)} for g in p.guide}
    main, line = {g.category: g.main for g in p.guide}, {g.category: g.what for g in p.guide}
    return float(p.pct), p.cap / 100, allowed, main, line


def _vouch(kit: Kit, inv_doc: str,
           pos: dict[str, str]) -> Generator[Step, Any, tuple[Invoice | None, str | None, Order | None]]:
    """Open an invoice and its PO; returns (the invoice, the PO's doc id, the PO)."""
    inv: Invoice | None = parse_any((yield from kit.open(inv_doc)).get("body", ""), (INVOICE, ADJUSTED_INVOICE))
    po_no = inv.po if inv else None
    po_doc = pos.get(po_no) if po_no else None
    if po_doc is None and po_no and kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query=f"purchase order {po_no}")).get("documents", [])
        po_doc = hits[0]["doc_id"] if hits else None
    po = parse_any((yield from kit.open(po_doc)).get("body", ""), (GOODS_ORDER, SERVICE_ORDER)) if po_doc else None
    return inv, po_doc, po


def _received(po: Order | None) -> int | None:
    """The quantity the PO history shows received (None where it lists no goods receipt)."""
    return sum(r.qty for r in po.receipts) if isinstance(po, GoodsOrder) and po.receipts else None


@dataclass
class _Case:
    """One sampled invoice as vouched: its entry, the invoice and its PO as read, the vendor master's row."""
    ent: dict[str, Any]
    ref: str
    inv_doc: str
    inv: Invoice
    po_doc: str | None
    po: Order | None
    v: dict[str, Any]
    ev_pol: list[str]

    @property
    def eid(self) -> str:
        return str(self.ent["entry_id"])

    @property
    def ev(self) -> list[str]:
        return [self.inv_doc] + ([self.po_doc] if self.po_doc else [])


def _on_its_face(k: _Case, allowed: dict[str, set[str]]) -> Disposition | None:
    """The naive reading: a flag where the documents disagree on their face (payee, coding, PO total, receipts)."""
    inv, po, ev, accounts = k.inv, k.po, k.ev, set(k.ent["accounts"])
    off = accounts - allowed.get(str(k.v.get("category", "")), accounts)
    why = None
    if inv.bank and inv.bank != k.v.get("bank_account"):
        why, ev = "bank account differs from the vendor master", ev + ["master:vendors"]
    elif off:
        why, ev = f"posted to {', '.join(sorted(off))}, outside the vendor's category", ev + ["master:vendors"]
    elif po is not None and inv.total / 100 > po.value / 100 + 0.004:
        why = f"total {inv.total / 100:.2f} exceeds PO total {po.value / 100:.2f}"
    elif po is not None and (got := _received(po)) is not None and got < po.qty:
        why = f"PO {inv.po} received {got} of {po.qty} ordered"
    return flag(k.eid, CODE, ev, f"Entry {k.eid}: invoice {k.ref} {why}.") if why else None


def naive(kit: Kit) -> Generator[Step, Any, None]:
    """Flags every invoice whose documents disagree on their face: payable to another bank account than the
    master's, coded outside its vendor's category, above its PO total, or against an order received short. It
    reads neither the policy's tolerance, the vendor change log nor the quantity invoiced."""
    docs, refs, pos, entries = yield from _sample(kit)
    policy = _policy_doc(docs)
    allowed = _policy_terms((yield from kit.open(policy)).get("body", ""))[2] if policy else {}
    vendors = {v["vendor_id"]: v for v in (yield from kit.master("vendors"))}

    def decide(ref: str) -> Generator[Step, Any, Disposition | None]:
        inv, po_doc, po = yield from _vouch(kit, refs[ref], pos)
        if inv is None:
            return None
        return _on_its_face(_Case(entries[ref], ref, refs[ref], inv, po_doc, po, vendors.get(inv.vendor_id, {}), []),
                            allowed)

    done = yield from review(kit, takewhile(lambda r: r in entries, sorted(refs)), decide, reserve=4)
    yield from kit.submit(f"Flagged {len(done)} invoices that do not match their PO or vendor master.")


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy, vouches each sampled invoice to its PO (and its goods receipts), the vendor master and the
    change log, and checks the coding; flags what the policy forbids, clears the rest with the facts (invoices at
    or below the order price, clean either way, last, with the calls that are left)."""
    docs, refs, pos, entries = yield from _sample(kit)
    policy = _policy_doc(docs)
    terms = _policy_terms((yield from kit.open(policy)).get("body", "")) if policy else (0.0, 0.0, {}, {}, {})
    vendors = {v["vendor_id"]: v for v in (yield from kit.master("vendors"))}
    log = [r for r in (yield from kit.master("vendor_changes")) if r.get("field") == "bank_account"]
    later: list[Disposition] = []

    def decide(ref: str) -> Generator[Step, Any, Disposition | None]:
        ent = entries[ref]
        inv, po_doc, po = yield from _vouch(kit, refs[ref], pos)
        if inv is None:
            return None
        k = _Case(ent, ref, refs[ref], inv, po_doc, po, vendors.get(inv.vendor_id or ent.get("vendor_id"), {}),
                  [policy] if policy else [])
        return _payee(k, log) or _coding(k, terms) or _quantity(k) or _price(k, terms, later)

    flags, clears = tally((yield from review(kit, [r for r in sorted(refs) if r in entries], decide, reserve=4,
                                             reads=lambda ref: [("open_document", {"doc_id": refs[ref]})])))
    clears += yield from dispose(kit, later, reserve=2)
    yield from kit.submit(f"Vouched {len(refs)} invoices to PO, goods receipts, vendor master and change log: "
                          f"{flags} flagged, {clears} cleared.")


def _payee(k: _Case, log: list[dict[str, Any]]) -> Disposition | None:
    """Section 5.2: an invoice payable to another account than the master's is cleared only by a logged change."""
    inv, master_bank, eid = k.inv, k.v.get("bank_account"), k.eid
    if not (inv.bank and master_bank and inv.bank != master_bank):
        return None
    change = [r for r in log if r["vendor_id"] == k.v["vendor_id"] and r["old_value"] == inv.bank
              and r["new_value"] == master_bank and r["changed_on"] >= inv.date]
    if change:
        r = change[0]
        return clear(eid, [k.inv_doc, "master:vendors", "master:vendor_changes"],
                     f"Entry {eid}: invoice {k.ref} ({k.inv_doc}) dated {inv.date} names account {inv.bank}, the "
                     f"vendor's account until {r['changed_on']}, when the vendor change log records its replacement by "
                     f"{master_bank} ({r.get('verification') or 'logged change'}); payment follows the master, so no "
                     "exception.")
    return flag(eid, CODE, [k.inv_doc, "master:vendors", "master:vendor_changes", *k.ev_pol],
                f"Entry {eid}: invoice {k.ref} ({k.inv_doc}) asks for payment to bank account {inv.bank}, but the "
                f"vendor master holds {master_bank} for {k.v['vendor_id']} and no change is logged; section 5.2 "
                f"forbids paying to it. Payment-diversion red flag: the exposure is a fraudulent payment of "
                f"{inv.total / 100:.2f}; the expense itself is not misstated.")


def _coding(k: _Case, terms: Terms) -> Disposition | None:
    """Section 6: an account outside the vendor's category is allowed only where the PO assigns it, for work of
    the vendor's line of business (the coding guide's words for its category)."""
    _pct, _cap, allowed, main, line = terms
    cat, eid, v = k.v.get("category", ""), k.eid, k.v
    off = sorted(set(k.ent["accounts"]) - allowed.get(cat, set(k.ent["accounts"])))
    if not off:
        return None
    assign = k.po.account if isinstance(k.po, ServiceOrder) else None
    work = k.po.what if k.po is not None else ""
    fits = bool(line.get(cat)) and work.startswith(f"{line.get(cat)}: ")
    head = f"Entry {eid}: invoice {k.ref} ({k.inv_doc}) of {v.get('vendor_id')}, a {cat} vendor, is posted to account"
    po = f"PO {k.inv.po} ({k.po_doc})"
    if off == [assign] and fits:
        return clear(eid, k.ev + ["master:vendors", *k.ev_pol],
                     f"{head} {off[0]}, outside the coding guide's accounts for {cat}, but {po} orders work of the "
                     f"vendor's line ({work}) and assigns it to {off[0]}; section 6 lets an ordered service post to "
                     "its PO's account: no exception.")
    if off == [assign]:
        why = (f"{po} assigns it there, but orders '{work}', outside the line of business of a {cat} vendor "
               f"('{line.get(cat, '?')}'), so section 6 gives the assignment no effect")
    else:
        why = f"{po} assigns the order to {assign}" if assign else "no PO assigns it"
    return flag(eid, CODE, k.ev + ["master:vendors", *k.ev_pol],
                f"{head} {off[0]}; the coding guide (section 6) gives {cat} account {main.get(cat, '?')}; {why}: "
                f"{k.ent['total_debit']:.2f} is misclassified.")


def _quantity(k: _Case) -> Disposition | None:
    """Section 5.0: no more units billed than the PO history shows received."""
    got = _received(k.po)
    if got is None or k.inv.qty <= got or k.po is None:
        return None
    return flag(k.eid, CODE, k.ev + [*k.ev_pol],
                f"Entry {k.eid}: invoice {k.ref} bills {k.inv.qty} units but the PO history of {k.inv.po} ({k.po_doc}) "
                f"shows {got} received; section 5.0 forbids paying for more: "
                f"{(k.inv.qty - got) * (k.po.price / 100 or 0):.2f} billed for goods never received.")


def _price(k: _Case, terms: Terms, later: list[Disposition]) -> Disposition | None:
    """Section 5.1: the invoice against the order value of the quantity invoiced and the tolerance; a short
    delivery billed as received is cleared; an invoice at or below the order price goes to ``later``."""
    pct, cap = terms[:2]
    inv, po, eid, ev = k.inv, k.po, k.eid, k.ev
    if po is None:
        return None
    total, qty = inv.total / 100, inv.qty or 1
    ov_cents = round(qty * (po.price / 100) * 100)
    tol = int(min(ov_cents * pct // 100, round(cap * 100))) / 100
    order_value = ov_cents / 100
    excess = round(total - order_value, 2)
    of_po = f"order value {order_value:.2f} of PO {inv.po} ({k.po_doc})"
    terms_text = f"the tolerance of {tol:.2f} ({pct:g}% or USD {cap:.2f}, whichever is lower)"
    if excess > tol + 0.004:
        return flag(eid, CODE, ev + [*k.ev_pol], f"Entry {eid}: invoice {k.ref} total {total:.2f} exceeds the "
                    f"{of_po} by {excess:.2f}, above {terms_text}; the excess was posted without a PO change.")
    if excess > 0.004:
        return clear(eid, ev + [*k.ev_pol], f"Entry {eid}: invoice {k.ref} total {total:.2f} exceeds the {of_po} by "
                     f"{excess:.2f}, within {terms_text}; quantity within what was received, payee and coding agree "
                     "with the master.")
    got = _received(po)
    if got is not None and got < po.qty:
        return clear(eid, ev + [*k.ev_pol], f"Entry {eid}: PO {inv.po} ({k.po_doc}) ordered {po.qty} units and its "
                     f"history shows {got} received; invoice {k.ref} bills {inv.qty} at the order price ({total:.2f}), "
                     "so it pays only for what arrived (sections 5.0 and 6): no exception.")
    later.append(clear(eid, ev + ["master:vendors"], f"Entry {eid}: invoice {k.ref} total {total:.2f} does not "
                       f"exceed the {of_po}; payee and coding agree with the master."))
    return None


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="the invoice against its purchase order and goods receipts (price within the policy's tolerance, "
                     "quantity within what was received), its remittance account against the vendor master and the "
                     "change log, and the account posted against the coding guide or the PO's account assignment")
