"""JE-5 (L2): approval-limit avoidance.

Every user who prepares manual entries carries an ``approval_limit`` in ``master:users``
(AP/AR clerks 5,000, GL accountants 10,000, senior accountants 25,000). The approval authority
matrix (a policy document) says that an entry within the preparer's limit is released by a
reviewer whose own limit covers it, that an entry above it needs an approver whose limit covers
the full amount, that a purchase is recorded at its full amount (splitting one purchase into parts
that each stay within the limit is prohibited), and that a manual entry at 90% or more of the
preparer's limit (and below it) is acceptable only where a statement of work or contract on file
fixes that amount for the vendor and the date.

Every entry the rule catches is planted from one surface distribution: manual vendor invoices
keyed by a clerk or accountant for a vendor billed under statements of work (with that vendor's
expense account), released by a peer reviewer, either *single* (one invoice at 90-99.9% of the
preparer's limit) or a *group* (two or three invoices by one preparer for one vendor on the same
or adjacent business days, each under the limit, together above it and above the reviewer's
limit). Defects and decoys draw their shapes from the same process; only the documents differ.

Singles. Every single's vendor has a statement of work on file (titled with the vendor), signed
before the entry, with a term covering its date.
  * decoy ``contract_fixed_price``: the statement of work fixes exactly the entry's amount.
    Decisive facts: the statement of work, the amount and the vendor id.
  * defect ``near_limit`` (criteria ``LIMIT_AVOIDANCE``): the vendor's statement of work fixes
    another price for another deliverable (closer to the amount as ``near_miss`` rises), so
    nothing fixes the amount. Decisive facts: the preparer, the limit, the amount and the
    statement of work read.
Groups. Every part has the vendor invoice in the pack (``Invoice <reference> - <vendor>``).
  * defect ``split_entry``: every part is a partial invoice against one purchase order whose total
    (the sum of the parts) exceeds the preparer's limit and the reviewer's: one purchase split.
    Decisive facts: the purchase order, its total, the preparer's limit and the invoice.
  * decoy ``separate_purchases``: each invoice bills its own purchase order, ordered on its own date
    by its own requester, in full. Decisive facts: the purchase order, the amount and the invoice.

Required evidence: the matrix and ``master:users``, plus the statement of work read (singles) or
the part's invoice (groups); a decoy is cleared by the matrix, ``master:users`` and its statement
of work or invoice. The base population keeps manual amounts out of 80-100% of the preparer's
limit; ``plant`` also re-checks that band and breaks up any run of same-preparer, same-vendor
manual entries that would read as a split, so only planted entries trip the rule.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.errors import ConfigError
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import APPROVERS, PERIOD_END, PERIOD_START, business_days
VENDOR_NAMES: tuple = ()  # MIGRATION: vendors now come from the books (b.vendors)

SPEC = spec(
    "JE-5",
    "L2",
    'Approval-limit avoidance',
    objective="Find manual entries sized just below the preparer's approval limit with no fixed price on file, or one purchase split into several entries that together exceed it.",
    defect="amount just below the preparer's approval limit, or a split above it",
    decoys='a fixed-price item near the limit backed by a statement of work, or separate purchases on adjacent days',
    required_evidence='approval-limit matrix, user limits and the statement of work or vendor invoice',
    sources=('general_ledger', 'user_master', 'approval_limit_matrix', 'invoices', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('LIMIT_AVOIDANCE', "amount just below the preparer's approval limit, or split entries that together exceed it"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Approval authority matrix - manual journal entries"
#: share of the preparer's limit from which a manual entry needs a contract fixing its amount
REVIEW_SHARE = 0.90
#: the policy's "same or adjacent days" for splits, in calendar days
SPLIT_WINDOW_DAYS = 1
#: a wider window used when sanitising the base, so no near-split survives by a day
SANITISE_WINDOW_DAYS = 3
#: users who key vendor invoices (the AR clerk does not)
INVOICE_PREPARERS = ("AKIM", "BOKAFOR", "DPATEL", "EMUELLER", "FNGUYEN", "GSILVA")
#: users who review (release) manual entries within the preparer's limit
REVIEWERS = ("AKIM", "BOKAFOR", "CRUIZ", "DPATEL", "EMUELLER", "FNGUYEN", "GSILVA")
_ALL_VENDOR_IDS = tuple(f"V{1001 + i}" for i in range(len(VENDOR_NAMES)))

# vendor name -> (expense account, deliverables billed at a fixed price under a statement of work)
CONTRACTABLE = {
    "Evergreen Facilities": ("6600", ("deep cleaning of the Denver production hall", "re-marking of the warehouse floor")),
    "Falcon IT Services": ("7100", ("migration of the file servers to the new data centre", "replacement of 40 laptops")),
    "Granite Legal LLP": ("6400", ("review of the revised distributor agreements", "trademark renewal filings")),
    "Juniper Marketing Group": ("6700", ("design of the spring product catalogue", "trade-show booth artwork")),
    "Lumen Software Inc.": ("7100", ("configuration of the ERP approval workflow", "ERP user training for Finance")),
    "Northstar Consulting": ("6400", ("review of the month-end close process", "inventory costing assessment")),
    "Orion Packaging": ("1200", ("tooling for the new shipping carton", "pallet-wrap trial run")),
    "Redwood Maintenance": ("6600", ("overhaul of production line 2", "inspection of the sprinkler system")),
    "Summit Staffing": ("6400", ("recruitment of an AP team lead", "temporary cover for the payroll clerk")),
    "Titan Equipment Rental": ("6600", ("hire of a scissor lift for the roof works", "hire of a generator for the outage")),
    "Unity Telecom": ("6200", ("cabling of the new Boulder office", "upgrade of the phone system")),
    "Vista Print Solutions": ("6700", ("printing of the annual product catalogue", "printing of the trade-show banners")),
}
_GOODS = ("spare parts", "consumables", "service visit", "materials", "hardware", "installation work")
_REQUESTERS = ("Plant maintenance", "Warehouse", "Finance", "IT", "Sales operations", "Production planning")
_VENDOR_ID = {nm: f"V{1001 + i}" for i, nm in enumerate(VENDOR_NAMES)}
_VENDOR_NAME = {v: k for k, v in _VENDOR_ID.items()}
_SIGNATORIES = ("Maria Lopez, Managing Director", "Tom Becker, Account Director", "Priya Shah, VP Sales",
                "Daniel Moore, Partner", "Sofia Rossi, Commercial Manager")


# ---------------------------------------------------------------------------- the rule
def split_chains(prep: np.ndarray, vendor: np.ndarray, day: np.ndarray, window: int) -> list[np.ndarray]:
    """Positions of chains of two or more entries by one preparer for one vendor whose dates are
    at most ``window`` days apart one after the other (entries without a vendor never chain)."""
    idx = np.flatnonzero(vendor != "")
    if len(idx) < 2:
        return []
    order = idx[np.lexsort((day[idx], vendor[idx], prep[idx]))]
    link = ((prep[order][1:] == prep[order][:-1]) & (vendor[order][1:] == vendor[order][:-1])
            & (day[order][1:] - day[order][:-1] <= window))
    starts = np.flatnonzero(np.concatenate([[True], ~link]))
    return [g for g in np.split(order, starts[1:]) if len(g) >= 2]


def is_split(cents: np.ndarray, limit_cents: float) -> bool:
    """The policy's split: every part within the limit, the parts together above it."""
    return limit_cents > 0 and bool(np.all(cents < limit_cents)) and int(cents.sum()) > limit_cents


