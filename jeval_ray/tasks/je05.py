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
it returns 34 unplanted entries in 16 of 50 worlds (5.6 % of its 608 hits; 0.8 % of the 4,024
unplanted manual vendor invoices). None is an exception: in most, the user who approved each
invoice holds a limit covering the whole run (``master:users`` clears them); for the others
(12 entries) the books' own invoices and purchase orders are added to the pack, and they show
separate purchase orders raised on different days or one order approved by a user whose limit
covers it (at most ``MAX_DOCUMENTED_INVOICES`` invoices: in a slice of a million entries the runs
merge into chains of thousands, which the pack does not document one by one). ``plant`` keeps planted units from running into the books' invoices (no other invoice
of the unit's preparer and vendor within three days of it).
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.protocol.kit import Kit, entries_of
from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.errors import ConfigError
from jeval_ray.builder.spec import key, spec

SPEC = spec(
    "JE-5",
    "L2",
    'Approval-limit avoidance',
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
                "expedited deliveries to the Midwest warehouse", "crating and shipping of the test rig"),
    "maintenance": ("overhaul of production line 2", "roof repairs at the Denver plant", "servicing of the compressors",
                    "replacement of the dock levellers", "repainting of the warehouse floor"),
    "marketing": ("design and print of the product catalogue", "trade-show booth and artwork", "product photography",
                  "online campaign for the new valve range", "distributor brochures"),
}
_REQUESTERS = ("Plant maintenance", "Warehouse", "Production planning", "Sales operations", "Facilities", "Logistics")


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
def _policy_body() -> str:
    limits = {u.role: u.approval_limit_cents for u in md.USERS
              if u.kind == "human" and u.approval_limit_cents and u.role != "AR Clerk"}
    roles = "\n".join(f"   {r} {'.' * (30 - len(r))} USD {c // 100:,}" for r, c in limits.items())
    return (
        "Policy FIN-07 Approval authority for purchases and manual journal entries. Effective 2024-07-01. "
        "Owner: Controller.\n\n"
        "1. Individual limits. Every user holds an individual approval limit recorded in the user master (master "
        "data: users, field approval_limit). Standard limits by role:\n" + roles + "\n"
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
        "are kept in the support pack."
    )


def _money(cents: int) -> str:
    return f"USD {cents / 100:,.2f}"


def _approver_for(cents: int, preparer: str, rng) -> str:
    """The user of the lowest tier whose limit covers ``cents`` (never the preparer), as the books route it."""
    for a in md.APPROVERS:
        if a != preparer and _USER[a].approval_limit_cents >= cents:
            same = [b for b in md.APPROVERS if b != preparer
                    and _USER[b].approval_limit_cents == _USER[a].approval_limit_cents]
            return same[int(rng.integers(0, len(same)))]
    raise ValueError(f"no approver covers {cents} cents")


def _parts(rng, tier: int, k: int, near: float) -> list[int]:
    """``k`` amounts of 34-86 % of ``tier`` that together exceed it (by less as ``near_miss`` rises)."""
    lo, hi = (0.52, 0.86) if k == 2 else (0.36, 0.62)
    while True:
        parts = [int(tier * rng.uniform(lo, hi)) + int(rng.integers(1, 99)) for _ in range(k)]
        parts = [p + 1_737 if p % 10_000 == 0 else p for p in parts]
        if tier * (1.03 + 0.1 * (1 - near)) < sum(parts) < 4 * tier:
            return parts


def _units(rng, n: int) -> list[int]:
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


