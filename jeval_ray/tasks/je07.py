"""JE-7 (L2): duplicate postings.

The red-flag rule: a vendor invoice (document type VI or VN) whose vendor and invoice total (its
credit to accounts payable) repeat an earlier invoice's. Planted as perturbations of the books:
an ordinary invoice of the year (the *original*: a vendor billed without a goods receipt, from
freight, maintenance, marketing, office or travel, in a small year that has too few of those also
professional services or utilities; the only invoice of its vendor and amount) gets a second
posting, a new entry keyed on the first business day 1-9 days later by an AP clerk under its own
voucher number, with the original's vendor, amount, accounts and invoice (document) date, and a
vendor invoice number in the description that differs from the original's in its last digit;
where the original was paid in the year, the second posting is paid too, in the Thursday payment
run after it was keyed (the next business day when that Thursday is a holiday, as the books pay);
an original paid in two instalments has its second posting paid in both or, when a run would fall
after the year end, in neither.
Each second posting is then made a defect or a decoy at random; only the vendor documents scanned
with the two vouchers differ. Every date a voucher states for the company's own acts (posted,
approved) is a business day, for defects, decoys and ordinary vouchers alike: where the books date
an approval on a weekend or a holiday (an invoice dated on a Saturday and approved with it), the
voucher states the next business day, still on or before the posting. Invoice dates are the
vendor's, as the ledger shows them.

Planted defects (criteria ``DUPLICATE``), ``duplicate_invoice_posting``: the document scanned with
the second voucher is the original's vendor invoice (the same printed invoice number, purchase
order, delivery and amount), received a second time (by post after e-mail, or the reverse) and
keyed with a slip in its number, which is why the ERP's check on vendor and invoice number let it
through: one invoice recorded (and paid) twice. The misstatement is the second posting's amount.
Decisive facts: the printed invoice number, the original entry and the amount.

Decoys, ``same_day_separate_invoice``: the vendor issued two invoices of the same amount on the
same day (two orders, deliveries or sites): the second voucher's scanned invoice prints the number
keyed, another number of the vendor's series, and another purchase order where the vendor works
to orders. Decisive facts: both printed invoice numbers.

Required (and clearing) evidence: the AP voucher documents of the second posting and of the
original (titled ``AP voucher <reference> - <vendor>``: who keyed and approved it, the number as
keyed, the scanned invoice). The support pack also files vouchers of ordinary invoices, and the
AP policy says an invoice is identified by vendor and printed invoice number, not by amount.

Unplanted look-alikes: the rule also catches the books' honest repeats, above all the monthly
rent and software subscription invoices (one fee a month) and fixed fees billed again, each with
its own invoice date and number: 1,036 of the 4,598 unplanted vendor invoices of seeds 0-49
(22.5 %, about 21 a world, 65 % of what the rule returns). None shares its invoice date with the
earlier invoice; an auditor dismisses them from the ledger (another month's bill, another date).
"""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import APPROVERS, BUSINESS_HOURS, PERIOD_END, PERIOD_START, business_days
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (DATE, EMPTY, INT, MONEY, NAME, TOKEN, Disposition, Form, SurfaceRule, Task, clear,
                                     flag, parse_any, review, surface_naive)

SPEC = spec(
    "JE-7",
    "L2",
    'Duplicate postings',
    step_budget=80,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find vendor invoices posted twice.',
    defect='duplicate posting of one invoice',
    decoys='a separate invoice of the same amount issued the same day',
    required_evidence='the scanned vendor invoices filed with both AP vouchers',
    sources=('general_ledger', 'vendor_master', 'invoices', 'ap_vouchers'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DUPLICATE', 'the same vendor invoice posted more than once', "the duplicate posting's amount"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "duplicate_invoice_posting",
        evidence="the AP voucher of the second posting and the AP voucher of the original, with the vendor "
                 "documents scanned with them",
        facts="both scanned documents are one vendor invoice: the same printed invoice number, invoice date, "
              "purchase order and amount; the second voucher keyed the number with a slip in its last digit",
        conclusion="The same vendor invoice was recorded twice (and paid twice where the run had come): expense and "
                   "payables are overstated by the second posting's amount; report it and recover any overpayment.",
        standard="AS 2401.58; ISA 240.32(a)"),
    key("decoy", "same_day_separate_invoice",
        evidence="the AP voucher of the second posting and the AP voucher of the original, with the vendor "
                 "documents scanned with them",
        facts="the second voucher's scanned invoice prints the number keyed, a different invoice number of the same "
              "vendor (and another purchase order where the vendor works to orders), for the same amount and date",
        conclusion="Two invoices of the same amount issued the same day for separate orders or deliveries: each "
                   "recorded once, no duplicate.",
        standard="AS 2401.58; ISA 240.32(a)"),
)


