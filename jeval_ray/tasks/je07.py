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
run after it was keyed. Each second posting is then made a defect or a decoy at random; only the
vendor documents scanned with the two vouchers differ.

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

import re

import numpy as np

from jeval_ray.protocol.kit import Kit
from jeval_ray.books import calendar as cal, master as md
from jeval_ray.builder.spec import key, spec
from jeval_ray.builder._base import APPROVERS, BUSINESS_HOURS, PERIOD_END, PERIOD_START, business_days

SPEC = spec(
    "JE-7",
    "L2",
    'Duplicate postings',
    objective='Find vendor invoices posted twice.',
    defect='duplicate posting of one invoice',
    decoys='a separate invoice of the same amount issued the same day',
    required_evidence='the scanned vendor invoices filed with both AP vouchers',
    sources=('general_ledger', 'vendor_master', 'invoices', 'ap_vouchers'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DUPLICATE', 'the same vendor invoice posted more than once'),
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


def _usd(cents: int) -> str:
    """An amount as documents print it: ``USD 1,234.56``."""
    return f"USD {cents / 100:,.2f}"


# ------------------------------------------------------------------ world
#: vendors whose invoices are planted on: billed one invoice per order or purchase, without a goods
#: receipt (monthly service bills and recurring fees are billed once a month by nature)
CATEGORIES = ("freight", "maintenance", "marketing", "office", "travel")
#: vendors billed monthly for a service, planted on only when a small year has too few of the above
MORE_CATEGORIES = ("professional", "utilities")
AP_KEYERS = ("AKIM", "BOKAFOR", "GSILVA")
_CHANNELS = ("e-mail (PDF)", "post (paper original)", "supplier portal")
_DELIVERY = ("Denver plant, 1200 Industrial Way, Denver, CO", "Warehouse Unit 7, Riverside Industrial Park, Commerce City, CO",
             "Sales office, 95 Pearl Street, Boulder, CO")


def _keyed_variant(rng, number: int) -> int:
    """A vendor invoice number differing from ``number`` in its last digit only: how a clerk's slip
    reads, and how the vendor's next invoice of the series reads, alike."""
    last = number % 10
    other = [d for d in range(10) if d != last]
    return number - last + int(other[int(rng.integers(0, len(other)))])


def _invoice_text(vendor: str, vid: str, inv_no: int, inv_date: str, po: str, site: str, what: str, cents: int) -> str:
    lines = [f"{vendor} (vendor {vid})", "INVOICE", f"Invoice number: {inv_no}", f"Invoice date: {inv_date}"]
    if po:
        lines.append(f"Purchase order: {po}")
    lines += [f"Deliver to: {site}", f"Description: {what}", f"Amount due: {_usd(cents)}",
              "Payment terms as agreed. Please quote the invoice number with your remittance."]
    return "\n".join(lines)


def _voucher(b, ref: str, post: str, keyed: int, preparer: str, approver: str, approved: str, channel: str,
             vendor: str, invoice: str) -> int:
    """The AP voucher of entry ``ref`` and the scanned vendor document filed with it."""
    prep, appr = b.user(preparer), b.user(approver)
    return b.add_document(
        "invoice", f"AP voucher {ref} - {vendor}",
        f"AP voucher {ref}, posted {post}. Vendor invoice number as keyed: {keyed}. Keyed by {prep['name']} "
        f"({preparer}); approved by {appr['name']} ({approver}) on {approved}.\n"
        f"Scanned vendor document filed with the voucher (received by {channel}):\n{invoice}",
        post,
    )


def _next_thursday(d: np.datetime64) -> np.datetime64:
    """The payment run on or after ``d`` (the books pay on Thursdays)."""
    return d + int((3 - cal.weekday(d)) % 7)


def plant(b) -> None:
    """Plant second postings of ordinary vendor invoices (each a defect or a decoy), their vouchers,
    the vouchers of some ordinary invoices and the AP policy."""
    rng = b.rng
    e = b.e
    d = b.books.docs
    vendor_names = {v["vendor_id"]: v["name"] for v in b.vendors}
    category = {v["vendor_id"]: v["category"] for v in b.vendors}
    bdays = business_days(PERIOD_START, PERIOD_END)
    n = b.n_defects + b.n_decoys
    invoice = np.isin(e["doc_code"], ["VI", "VN"])
    # (vendor, invoice total) of every invoice: an original must be the only invoice of its vendor and total
    # integer vendor codes from the books (string keys cost seconds on a million entries)
    partner = np.where(e["vendor_id"] != "", d.partner[e["books_doc"]], -1)
    key = ((partner + 1).astype(np.int64) << 40) | e["credit_cents"]
    keys, counts = np.unique(key[invoice], return_counts=True)
    unique = np.isin(key, keys[counts == 1])
    cat_of = b.books.master.vendor_category[np.maximum(partner, 0)]
    base = (invoice & (e["doc_code"] == "VN") & unique & (partner >= 0)
            & (e["post_date"] >= PERIOD_START) & (e["post_date"] <= PERIOD_END - np.timedelta64(12, "D")))
    ok = base & np.isin(cat_of, [md.CATEGORY[c] for c in CATEGORIES])
    if int((ok & ~b.used).sum()) < n:
        # a small year with few such invoices: the monthly service bills too
        ok = base & np.isin(cat_of, [md.CATEGORY[c] for c in CATEGORIES + MORE_CATEGORIES])
    originals = b.pick(n, ok, what="vendor invoices without a goods receipt to post a second time")
    is_defect = np.zeros(n, dtype=bool)
    is_defect[rng.permutation(n)[: b.n_defects]] = True
    payments = _payments(b, e["books_doc"][originals])
    # the second postings (and their payments) are copies appended in one go after this loop, at
    # these indices; what differs from the original is set on them then
    seconds = b.n + np.arange(n)
    sets: list[tuple[str, int, object]] = []
    next_doc = len(d)
    pay_jobs: list[tuple] = []
    for k, (o, c) in enumerate(zip(originals.tolist(), seconds.tolist())):
        vid = str(e["vendor_id"][o])
        name = vendor_names[vid]
        bd = int(e["books_doc"][o])
        number = int(d.ext_ref[bd])
        keyed = _keyed_variant(rng, number)
        printed = number if is_defect[k] else keyed
        # the second posting: keyed by an AP clerk 1-9 days later under its own voucher
        ref2 = f"VN-{next_doc:07d}"
        next_doc += 1
        post = bdays[min(int(np.searchsorted(bdays, e["post_date"][o] + int(rng.integers(1, 10)))), len(bdays) - 1)]
        sets += [("post_date", c, post), ("entry_date", c, post),
                 ("time_s", c, int(rng.integers(BUSINESS_HOURS[0] + 1800, BUSINESS_HOURS[1] - 1800))),
                 ("reference", c, ref2),
                 ("description", c, str(e["description"][o]).replace(f"Invoice {number} ", f"Invoice {keyed} ", 1))]
        prep = AP_KEYERS[int(rng.integers(0, len(AP_KEYERS)))]
        cents = int(e["credit_cents"][o])
        appr = next(a for a in APPROVERS if a != prep and b.user(a)["approval_limit"] * 100 >= cents)
        sets += [("preparer", c, prep), ("approver", c, appr)]
        approved2 = str(max(e["doc_date"][o], post - int(rng.integers(0, 3))))
        # its payment: the run after it was keyed, when that is within the year
        for p in payments.get(bd, []):
            run = _next_thursday(max(e["post_date"][p], post + 2))
            if run <= PERIOD_END:
                pay_jobs.append((p, run, str(e["reference"][o]), ref2))
        po1 = f"PO-{int(d.parent[bd]):07d}" if d.parent[bd] >= 0 else ""
        po2 = po1 if is_defect[k] or not po1 else f"PO-{next_doc:07d}"
        next_doc += 1
        site1 = _DELIVERY[int(rng.integers(0, len(_DELIVERY)))]
        site2 = site1 if is_defect[k] else _DELIVERY[(_DELIVERY.index(site1) + 1 + int(rng.integers(0, 2))) % len(_DELIVERY)]
        what = f"{md.CATEGORIES[md.CATEGORY[category[vid]]].what}"
        inv_date = b.date_str(e["doc_date"][o])
        ch = rng.permutation(len(_CHANNELS))[:2]
        doc_o = _voucher(b, str(e["reference"][o]), b.date_str(e["post_date"][o]), number, str(e["preparer"][o]),
                         str(e["approver"][o]), md.iso(d.approved_on[bd]), _CHANNELS[int(ch[0])], name,
                         _invoice_text(name, vid, number, inv_date, po1, site1, what, cents))
        doc_c = _voucher(b, ref2, b.date_str(post), keyed, prep, appr, approved2, _CHANNELS[int(ch[1])], name,
                         _invoice_text(name, vid, printed, inv_date, po2, site2, what, cents))
        if is_defect[k]:
            b.add_defect(c, "duplicate_invoice_posting", "DUPLICATE", [doc_c, doc_o], cents,
                         facts=[str(number), f"{{E:{o}}}", cents / 100])
        else:
            b.add_decoy(c, "same_day_separate_invoice", [doc_c, doc_o], facts=[str(printed), str(number)])

    # the copies: the second postings, then their payments (copies of the originals' payments in a later run)
    new = b.copy_entries(np.concatenate([originals, np.array([j[0] for j in pay_jobs], dtype=np.int64)]))
    assert new[0] == seconds[0]
    for col, i, v in sets:
        e[col][i] = v
    for (p, run, ref1, ref2), q in zip(pay_jobs, new[n:].tolist()):
        e["post_date"][q] = e["doc_date"][q] = e["entry_date"][q] = run
        e["description"][q] = str(e["description"][p]).replace(ref1, ref2)
        e["reference"][q] = f"VP-{next_doc:07d}"
        next_doc += 1

    # ---- vouchers of ordinary invoices in the pack, so that a voucher alone points at nothing
    pool = np.flatnonzero((e["doc_code"] == "VN") & ~b.used & (e["post_date"] >= PERIOD_START))
    k = min(len(pool), max(4, n // 2 + int(rng.integers(2, 6))))
    for i in np.sort(rng.choice(pool, size=k, replace=False)).tolist():
        vid = str(e["vendor_id"][i])
        name = vendor_names[vid]
        bd = int(e["books_doc"][i])
        po = f"PO-{int(d.parent[bd]):07d}" if d.parent[bd] >= 0 else ""
        _voucher(b, str(e["reference"][i]), b.date_str(e["post_date"][i]), int(d.ext_ref[bd]), str(e["preparer"][i]),
                 str(e["approver"][i]), md.iso(d.approved_on[bd]), _CHANNELS[int(rng.integers(0, len(_CHANNELS)))], name,
                 _invoice_text(name, vid, int(d.ext_ref[bd]), b.date_str(e["doc_date"][i]), po,
                               _DELIVERY[int(rng.integers(0, len(_DELIVERY)))],
                               md.CATEGORIES[md.CATEGORY[category[vid]]].what, int(e["credit_cents"][i])))
    b.add_document(
        "policy", "Accounts payable policy - duplicate payment prevention",
        "Section 3.4 Each vendor invoice is recorded once. An invoice is identified by the vendor and the vendor's "
        "invoice number as printed on it, not by its amount: vendors may issue several invoices of the same amount "
        "on the same day for separate orders or deliveries, and fixed monthly fees recur at the same amount. The ERP "
        "rejects a second invoice with the vendor and invoice number already keyed; AP clerks check the vendor and "
        "the printed invoice number against open and paid items before posting. Section 3.5 Every invoice is "
        "scanned and filed with the AP voucher under which it is posted; invoices may arrive by e-mail, by post or "
        "through the supplier portal, and a copy received through a second channel is not posted again.",
        "2024-11-20",
    )


def _payments(b, invoices: np.ndarray) -> dict[int, list[int]]:
    """{books document of each of ``invoices``: the entries of its payments} (a payment names its invoice)."""
    e = b.e
    vp = np.flatnonzero(e["doc_code"] == "VP")
    vp = vp[np.isin(b.books.docs.parent[e["books_doc"][vp]], invoices)]
    out: dict[int, list[int]] = {}
    for p, inv in zip(vp.tolist(), b.books.docs.parent[e["books_doc"][vp]].tolist()):
        out.setdefault(int(inv), []).append(p)
    return out


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "document_date", "vendor_id", "credit", "reference", "description"]


def _groups(kit: Kit):
    """Vendor invoices grouped by (vendor, invoice total: the credit to accounts payable); returns
    {later invoice: the first one} and the rows."""
    rows = yield from kit.ledger(filters=[{"column": "document_type", "op": "in", "value": ["VI", "VN"]},
                                          {"column": "account", "op": "eq", "value": "2000"}], columns=_COLS)
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


def naive(kit: Kit):
    """Flags every vendor invoice that repeats an earlier invoice's vendor and amount, reading no documents."""
    later, rows = yield from _groups(kit)
    for eid, orig in sorted(later.items()):
        if kit.calls_left <= 1:
            break
        r = rows[eid]
        yield from kit.flag(eid, "DUPLICATE", [], f"Entry {eid}: same vendor {r['vendor_id']} and amount "
                                                   f"{float(r['credit']):,.2f} as entry {orig}; posted twice.")
    yield from kit.submit(f"Flagged {len(later)} invoices that repeat an earlier vendor and amount.")


_INV_NO = re.compile(r"Invoice number: (\S+)")
_PO = re.compile(r"Purchase order: (\S+)")


def careful(kit: Kit):
    """Groups vendor invoices by vendor and amount. A repeat with its own invoice date is another
    invoice (a monthly fee, a fixed fee billed again); for a repeat dated the same day as the
    earlier invoice it reads the vendor document scanned with each AP voucher, flags the posting
    when both are the same printed invoice and clears it when they are two invoices."""
    later, rows = yield from _groups(kit)
    same_day = {e: o for e, o in later.items() if rows[e]["document_date"] == rows[o]["document_date"]}
    docs = (yield from kit.documents()) if same_day else []
    voucher = {}
    for d in docs:
        m = re.match(r"AP voucher (\S+) - ", d["title"])
        if m:
            voucher.setdefault(m.group(1), d["doc_id"])
    read: dict[str, dict] = {}
    n_flag = n_clear = 0
    for eid in sorted(same_day):
        if kit.calls_left <= 4:
            break
        orig = same_day[eid]
        r, o = rows[eid], rows[orig]
        ids = [voucher.get(r["reference"]), voucher.get(o["reference"])]
        for doc_id in ids:
            if doc_id and doc_id not in read:
                body = (yield from kit.open(doc_id)).get("body", "")
                inv, po = _INV_NO.search(body), _PO.search(body)
                read[doc_id] = {"inv": inv.group(1) if inv else None, "po": po.group(1) if po else None}
        mine, theirs = (read.get(x) if x else None for x in ids)
        amt = float(r["credit"])
        if mine and theirs and mine["inv"] and mine["inv"] != theirs["inv"]:
            yield from kit.clear(
                eid, ids,
                f"Entry {eid} ({r['posting_date']}, {amt:,.2f}) is filed with vendor invoice {mine['inv']} "
                f"({ids[0]}), a different printed invoice from {theirs['inv']} ({ids[1]}) recorded by entry {orig}: "
                f"two invoices of the same amount issued the same day, not a duplicate.")
            n_clear += 1
            continue
        cited = [x for x in ids if x]
        inv = (mine or theirs or {}).get("inv")
        what = (f"vendor invoice {inv}, the same printed invoice already recorded by entry {orig} under voucher "
                f"{o['reference']}" if mine and theirs else
                f"no separate vendor invoice is filed for it; entry {orig} already records this vendor, amount and date")
        yield from kit.flag(
            eid, "DUPLICATE", cited,
            f"Entry {eid} (posted {r['posting_date']}, voucher {r['reference']}, {amt:,.2f}) records {what} "
            f"({', '.join(cited)}): the invoice was posted twice.")
        n_flag += 1
    yield from kit.submit(f"{len(later)} invoices repeat an earlier vendor and amount; {len(later) - len(same_day)} "
                          f"carry their own invoice date (recurring or separately billed fees). Of the rest, {n_flag} "
                          f"duplicate postings flagged and {n_clear} cleared as separate vendor invoices.")