class _Docs:
    """Document texts worded like the books' own (``jeval_ray.books.wording.render``)."""

    def __init__(self, b):
        self.b = b
        self.next_po = len(b.books.docs.type) + 1  # numbers above every books document: no collision

    def po_number(self) -> str:
        n, self.next_po = self.next_po, self.next_po + 1 + int(self.b.rng.integers(0, 40))
        return f"PO-{n:07d}"

    def purchase_order(self, po: str, vendor: dict, date, req: tuple[str, str, str], quote: tuple[str, str, int],
                       goods: str, ordered: str, cents: int, approver: str, approved_on) -> int:
        a = _USER[approver]
        body = "\n".join([
            f"Purchase order {po}", f"Document date: {date}", f"Vendor: {vendor['name']} ({vendor['vendor_id']})",
            f"Requisition: {req[0]} raised by {req[1]} on {req[2]} for {goods}",
            f"Vendor quotation: {quote[0]} of {quote[1]}, {_money(quote[2])} for {goods}",
            f"Ordered: {ordered}", f"Amount: {_money(cents)}",
            f"Prepared by: {BUYER.name} ({BUYER.user_id})",
            f"Approved by: {a.name} ({a.user_id}, {a.role}) on {approved_on}",
        ])
        return self.b.add_document("purchase order", f"Purchase order {po} - {vendor['name']}", body, str(date))

    def invoice(self, idx: int, vendor: dict, po: str, ext: int, account: str, approved_on) -> int:
        b, e = self.b, self.b.e
        ref = str(e["reference"][idx])
        prep, appr = _USER[str(e["preparer"][idx])], _USER[str(e["approver"][idx])]
        doc_date = e["doc_date"][idx]
        body = "\n".join([
            f"Vendor invoice (no goods receipt) {ref}", f"Document date: {doc_date}",
            f"Posting date: {e['post_date'][idx]}", f"Vendor: {vendor['name']} ({vendor['vendor_id']})",
            f"Reference document: {po}", f"Vendor invoice number: {ext}",
            f"Account: {account} {chart.ACCOUNTS[chart.CODE[account]].name}",
            f"Amount: {_money(int(e['debit_cents'][idx]))}",
            f"Due date: {doc_date + int(vendor['payment_terms_days'])}",
            f"Prepared by: {prep.name} ({prep.user_id})",
            f"Approved by: {appr.name} ({appr.user_id}, {appr.role}) on {approved_on}",
        ])
        return b.add_document("invoice", f"Vendor invoice (no goods receipt) {ref} - {vendor['name']}", body,
                              str(doc_date))


def _workday_on_or_before(d) -> np.datetime64:
    """The buyer raises orders on business days."""
    return cal.business_offset(np.datetime64(d, "D"), 0, roll="backward")


def _busday(d, offset: int = 0) -> np.datetime64:
    return cal.business_offset(np.datetime64(d, "D"), offset)


