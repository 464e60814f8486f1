"""JE-7 (L2): duplicate postings.

The red-flag rule: a vendor entry that repeats an earlier entry's vendor and amount. Every entry
the rule catches is planted from one surface distribution: an ordinary vendor invoice (the
*original*) and, 1-9 days later, a second posting for the same vendor, the same amount and the same
invoice (document) date, keyed by the same source (manual or interface) under its own AP voucher
number, with a description of the usual form. Each second posting is then made a defect or a decoy
at random; only the scanned vendor documents filed with the two vouchers differ.

Planted defects (criteria ``DUPLICATE``), ``duplicate_invoice_posting``: the document filed with the
second voucher is the same vendor invoice as the original's (the same vendor invoice number and
purchase order), received a second time (by post after e-mail, or the reverse), so one invoice was
recorded twice. The misstatement is the second posting's amount. Decisive facts: the vendor invoice
number, the original entry and the amount.

Decoys, ``same_day_separate_invoice``: the vendor issued two invoices of the same amount on the
same day for two purchase orders (two deliveries or two sites): the two vouchers carry different
vendor invoice numbers and purchase orders. Decisive facts: both vendor invoice numbers and the
second purchase order.

Required (and clearing) evidence: the AP voucher documents of the second posting and of the
original (titled ``AP voucher <reference> - <vendor>``). The support pack also files vouchers of
ordinary invoices, and the AP policy says an invoice is identified by vendor and vendor invoice
number, not by amount. The base population is sanitised so that no two unplanted vendor entries
share a vendor and an amount.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import BUSINESS_HOURS, PERIOD_END, PERIOD_START, business_days

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

def _usd(cents: int) -> str:
    """An amount as documents print it: ``USD 1,234.56``."""
    return f"USD {cents / 100:,.2f}"


# ------------------------------------------------------------------ world
def _bad_amount(b, i: int, cents: int) -> bool:
    """Amounts the base must avoid for other tasks' rules: round hundreds, the 80-100% limit band."""
    if cents % 10_000 == 0:
        return True
    if b.e["manual"][i]:
        lim = b.user(str(b.e["preparer"][i]))["approval_limit"] * 100
        return lim > 0 and 0.8 * lim <= cents < lim
    return False


def _sanitise(b) -> None:
    """Make every unplanted vendor entry's (vendor, amount) unique, and distinct from planted ones.

    Planted entries keep their amounts; colliding base entries are nudged by a few cents, which
    keeps them realistic and clean for the other rules (no round amounts, no limit band).
    """
    e = b.e
    has_v = e["vendor_id"] != ""
    # integer (vendor, amount) keys: string keys cost seconds on a million entries
    _, vendor_code = np.unique(e["vendor_id"], return_inverse=True)
    vendor_code = vendor_code.astype(np.int64) << 40
    for _ in range(50):
        keys = vendor_code | e["debit_cents"]
        planted_keys = np.unique(keys[b.used & has_v])
        bump = has_v & ~b.used & np.isin(keys, planted_keys)
        idx = np.flatnonzero(has_v & ~b.used & ~bump)
        _, first = np.unique(keys[idx], return_index=True)
        later = np.ones(len(idx), dtype=bool)
        later[first] = False
        bump[idx[later]] = True
        if not bump.any():
            return
        for i in np.flatnonzero(bump):
            c = int(e["debit_cents"][i]) + 37
            while _bad_amount(b, i, c):
                c += 37
            e["debit_cents"][i] = c
            e["credit_cents"][i] = c
    raise RuntimeError("JE-7: could not make base vendor amounts unique")  # pragma: no cover



def _next_bday(bdays: np.ndarray, d: np.datetime64) -> np.datetime64:
    """The first business day on or after ``d`` (manual postings happen on business days)."""
    pos = min(int(np.searchsorted(bdays, d)), len(bdays) - 1)
    return bdays[pos]