def in_band(cents, limit_cents, share: float = REVIEW_SHARE):
    """At ``share`` or more of the preparer's limit and below it (vectorised)."""
    cents = np.asarray(cents)
    limit_cents = np.asarray(limit_cents)
    return (limit_cents > 0) & (cents >= share * limit_cents) & (cents < limit_cents)


# ---------------------------------------------------------------------------- planting
def _policy_body() -> str:
    return (
        "Policy FIN-07 Approval authority for manual journal entries. Effective 2024-07-01. Owner: Controller.\n\n"
        "1. Individual limits. Every user who prepares manual journal entries holds an individual approval limit, "
        "recorded in the user master (master data: users, field approval_limit). Standard limits by role:\n"
        "   AP Clerk / AR Clerk ............ USD 5,000\n"
        "   GL Accountant .................. USD 10,000\n"
        "   Senior Accountant .............. USD 25,000\n"
        "   Accounting Manager ............. USD 100,000\n"
        "   Controller ..................... USD 500,000\n"
        "   CFO ............................ USD 5,000,000\n"
        "2. Release. A manual entry within the preparer's limit is released after review by another user whose own "
        "limit covers it. An entry above the preparer's limit must be approved by a user whose own limit covers the "
        "full amount.\n"
        "3. Splitting. A purchase is recorded at its full amount. Recording one purchase (one purchase order) as "
        "several entries for the same vendor by the same preparer on the same or adjacent days, so that each part "
        "stays within the preparer's limit, is prohibited; such parts are assessed together against the limit and "
        "each of them is in breach of this policy. Separate purchase orders, each invoiced in full, are separate "
        "purchases.\n"
        f"4. Entries close to the limit. A manual entry at {REVIEW_SHARE:.0%} or more of the preparer's limit, but "
        "below it, is acceptable only where a signed statement of work or contract on file fixes that amount for "
        "the vendor, for a term covering the date of the entry. Otherwise it must be re-routed to an approver "
        "with sufficient authority.\n"
        "5. Evidence. Statements of work and vendor invoices are kept in the support pack."
    )


