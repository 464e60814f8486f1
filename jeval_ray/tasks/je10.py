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
  guide does not allow for its vendor's category and its PO does not assign (the PO orders the
  vendor's own category's work, assigned to that category's account); the ERP's description names the
  account posted. Required evidence: invoice, purchase order, ``master:vendors``, policy.
  Misstatement: the amount posted to the wrong account. Decisive facts: the invoice (document), the
  account posted, the vendor's category and the account the guide gives it.

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
  invoice, to the cost account of another two-way category, because the buyer ordered that
  category's work from the vendor: the PO, approved before the invoice, describes that work and
  assigns the order to that account, the invoice bills it, and the policy lets an ordered service post
  to its PO's account. Cleared by the invoice, the PO, ``master:vendors`` and the policy. Decisive
  facts: the PO (document), the account posted and the vendor's category. The pairs (category
  billed, account posted) of misclassified and PO-coded invoices are drawn alike, so that each account
  is posted as often as the sampled two-way invoices post it.
* **bank change verified** (a two-way invoice; no other invoice of its vendor dated before the
  change is in the sample, and no two of these share a vendor): the invoice asks for payment to an
  account that differs from the vendor master, because the vendor moved banks after issuing it;
  ``master:vendor_changes`` logs the change (old account = the one on the invoice, dated after the
  invoice, verified by call-back) and the vendor master holds the new account. Cleared by the
  invoice, ``master:vendors`` and ``master:vendor_changes``. Decisive facts: the invoice
  (document), the old and the new account and the date of the change.

Every defect kind has a decoy kind of the same face on the listing (price over PO and a tolerated
price difference, quantity over receipt and a short delivery billed as received, payee and verified
bank change, misclassified and PO-coded), drawn from the same invoices in the same numbers on
average, and a defect of a decoy's kind is drawn at the decoy's amounts: a price defect's invoice is
the one whose total as planted is nearest the total of an invoice drawn and planted as a price
decoy, a quantity defect's (the whole order) nearest what a short delivery billed as received comes
to. Defects and decoys thus share the amounts, document types, accounts, price-variance lines and
line counts of the listing; what decides them is in the invoice, the PO and its history, the vendor
master and the change log.

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

import re

import numpy as np

from jeval_ray.protocol.kit import Kit, entries_of
from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.builder.spec import key, spec