#: what an invoice bills, in words that fit any vendor
_WHAT = ("goods delivered as per purchase order", "services rendered as per purchase order",
         "as per purchase order and delivery note")
_SITES = ("Denver plant, 1200 Industrial Way, Denver, CO", "Warehouse Unit 7, Riverside Industrial Park, Commerce City, CO",
          "Sales office, 95 Pearl Street, Boulder, CO")
_CHANNELS = ("e-mail (PDF)", "post (paper original)", "supplier portal")


def vendor_prefix(name: str) -> str:
    """The vendor's invoice-number prefix: its name's initials (``Acme Industrial Supply`` -> ``AIS``)."""
    return "".join(w[0] for w in re.findall(r"[A-Za-z]+", name) if w[0].isupper())[:4]


def _voucher_doc(b, ref: str, post: str, vendor: str, vid: str, inv_no: str, inv_date: str, po: str, site: str,
                 what: str, cents: int, channel: str) -> int:
    """The scanned vendor invoice filed with AP voucher ``ref``, as it sits in the support pack."""
    return b.add_document(
        "invoice", f"AP voucher {ref} - {vendor}",
        f"Scanned vendor document filed with AP voucher {ref} (posted {post}); received by {channel}.\n"
        f"{vendor} (vendor {vid})\nINVOICE\nInvoice number: {inv_no}\nInvoice date: {inv_date}\n"
        f"Purchase order: {po}\nDeliver to: {site}\nDescription: {what}\nNet amount: {_usd(cents)}\n"
        f"Amount due: {_usd(cents)}\nPayment terms: net 30 days. Please quote the invoice number with your remittance.",
        post,
    )