class _Planter:
    """Places planted entries so that no two planted items chain by accident."""

    def __init__(self, b):
        self.b = b
        self.rng = b.rng
        self.bdays = business_days(PERIOD_START, PERIOD_END)
        self.placed: list[tuple[str, str, int]] = []  # (preparer, vendor, day number)
        self.planted = np.zeros(b.n, dtype=bool)
        self.limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}

    def free(self, prep: str, vendor: str, days: list[int]) -> bool:
        return not any(p == prep and v == vendor and abs(d - x) <= SANITISE_WINDOW_DAYS
                       for p, v, x in self.placed for d in days)

    def slot(self, vendors: tuple[str, ...], preps: tuple[str, ...] = INVOICE_PREPARERS, n_days: int = 1):
        """A (preparer, vendor, [days]) with the days on the same or adjacent business days."""
        rng = self.rng
        for _ in range(500):
            prep = str(preps[int(rng.integers(0, len(preps)))])
            vendor = str(vendors[int(rng.integers(0, len(vendors)))])
            d0 = int(self.bdays[int(rng.integers(0, len(self.bdays) - 1))].astype(np.int64))
            nxt = int(self.bdays[np.searchsorted(self.bdays.astype(np.int64), d0) + 1].astype(np.int64))
            days = [d0]
            for _k in range(n_days - 1):
                # a later part lands the same day or the next calendar day when that is a business day
                days.append(nxt if (nxt - d0 == 1 and rng.random() < 0.5) else d0)
            days.sort()
            if self.free(prep, vendor, days):
                self.placed += [(prep, vendor, d) for d in days]
                return prep, vendor, days
        raise ConfigError(f"impossible knobs for JE-5: no room left to place {n_days} more planted invoice(s); "
                          "lower n_defects/n_decoys")

    def reviewer(self, prep: str, need: int, below: int | None = None) -> str:
        """A peer reviewer (policy section 2): another preparer whose limit covers ``need`` (and,
        for a group, is below the group's total ``below``); an approver when no peer fits."""
        ok = [u for u in REVIEWERS if u != prep and self.limits[u] >= need and (below is None or self.limits[u] < below)]
        ok = ok or [a for a in APPROVERS if a != prep and self.limits[a] >= need]
        return ok[int(self.rng.integers(0, len(ok)))]

    def invoice(self, idx: int, prep: str, vendor: str, day: int, cents: int, account: str, reviewer: str) -> None:
        """Rewrite base entry ``idx`` as a manual vendor invoice keyed by ``prep``."""
        b, e, rng = self.b, self.b.e, self.rng
        d = np.datetime64(day, "D")
        e["template"][idx] = "vendor_invoice"
        e["manual"][idx] = True
        e["doc_type"][idx] = "KR"
        e["post_date"][idx] = d
        e["entry_date"][idx] = d
        e["doc_date"][idx] = max(d - int(rng.integers(0, 6)), PERIOD_START)
        e["time_s"][idx] = int(rng.integers(8 * 3600 + 1800, 17 * 3600 + 1800))
        e["preparer"][idx] = prep
        e["approver"][idx] = reviewer
        e["debit_account"][idx] = account
        e["credit_account"][idx] = "2000"
        e["debit_cents"][idx] = cents
        e["credit_cents"][idx] = cents
        e["vendor_id"][idx] = vendor
        ref = "INV-" + str(e["reference"][idx]).split("-")[-1]
        e["reference"][idx] = ref
        if rng.random() < b.knobs.description_quality:
            e["description"][idx] = f"Invoice {ref} {_VENDOR_NAME[vendor]}"
        else:
            e["description"][idx] = str(rng.choice(["Adj", "Per JV", "See file", "Entry"]))
        self.planted[idx] = True