def plant(b) -> None:
    """Plant units of two or three vendor invoices (defects: one purchase split; decoys: one order
    approved in full, or separate purchases), then add the books' own documents behind the runs
    of the books that the rule catches."""
    rng, e = b.rng, b.e
    near = b.knobs.near_miss
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(), "2024-06-20")
    docs = _Docs(b)
    vendors = [v for v in b.vendors if v["category"] in UNIT_CATEGORIES]
    if not vendors:
        raise ConfigError("JE-5 needs a vendor bought from under purchase orders (freight, maintenance, marketing); "
                          "raise n_entries")
    limit = {u["user_id"]: int(round(u["approval_limit"] * 100)) for u in b.users}
    units = [(k, True) for k in _units(rng, b.n_defects)] + [(k, False) for k in _units(rng, b.n_decoys)]
    units = [units[int(i)] for i in rng.permutation(len(units))]
    # the books' manual invoices without a goods receipt that a unit re-uses: of vendors bought from
    # ad hoc (not rent, subscriptions, insurance premiums or accrued services, whose schedules would
    # show the gap), below the smallest part (every part raises the invoice it re-uses); each re-used
    # invoice takes its payment with it (re-dated and re-amounted below; one the books had not paid by
    # the year end gets one), so invoices the books paid in two instalments are left alone
    paid_inv, pay = _payments_of(b)
    pay_of = np.full(b.n, -1, dtype=np.int64)
    pay_of[paid_inv] = pay
    reusable = e["manual"] & (e["doc_code"] == "VN") & (e["debit_cents"] < MIN_PART_SHARE * TIERS[0][0]) \
        & (np.bincount(paid_inv, minlength=b.n) <= 1)
    new_payments: list[dict] = []

    def of_categories(names: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(b.n, dtype=bool)
        idx = np.flatnonzero(reusable)
        out[idx] = np.isin(e["vendor_id"][idx], [v["vendor_id"] for v in b.vendors if v["category"] in names])
        return out

    pool = of_categories(REUSED_CATEGORIES)
    if int(pool.sum()) < b.n_defects + b.n_decoys + 4:
        # a small year with few ad-hoc invoices: bills of accrued services too (their accrual then
        # reverses without the month's invoice)
        pool |= of_categories(FALLBACK_CATEGORIES)
    invoices = e["manual"] & np.isin(e["doc_code"], ("VI", "VN"))
    first, last = np.datetime64("2025-02-03"), np.datetime64("2025-12-10")
    year_end = np.datetime64(md.iso(md.YEAR_END))
    for k, defect in units:
        # k re-usable invoices, then a preparer, vendor and days early enough for the payment run
        # before the parts' due date to fall in the year, with no other invoice of that preparer
        # and vendor within the run's gap
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
            day = e["post_date"].astype(np.int64)  # as moved by the units placed so far
            others = invoices & (e["preparer"] == prep) & (e["vendor_id"] == vendor["vendor_id"])
            others[group] = False
            if not (others & (day >= lo - RUN_GAP_DAYS - 1) & (day <= hi + RUN_GAP_DAYS + 1)).any():
                b.used[group] = True
                break
        if len(group) < k or not b.used[group].all():
            raise ConfigError(f"impossible knobs for JE-5: the slice has too few manual vendor invoices of ad-hoc "
                              f"purchases to re-use for {b.n_defects + b.n_decoys} planted entries; lower "
                              "n_defects/n_decoys or raise n_entries")
        tier = TIERS[0][0] if rng.random() < TIERS[0][1] else TIERS[1][0]
        parts = _parts(rng, tier, k, near)
        total = sum(parts)
        approver = _approver_for(max(parts), prep, rng)
        if _USER[approver].approval_limit_cents >= total:
            approver = _approver_for(tier, prep, rng)  # the tier's own approver: covers each part, not the total
        account = chart.ACCOUNTS[chart.idx(md.CATEGORIES[md.CATEGORY[vendor["category"]]].account)].code
        goods = [str(g) for g in rng.permutation(_GOODS[vendor["category"]])]
        requesters = [str(r) for r in rng.permutation(_REQUESTERS)]
        inv_dates = []
        for idx, d, cents in zip(group, days, parts):
            doc_date = _workday_on_or_before(max(d - int(rng.integers(0, 5)), np.datetime64("2025-01-02")))
            inv_dates.append(doc_date)
            e["vendor_id"][idx] = vendor["vendor_id"]
            e["preparer"][idx], e["approver"][idx] = prep, approver
            e["post_date"][idx] = e["entry_date"][idx] = d
            e["doc_date"][idx] = doc_date
            e["time_s"][idx] = int(rng.integers(*cal.OFFICE_HOURS))
            e["debit_account"][idx], e["credit_account"][idx] = account, "2000"
            e["debit_cents"][idx] = e["credit_cents"][idx] = cents
        exts = [int(x) for x in rng.integers(100_000, 999_999, k)]
        for idx, ext in zip(group, exts):
            e["description"][idx] = (f"Invoice {ext} {vendor['name']} - "
                                     f"{chart.ACCOUNTS[chart.CODE[account]].name.lower()}"
                                     if rng.random() < b.knobs.description_quality else
                                     str(rng.choice(["Adj", "Per JV", "See file", "Entry"])))
        for idx, cents in zip(group, parts):
            # the re-used invoice's payment moves with it: paid at the part's amount in the Thursday
            # payment run before its due date, as the books pay (``books.purchasing.payment_runs``)
            p = int(pay_of[idx])
            run = _payment_run(rng, e["doc_date"][idx] + int(vendor["payment_terms_days"]), e["post_date"][idx])
            text = f"Payment run {vendor['name']} invoice {e['reference'][idx]}"
            if p < 0:
                new_payments.append({
                    "doc_code": "VP", "post_date": run, "entry_date": run, "time_s": int(md.night_batch(rng, 1)[0]),
                    "preparer": "SYS_BATCH", "approver": "", "manual": False, "vendor_id": vendor["vendor_id"],
                    "reference": f"VP-{len(b.books.docs.type) + 1 + len(new_payments):07d}",  # above every books number
                    "description": text, "lines": [("2000", cents), ("1000", -cents)]})
                continue
            e["post_date"][p] = e["entry_date"][p] = e["doc_date"][p] = run
            e["debit_cents"][p] = e["credit_cents"][p] = cents
            e["vendor_id"][p] = vendor["vendor_id"]
            e["description"][p] = text
        # the orders: dated before the first invoice, approved on their own date
        ordered_by = _workday_on_or_before(min(inv_dates) - int(rng.integers(6, 30)))
        base_ev = [policy, "master:users"]
        if defect:
            req = (f"REQ-{int(rng.integers(20_000, 29_999))}", requesters[0], str(ordered_by - int(rng.integers(1, 6))))
            quote = (f"Q-{int(rng.integers(50_000, 99_999))}", str(ordered_by - int(rng.integers(6, 12))), total)
            for p, (idx, cents, ext) in enumerate(zip(group, parts, exts)):
                po = docs.po_number()
                po_doc = docs.purchase_order(po, vendor, ordered_by, req, quote, goods[0], f"{goods[0]} (lot {p + 1})",
                                             cents, approver, ordered_by)
                inv_doc = docs.invoice(idx, vendor, po, ext, account, _approval_day(rng, idx, e))
                b.add_defect(idx, "split_purchase", "LIMIT_AVOIDANCE", [*base_ev, inv_doc, po_doc], cents,
                             facts=[quote[0], total / 100, _USER[approver].approval_limit_cents / 100])
        elif rng.random() < 0.5:
            po = docs.po_number()
            full = _approver_for(total, prep, rng)
            req = (f"REQ-{int(rng.integers(20_000, 29_999))}", requesters[0], str(ordered_by - int(rng.integers(1, 6))))
            quote = (f"Q-{int(rng.integers(50_000, 99_999))}", str(ordered_by - int(rng.integers(6, 12))), total)
            po_doc = docs.purchase_order(po, vendor, ordered_by, req, quote, goods[0],
                                         f"{goods[0]}, invoiced in {k} instalments", total, full, ordered_by)
            for idx, ext in zip(group, exts):
                inv_doc = docs.invoice(idx, vendor, po, ext, account, _approval_day(rng, idx, e))
                b.add_decoy(idx, "order_approved_in_full", [*base_ev, inv_doc, po_doc],
                            facts=[po, total / 100, full, _USER[full].approval_limit_cents / 100])
        else:
            # each part its own requisition, quotation and order, on dates weeks apart (closer as near_miss rises)
            gap = 5 + int(round((1 - near) * 25))
            dates = [ordered_by]
            for _p in range(k - 1):
                dates.append(_workday_on_or_before(dates[-1] - gap - int(rng.integers(0, gap))))
            dates.reverse()
            for p, (idx, cents, ext) in enumerate(zip(group, parts, exts)):
                od = dates[p]
                req = (f"REQ-{int(rng.integers(20_000, 29_999))}", requesters[p], str(od - int(rng.integers(1, 6))))
                quote = (f"Q-{int(rng.integers(50_000, 99_999))}", str(od - int(rng.integers(6, 12))), cents)
                po = docs.po_number()
                po_doc = docs.purchase_order(po, vendor, od, req, quote, goods[p], goods[p], cents, approver, od)
                inv_doc = docs.invoice(idx, vendor, po, ext, account, _approval_day(rng, idx, e))
                b.add_decoy(idx, "separate_purchases", [*base_ev, inv_doc, po_doc], facts=[po, quote[0], cents / 100])
    b.add_entries(new_payments)
    _document_book_runs(b, limit)
    # the parts cost more than the invoices they re-use: the opening cash the books' rule gives for this year
    b.fund_opening_cash()


def _payment_run(rng, due: np.datetime64, posted: np.datetime64) -> np.datetime64:
    """The Thursday payment run on or just before ``due`` (at least two days after the posting)."""
    earliest = max(due - int(rng.integers(0, 8)), posted + 2)
    return cal.business_offset(earliest + int((3 - cal.weekday(earliest)) % 7), 0)


def _payments_of(b) -> tuple[np.ndarray, np.ndarray]:
    """(invoice entry, payment entry) pairs: the books' payments (``VP``) and the entries they pay."""
    e, parent = b.e, b.books.docs.parent
    vp = np.flatnonzero(e["doc_code"] == "VP")
    docs = e["books_doc"]
    # entries are in books-document order (the books post document by document); sort if not
    order = np.arange(len(docs)) if bool(np.all(docs[1:] > docs[:-1])) else np.argsort(docs, kind="stable")
    paid = parent[docs[vp]]
    pos = np.clip(np.searchsorted(docs[order], paid), 0, len(order) - 1)
    found = docs[order][pos] == paid
    return order[pos[found]], vp[found]


def _approval_day(rng, idx: int, e) -> np.datetime64:
    """The invoice's approval: on or after its document date, by the day it was keyed."""
    lo, hi = e["doc_date"][idx], e["entry_date"][idx]
    return _workday_on_or_before(lo + int(rng.integers(0, int((hi - lo).astype(np.int64)) + 1)))


def _limits_of(users: np.ndarray, limit: dict[str, int]) -> np.ndarray:
    """Each user's limit in cents (0 for a user without one): a sorted search among the few users with one."""
    keys = np.array(sorted(limit))
    if not len(keys) or not len(users):
        return np.zeros(len(users), dtype=np.int64)
    at = np.searchsorted(keys, users).clip(0, len(keys) - 1)
    return np.where(keys[at] == users, np.array([limit[k] for k in keys.tolist()], dtype=np.int64)[at], 0)


def _document_book_runs(b, limit: dict[str, int]) -> None:
    """Add the books' own invoices and purchase orders behind the unplanted runs the rule catches
    whose total some approver's limit does not cover, so an auditor can vouch them."""
    e = b.e
    planted = np.zeros(b.n, dtype=bool)
    planted[[d[0] for d in b.defects] + [d[0] for d in b.decoys]] = True
    inv = np.flatnonzero(e["manual"] & np.isin(e["doc_code"], ("VI", "VN")) & ~planted)
    if len(inv) < 2:
        return
    prep = e["preparer"][inv]
    cents = e["debit_cents"][inv]
    plim = _limits_of(prep, limit)
    alim = _limits_of(e["approver"][inv], limit)
    d = b.books.docs
    added: set[int] = set()
    found = [g for g in flagged_runs(prep, e["vendor_id"][inv], e["post_date"][inv].astype(np.int64), cents, plim)
             if alim[g].min() < cents[g].sum()]  # (a run every approver's limit covers is cleared by master:users)
    budget = MAX_DOCUMENTED_INVOICES
    for g in found:
        budget -= len(g)
        if budget < 0:
            break
        for i in inv[g]:
            b.source_document(int(i))
            parent = int(d.parent[int(e["books_doc"][i])])
            if parent >= 0 and parent not in added:
                added.add(parent)
                r = b.books.document(parent)
                b.add_document(r["doc_type"], r["title"], r["body"], r["date"])


# ---------------------------------------------------------------------------- strategies
_LEDGER_COLS = ["entry_id", "posting_date", "preparer", "approver", "vendor_id", "debit", "reference", "document_type"]


def _invoice_entries(kit: Kit):
    """Manual vendor invoices, one record per entry (its total debits as the amount)."""
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "document_type", "op": "in", "value": ["VI", "VN"]}],
                                 columns=_LEDGER_COLS)
    return list(entries_of(rows).values())


