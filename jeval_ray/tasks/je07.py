"""JE-7 (L2): duplicate postings.

Planted: a vendor invoice posted a second time a few days after the original (same vendor,
same amount, same invoice date, the same or a slightly re-keyed invoice reference). The second
posting is the defect; its required evidence is the vendor invoice in the support pack and both
entries (``get_entry`` on the original and on the duplicate). Decoys: monthly rent under a lease
with Keystone Properties LLC: the same vendor and the same amount every month, often with the
same reference (the lease number), cleared by the lease contract that fixes the monthly rent
and the lease term. Only the later postings of a same-vendor same-amount group look like
duplicates, so those are what is planted and scored; the first posting of a group (the original
invoice, the first month's rent) is ordinary. The base population is sanitised so that no two
unplanted vendor entries share a vendor and an amount.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.errors import ConfigError
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import BUSINESS_HOURS, PERIOD_END, PERIOD_START, business_days

SPEC = spec(
    "JE-7",
    "L2",
    'Duplicate postings',
    objective='Find vendor invoices posted twice. Recurring charges under a contract are not duplicates.',
    defect='duplicate posting of one invoice',
    decoys='recurring rent of the same amount under a lease',
    required_evidence='the invoices and the lease contract',
    sources=('general_ledger', 'vendor_master', 'invoices', 'lease_contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DUPLICATE', 'the same vendor invoice posted more than once'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

LANDLORD = "Keystone Properties LLC"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: (premises, short label, lease number, base rent range USD) — one lease per series of rent postings
PREMISES = (
    ("Office suite 1200, 400 Market Street, Denver, CO", "Market St office", "004", (14_000, 26_000)),
    ("Warehouse Unit 7, Riverside Industrial Park, Commerce City, CO", "warehouse", "017", (8_000, 15_000)),
    ("Sales office, 95 Pearl Street, Boulder, CO", "sales office", "009", (3_000, 7_000)),
)
MAX_PER_SERIES = 11  # twelve monthly postings in the fiscal year: the first one is not a look-alike
_WHAT = ("maintenance services", "supplies delivered", "professional services", "equipment parts",
         "freight charges", "software subscription", "consumables", "repair work")


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
    for _ in range(50):
        keys = np.char.add(np.char.add(e["vendor_id"], ":"), e["debit_cents"].astype("<U14"))
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


def _rekey(ref: str, rng) -> str:
    """The invoice number as a clerk might key it a second time."""
    digits = ref.split("-", 1)[-1]
    variants = (ref, ref, ref, ref.replace("-", ""), f"{ref}-1", digits, ref.lower())
    return variants[int(rng.integers(0, len(variants)))]


def _invoice_doc(b, i: int, vendor_names: dict) -> int:
    """The vendor's invoice behind entry ``i``, as it sits in the support pack."""
    e = b.e
    ref = str(e["reference"][i])
    vid = str(e["vendor_id"][i])
    cents = int(e["debit_cents"][i])
    what = _WHAT[int(b.rng.integers(0, len(_WHAT)))]
    d = b.date_str(e["doc_date"][i])
    return b.add_document(
        "invoice", f"Invoice {ref} - {vendor_names[vid]}",
        f"{vendor_names[vid]} (vendor {vid})\nINVOICE\nInvoice number: {ref}\nInvoice date: {d}\n"
        f"Bill to: Northwind Components Inc., Accounts Payable, 1200 Industrial Way, Denver, CO\n"
        f"Description: {what}\nNet amount: {_usd(cents)}\nAmount due: {_usd(cents)}\n"
        "Payment terms: net 30 days. Please quote the invoice number with your remittance.",
        d,
    )