def _cents_in_band(rng, limit_cents: float, lo: float, hi: float = 0.999) -> int:
    """An amount between ``lo`` and ``hi`` of the limit, with cents and never a whole hundred."""
    c = int(limit_cents * rng.uniform(lo, hi))
    if c % 10_000 == 0:
        c += 1_737
    return min(c, int(limit_cents) - 1)


def _split_parts(rng, limit_cents: float, k: int) -> list[int]:
    lo, hi = (0.45, 0.86) if k == 2 else (0.34, 0.75)
    while True:
        parts = [int(limit_cents * rng.uniform(lo, hi)) + int(rng.integers(1, 99)) for _ in range(k)]
        if sum(parts) > 1.03 * limit_cents and max(parts) < REVIEW_SHARE * limit_cents:
            return parts


def _units(rng, n: int) -> list[int]:
    """Sizes of the planted units (1 = a single invoice, 2-3 = a group) holding ``n`` entries; the
    same process for defects and decoys, so both have the same mix of shapes."""
    sizes: list[int] = []
    while n > 0:
        if n >= 2 and rng.random() < 0.45:
            k = 3 if n >= 3 and rng.random() < 0.3 else 2
        else:
            k = 1
        sizes.append(k)
        n -= k
    return sizes


def _sow(b, vendor: str, cents: int, deliverable: str, day: int) -> int:
    """A statement of work fixing ``cents`` for ``deliverable``, signed before ``day`` with a term covering it."""
    rng = b.rng
    name = _VENDOR_NAME[vendor]
    d = np.datetime64(day, "D")
    start = d - int(rng.integers(15, 90))
    end = d + int(rng.integers(20, 120))
    signed = start - int(rng.integers(3, 20))
    no = f"SOW-{int(rng.integers(2100, 2999))}"
    body = (
        f"Statement of work {no} under the master services agreement\n"
        f"Parties: {b.facts['company_name']} (the Customer) and {name}, vendor no. {vendor} (the Supplier).\n"
        f"Deliverable: {deliverable}.\n"
        f"Term: {start} to {end}.\n"
        f"Price: a fixed price of USD {cents / 100:,.2f} for the deliverable, invoiced once on completion, payable 30 "
        f"days from invoice. The price is fixed; changes need a written amendment. Other services are ordered "
        f"separately.\n"
        f"Signed for the Customer: Isabel Brown, Controller. Signed for the Supplier: "
        f"{_SIGNATORIES[int(rng.integers(0, len(_SIGNATORIES)))]}."
    )
    return b.add_document("contract", f"Statement of work {no} - {name}", body, str(signed))


def _invoice_doc(b, ref: str, vendor: str, day, cents: int, po: str, order_total: int, part: tuple[int, int] | None,
                 goods: str, requester: str, ordered: str) -> int:
    """The vendor invoice behind a group part, with its purchase order."""
    name = _VENDOR_NAME[vendor]
    d = str(np.datetime64(day, "D"))  # the entry's document date
    billing = (f"Partial invoice {part[0]} of {part[1]} against purchase order {po} (order total USD "
               f"{order_total / 100:,.2f}, one delivery)" if part else
               f"Purchase order {po} (order total USD {order_total / 100:,.2f}), invoiced in full")
    return b.add_document(
        "invoice", f"Invoice {ref} - {name}",
        f"{name} (vendor {vendor})\nINVOICE {ref}\nInvoice date: {d}\n{billing}.\nPurchase order {po} raised on "
        f"{ordered} by {requester} for {goods}.\nAmount due: USD {cents / 100:,.2f}\nPayment terms: net 30 days.",
        d,
    )