def find_runs(ents: list[dict], limits: dict[str, float]) -> list[list[dict]]:
    """The red-flag rule over manual vendor-invoice entries and the users' limits (in USD)."""
    if not ents:
        return []
    prep = np.array([r["preparer"] for r in ents])
    vend = np.array([r.get("vendor_id") or "" for r in ents])
    day = np.array([str(r["posting_date"])[:10] for r in ents], dtype="datetime64[D]").astype(np.int64)
    cents = np.rint(np.array([r["total_debit"] for r in ents]) * 100).astype(np.int64)
    lim = np.rint(np.array([limits.get(p, 0.0) for p in prep]) * 100).astype(np.int64)
    return [[ents[i] for i in g] for g in flagged_runs(prep, vend, day, cents, lim)]


def _limits(users: list[dict]) -> dict[str, float]:
    return {u["user_id"]: float(u.get("approval_limit") or 0) for u in users}


def naive(kit: Kit):
    """Flags every invoice of every run the rule catches, reading no order or invoice."""
    limits = _limits((yield from kit.master("users")))
    found = find_runs((yield from _invoice_entries(kit)), limits)
    n = 0
    for g in found:
        total = sum(r["total_debit"] for r in g)
        for r in g:
            if kit.calls_left <= 1:
                break
            yield from kit.flag(r["entry_id"], "LIMIT_AVOIDANCE", ["master:users"],
                                f"Entry {r['entry_id']} is one of {len(g)} invoices {r['preparer']} keyed for vendor "
                                f"{r['vendor_id']} within days, together USD {total:,.2f}, above the preparer's "
                                f"USD {limits[r['preparer']]:,.2f} limit.")
            n += 1
    yield from kit.submit(f"Flagged {n} invoices in {len(found)} runs above the preparer's limit.")