def plant(b) -> None:
    """Plant original/second-posting pairs (each second posting a defect or a decoy), their vouchers and the AP policy."""
    rng = b.rng
    e = b.e
    vendor_names = {v["vendor_id"]: v["name"] for v in b.vendors}
    bdays = business_days(PERIOD_START, PERIOD_END)
    _sanitise(b)
    n = b.n_defects + b.n_decoys
    last_ok = PERIOD_END - np.timedelta64(12, "D")
    orig_ok = (e["template"] == "vendor_invoice") & (e["post_date"] <= last_ok)
    originals = b.pick(n, orig_ok, what="vendor invoices with a second posting")
    carriers = b.pick(n, what="entries to carry second postings")
    is_defect = np.zeros(n, dtype=bool)
    is_defect[rng.permutation(n)[: b.n_defects]] = True
    keys: set[tuple[str, int]] = set()
    inv_numbers: set[str] = set()
    for k, (o, c) in enumerate(zip(originals.tolist(), carriers.tolist())):
        vid = str(e["vendor_id"][o])
        while (vid, int(e["debit_cents"][o])) in keys or _bad_amount(b, o, int(e["debit_cents"][o])):
            e["debit_cents"][o] += 37
            e["credit_cents"][o] = e["debit_cents"][o]
        keys.add((vid, int(e["debit_cents"][o])))
        # the carrier's own voucher number (unique in the slice) becomes the second posting's reference
        ref2 = "INV-" + str(e["reference"][c]).split("-")[-1]
        for col in e:
            e[col][c] = e[col][o]
        gap = np.timedelta64(int(rng.integers(1, 10)), "D")
        if e["manual"][o]:
            d = _next_bday(bdays, e["post_date"][o] + gap)
            e["time_s"][c] = int(rng.integers(BUSINESS_HOURS[0] + 1800, BUSINESS_HOURS[1] - 1800))
        else:
            d = e["post_date"][o] + gap
            e["time_s"][c] = int(rng.integers(1 * 3600, 5 * 3600))
        e["post_date"][c] = d
        e["entry_date"][c] = d
        e["reference"][c] = ref2
        if str(e["description"][o]).startswith("Invoice "):
            e["description"][c] = f"Invoice {ref2} {vendor_names[vid]}"

        name = vendor_names[vid]
        cents = int(e["debit_cents"][o])
        num = int(rng.integers(10_000, 99_000))
        inv1 = f"{vendor_prefix(name)}-{num}"
        while inv1 in inv_numbers:
            num += 3
            inv1 = f"{vendor_prefix(name)}-{num}"
        inv2 = inv1 if is_defect[k] else f"{vendor_prefix(name)}-{num + 1}"
        inv_numbers |= {inv1, inv2}
        po1 = f"PO-{int(rng.integers(400_000, 499_000))}"
        po2 = po1 if is_defect[k] else f"PO-{int(po1[3:]) + int(rng.integers(1, 40))}"
        site1 = _SITES[int(rng.integers(0, len(_SITES)))]
        site2 = site1 if is_defect[k] or rng.random() < 0.5 else _SITES[(_SITES.index(site1) + 1) % len(_SITES)]
        what = _WHAT[int(rng.integers(0, len(_WHAT)))]
        inv_date = b.date_str(e["doc_date"][o])
        ch = rng.permutation(len(_CHANNELS))[:2]
        doc_o = _voucher_doc(b, str(e["reference"][o]), b.date_str(e["post_date"][o]), name, vid, inv1, inv_date, po1,
                             site1, what, cents, _CHANNELS[int(ch[0])])
        doc_c = _voucher_doc(b, ref2, b.date_str(d), name, vid, inv2, inv_date, po2, site2, what, cents,
                             _CHANNELS[int(ch[1])])
        if is_defect[k]:
            b.add_defect(c, "duplicate_invoice_posting", "DUPLICATE", [doc_c, doc_o], cents,
                         facts=[inv1, f"{{E:{o}}}", cents / 100])
        else:
            b.add_decoy(c, "same_day_separate_invoice", [doc_c, doc_o], facts=[inv2, inv1, po2])

    # ---- after planting, no unplanted vendor entry may share a (vendor, amount) with anything
    _sanitise(b)

    # ---- vouchers of ordinary invoices in the pack, so that a voucher alone points at nothing
    pool = np.flatnonzero((e["template"] == "vendor_invoice") & ~b.used)
    k = min(len(pool), max(4, n // 2 + int(rng.integers(2, 6))))
    for i in np.sort(rng.choice(pool, size=k, replace=False)).tolist():
        vid = str(e["vendor_id"][i])
        name = vendor_names[vid]
        num = int(rng.integers(10_000, 99_000))
        while f"{vendor_prefix(name)}-{num}" in inv_numbers:
            num += 3
        inv_numbers.add(f"{vendor_prefix(name)}-{num}")
        _voucher_doc(b, str(e["reference"][i]), b.date_str(e["post_date"][i]), name, vid, f"{vendor_prefix(name)}-{num}",
                     b.date_str(e["doc_date"][i]), f"PO-{int(rng.integers(400_000, 499_000))}",
                     _SITES[int(rng.integers(0, len(_SITES)))], _WHAT[int(rng.integers(0, len(_WHAT)))],
                     int(e["debit_cents"][i]), _CHANNELS[int(rng.integers(0, len(_CHANNELS)))])
    b.add_document(
        "policy", "Accounts payable policy - duplicate payment prevention",
        "Section 3.4 Each vendor invoice is recorded once. An invoice is identified by the vendor and the vendor's "
        "invoice number, not by its amount: vendors may issue several invoices of the same amount on the same day "
        "for separate purchase orders or deliveries. Before posting, AP clerks check the vendor and the vendor "
        "invoice number against open and paid items. Section 3.5 Every invoice is scanned and filed with the AP "
        "voucher under which it is posted; invoices may arrive by e-mail, by post or through the supplier portal, "
        "and a copy received through a second channel is not posted again.",
        "2024-11-20",
    )


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "document_date", "vendor_id", "debit", "reference", "description"]


def _groups(kit: Kit):
    """Vendor entries grouped by (vendor, amount); returns {later posting: first posting} and the rows."""
    rows = yield from kit.ledger(filters=[{"column": "vendor_id", "op": "ne", "value": ""},
                                          {"column": "line_no", "op": "eq", "value": 1}], columns=_COLS)
    first: dict[tuple, str] = {}
    later: dict[str, str] = {}
    by_id = {}
    for r in sorted(rows, key=lambda r: r["entry_id"]):
        by_id[r["entry_id"]] = r
        key = (r["vendor_id"], round(float(r["debit"]), 2))
        if key in first:
            later[r["entry_id"]] = first[key]
        else:
            first[key] = r["entry_id"]
    return later, by_id


def naive(kit: Kit):
    """Flags every later posting with the vendor and amount of an earlier one, reading no documents."""
    later, rows = yield from _groups(kit)
    for eid, orig in sorted(later.items()):
        if kit.calls_left <= 1:
            break
        r = rows[eid]
        yield from kit.flag(eid, "DUPLICATE", [], f"Entry {eid}: same vendor {r['vendor_id']} and amount "
                                                   f"{float(r['debit']):,.2f} as entry {orig}; posted twice.")
    yield from kit.submit(f"Flagged {len(later)} postings that repeat an earlier vendor and amount.")


_INV_NO = re.compile(r"Invoice number: (\S+)")
_PO = re.compile(r"Purchase order: (\S+)")


def careful(kit: Kit):
    """Groups vendor entries by vendor and amount; for each later posting, reads the vendor invoice
    filed with its AP voucher and with the original's, flags it when both are the same vendor
    invoice (number) and clears it when they are two invoices."""
    later, rows = yield from _groups(kit)
    docs = (yield from kit.documents()) if later else []
    voucher = {}
    for d in docs:
        m = re.match(r"AP voucher (\S+) - ", d["title"])
        if m:
            voucher.setdefault(m.group(1), d["doc_id"])
    read: dict[str, dict] = {}
    n_flag = n_clear = 0
    for eid in sorted(later):
        if kit.calls_left <= 4:
            break
        orig = later[eid]
        r, o = rows[eid], rows[orig]
        ids = [voucher.get(r["reference"]), voucher.get(o["reference"])]
        for doc_id in ids:
            if doc_id and doc_id not in read:
                body = (yield from kit.open(doc_id)).get("body", "")
                inv, po = _INV_NO.search(body), _PO.search(body)
                read[doc_id] = {"inv": inv.group(1) if inv else None, "po": po.group(1) if po else None}
        mine, theirs = (read.get(x) if x else None for x in ids)
        amt = float(r["debit"])
        if mine and theirs and mine["inv"] and mine["inv"] != theirs["inv"]:
            yield from kit.clear(
                eid, ids,
                f"Entry {eid} ({r['posting_date']}, {amt:,.2f}) records vendor invoice {mine['inv']} (purchase order "
                f"{mine['po']}, {ids[0]}), a different invoice from {theirs['inv']} (purchase order {theirs['po']}, "
                f"{ids[1]}) recorded by entry {orig}: two invoices of the same amount, not a duplicate.")
            n_clear += 1
            continue
        cited = [x for x in ids if x]
        inv = (mine or theirs or {}).get("inv")
        what = (f"vendor invoice {inv} (purchase order {(mine or theirs)['po']}), the same invoice already recorded by "
                f"entry {orig} under voucher {o['reference']}" if mine and theirs else
                f"no separate vendor invoice is filed for it; entry {orig} already records this vendor and amount")
        yield from kit.flag(
            eid, "DUPLICATE", cited,
            f"Entry {eid} (posted {r['posting_date']}, voucher {r['reference']}, {amt:,.2f}) records {what} "
            f"({', '.join(cited)}): the invoice was posted twice.")
        n_flag += 1
    yield from kit.submit(f"{n_flag} duplicate invoice postings flagged; {n_clear} same-amount postings cleared as "
                          f"separate vendor invoices.")