def plant(b) -> None:
    rng = b.rng
    e = b.e
    pl = _Planter(b)
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(), "2024-06-20")
    near = b.knobs.near_miss
    vendors = tuple(_VENDOR_ID[v] for v in CONTRACTABLE)
    units = [(k, True) for k in _units(rng, b.n_defects)] + [(k, False) for k in _units(rng, b.n_decoys)]
    units = [units[int(i)] for i in rng.permutation(len(units))]
    idxs = [int(i) for i in rng.permutation(b.pick(b.n_defects + b.n_decoys, what="entries to plant"))]
    for k, defect in units:
        prep, vendor, days = pl.slot(vendors, n_days=k)
        lim = pl.limits[prep]
        account, deliverables = CONTRACTABLE[_VENDOR_NAME[vendor]]
        if k == 1:
            idx, day = idxs.pop(), days[0]
            cents = _cents_in_band(rng, lim, REVIEW_SHARE)
            pl.invoice(idx, prep, vendor, day, cents, account, pl.reviewer(prep, cents))
            j = int(rng.integers(0, 2))
            if not defect:
                doc = _sow(b, vendor, cents, deliverables[j], day)
                b.add_decoy(idx, "contract_fixed_price", [policy, "master:users", doc],
                            facts=[f"{{D:{doc}}}", cents / 100, vendor])
                continue
            # the vendor's statement of work fixes another price (nearer the amount as near_miss rises)
            rel = (0.03 + 0.3 * (1 - near) * rng.random()) * (1 if rng.random() < 0.5 else -1)
            fee = int(cents * (1 + rel)) // 100 * 100 + int(rng.integers(0, 4)) * 25
            doc = _sow(b, vendor, fee if fee != cents else fee + 2_500, deliverables[j], day)
            b.add_defect(idx, "near_limit", "LIMIT_AVOIDANCE", [policy, "master:users", doc], cents,
                         facts=[prep, lim / 100, cents / 100, f"{{D:{doc}}}"])
            continue
        parts = _split_parts(rng, lim, k)
        total = sum(parts)
        reviewer = pl.reviewer(prep, max(parts), total)
        group = [idxs.pop() for _ in range(k)]
        requesters = [str(x) for x in rng.permutation(_REQUESTERS)]
        po0 = int(rng.integers(400_000, 499_000))
        for p, (idx, day, cents) in enumerate(zip(group, days, parts)):
            pl.invoice(idx, prep, vendor, day, cents, account, reviewer)
            ref = str(e["reference"][idx])
            goods = _GOODS[int(rng.integers(0, len(_GOODS)))]
            d = np.datetime64(day, "D")
            if defect:
                po = f"PO-{po0}"
                ordered = str(np.datetime64(days[0], "D") - int(10 + po0 % 20))
                doc = _invoice_doc(b, ref, vendor, e["doc_date"][idx], cents, po, total, (p + 1, k), goods, requesters[0], ordered)
                b.add_defect(idx, "split_entry", "LIMIT_AVOIDANCE", [policy, "master:users", doc], cents,
                             facts=[po, total / 100, lim / 100, f"{{D:{doc}}}"])
            else:
                po = f"PO-{po0 + 7 * p + int(rng.integers(1, 6)) * (p > 0)}"
                ordered = str(d - int(rng.integers(6, 40)))
                doc = _invoice_doc(b, ref, vendor, e["doc_date"][idx], cents, po, cents, None, goods, requesters[p], ordered)
                b.add_decoy(idx, "separate_purchases", [policy, "master:users", doc],
                            facts=[po, cents / 100, f"{{D:{doc}}}"])
    _sanitise(b, pl)


def _limit_cents(b, prep: np.ndarray) -> np.ndarray:
    limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}
    uniq, inv = np.unique(prep, return_inverse=True)
    return np.array([limits.get(p, 0.0) for p in uniq], dtype=float)[inv]