SPEC = spec(
    "JE-10",
    "L3",
    'Three-way match',
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
        ('THREE_WAY_MISMATCH', 'the invoice as posted is not supported by its purchase order, goods receipts and the vendor master as the policy requires'),
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
        evidence="the vendor's invoice, its purchase order (account assignment), the vendor master (category) and "
                 "the policy's coding guide",
        facts="the account the entry posted; the vendor's category; the account the coding guide gives that category, "
              "which is also the PO's account assignment",
        conclusion="The invoice is posted to an account neither its vendor's category nor its PO allows: the "
                   "expense is misclassified (misstatement = the amount posted to the wrong account).",
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
        evidence="the vendor's invoice, its purchase order (account assignment), the vendor master and the policy",
        facts="the account the entry posted, outside the vendor's category; the PO, approved before the invoice, "
              "orders that category's work and assigns it to that account; the invoice bills that work",
        conclusion="The buyer ordered another category's work from this vendor and assigned it to that account; "
                   "section 6 lets an ordered service post to its PO's account: no exception.",
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
#: the menus the company's price tolerance is set from (a percentage of the order value, a USD cap)
_PCTS = (3.0, 5.0, 7.5, 10.0, 15.0)
_CAPS = (500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000)
_BANKS = ("First Coastal Bank", "Lakeshore National Bank", "Summit Trust", "Pacific Commerce Bank")
#: categories bought on a purchase order without a goods receipt (two-way match) and their cost accounts
_TWO_WAY = tuple(c.name for c in md.CATEGORIES if c.flow == "two_way")
_MONEY = r"USD (-?[\d,]+\.\d\d)"


def _usd(cents: int) -> str:
    return f"USD {cents / 100:,.2f}"


def _tolerance_cents(order_value: int, pct: float, cap_usd: int) -> int:
    """The tolerated price difference over an order value: pct of it or the cap, whichever is lower (cents, down)."""
    return int(min(order_value * pct // 100, cap_usd * 100))


def cost_account(category: str) -> str:
    """The account a category's goods receipts or invoices debit (the coding guide's first account)."""
    return chart.ACCOUNTS[chart.idx(md.CATEGORIES[md.CATEGORY[category]].account)].code


def allowed_codes(category: str) -> list[str]:
    return sorted(chart.ACCOUNTS[i].code for i in md.ALLOWED_ACCOUNTS[category])


def _coding_guide() -> str:
    lines = []
    for c in md.CATEGORIES:
        main = cost_account(c.name)
        rest = [a for a in allowed_codes(c.name) if a != main]
        lines.append(f"  - {c.name} ({c.what}): {main} {chart.ACCOUNTS[chart.CODE[main]].name}; also {', '.join(rest)}")
    return "\n".join(lines)


def natural_variances(b) -> tuple[np.ndarray, np.ndarray]:
    """(order value, price difference) in cents of every matched invoice the books posted in the year."""
    d = b.books.docs
    docs = b.e.peek("books_doc")[b.e.peek("doc_code") == "VI"]
    return d.amount[docs].astype(np.int64), d.variance[docs].astype(np.int64)


def _policy_tolerance(b) -> tuple[float, int]:
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

    def __init__(self, b):
        d = b.books.docs
        self.d = d
        self.entry_of = np.full(len(d), -1, dtype=np.int64)
        self.entry_of[b.e.peek("books_doc")] = np.arange(b.n)
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


def plant(b) -> None:
    """Plant price, quantity, payee and coding exceptions into sampled AP invoices, their look-alikes and clean items."""
    rng = b.rng
    e = b.e
    ch = _Chains(b)
    d = ch.d
    near = b.knobs.near_miss
    pct, cap = _policy_tolerance(b)
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 3 Purchase orders. Goods and ordered services are bought on an approved purchase order (PO) "
        "raised in the ERP before the order is placed; recurring fees and utility, professional, office and travel "
        "bills are invoiced without one.\n"
        "Section 5 Matching. Accounts payable posts a vendor invoice only when it agrees with the approved PO and, for "
        "goods, with the goods receipts recorded against it (shown in the PO history):\n"
        "  5.0 Quantity: the quantity invoiced may not exceed the quantity received.\n"
        "  5.1 Price: the invoice may exceed the PO price of the quantity invoiced by no more than "
        f"{pct:g}% of that order value or USD {cap:,.2f}, whichever is lower. Such small differences (surcharges, "
        "rounding) are posted to 5100 Purchase Price Variance without further approval; any larger excess requires "
        "an approved PO change before the invoice is posted. Invoices below the PO price are posted as invoiced.\n"
        "  5.2 Payee: payment is made only to the bank account held in the vendor master. Remittance details on an "
        "invoice that differ from the vendor master must not be used; bank changes go through the vendor change "
        "procedure with call-back verification and are logged in the vendor change log.\n"
        "Section 6 Coding. A vendor's documents post only to the accounts of its category in the vendor master, "
        "except that an ordered service posts to the account its approved PO assigns it to (the PO's account "
        "assignment, set by the buyer when the order is for another category's work):\n"
        + _coding_guide(),
        "2024-10-01",
    )
    vendors = {v["vendor_id"]: v for v in b.vendors}
    docs = e.peek("books_doc")
    # per entry: its vendor's category (-1 without a vendor) and its approver's limit (0 without one)
    cat = np.where(e.peek("vendor_id") != "", b.books.master.vendor_category[np.maximum(d.partner[docs], 0)], -1)
    appr_limit = np.array([u.approval_limit_cents for u in md.USERS] + [0], dtype=np.int64)[d.approver[docs]]
    var = d.variance[docs]
    amt = d.amount[docs]
    vi = (e.peek("doc_code") == "VI") & np.isin(cat, [md.CATEGORY["raw_materials"], md.CATEGORY["capex"]])
    raw_vi = vi & (cat == md.CATEGORY["raw_materials"])
    two_way = (e.peek("doc_code") == "VN") & (d.parent[docs] >= 0) & np.isin(cat, [md.CATEGORY[c] for c in _TWO_WAY])
    # room under the approver's limit for the largest price adjustment planted (30 % of the order value)
    room = appr_limit >= (amt * 13 // 10 + np.abs(var) + 100)
    parent = d.parent[docs]
    # matched invoices whose goods receipts in the books add up to what was invoiced
    po_of = np.maximum(parent, 0)
    recv = np.bincount(ch.gr_parent, weights=d.amount[ch.gr], minlength=len(d)).astype(np.int64)[po_of]
    vi &= (parent >= 0) & (recv == amt)
    raw_vi &= vi
    # orders received whole in one goods receipt posted in the year (the receipt a short delivery changes)
    first_gr = ch.gr[np.minimum(np.searchsorted(ch.gr_parent, po_of), len(ch.gr) - 1)]
    whole = ch.single_receipt()[po_of]
    qty_ok = raw_vi & (var == 0) & whole & (d.quantity[po_of] >= 3) & (ch.entry_of[first_gr] >= 0)
    # invoices whose amount a plant changes (price differences, short deliveries) are paid whole or not in the year
    settles = ch.paid_whole_or_not()[docs]
    qty_ok &= settles
    # orders received short of what was ordered stay out of the clean items (a shortage is for the planted pairs)
    received_all = np.bincount(ch.gr_parent, weights=d.quantity[ch.gr], minlength=len(d)).astype(np.int64)[po_of]
    complete = received_all == d.quantity[po_of]
    n = b.n_defects
    kinds = ("price", "qty", "bank", "mis")
    order = rng.permutation(len(kinds))
    types = [kinds[order[i % len(kinds)]] for i in range(n)]
    decoy_kinds = ("price", "bank", "short", "coded")
    order = rng.permutation(len(decoy_kinds))
    decoy_types = [decoy_kinds[order[i % len(decoy_kinds)]] for i in range(b.n_decoys)]
    spare = (SPEC.step_budget - 10 - 3 * (n + b.n_decoys)) // 3
    n_clean = max(0, min(int(rng.integers(2, 5)), spare))

    sampled_vendors: set[str] = set()
    sampled_partners: set[int] = set()
    partner = np.where(cat >= 0, d.partner[docs], -1)  # the vendor's index, -1 for entries without one
    #: vendors whose bank changed: their invoices dated up to the change name the old account, so none joins the sample
    locked = np.zeros(b.n, dtype=bool)

    def take(k: int, where: np.ndarray, what: str, fresh_vendor: bool = False) -> list[int]:
        out = []
        for _ in range(k):
            mask = where & ~locked
            if fresh_vendor:
                mask &= ~np.isin(partner, sorted(sampled_partners))
            i = int(b.pick(1, mask, what=what)[0])
            out.append(i)
            sampled_vendors.add(str(e.peek("vendor_id")[i]))
            sampled_partners.add(int(partner[i]))
        return out

    bank_dec = take(decoy_types.count("bank"), two_way, "two-way invoices of distinct vendors", fresh_vendor=True)
    changed_on = {}
    for idx in bank_dec:
        when = cal.business_offset(e.peek("doc_date")[idx] + int(rng.integers(2, 20)), 0)
        changed_on[idx] = min(when, np.datetime64("2025-12-31"))
        locked |= (partner == partner[idx]) & (e.peek("doc_date") <= changed_on[idx])
    # A misclassified invoice (a defect) and one coded per its PO's account assignment (a decoy) look alike on
    # the listing: a two-way vendor posting to another two-way category's account. Both are drawn the same
    # way: the pairs (category billed, account posted) are drawn so that each account is posted as often as
    # the two-way invoices of the sample post it (half a turn of the categories' shares, which lands on another
    # category while no share is half of them; where one is, the next category).
    def miscoded(what: str) -> tuple[int, str]:
        cats = np.array([md.CATEGORY[c] for c in _TWO_WAY])
        counts = np.array([np.count_nonzero(two_way & ~b.used & ~locked & (cat == c)) for c in cats], dtype=float)
        if counts.sum() == 0:
            take(1, two_way, what)  # raises the builder's error: no two-way invoice is left
        edges = np.cumsum(counts / counts.sum())
        u = float(rng.uniform())
        src = min(int(np.searchsorted(edges, u, side="right")), len(cats) - 1)
        dst = min(int(np.searchsorted(edges, (u + 0.5) % 1.0, side="right")), len(cats) - 1)
        if dst == src:
            dst = (src + 1) % len(cats)
        return take(1, two_way & (cat == cats[src]), what)[0], cost_account(_TWO_WAY[dst])

    mis = [miscoded("two-way vendor invoices") for _ in range(types.count("mis"))]
    coded = [miscoded("two-way vendor invoices") for _ in range(decoy_types.count("coded"))]
    # A payee defect is a two-way invoice, as a bank-change decoy is, so that every face of the listing (two-way,
    # two-way coded elsewhere, matched with and without a price-variance line) holds defects and decoys alike;
    # a small year that runs out of two-way invoices gives the rest a matched invoice's face (a tolerated price
    # difference, a short delivery billed as received), where price and quantity break no rule.
    spare = int(np.count_nonzero(two_way & ~b.used & ~locked))
    bank_faces = ["two_way" if k < spare else ("price", "short")[k % 2] for k in range(types.count("bank"))]
    price_pool = raw_vi & room & (var <= 0) & settles
    price_dec = take(decoy_types.count("price"), price_pool, "matched vendor invoices")
    bank_price = take(bank_faces.count("price"), price_pool, "matched vendor invoices")
    short_dec = take(decoy_types.count("short"), qty_ok, "matched invoices of orders received in one delivery")
    bank_short = take(bank_faces.count("short"), qty_ok, "matched invoices of orders received in one delivery")

    def free(where: np.ndarray) -> np.ndarray:
        return np.flatnonzero(where & ~b.used & ~locked)

    def take_nearest(where: np.ndarray, finals, target: int, what: str) -> int:
        """The candidate whose amount as planted (``finals`` of the candidates) is nearest ``target`` (in log)."""
        cand = free(where)
        if not len(cand):
            return take(1, where, what)[0]  # raises the builder's error on too few candidates
        j = int(cand[int(np.argmin(np.abs(np.log(finals(cand)) - np.log(max(target, 1)))))])
        return take(1, np.arange(b.n) == j, what)[0]

    def shadow(where: np.ndarray) -> int:
        """A candidate drawn as a decoy would be (not reserved): the amounts of matched defects follow its."""
        cand = free(where)
        return int(cand[int(rng.integers(len(cand)))]) if len(cand) else -1

    def decoy_price(i, u: float) -> int:
        tol = _tolerance_cents(int(amt[i]), pct, cap)
        return max(1, min(int(tol * u), tol))

    def defect_price(i, u: float):
        tol = np.minimum(amt[i] * pct // 100, cap * 100).astype(np.int64)
        return np.maximum(tol + 100, np.minimum((tol * u).astype(np.int64), amt[i] * 3 // 10))

    def short_units(i: int) -> int:
        return int(rng.integers(1, max(1, int(d.quantity[po_of[i]]) // 3) + 1))

    # defects of a decoy's kind are drawn so that their amounts as planted follow the decoy's: a price
    # defect's total is near the total of an invoice planted as a price decoy, a quantity defect's (the
    # whole order) near what a short delivery billed as received comes to
    price_def, excess_of = [], {}
    for _ in range(types.count("price")):
        c = shadow(price_pool)
        u_dec = float(rng.uniform(0.15 + 0.6 * near, 0.45 + 0.5 * near))
        u_def = float(rng.uniform(1.6, 6.0))
        target = int(amt[c]) + decoy_price(c, u_dec) if c >= 0 else 0
        idx = take_nearest(price_pool, lambda cand: amt[cand] + defect_price(cand, u_def), target,
                           "matched vendor invoices")
        price_def.append(idx)
        excess_of[idx] = int(defect_price(np.array([idx]), u_def)[0])
    qty_def = []
    for _ in range(types.count("qty")):
        c = shadow(qty_ok)
        target = int(amt[c]) - short_units(c) * (int(amt[c]) // int(d.quantity[po_of[c]])) if c >= 0 else 0
        qty_def.append(take_nearest(qty_ok, lambda cand: amt[cand], target,
                                    "matched invoices of orders received in one delivery"))
    bank_two_way = take(bank_faces.count("two_way"), two_way, "two-way vendor invoices")
    picked = {"price": price_def, "qty": qty_def, "bank": bank_two_way + bank_price + bank_short,
              "mis": [i for i, _ in mis]}
    coded_dec = [i for i, _ in coded]
    clean = take(n_clean, (vi & (var <= 0) & complete) | two_way, "sampled vendor invoices")

    remit: dict[int, str] = {}
    received: dict[int, list[tuple[int, int, int]]] = {}  # entry -> goods receipts (gr doc, quantity, cents)
    billed: dict[int, int] = {}  # entry -> quantity invoiced, where a short delivery was planted

    def pay_more(idx: int, cents: int) -> None:
        """The payment run paid the invoice as posted: its last payment in the year carries the change."""
        pays = [int(ch.entry_of[p]) for p in ch.payments(int(docs[idx])) if ch.entry_of[p] >= 0]
        if pays:
            last = max(pays, key=lambda j: (e.peek("post_date")[j], j))
            e["debit_cents"][last] += cents
            e["credit_cents"][last] += cents

    def reprice(idx: int, variance: int) -> None:
        """The invoice billed ``variance`` above the order value: 5100 carries it, the payable follows."""
        dv = variance - int(var[idx])
        b.set_line(idx, "5100", variance)
        e["credit_cents"][idx] += dv
        pay_more(idx, dv)

    def facts_price(idx: int, variance: int) -> tuple[int, int, int]:
        order_value = int(amt[idx])
        return order_value + variance, order_value, _tolerance_cents(order_value, pct, cap)

    for idx in picked["price"]:
        reprice(idx, excess_of[idx])
    for idx in price_dec + bank_price:
        reprice(idx, decoy_price(idx, float(rng.uniform(0.15 + 0.6 * near, 0.45 + 0.5 * near))))
    for idx in picked["qty"] + short_dec + bank_short:
        # the delivery came short: its goods receipt (Dr inventory / Cr GR/IR) is for fewer units
        po = int(d.parent[docs[idx]])
        gr = int(ch.receipts(po)[0])
        q = int(d.quantity[po])
        short = short_units(idx)
        price = int(d.amount[po]) // q
        j = int(ch.entry_of[gr])
        e["debit_cents"][j] -= short * price
        e["credit_cents"][j] -= short * price
        received[idx] = [(gr, q - short, (q - short) * price)]
        billed[idx] = q
    for idx in short_dec + bank_short:
        # ... and the vendor billed, and AP posted and paid, what arrived
        got = received[idx][0][1]
        cut = (billed[idx] - got) * (int(amt[idx]) // billed[idx])
        e["debit_cents"][idx] -= cut
        e["credit_cents"][idx] -= cut
        pay_more(idx, -cut)
        billed[idx] = got
    for idx in picked["bank"]:
        remit[idx] = b.bank_account()
    changes = []
    for idx in bank_dec:
        v = vendors[str(e.peek("vendor_id")[idx])]
        new = b.bank_account()
        remit[idx] = v["bank_account"]
        changes.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": v["bank_account"],
                        "new_value": new, "changed_on": b.date_str(changed_on[idx]), "changed_by": "GSILVA",
                        "verification": "call-back to the vendor's number on file, confirmed by KLEE"})
        v["bank_account"] = new
    for idx, wrong in mis + coded:
        old = str(e["debit_account"][idx])
        e["debit_account"][idx] = wrong
        # the ERP words the entry from the account it was posted to
        e["description"][idx] = str(e["description"][idx]).replace(
            chart.ACCOUNTS[chart.CODE[old]].name.lower(), chart.ACCOUNTS[chart.CODE[wrong]].name.lower())
    # verified bank changes of vendors outside the sample, so the change log is the company's, not the sample's
    outside = [v for v in b.vendors if v["vendor_id"] not in sampled_vendors]
    for k in rng.choice(len(outside), size=min(len(outside), int(rng.integers(2, 5))), replace=False).tolist():
        v = outside[int(k)]
        new = b.bank_account()
        changes.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": v["bank_account"],
                        "new_value": new, "changed_on": str(np.datetime64("2024-11-01") + int(rng.integers(0, 400))),
                        "changed_by": "GSILVA", "verification": "call-back to the vendor's number on file, confirmed by KLEE"})
        v["bank_account"] = new
    b.vendor_changes.extend(sorted(changes, key=lambda r: (r["changed_on"], r["vendor_id"])))

    sample = sorted(set(bank_dec + price_dec + short_dec + coded_dec + clean + [i for v in picked.values() for i in v]))
    assigned = dict(coded)  # a coded decoy's PO assigns the account it was posted to
    handles = {idx: _documents(b, ch, idx, vendors, remit.get(idx), received.get(idx), billed.get(idx),
                               assigned.get(idx)) for idx in sample}
    for idx in picked["price"]:
        inv, po = handles[idx]
        total, order_value, tol = facts_price(idx, int(e["credit_cents"][idx]) - int(amt[idx]))
        b.add_defect(idx, "price_over_po", "THREE_WAY_MISMATCH", [inv, po, policy], total - order_value,
                     facts=[f"{{D:{po}}}", total / 100, order_value / 100, (total - order_value) / 100, tol / 100])
    for idx in picked["qty"]:
        inv, po = handles[idx]
        q = int(d.quantity[d.parent[docs[idx]]])
        got = received[idx][0][1]
        b.add_defect(idx, "quantity_over_receipt", "THREE_WAY_MISMATCH", [inv, po, policy],
                     (q - got) * (int(amt[idx]) // q), facts=[f"{{D:{po}}}", q, got])
    for idx in picked["bank"]:
        inv, _po = handles[idx]
        b.add_defect(idx, "bank_account_mismatch", "THREE_WAY_MISMATCH",
                     [inv, "master:vendors", "master:vendor_changes", policy], 0,
                     facts=[f"{{D:{inv}}}", remit[idx], vendors[str(e.peek("vendor_id")[idx])]["bank_account"]])
    for idx in picked["mis"]:
        inv, po = handles[idx]
        c = md.CATEGORIES[cat[idx]].name
        b.add_defect(idx, "misclassified_account", "THREE_WAY_MISMATCH", [inv, po, "master:vendors", policy],
                     int(e["debit_cents"][idx]), facts=[f"{{D:{inv}}}", str(e["debit_account"][idx]), c, cost_account(c)])
    for idx in price_dec:
        inv, po = handles[idx]
        total, order_value, tol = facts_price(idx, int(e["credit_cents"][idx]) - int(amt[idx]))
        b.add_decoy(idx, "price_variance_within_tolerance", [inv, po, policy],
                    facts=[f"{{D:{po}}}", total / 100, order_value / 100, tol / 100])
    for idx in short_dec:
        inv, po = handles[idx]
        b.add_decoy(idx, "short_delivery_invoiced_as_received", [inv, po, policy],
                    facts=[f"{{D:{po}}}", int(d.quantity[d.parent[docs[idx]]]), billed[idx]])
    for idx, ch_row in zip(bank_dec, changes):
        inv, _po = handles[idx]
        b.add_decoy(idx, "bank_change_verified", [inv, "master:vendors", "master:vendor_changes"],
                    facts=[f"{{D:{inv}}}", ch_row["old_value"], ch_row["new_value"], ch_row["changed_on"]])
    for idx in coded_dec:
        inv, po = handles[idx]
        b.add_decoy(idx, "coded_per_po_assignment", [inv, po, "master:vendors", policy],
                    facts=[f"{{D:{po}}}", str(e["debit_account"][idx]), md.CATEGORIES[cat[idx]].name])
    refs = ", ".join(sorted(str(e["reference"][i]) for i in sample))
    b.add_document(
        "memo", "PBC list - accounts payable vouching sample",
        "Provided by client (PBC) for the FY2025 audit. As requested in the audit request list, Accounts Payable has "
        f"provided the vendor invoice and the approved purchase order (with its history) for each of the {len(sample)} "
        f"AP invoices the auditors selected for matching: {refs}. Vendor bank details are maintained in the vendor "
        "master only; changes are in the vendor change log. Invoices outside the selection were not requested.",
        "2026-01-20",
    )


def _documents(b, ch: _Chains, idx: int, vendors: dict, remit: str | None,
               received: list[tuple[int, int, int]] | None, billed: int | None,
               assigned: str | None = None) -> tuple[int, int | None]:
    """Add the vendor's invoice behind entry ``idx`` and its purchase order with the PO history; returns their handles.

    Every figure is the entry's or the books' own: the invoice's order value and price adjustment are the
    entry's GR/IR (or cost) and 5100 lines, the PO's quantity and price the order's, the history the goods
    receipts as recorded (``received`` overrides them where a short delivery was planted). A two-way PO
    states its account assignment: the vendor category's cost account, or ``assigned`` where the buyer
    ordered another category's work (a coded decoy)."""
    e, d = b.e, ch.d
    doc = int(e.peek("books_doc")[idx])
    v = vendors[str(e.peek("vendor_id")[idx])]
    what = md.CATEGORIES[md.CATEGORY[v["category"]]].what
    if assigned:  # the order was for another category's work: the PO and the invoice describe that work
        what = next(c.what for c in md.CATEGORIES if c.flow == "two_way" and cost_account(c.name) == assigned)
    po = int(d.parent[doc])
    code = str(e.peek("doc_code")[idx])
    ref = str(e["reference"][idx])
    variance = sum(v for a, v in b.lines_of(idx) if a == "5100") if code == "VI" else 0
    if code == "VI":
        q = billed if billed is not None else int(sum(int(d.quantity[g]) for g in ch.receipts(po)))
        price = int(d.amount[po]) // int(d.quantity[po])
        total = q * price + variance
        line = f"Line 1: {what} - quantity {q} at {_usd(price)} each = {_usd(q * price)}"
    else:
        total = int(e["debit_cents"][idx])
        line = f"Line 1: {what} per order - quantity 1 at {_usd(total)} each = {_usd(total)}"
    lines = [line]
    if variance:
        lines.append(f"Line 2: price adjustment = {_usd(variance)}")
    bank = remit or v["bank_account"]
    bank_name = _BANKS[int(bank[-1]) % len(_BANKS)]
    prep = md.USERS[int(d.preparer[doc])]
    appr = md.USERS[int(d.approver[doc])]
    body = (
        f"INVOICE {int(d.ext_ref[doc])}\n"
        f"From: {v['name']} (our vendor no. {v['vendor_id']})\n"
        f"Bill to: {b.facts['company_name']}, Accounts Payable\n"
        f"Invoice date: {md.iso(d.doc_date[doc])}    Due date: {md.iso(d.due_date[doc])}\n"
        + (f"Your purchase order: PO-{po:07d}\n" if po >= 0 else "")
        + "\n".join(lines) + "\n"
        f"Invoice total: {_usd(total)}\n"
        f"Remit payment to: {bank_name}, account {bank}\n"
        f"AP stamp: posted as {ref} on {b.date_str(e['post_date'][idx])} by {prep.name} ({prep.user_id}); "
        f"approved by {appr.name} ({appr.user_id}) on {md.iso(d.approved_on[doc])}."
    )
    inv = b.add_document("invoice", f"Vendor invoice {ref} - {v['name']}", body, md.iso(d.doc_date[doc]))
    if po < 0:
        return inv, None
    qty = int(d.quantity[po])
    price = int(d.amount[po]) // qty
    buyer = md.USERS[int(d.preparer[po])]
    papp = md.USERS[int(d.approver[po])]
    if code == "VI":
        grs = received or [(int(g), int(d.quantity[g]), int(d.amount[g])) for g in ch.receipts(po)]
        history = "; ".join(f"goods receipt GR-{g:07d} posted {md.iso(d.post_date[g])}, quantity {gq} received "
                            f"({_usd(gc)})" for g, gq, gc in grs)
        assignment = ""
    else:
        history = "no goods receipt (services ordered; matched two-way to the invoice)"
        # the buyer's account assignment: the vendor category's cost account unless the order was for other work
        acct = assigned or cost_account(v["category"])
        assignment = f"Account assignment: {acct} {chart.ACCOUNTS[chart.CODE[acct]].name}\n"
    po_body = (
        f"PURCHASE ORDER PO-{po:07d}\n"
        f"Vendor: {v['name']} (vendor no. {v['vendor_id']})\n"
        f"Order date: {md.iso(d.doc_date[po])}\n"
        f"Line 1: {what} - quantity {qty} at {_usd(price)} each = {_usd(qty * price)}\n"
        f"PO total: {_usd(qty * price)}\n"
        + assignment +
        f"Raised by {buyer.name} ({buyer.user_id}); approved in ERP by {papp.name} ({papp.user_id}) on "
        f"{md.iso(d.approved_on[po])}.\n"
        f"PO history: {history}."
    )
    pod = b.add_document("purchase_order", f"Purchase order PO-{po:07d} - {v['name']}", po_body, md.iso(d.doc_date[po]))
    return inv, pod


# ----------------------------------------------------------------------------- strategies
def _money(pattern: str, text: str) -> float | None:
    m = re.search(pattern + r"\s*" + _MONEY, text)
    return float(m.group(1).replace(",", "")) if m else None


def _parse_invoice(body: str) -> dict:
    po = re.search(r"purchase order:\s*(PO-\d+)", body)
    vid = re.search(r"vendor no\. (V\d+)", body)
    bank = re.search(r"Remit payment to:.*account (\S+)", body)
    line = re.search(r"Line 1: .* - quantity (\d+) at " + _MONEY, body)
    date = re.search(r"Invoice date: (\d{4}-\d\d-\d\d)", body)
    return {"qty": int(line.group(1)) if line else None, "price": float(line.group(2).replace(",", "")) if line else None,
            "po": po.group(1) if po else None, "vendor_id": vid.group(1) if vid else None,
            "total": _money("Invoice total:", body), "bank": bank.group(1) if bank else None,
            "date": date.group(1) if date else ""}


def _parse_po(body: str) -> dict:
    line = re.search(r"quantity (\d+) at " + _MONEY, body)
    got = re.findall(r"quantity (\d+) received", body)
    assign = re.search(r"Account assignment: (\d{4})", body)
    return {"qty": int(line.group(1)) if line else None, "price": float(line.group(2).replace(",", "")) if line else None,
            "total": _money("PO total:", body), "received": sum(map(int, got)) if got else None,
            "assign": assign.group(1) if assign else None}


def _sample(kit: Kit):
    """The vouching sample: documents, invoice reference -> doc id, PO number -> doc id, and the sampled entries."""
    docs = yield from kit.documents()
    pos, refs = {}, {}
    for d in docs:
        m = re.search(r"\bPO-\d+", d["title"]) if d["doc_type"] == "purchase_order" else None
        if m:
            pos[m.group(0)] = d["doc_id"]
        m = re.search(r"\bV[IN]-\d+", d["title"]) if d["doc_type"] == "invoice" else None
        if m:
            refs[m.group(0)] = d["doc_id"]
    entries = {}
    if refs:
        rows = yield from kit.ledger(filters=[{"column": "reference", "op": "in", "value": sorted(refs)}],
                                     columns=["entry_id", "line_no", "reference", "account", "debit", "credit", "vendor_id"])
        entries = {e["reference"]: e for e in entries_of(sorted(rows, key=lambda r: (r["entry_id"], r["line_no"]))).values()}
    return docs, refs, pos, entries


def _vouch(kit: Kit, inv_doc: str, pos: dict):
    """Open an invoice and its PO; returns (invoice fields, PO doc id, PO fields)."""
    inv = _parse_invoice((yield from kit.open(inv_doc)).get("body", ""))
    po_doc = pos.get(inv["po"]) if inv["po"] else None
    if po_doc is None and inv["po"] and kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query=f"purchase order {inv['po']}")).get("documents", [])
        po_doc = hits[0]["doc_id"] if hits else None
    po = _parse_po((yield from kit.open(po_doc)).get("body", "")) if po_doc else {}
    return inv, po_doc, po


def naive(kit: Kit):
    """Flags every invoice whose documents disagree on their face: payable to another bank account than the
    master's, coded outside its vendor's category, above its PO total, or against an order received short. It
    reads neither the policy's tolerance, the vendor change log nor the quantity invoiced."""
    docs, refs, pos, entries = yield from _sample(kit)
    pol = sorted((d for d in docs if d["doc_type"] == "policy"), key=lambda d: ("procurement" not in d["title"].lower(), d["doc_id"]))
    allowed = (_policy_terms((yield from kit.open(pol[0]["doc_id"])).get("body", ""))[2]) if pol else {}
    vendors = {v["vendor_id"]: v for v in (yield from kit.master("vendors"))}
    n = 0
    for ref, inv_doc in sorted(refs.items()):
        if kit.calls_left <= 4 or ref not in entries:
            break
        inv, po_doc, po = yield from _vouch(kit, inv_doc, pos)
        eid = entries[ref]["entry_id"]
        ev = [inv_doc] + ([po_doc] if po_doc else [])
        v = vendors.get(inv["vendor_id"], {})
        off = set(entries[ref]["accounts"]) - allowed.get(v.get("category"), set(entries[ref]["accounts"]))
        why = None
        if inv["bank"] and inv["bank"] != v.get("bank_account"):
            why, ev = "bank account differs from the vendor master", ev + ["master:vendors"]
        elif off:
            why, ev = f"posted to {', '.join(sorted(off))}, outside the vendor's category", ev + ["master:vendors"]
        elif po.get("total") is not None and inv["total"] is not None and inv["total"] > po["total"] + 0.004:
            why = f"total {inv['total']:.2f} exceeds PO total {po['total']:.2f}"
        elif po.get("received") is not None and po.get("qty") is not None and po["received"] < po["qty"]:
            why = f"PO {inv['po']} received {po['received']} of {po['qty']} ordered"
        if why:
            yield from kit.flag(eid, "THREE_WAY_MISMATCH", ev, f"Entry {eid}: invoice {ref} {why}.")
            n += 1
    yield from kit.submit(f"Flagged {n} invoices that do not match their PO or vendor master.")


def _policy_terms(body: str) -> tuple[float, float, dict[str, set[str]], dict[str, str]]:
    """(tolerance %, cap USD, category -> accounts it may post, category -> its cost account) from the policy."""
    m = re.search(r"no more than ([\d.]+)% of that order value or USD ([\d,]+\.\d\d)", body)
    pct, cap = (float(m.group(1)), float(m.group(2).replace(",", ""))) if m else (0.0, 0.0)
    allowed, main = {}, {}
    for c, rest in re.findall(r"^\s+- ([a-z_]+) \([^)]*\): (.*)$", body, flags=re.M):
        codes = re.findall(r"\b\d{4}\b", rest)
        allowed[c], main[c] = set(codes), codes[0] if codes else ""
    return pct, cap, allowed, main


def careful(kit: Kit):
    """Reads the policy, vouches each sampled invoice to its PO (and its goods receipts), the vendor master and the
    change log, and checks the coding; flags what the policy forbids, clears the rest with the facts."""
    docs, refs, pos, entries = yield from _sample(kit)
    pol = sorted((d for d in docs if d["doc_type"] == "policy"),
                 key=lambda d: ("procurement" not in d["title"].lower(), d["doc_id"]))
    policy = pol[0]["doc_id"] if pol else None
    pct, cap, allowed, main = (0.0, 0.0, {}, {})
    if policy:
        pct, cap, allowed, main = _policy_terms((yield from kit.open(policy)).get("body", ""))
    ev_pol = [policy] if policy else []
    vendors = {v["vendor_id"]: v for v in (yield from kit.master("vendors"))}
    log = [r for r in (yield from kit.master("vendor_changes")) if r.get("field") == "bank_account"]
    flags = clears = 0
    deferred = []
    for ref, inv_doc in sorted(refs.items()):
        if kit.calls_left <= 4 or ref not in entries:
            continue
        ent = entries[ref]
        eid = ent["entry_id"]
        inv, po_doc, po = yield from _vouch(kit, inv_doc, pos)
        ev = [inv_doc] + ([po_doc] if po_doc else [])
        v = vendors.get(inv["vendor_id"] or ent.get("vendor_id"), {})
        master_bank = v.get("bank_account")
        if inv["bank"] and master_bank and inv["bank"] != master_bank:
            change = [r for r in log if r["vendor_id"] == v["vendor_id"] and r["old_value"] == inv["bank"]
                      and r["new_value"] == master_bank and r["changed_on"] >= inv["date"]]
            if change:
                r = change[0]
                yield from kit.clear(
                    eid, [inv_doc, "master:vendors", "master:vendor_changes"],
                    f"Entry {eid}: invoice {ref} ({inv_doc}) dated {inv['date']} names account {inv['bank']}, the vendor's "
                    f"account until {r['changed_on']}, when the vendor change log records its replacement by {master_bank} "
                    f"({r.get('verification') or 'logged change'}); payment follows the master, so no exception.")
                clears += 1
            else:
                yield from kit.flag(
                    eid, "THREE_WAY_MISMATCH", [inv_doc, "master:vendors", "master:vendor_changes", *ev_pol],
                    f"Entry {eid}: invoice {ref} ({inv_doc}) asks for payment to bank account {inv['bank']}, but the vendor "
                    f"master holds {master_bank} for {v['vendor_id']} and no change is logged; section 5.2 forbids paying to "
                    f"it. Payment-diversion red flag: the exposure is a fraudulent payment of {inv['total']:.2f}; the "
                    "expense itself is not misstated.")
                flags += 1
            continue
        cat = v.get("category", "")
        off = sorted(set(ent["accounts"]) - allowed.get(cat, set(ent["accounts"])))
        if off and po.get("assign") and off == [po["assign"]]:
            yield from kit.clear(
                eid, ev + ["master:vendors", *ev_pol],
                f"Entry {eid}: invoice {ref} ({inv_doc}) of {v['vendor_id']}, a {cat} vendor, is posted to account "
                f"{off[0]}, outside the coding guide's accounts for {cat}, but PO {inv['po']} ({po_doc}) assigns the "
                f"order to {off[0]} and section 6 lets an ordered service post to its PO's account: no exception.")
            clears += 1
            continue
        if off:
            assigned = f"; PO {inv['po']} ({po_doc}) assigns the order to {po['assign']}" if po.get("assign") else ""
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + ["master:vendors", *ev_pol],
                f"Entry {eid}: invoice {ref} ({inv_doc}) of {v['vendor_id']}, a {cat} vendor, is posted to account "
                f"{off[0]}; the coding guide (section 6) gives {cat} account {main.get(cat, '?')}{assigned}, so "
                f"{ent['total_debit']:.2f} is misclassified.")
            flags += 1
            continue
        if po.get("received") is not None and inv["qty"] is not None and inv["qty"] > po["received"]:
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + [*ev_pol],
                f"Entry {eid}: invoice {ref} bills {inv['qty']} units but the PO history of {inv['po']} ({po_doc}) shows "
                f"{po['received']} received; section 5.0 forbids paying for more: "
                f"{(inv['qty'] - po['received']) * (po['price'] or 0):.2f} billed for goods never received.")
            flags += 1
            continue
        if not po or inv["total"] is None or po.get("price") is None:
            continue
        qty = inv["qty"] or 1
        ov_cents = round(qty * po["price"] * 100)
        tol = int(min(ov_cents * pct // 100, round(cap * 100))) / 100
        order_value = ov_cents / 100
        excess = round(inv["total"] - order_value, 2)
        if excess > tol + 0.004:
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + [*ev_pol],
                f"Entry {eid}: invoice {ref} total {inv['total']:.2f} exceeds the order value {order_value:.2f} of PO "
                f"{inv['po']} ({po_doc}) by {excess:.2f}, above the tolerance of {tol:.2f} ({pct:g}% or USD {cap:.2f}, "
                "whichever is lower); the excess was posted without a PO change.")
            flags += 1
        elif excess > 0.004:
            yield from kit.clear(
                eid, ev + [*ev_pol],
                f"Entry {eid}: invoice {ref} total {inv['total']:.2f} exceeds the order value {order_value:.2f} of PO "
                f"{inv['po']} ({po_doc}) by {excess:.2f}, within the tolerance of {tol:.2f} ({pct:g}% or USD {cap:.2f}, "
                "whichever is lower); quantity within what was received, payee and coding agree with the master.")
            clears += 1
        elif po.get("received") is not None and po.get("qty") is not None and po["received"] < po["qty"]:
            yield from kit.clear(
                eid, ev + [*ev_pol],
                f"Entry {eid}: PO {inv['po']} ({po_doc}) ordered {po['qty']} units and its history shows {po['received']} "
                f"received; invoice {ref} bills {inv['qty']} at the order price ({inv['total']:.2f}), so it pays only for "
                "what arrived (sections 5.0 and 6): no exception.")
            clears += 1
        else:
            deferred.append((eid, ref, inv, po_doc, order_value, ev))
    # invoices at or below the order price are clean either way: clear them only with the calls that are left
    for eid, ref, inv, po_doc, order_value, ev in deferred:
        if kit.calls_left <= 2:
            break
        yield from kit.clear(eid, ev + ["master:vendors"],
                             f"Entry {eid}: invoice {ref} total {inv['total']:.2f} does not exceed the order value "
                             f"{order_value:.2f} of PO {inv['po']} ({po_doc}); payee and coding agree with the master.")
        clears += 1
    yield from kit.submit(f"Vouched {len(refs)} invoices to PO, goods receipts, vendor master and change log: "
                          f"{flags} flagged, {clears} cleared.")