# ------------------------------------------------------------------ world
#: vendors whose invoices are planted on: billed one invoice per order or purchase, without a goods
#: receipt (monthly service bills and recurring fees are billed once a month by nature)
CATEGORIES = ("freight", "maintenance", "marketing", "office", "travel")
#: vendors billed monthly for a service, planted on only when a small year has too few of the above
MORE_CATEGORIES = ("professional", "utilities")
AP_KEYERS = ("AKIM", "BOKAFOR", "GSILVA")
_CHANNELS = ("e-mail (PDF)", "post (paper original)", "supplier portal")
_DELIVERY = md.SITES


def _keyed_variant(rng: np.random.Generator, number: int) -> int:
    """A vendor invoice number differing from ``number`` in its last digit only: how a clerk's slip
    reads, and how the vendor's next invoice of the series reads, alike."""
    last = number % 10
    other = [d for d in range(10) if d != last]
    return number - last + int(other[int(rng.integers(0, len(other)))])


@dataclass(frozen=True)
class VoucherTitle:
    """An AP voucher's title: the entry's reference and the vendor."""
    ref: str
    vendor: str


@dataclass(frozen=True)
class Voucher:
    """An AP voucher and the vendor document scanned with it (``po`` empty: the invoice names no order)."""
    ref: str
    post: str
    keyed: int
    preparer_name: str
    preparer: str
    approver_name: str
    approver: str
    approved: str
    channel: str
    vendor: str
    vendor_id: str
    invoice_no: int
    invoice_date: str
    po: str
    site: str
    what: str
    amount: int


@dataclass(frozen=True)
class VoucherNoOrder(Voucher):
    """A voucher whose vendor document names no purchase order."""


@dataclass(frozen=True)
class Policy:
    """The AP policy's duplicate payment prevention sections (fixed text)."""


POLICY_TITLE = "Accounts payable policy - duplicate payment prevention"
POLICY = Form(Policy, (
    "Section 3.4 Each vendor invoice is recorded once. An invoice is identified by the vendor and the vendor's "
    "invoice number as printed on it, not by its amount: vendors may issue several invoices of the same amount "
    "on the same day for separate orders or deliveries, and fixed monthly fees recur at the same amount. The ERP "
    "rejects a second invoice with the vendor and invoice number already keyed; AP clerks check the vendor and "
    "the printed invoice number against open and paid items before posting. Section 3.5 Every invoice is "
    "scanned and filed with the AP voucher under which it is posted; invoices may arrive by e-mail, by post or "
    "through the supplier portal, and a copy received through a second channel is not posted again."))
TITLE = Form(VoucherTitle, "AP voucher {ref} - {vendor}", ref=TOKEN)
_VOUCHER = ("AP voucher {ref}, posted {post}. Vendor invoice number as keyed: {keyed}. Keyed by {preparer_name} "
            "({preparer}); approved by {approver_name} ({approver}) on {approved}.\nScanned vendor document filed "
            "with the voucher (received by {channel}):\n{vendor} (vendor {vendor_id})\nINVOICE\nInvoice number: "
            "{invoice_no}\nInvoice date: {invoice_date}\n")
_INVOICE_END = ("Deliver to: {site}\nDescription: {what}\nAmount due: USD {amount}\nPayment terms as agreed. Please "
                "quote the invoice number with your remittance.")
_KINDS: dict[str, Any] = dict(ref=TOKEN, post=DATE, keyed=INT, preparer_name=NAME, preparer=TOKEN, approver_name=NAME,
                              approver=TOKEN, approved=DATE, vendor_id=TOKEN, invoice_no=INT, invoice_date=DATE,
                              amount=MONEY)