def _sanitise(b, pl: _Planter) -> None:
    """Keep the base clear of the rule: no base manual amount in the review band, and no base
    manual entry chaining (same preparer, vendor, within a few days) with a planted entry or with
    other base entries into something that could read as a split."""
    e = b.e
    manual = e["manual"]
    lim = _limit_cents(b, e["preparer"])
    band = manual & ~pl.planted & (lim > 0) & (e["debit_cents"] >= 0.8 * lim) & (e["debit_cents"] < lim)
    e["debit_cents"] = np.where(band, (e["debit_cents"] * 0.6).astype(np.int64) + 13, e["debit_cents"])
    e["credit_cents"] = np.where(band, (e["credit_cents"] * 0.6).astype(np.int64) + 13, e["credit_cents"])
    for _round in range(6):
        m = np.flatnonzero(e["manual"])
        prep, vend = e["preparer"][m], np.where(e["manual"][m], e["vendor_id"][m], "")
        day = e["post_date"][m].astype(np.int64)
        bad: list[int] = []
        for g in split_chains(prep, vend, day, SANITISE_WINDOW_DAYS):
            rows = m[g]
            planted = pl.planted[rows]
            if planted.all():
                continue  # a planted split (planted items never chain with each other otherwise)
            if planted.any():
                bad += [int(r) for r in rows[~planted]]
            elif int(e["debit_cents"][rows].sum()) > lim[rows[0]]:
                bad += [int(r) for r in rows[1:]]
        if not bad:
            return
        if len(bad) > 64 or _round == 5:
            # a dense slice (hundreds of thousands of entries): moving vendors one by one would not
            # converge quickly, so these invoices become automated interface postings instead
            _automate(b, pl, np.array(sorted(set(bad)), dtype=np.int64))
        else:
            for r in bad:
                _move_vendor(b, pl, r)


def _automate(b, pl: _Planter, rows: np.ndarray) -> None:
    """Turn base manual entries into automated batch postings (night-time, no approver)."""
    e = b.e
    e["manual"][rows] = False
    e["preparer"][rows] = "SYS_BATCH"
    e["approver"][rows] = ""
    e["time_s"][rows] = pl.rng.integers(3600, 5 * 3600, len(rows))


def _move_vendor(b, pl: _Planter, r: int) -> None:
    """Re-point a base manual entry to a vendor its preparer has not billed within a few days;
    when there is none, the entry becomes an automated posting."""
    e = b.e
    m = e["manual"] & (e["preparer"] == e["preparer"][r])
    near = m & (np.abs(e["post_date"].astype(np.int64) - int(e["post_date"][r].astype(np.int64))) <= SANITISE_WINDOW_DAYS)
    taken = set(e["vendor_id"][near].tolist())
    free = [v for v in _ALL_VENDOR_IDS if v not in taken]
    old = str(e["vendor_id"][r])
    if free:
        new = free[int(pl.rng.integers(0, len(free)))]
        e["vendor_id"][r] = new
        e["description"][r] = str(e["description"][r]).replace(_VENDOR_NAME[old], _VENDOR_NAME[new])
    else:
        _automate(b, pl, np.array([r]))


# ---------------------------------------------------------------------------- strategies
_LEDGER_COLS = ["entry_id", "posting_date", "preparer", "approver", "vendor_id", "debit", "reference", "description"]


def _manual_heads(kit: Kit):
    """Line 1 of every manual entry (one row per entry, carrying its amount)."""
    return (yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "line_no", "op": "eq", "value": 1}], columns=_LEDGER_COLS))


def find_candidates(rows: list[dict], limits: dict[str, float], share: float = REVIEW_SHARE):
    """(band entries, split groups) under the rule, from manual line-1 rows and the users' limits."""
    if not rows:
        return [], []
    prep = np.array([r["preparer"] for r in rows])
    vend = np.array([r.get("vendor_id") or "" for r in rows])
    day = np.array([r["posting_date"] for r in rows], dtype="datetime64[D]").astype(np.int64)
    cents = np.rint(np.array([r["debit"] for r in rows]) * 100).astype(np.int64)
    lim = np.array([limits.get(p, 0.0) * 100 for p in prep])
    splits = [[rows[i] for i in g] for g in split_chains(prep, vend, day, SPLIT_WINDOW_DAYS)
              if is_split(cents[g], lim[g[0]])]
    in_split = {r["entry_id"] for g in splits for r in g}
    band = [rows[i] for i in np.flatnonzero(in_band(cents, lim, share)) if rows[i]["entry_id"] not in in_split]
    return band, splits