_FIELD = re.compile(r"^([A-Za-z ]+): (.*)$", re.M)
_MONEY = re.compile(r"USD ([\d,]+\.\d\d)")
_APPROVED = re.compile(r"\(([A-Z_]+), [^)]*\) on (\d{4}-\d\d-\d\d)")


def _fields(body: str) -> dict[str, str]:
    return {k.strip().lower(): v.strip() for k, v in _FIELD.findall(body)}


def _usd(text: str) -> float | None:
    m = _MONEY.search(text or "")
    return float(m.group(1).replace(",", "")) if m else None


def _order(body: str) -> dict:
    f = _fields(body)
    appr = _APPROVED.search(f.get("approved by", ""))
    quote = f.get("vendor quotation", "")
    return {"amount": _usd(f.get("amount", "")), "approver": appr.group(1) if appr else "",
            "quote": quote.split(" ")[0] if quote else "", "quote_total": _usd(quote),
            "requisition": (f.get("requisition") or " ").split(" ")[0], "date": f.get("document date", "")}


def careful(kit: Kit):
    """Reads the matrix and the user limits and finds the runs the rule catches. A run whose every
    approver holds a limit covering its total is within authority. Otherwise it vouches each
    invoice to its purchase order: one order approved in full by a user whose limit covers it, or
    separate requisitions and quotations, clear the run; orders under one requisition or quotation
    whose total exceeds their approvers' limits are one purchase split, and every part is flagged."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "approval authority" in d["title"].lower()),
                  None)
    if policy:
        yield from kit.open(policy)
    limits = _limits((yield from kit.master("users")))
    found = find_runs((yield from _invoice_entries(kit)), limits)
    base_ev = [x for x in (policy, "master:users") if x]
    by_title = {d["title"]: d["doc_id"] for d in docs}
    read: dict[str, str] = {}

    def body(doc_id: str):
        if doc_id not in read:
            read[doc_id] = (yield from kit.open(doc_id)).get("body", "")
        return read[doc_id]

    n_flag = n_clear = 0
    for g in found:
        total = round(sum(r["total_debit"] for r in g), 2)
        approvers = {r["approver"] for r in g}
        if all(limits.get(a, 0.0) >= total for a in approvers):
            continue  # every part was released by a user whose limit covers the whole run
        if kit.calls_left <= 3 * len(g) + 1:
            break
        vouched = []  # (entry, invoice doc, order doc, order)
        for r in g:
            inv = next((i for t, i in by_title.items() if f" {r['reference']} - " in t and t.startswith("Vendor invoice")),
                       None)
            po_no = _fields((yield from body(inv))).get("reference document", "") if inv else ""
            po_doc = next((i for t, i in by_title.items() if t.startswith(f"Purchase order {po_no} - ")), None) if po_no else None
            order = _order((yield from body(po_doc))) if po_doc else {}
            vouched.append((r, inv, po_doc, order))
        orders = {v[2]: v[3] for v in vouched if v[2]}
        one = len(orders) == 1 and all(v[2] for v in vouched)
        shared = {o["quote"] for o in orders.values() if o["quote"]}
        reqs = {o["requisition"] for o in orders.values() if o["requisition"]}
        if one:
            (po_doc, o), = orders.items()
            ok = (o["amount"] or 0) >= total - 0.005 and limits.get(o["approver"], 0.0) >= (o["amount"] or 0)
        else:
            o = next(iter(orders.values()), {})
            split = len(orders) >= 2 and (len(shared) == 1 and len(shared) < len(orders) or len(reqs) == 1 and len(reqs) < len(orders))
            quote_total = max((x["quote_total"] or 0) for x in orders.values()) if orders else 0.0
            over = [x["approver"] for x in orders.values() if limits.get(x["approver"], 0.0) < quote_total]
            ok = not (split and over)
        for r, inv, po_doc, order in vouched:
            if kit.calls_left <= 1:
                break
            ev = [*base_ev, *[x for x in (inv, po_doc) if x]]
            eid, amt = r["entry_id"], r["total_debit"]
            po_no = (read.get(po_doc, "").split("\n")[0].split(" ")[-1]) if po_doc else "no purchase order"
            if ok and one:
                yield from kit.clear(eid, ev,
                    f"Entry {eid} (USD {amt:,.2f}) is one of {len(g)} instalments of purchase order {po_no} for "
                    f"USD {order['amount']:,.2f}, approved in full by {order['approver']}, whose limit of "
                    f"USD {limits.get(order['approver'], 0.0):,.2f} covers it: the purchase was approved at its full "
                    f"amount (section 3 of {policy}). Not a split.")
                n_clear += 1
            elif ok:
                own = (f"under its own requisition {order['requisition']} and quotation {order['quote']} "
                       if order.get("quote") else "")
                basis = (f"bills purchase order {po_no}, raised on {order.get('date')} {own}for "
                         f"USD {order.get('amount') or 0:,.2f}" if po_doc else "cites no purchase order")
                yield from kit.clear(eid, ev,
                    f"Entry {eid} (USD {amt:,.2f}) {basis}; the other invoices of the run bill other orders: separate "
                    f"purchases, each approved within its approver's limit (section 3 of {policy}). Not a split.")
                n_clear += 1
            else:
                lim = limits.get(r["approver"], 0.0)
                yield from kit.flag(eid, "LIMIT_AVOIDANCE", ev,
                    f"Entry {eid} (USD {amt:,.2f}) bills purchase order {po_no}, one of {len(orders)} orders raised "
                    f"on {order.get('date')} under requisition {order.get('requisition')} and vendor quotation "
                    f"{order.get('quote')} for USD {order.get('quote_total') or 0:,.2f}: one purchase split into parts "
                    f"that each stay within the USD {lim:,.2f} limit of {r['approver']}, who approved them, while the "
                    f"purchase exceeds it (section 3 of {policy}).")
                n_flag += 1
    yield from kit.submit(f"Reviewed {len(found)} runs of invoices above the preparer's limit: flagged {n_flag} "
                          f"invoices of split purchases, cleared {n_clear} (orders approved in full, separate purchases).")