VOUCHER = Form(Voucher, _VOUCHER + "Purchase order: {po}\n" + _INVOICE_END, po=TOKEN, **_KINDS)
VOUCHER_NO_ORDER = Form(VoucherNoOrder, _VOUCHER + "{po}" + _INVOICE_END, po=EMPTY, **_KINDS)
def _voucher(b: WorldBuilder, v: Voucher) -> int:
    """Add the AP voucher ``v`` of an entry and the scanned vendor document filed with it."""
    text = VOUCHER.render(v) if v.po else VOUCHER_NO_ORDER.render(VoucherNoOrder(**vars(v)))
    return b.add_document("invoice", TITLE.render(VoucherTitle(v.ref, v.vendor)), text, v.post)


def _voucher_of(b: WorldBuilder, i: int, ref: str, post: str, keyed: int, preparer: str, approver: str, approved: str,
                channel: str, invoice_no: int, po: str, site: str) -> Voucher:
    """The voucher of a posting of vendor invoice entry ``i`` (its vendor, date, amount and kind of purchase)."""
    c = b.cols
    vid = str(c.vendor_id[i])
    vendor = next(v for v in b.vendors if v["vendor_id"] == vid)
    return Voucher(ref=ref, post=post, keyed=keyed, preparer_name=b.user(preparer)["name"], preparer=preparer,
                   approver_name=b.user(approver)["name"], approver=approver, approved=approved, channel=channel,
                   vendor=vendor["name"], vendor_id=vid, invoice_no=invoice_no, invoice_date=b.date_str(c.doc_date[i]),
                   po=po, site=site, what=f"{md.CATEGORIES[md.CATEGORY[vendor['category']]].what}",
                   amount=int(c.credit_cents[i]))


def _next_run(d: Any) -> np.datetime64:
    """The payment run on or after ``d``: the books pay on Thursdays, on the next business day when
    the Thursday is a holiday (Thanksgiving, Christmas Day)."""
    return cal.business_offset(d + int((3 - cal.weekday(d)) % 7), 0)


def _approved_on(day: Any) -> str:
    """An approval date: the approver works on business days, so a date on a weekend or a holiday
    (an invoice dated on a Saturday and approved with it) moves to the next business day, which is
    never after the posting (a business day on or after the invoice date)."""
    return md.iso(cal.business_offset(int(day), 0))


def _originals(b: WorldBuilder, n: int) -> np.ndarray:
    """Pick ``n`` ordinary vendor invoices to post a second time: each the only invoice of its vendor
    and total, billed without a goods receipt, early enough for a second posting within the year."""
    c, d = b.cols, b.books.docs
    invoice = np.isin(c.doc_code, ["VI", "VN"])
    # (vendor, invoice total) of every invoice: an original must be the only invoice of its vendor and total
    # integer vendor codes from the books (string keys cost seconds on a million entries)
    partner = np.where(c.vendor_id != "", d.partner[c.books_doc], -1)
    key = ((partner + 1).astype(np.int64) << 40) | c.credit_cents
    keys, counts = np.unique(key[invoice], return_counts=True)
    unique = np.isin(key, keys[counts == 1])
    cat_of = b.books.master.vendor_category[np.maximum(partner, 0)]
    base = (invoice & (c.doc_code == "VN") & unique & (partner >= 0)
            & (c.post_date >= PERIOD_START) & (c.post_date <= PERIOD_END - np.timedelta64(12, "D")))
    ok = base & np.isin(cat_of, [md.CATEGORY[k] for k in CATEGORIES])
    if int((ok & ~b.used).sum()) < n:
        # a small year with few such invoices: the monthly service bills too
        ok = base & np.isin(cat_of, [md.CATEGORY[k] for k in CATEGORIES + MORE_CATEGORIES])
    return b.pick(n, ok, what="vendor invoices without a goods receipt to post a second time")


@dataclass
class _Second:
    """What a second posting changes on its copy of the original."""
    idx: int
    post: np.datetime64
    time_s: int
    reference: str
    description: str
    preparer: str = ""
    approver: str = ""