def _limits(users: list[dict]) -> dict[str, float]:
    return {u["user_id"]: float(u.get("approval_limit") or 0) for u in users}


def naive(kit: Kit):
    """Flags every manual entry in the band below the preparer's limit and every split, reading no contract."""
    users = yield from kit.master("users")
    limits = _limits(users)
    rows = yield from _manual_heads(kit)
    band, splits = find_candidates(rows, limits)
    for r in band:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(r["entry_id"], "LIMIT_AVOIDANCE", ["master:users"],
                            f"Entry {r['entry_id']} of {r['debit']:,.2f} by {r['preparer']} is just below the "
                            f"preparer's limit of {limits[r['preparer']]:,.0f}.")
    for g in splits:
        for r in g:
            if kit.calls_left <= 1:
                break
            yield from kit.flag(r["entry_id"], "LIMIT_AVOIDANCE", ["master:users"],
                                f"Entry {r['entry_id']} is part of a split for vendor {r['vendor_id']}.")
    yield from kit.submit(f"Flagged {len(band)} near-limit entries and {sum(len(g) for g in splits)} split parts.")


_FEE = re.compile(r"fixed price of USD ([\d,]+\.\d\d)")
_TERM = re.compile(r"Term: (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)")
_VENDOR_NO = re.compile(r"vendor no\. (V\d+)")
_PO = re.compile(r"(?:against purchase order|Purchase order) (PO-\d+) \(order total USD ([\d,]+\.\d\d)")


def _parse_contract(body: str) -> dict:
    fee, term, vendor = _FEE.search(body), _TERM.search(body), _VENDOR_NO.search(body)
    return {
        "fee": float(fee.group(1).replace(",", "")) if fee else None,
        "start": term.group(1) if term else None,
        "end": term.group(2) if term else None,
        "vendor": vendor.group(1) if vendor else None,
    }


def _parse_invoice(body: str) -> dict:
    m = _PO.search(body)
    return {"po": m.group(1) if m else None, "order_total": float(m.group(2).replace(",", "")) if m else None,
            "partial": "Partial invoice" in body}