def plant(b) -> None:
    """Plant lease rent series (decoys), duplicated invoices (defects), invoices and the AP policy."""
    rng = b.rng
    e = b.e
    vendor_names = {v["vendor_id"]: v["name"] for v in b.vendors}
    landlord_id = next(v["vendor_id"] for v in b.vendors if v["name"] == LANDLORD)
    bdays = business_days(PERIOD_START, PERIOD_END)
    _sanitise(b)

    # ---- decoys: recurring monthly rent, one lease per series of at most 11 look-alike postings
    n_series = -(-b.n_decoys // MAX_PER_SERIES) if b.n_decoys else 0
    if n_series > len(PREMISES):
        raise ConfigError(f"impossible knobs for JE-7: at most {len(PREMISES) * MAX_PER_SERIES} decoys "
                          f"(monthly rent postings) fit in one fiscal year; lower n_decoys")
    sizes = [b.n_decoys // n_series + (s < b.n_decoys % n_series) for s in range(n_series)] if n_series else []
    # the lease number as the monthly reference makes rent look even more like one invoice re-posted
    same_ref = rng.random() < b.knobs.near_miss
    vague_desc = rng.random() < b.knobs.near_miss
    used_rents: list[int] = []
    # a rent equal to an existing Keystone invoice would make an unplanned look-alike pair
    landlord_cents = set(e["debit_cents"][e["vendor_id"] == landlord_id].tolist())
    for s, k in enumerate(sizes):
        premises, label, lease_serial, (lo, hi) = PREMISES[s]
        posts = k + 1
        start = int(rng.integers(1, 12 - posts + 2))  # first month of the series (1-based)
        base_rent = int(rng.integers(lo // 50, hi // 50 + 1)) * 50_00
        cam = int(rng.integers(200_00, 1_500_00))
        rent = base_rent + cam
        while rent % 10_000 == 0 or rent in used_rents or rent in landlord_cents:
            rent += 13
        used_rents.append(rent)
        end_month = start + posts - 1
        commence = f"2025-{start:02d}-01"
        signed = str(np.datetime64(commence) - np.timedelta64(int(rng.integers(10, 60)), "D"))
        lease_no = f"LSE-{signed[:4]}-{lease_serial}"
        if end_month == 12:
            term = "thirty-six (36) months."
        else:
            last_day = int((np.datetime64(f"2025-{end_month + 1:02d}-01") - np.datetime64(f"2025-{end_month:02d}-01"))
                           .astype(int))
            term = f"{posts} months, ending 2025-{end_month:02d}-{last_day:02d} (short-term lease)."
        lease_doc = b.add_document(
            "contract", f"Lease agreement {lease_no} - {LANDLORD} ({label})",
            f"COMMERCIAL LEASE AGREEMENT {lease_no}\nLandlord: {LANDLORD} (vendor {landlord_id}).\n"
            f"Tenant: Northwind Components Inc.\nPremises: {premises}.\n"
            f"Commencement date: {commence}. Term: {term}\n"
            f"Clause 4.1 Monthly rent: base rent {_usd(base_rent)} plus common area maintenance "
            f"{_usd(cam)}, total {_usd(rent)} per month, payable monthly in advance on the first day of each "
            f"calendar month. The landlord issues a rent statement each month; the tenant records the rent as a "
            f"recurring posting to rent expense.\nClause 7 Security deposit: held by the landlord, not applied "
            f"against monthly rent.\nSigned for the tenant by Isabel Brown, Controller, and for the landlord by "
            f"its managing member.",
            signed,
        )
        idxs = b.pick(posts, what="rent postings")
        for m, i in enumerate(idxs):
            month = start + m
            d = np.datetime64(f"2025-{month:02d}-01")
            e["template"][i] = "rent"
            e["manual"][i] = False
            e["doc_date"][i] = d
            e["post_date"][i] = d
            e["entry_date"][i] = d
            e["time_s"][i] = int(rng.integers(1 * 3600, 5 * 3600))
            e["preparer"][i] = "SYS_BATCH"
            e["approver"][i] = ""
            e["doc_type"][i] = "KR"
            e["debit_account"][i] = "6100"
            e["credit_account"][i] = "2000"
            e["debit_cents"][i] = rent
            e["credit_cents"][i] = rent
            e["vendor_id"][i] = landlord_id
            e["reference"][i] = lease_no if same_ref else f"KP-25{month:02d}-{lease_no[-3:]}"
            e["description"][i] = (f"Monthly rent {LANDLORD}" if vague_desc
                                   else f"Rent {MONTHS[month - 1]} 2025 {label} - {LANDLORD}")
            if m > 0:
                b.add_decoy(i, "recurring_lease_rent", [lease_doc])

    # ---- defects: an invoice posted a second time a few days later
    last_ok = PERIOD_END - np.timedelta64(12, "D")
    orig_ok = (e["template"] == "vendor_invoice") & (e["post_date"] <= last_ok)
    originals = b.pick(b.n_defects, orig_ok, what="vendor invoices to duplicate")
    carriers = b.pick(b.n_defects, what="entries to carry duplicates")
    for o, c in zip(originals, carriers):
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
        ref2 = _rekey(str(e["reference"][o]), rng)
        e["reference"][c] = ref2
        if ref2 != str(e["reference"][o]):
            e["description"][c] = f"Invoice {ref2} {vendor_names[str(e['vendor_id'][o])]}"
        inv = _invoice_doc(b, int(o), vendor_names)
        b.add_defect(int(c), "duplicate_invoice_posting", "DUPLICATE", [inv, ("entry", int(o)), "entry"])

    # ---- after planting, no unplanted vendor entry may share a (vendor, amount) with anything
    _sanitise(b)

    # ---- ordinary invoices in the pack, so that an invoice document alone points at nothing
    pool = np.flatnonzero((e["template"] == "vendor_invoice") & ~b.used)
    k = min(len(pool), max(4, b.n_defects + int(rng.integers(2, 6))))
    for i in np.sort(rng.choice(pool, size=k, replace=False)):
        _invoice_doc(b, int(i), vendor_names)
    b.add_document(
        "policy", "Accounts payable policy - duplicate payment prevention",
        "Section 3.4 Each vendor invoice is recorded once. Before posting, AP clerks check the vendor, invoice "
        "number, invoice date and amount against open and paid items. Recurring charges under a signed contract "
        "(rent, leases, subscriptions) are recorded by recurring postings set up from the contract and are not "
        "keyed from individual statements.",
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


_AMOUNT = re.compile(r"total USD ([\d,]+\.\d\d) per month")
_COMMENCE = re.compile(r"Commencement date: (\d{4}-\d\d-\d\d)")
_ENDING = re.compile(r"ending (\d{4}-\d\d-\d\d)")
_TERM_MONTHS = re.compile(r"\((\d+)\) months|Term: (\d+) months")


def _lease_terms(doc: dict, vendors: dict) -> dict | None:
    """Vendor id, monthly rent and the covered period of a lease, read from its text."""
    body = doc.get("body", "")
    m = _AMOUNT.search(body)
    c = _COMMENCE.search(body)
    if not m or not c:
        return None
    vid = next((v for v, name in vendors.items() if name and name in body), None)
    start = c.group(1)
    end = _ENDING.search(body)
    if end:
        stop = end.group(1)
    else:
        t = _TERM_MONTHS.search(body)
        months = int(t.group(1) or t.group(2)) if t else 12
        y, mo = int(start[:4]), int(start[5:7]) - 1 + months
        stop = f"{y + mo // 12}-{mo % 12 + 1:02d}-01"
    return {"doc_id": doc["doc_id"], "vendor_id": vid, "rent": float(m.group(1).replace(",", "")),
            "start": start, "stop": stop}


def careful(kit: Kit):
    """Groups vendor entries by vendor and amount; clears rent a lease fixes; proves the rest duplicates.

    For each later posting of a (vendor, amount) pair: if an opened lease with that vendor fixes
    that monthly rent and the posting falls in its term, clear it citing the lease; otherwise open
    both entries and the vendor invoice, then flag it citing all three.
    """
    later, rows = yield from _groups(kit)
    vendors = {v["vendor_id"]: v["name"] for v in (yield from kit.master("vendors"))}
    docs = yield from kit.documents()
    leases = []
    if later:
        for d in docs:
            if d["doc_type"] == "contract" and "lease" in d["title"].lower():
                terms = _lease_terms((yield from kit.open(d["doc_id"])), vendors)
                if terms:
                    leases.append(terms)
    invoices = {d["title"]: d["doc_id"] for d in docs if d["doc_type"] == "invoice"}

    def lease_for(r):
        return next((x for x in leases if x["vendor_id"] == r["vendor_id"] and abs(x["rent"] - float(r["debit"])) < 0.005
                     and x["start"] <= r["posting_date"] < x["stop"]), None)

    dups = [e for e in sorted(later) if lease_for(rows[e]) is None]
    rent = [e for e in sorted(later) if lease_for(rows[e]) is not None]
    for eid in dups:
        if kit.calls_left <= 5:
            break
        orig = later[eid]
        o = yield from kit.call("get_entry", entry_id=orig)
        d = yield from kit.call("get_entry", entry_id=eid)
        ref = o.get("reference", "")
        inv = next((doc_id for title, doc_id in sorted(invoices.items()) if ref and f"Invoice {ref} " in title), None)
        ev = [orig, eid]
        if inv:
            yield from kit.open(inv)
            ev.insert(0, inv)
        amt = float(d.get("total_debit", 0))
        yield from kit.flag(
            eid, "DUPLICATE", ev,
            f"Entry {eid} (posted {d.get('posting_date')}, ref {d.get('reference')}) repeats entry {orig} "
            f"(posted {o.get('posting_date')}, ref {ref}): same vendor {d.get('vendor_id')}, same amount "
            f"{amt:,.2f}, same invoice date {o.get('document_date')}. "
            + (f"Invoice {inv} is a single invoice for {amt:,.2f}, so it was recorded twice." if inv else
               "Only one invoice exists, so it was recorded twice."))
    for eid in rent:
        if kit.calls_left <= 2:
            break
        r = rows[eid]
        lease = lease_for(r)
        yield from kit.clear(
            eid, [lease["doc_id"]],
            f"Entry {eid} ({r['posting_date']}, {float(r['debit']):,.2f}) is the monthly rent fixed by lease "
            f"{lease['doc_id']} ({lease['rent']:,.2f} per month from {lease['start']}); a recurring charge, "
            f"not a duplicate of entry {later[eid]}.")
    yield from kit.submit(f"{len(dups)} duplicate invoice postings flagged; {len(rent)} recurring lease rent "
                          f"postings cleared against their lease contracts.")