def plant(b: WorldBuilder) -> None:
    """Plant second postings of ordinary vendor invoices (each a defect or a decoy), their vouchers,
    the vouchers of some ordinary invoices and the AP policy."""
    rng, c, d = b.rng, b.cols, b.books.docs
    bdays = business_days(PERIOD_START, PERIOD_END)
    n = b.n_defects + b.n_decoys
    originals = _originals(b, n)
    is_defect = np.zeros(n, dtype=bool)
    is_defect[rng.permutation(n)[: b.n_defects]] = True
    payments = _payments(b, c.books_doc[originals])
    # the second postings (and their payments) are copies appended in one go after this loop, at
    # these indices; what differs from the original is set on them then
    seconds = b.n + np.arange(n)
    changes: list[_Second] = []
    next_doc = len(d)
    pay_jobs: list[tuple[int, np.datetime64, str, str]] = []
    for k, (o, s) in enumerate(zip(originals.tolist(), seconds.tolist())):
        bd = int(c.books_doc[o])
        number = int(d.ext_ref[bd])
        keyed = _keyed_variant(rng, number)
        printed = number if is_defect[k] else keyed
        # the second posting: keyed by an AP clerk 1-9 days later under its own voucher
        ref2 = f"VN-{next_doc:07d}"
        next_doc += 1
        post = bdays[min(int(np.searchsorted(bdays, c.post_date[o] + int(rng.integers(1, 10)))), len(bdays) - 1)]
        sec = _Second(s, post, int(rng.integers(BUSINESS_HOURS[0] + 1800, BUSINESS_HOURS[1] - 1800)), ref2,
                      str(c.description[o]).replace(f"Invoice {number} ", f"Invoice {keyed} ", 1))
        sec.preparer = AP_KEYERS[int(rng.integers(0, len(AP_KEYERS)))]
        cents = int(c.credit_cents[o])
        sec.approver = next(a for a in APPROVERS if a != sec.preparer and b.user(a)["approval_limit"] * 100 >= cents)
        changes.append(sec)
        approved2 = _approved_on(max(c.doc_date[o], post - int(rng.integers(0, 3))).astype(np.int64))
        # its payment: the run after it was keyed, when that is within the year; an original paid in
        # two instalments has both copied or neither, so the second posting is paid in full or not at all
        runs = [(p, _next_run(max(c.post_date[p], post + 2))) for p in payments.get(bd, [])]
        if all(run <= PERIOD_END for _p, run in runs):
            pay_jobs += [(p, run, str(c.reference[o]), ref2) for p, run in runs]
        po1 = f"PO-{int(d.parent[bd]):07d}" if d.parent[bd] >= 0 else ""
        po2 = po1 if is_defect[k] or not po1 else f"PO-{next_doc:07d}"
        next_doc += 1
        site1 = _DELIVERY[int(rng.integers(0, len(_DELIVERY)))]
        site2 = site1
        if not is_defect[k]:  # a separate invoice: another delivery address
            site2 = _DELIVERY[(_DELIVERY.index(site1) + 1 + int(rng.integers(0, 2))) % len(_DELIVERY)]
        ch = rng.permutation(len(_CHANNELS))[:2]
        doc_o = _voucher(b, _voucher_of(b, o, str(c.reference[o]), b.date_str(c.post_date[o]), number,
                                        str(c.preparer[o]), str(c.approver[o]), _approved_on(d.approved_on[bd]),
                                        _CHANNELS[int(ch[0])], number, po1, site1))
        doc_c = _voucher(b, _voucher_of(b, o, ref2, b.date_str(post), keyed, sec.preparer, sec.approver, approved2,
                                        _CHANNELS[int(ch[1])], printed, po2, site2))
        b.claim("JE-7", entries=[o, s], documents=[doc_o, doc_c])
        if is_defect[k]:
            b.add_defect(s, "duplicate_invoice_posting", "DUPLICATE", [doc_c, doc_o], cents,
                         facts=[str(number), f"{{E:{o}}}", cents / 100])
        else:
            b.add_decoy(s, "same_day_separate_invoice", [doc_c, doc_o], facts=[str(printed), str(number)])
    _copy(b, originals, changes, pay_jobs, next_doc)
    _ordinary_vouchers(b, n)
    b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-11-20")