def careful(kit: Kit):
    """Reads the matrix and the user limits, finds near-limit entries and groups; for a group, reads
    each part's vendor invoice and flags the parts of one purchase order whose total exceeds the
    preparer's limit (clearing separate, fully invoiced orders); for a near-limit entry, reads the
    vendor's statements of work and clears it only when one fixes exactly its amount over its date."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "approval" in d["title"].lower()), None)
    share = REVIEW_SHARE
    if policy:
        body = (yield from kit.open(policy)).get("body", "")
        m = re.search(r"at (\d+)% or more of the preparer's limit", body)
        share = int(m.group(1)) / 100 if m else REVIEW_SHARE
    users = yield from kit.master("users")
    limits = _limits(users)
    vendors = {v["vendor_id"]: v["name"] for v in (yield from kit.master("vendors"))}
    rows = yield from _manual_heads(kit)
    band, splits = find_candidates(rows, limits, share)
    base_ev = [x for x in (policy, "master:users") if x]
    invoices = {d["title"].split(" - ")[0][len("Invoice "):]: d["doc_id"] for d in docs
                if d["doc_type"] == "invoice" and d["title"].startswith("Invoice ")}
    contracts = [d for d in docs if d["doc_type"] == "contract"]
    read: dict[str, dict] = {}
    n_flag = n_clear = 0

    for g in splits:
        if kit.calls_left <= 2 * len(g) + 1:
            break
        prep = g[0]["preparer"]
        lim = limits[prep]
        total = sum(r["debit"] for r in g)
        ids = [r["entry_id"] for r in g]
        docs_of = {r["entry_id"]: invoices.get(r["reference"]) for r in g}
        for d in docs_of.values():
            if d and d not in read:
                read[d] = _parse_invoice((yield from kit.open(d)).get("body", ""))
        pos = {read[d]["po"] for d in docs_of.values() if d}
        one_order = len(pos) == 1 and all(docs_of.values()) and all(read[d]["partial"] for d in docs_of.values())
        for r in g:
            if kit.calls_left <= 1:
                break
            eid, doc = r["entry_id"], docs_of[r["entry_id"]]
            if doc and not one_order and not read[doc]["partial"] and abs((read[doc]["order_total"] or 0) - r["debit"]) < 0.005:
                yield from kit.clear(
                    eid, [*base_ev, doc],
                    f"Entry {eid} ({r['debit']:,.2f}, {r['posting_date']}) is one of {len(g)} invoices {prep} keyed for "
                    f"vendor {r['vendor_id']} on adjacent days, but {doc} bills its own purchase order {read[doc]['po']} in full "
                    f"(order total USD {r['debit']:,.2f}): separate purchases, not a split (section 3 of {policy}).")
                n_clear += 1
                continue
            inv = read.get(doc, {}) if doc else {}
            po_text = (f"{doc} is a partial invoice against purchase order {inv.get('po')}, order total USD "
                       f"{inv.get('order_total') or total:,.2f}, billed in {len(g)} parts ({', '.join(ids)})"
                       if inv.get("po") else f"the {len(g)} parts ({', '.join(ids)}) total USD {total:,.2f}")
            yield from kit.flag(
                eid, "LIMIT_AVOIDANCE", [*base_ev, *([doc] if doc else [])],
                f"Entry {eid} ({r['debit']:,.2f}, {r['posting_date']}) by {prep}, reviewed by {r.get('approver') or 'a peer'}: "
                f"{po_text}; one purchase above {prep}'s USD {lim:,.2f} limit recorded in parts that each stay "
                f"within it, prohibited by section 3 of {policy}.")
            n_flag += 1

    for r in band:
        if kit.calls_left <= 2:
            break
        eid, vendor, amount, date = r["entry_id"], r.get("vendor_id") or "", float(r["debit"]), str(r["posting_date"])
        lim = limits.get(r["preparer"], 0.0)
        name = vendors.get(vendor, "")
        mine = [d["doc_id"] for d in contracts if name and d["title"].endswith(f"- {name}")]
        match = None
        for d in mine:
            if d not in read:
                if kit.calls_left <= 2:
                    break
                read[d] = _parse_contract((yield from kit.open(d)).get("body", ""))
            c = read[d]
            if (c.get("fee") is not None and abs(c["fee"] - amount) < 0.005 and c["vendor"] == vendor
                    and c["start"] and c["start"] <= date <= c["end"]):
                match = d
                break
        seen = [d for d in mine if d in read]
        if match:
            yield from kit.clear(
                eid, [*base_ev, match],
                f"Entry {eid} of USD {amount:,.2f} is {amount / lim:.1%} of {r['preparer']}'s USD {lim:,.2f} limit, "
                f"but {match} fixes a price of exactly USD {amount:,.2f} for vendor {vendor} ({name}) over a term "
                f"covering {date}; a fixed price on file is allowed by section 4 of {policy}.")
            n_clear += 1
        else:
            why = ("; ".join(f"{d} fixes USD {read[d]['fee']:,.2f}" for d in seen if read[d].get("fee") is not None)
                   + f", not USD {amount:,.2f}") if seen else f"no statement of work on file for vendor {vendor}"
            yield from kit.flag(
                eid, "LIMIT_AVOIDANCE", [*base_ev, *seen],
                f"Entry {eid} of USD {amount:,.2f} by {r['preparer']} is {amount / lim:.1%} of the preparer's "
                f"USD {lim:,.2f} approval limit (section 4 of {policy}) and nothing fixes that amount: {why}.")
            n_flag += 1
    yield from kit.submit(f"Reviewed manual entries against the approval matrix: flagged {n_flag} entries "
                          f"(near-limit amounts without a fixed price on file, and parts of split purchases), cleared "
                          f"{n_clear} (fixed prices and separate purchase orders).")