def _copy(b: WorldBuilder, originals: np.ndarray, changes: list[_Second],
          pay_jobs: list[tuple[int, np.datetime64, str, str]], next_doc: int) -> None:
    """The copies: the second postings, then their payments (copies of the originals' payments in a later run)."""
    c = b.cols
    new = b.copy_entries(np.concatenate([originals, np.array([j[0] for j in pay_jobs], dtype=np.int64)]))
    assert new[0] == changes[0].idx
    for sec in changes:
        i = sec.idx
        c.post_date[i] = sec.post
        c.entry_date[i] = sec.post
        c.time_s[i] = sec.time_s
        c.reference[i] = sec.reference
        c.description[i] = sec.description
        c.preparer[i] = sec.preparer
        c.approver[i] = sec.approver
    for (p, run, ref1, ref2), q in zip(pay_jobs, new[len(originals):].tolist()):
        c.post_date[q] = c.doc_date[q] = c.entry_date[q] = run
        c.description[q] = str(c.description[p]).replace(ref1, ref2)
        c.reference[q] = f"VP-{next_doc:07d}"
        next_doc += 1
        b.claim("JE-7", entries=[q])


def _ordinary_vouchers(b: WorldBuilder, n: int) -> None:
    """Vouchers of ordinary invoices in the pack, so that a voucher alone points at nothing."""
    rng, c, d = b.rng, b.cols, b.books.docs
    pool = np.flatnonzero((c.doc_code == "VN") & ~b.used & (c.post_date >= PERIOD_START))
    k = min(len(pool), max(4, n // 2 + int(rng.integers(2, 6))))
    for i in np.sort(rng.choice(pool, size=k, replace=False)).tolist():
        bd = int(c.books_doc[i])
        po = f"PO-{int(d.parent[bd]):07d}" if d.parent[bd] >= 0 else ""
        channel = _CHANNELS[int(rng.integers(0, len(_CHANNELS)))]
        _voucher(b, _voucher_of(b, i, str(c.reference[i]), b.date_str(c.post_date[i]), int(d.ext_ref[bd]),
                                str(c.preparer[i]), str(c.approver[i]), _approved_on(d.approved_on[bd]), channel,
                                int(d.ext_ref[bd]), po, _DELIVERY[int(rng.integers(0, len(_DELIVERY)))]))


def _payments(b: WorldBuilder, invoices: np.ndarray) -> dict[int, list[int]]:
    """{books document of each of ``invoices``: the entries of its payments} (a payment names its invoice)."""
    c = b.cols
    vp = np.flatnonzero(c.doc_code == "VP")
    vp = vp[np.isin(b.books.docs.parent[c.books_doc[vp]], invoices)]
    out: dict[int, list[int]] = {}
    for p, inv in zip(vp.tolist(), b.books.docs.parent[c.books_doc[vp]].tolist()):
        out.setdefault(int(inv), []).append(p)
    return out


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "document_date", "vendor_id", "credit", "reference", "description"]


def _groups(kit: Kit, columns: list[str] = _COLS, more: tuple[dict, ...] = (),
            ) -> Generator[Step, Any, tuple[dict[str, str], dict[str, dict[str, Any]]]]:
    """Vendor invoices grouped by (vendor, invoice total: the credit to accounts payable); returns
    {later invoice: the first one} and the rows (``columns`` of the lines matching ``more`` as well)."""
    rows = yield from kit.ledger(filters=[{"column": "document_type", "op": "in", "value": ["VI", "VN"]},
                                          {"column": "account", "op": "eq", "value": "2000"}, *more], columns=columns)
    first: dict[tuple, str] = {}
    later: dict[str, str] = {}
    by_id = {}
    for r in sorted(rows, key=lambda r: r["entry_id"]):
        if not r["vendor_id"] or not float(r["credit"] or 0):
            continue
        by_id[r["entry_id"]] = r
        key = (r["vendor_id"], round(float(r["credit"]), 2))
        if key in first:
            later[r["entry_id"]] = first[key]
        else:
            first[key] = r["entry_id"]
    return later, by_id


def _repeats(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The invoices repeating an earlier one's vendor and amount, each with the earlier one (``orig``)."""
    later, rows = yield from _groups(kit)
    return {eid: {**rows[eid], "orig": orig, "credit": float(rows[eid]["credit"])} for eid, orig in later.items()}


RULE = SurfaceRule("a vendor invoice repeats an earlier invoice's vendor and amount", "DUPLICATE", _repeats,
                   "Entry {entry_id}: same vendor {vendor_id} and amount {credit:,.2f} as entry {orig}; posted twice.",
                   "Flagged {n} invoices that repeat an earlier vendor and amount.")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Groups vendor invoices by vendor and amount. A repeat with its own invoice date is another
    invoice (a monthly fee, a fixed fee billed again); for a repeat dated the same day as the
    earlier invoice it reads the vendor document scanned with each AP voucher, flags the posting
    when both are the same printed invoice and clears it when they are two invoices."""
    # only the invoices' credits to accounts payable, without their descriptions
    later, rows = yield from _groups(kit, _COLS[:-1], ({"column": "credit", "op": "gt", "value": 0},))
    same_day = {e: o for e, o in later.items() if rows[e]["document_date"] == rows[o]["document_date"]}
    voucher: dict[str, str] = {}
    for d in ((yield from kit.documents()) if same_day else []):
        title = TITLE.parse(d["title"])
        if title:
            voucher.setdefault(title.ref, d["doc_id"])
    read: dict[str, dict[str, str | None]] = {}

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        ids = [voucher.get(rows[eid]["reference"]), voucher.get(rows[same_day[eid]]["reference"])]
        for doc_id in ids:
            if doc_id and doc_id not in read:
                v = parse_any((yield from kit.open(doc_id)).get("body", ""), (VOUCHER, VOUCHER_NO_ORDER))
                read[doc_id] = {"inv": str(v.invoice_no) if v else None}
        return _judge(eid, same_day[eid], rows, ids, read)

    def reads(eid: str) -> list[tuple[str, dict]]:
        ids = [voucher.get(rows[eid]["reference"]), voucher.get(rows[same_day[eid]]["reference"])]
        return [("open_document", {"doc_id": d}) for d in dict.fromkeys(ids) if d and d not in read]

    done = yield from review(kit, sorted(same_day), decide, reserve=4, reads=reads)
    n_flag, n_clear = sum(d.flag for d in done), sum(not d.flag for d in done)
    yield from kit.submit(f"{len(later)} invoices repeat an earlier vendor and amount; {len(later) - len(same_day)} "
                          f"carry their own invoice date (recurring or separately billed fees). Of the rest, {n_flag} "
                          f"duplicate postings flagged and {n_clear} cleared as separate vendor invoices.")


def _judge(eid: str, orig: str, rows: dict[str, dict[str, Any]], ids: list[str | None],
           read: dict[str, dict[str, str | None]]) -> Disposition:
    """A same-day repeat ``eid`` of ``orig``: the same printed invoice (flag) or two invoices (clear)."""
    r, o = rows[eid], rows[orig]
    mine, theirs = (read.get(x) if x else None for x in ids)
    amt = float(r["credit"])
    if mine and theirs and mine["inv"] and mine["inv"] != theirs["inv"]:
        return clear(eid, [str(x) for x in ids],
                     f"Entry {eid} ({r['posting_date']}, {amt:,.2f}) is filed with vendor invoice {mine['inv']} "
                     f"({ids[0]}), a different printed invoice from {theirs['inv']} ({ids[1]}) recorded by entry "
                     f"{orig}: two invoices of the same amount issued the same day, not a duplicate.")
    cited = [x for x in ids if x]
    inv = (mine or theirs or {}).get("inv")
    what = (f"vendor invoice {inv}, the same printed invoice already recorded by entry {orig} under voucher "
            f"{o['reference']}" if mine and theirs else
            f"no separate vendor invoice is filed for it; entry {orig} already records this vendor, amount and date")
    return flag(eid, "DUPLICATE", cited, f"Entry {eid} (posted {r['posting_date']}, voucher {r['reference']}, "
                f"{amt:,.2f}) records {what} ({', '.join(cited)}): the invoice was posted twice.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="for a same-day repeat of a vendor and amount, the printed invoice numbers of the vendor "
                     "documents scanned with the two AP vouchers (AP policy section 3.4)")
