"""JE-5 (L2): approval-limit avoidance.

Every user who prepares manual entries carries an ``approval_limit`` in ``master:users``
(AP/AR clerks 5,000, GL accountants 10,000, senior accountants 25,000). The approval authority
matrix (a policy document) says that a transaction is recorded at its full amount, that splitting
it to stay within the preparer's limit is prohibited, and that manual entries at 90% or more of the
preparer's limit (and below it) are acceptable only where a contract fixes the amount.

Planted defects (criteria ``LIMIT_AVOIDANCE``):
  * ``near_limit``: a manual vendor invoice at 90-99.9% of its preparer's limit with no contract
    fixing that amount (some of these vendors do have a contract, at a different fee);
  * ``split_entry``: two or three manual invoices by one preparer for one vendor on the same or
    adjacent days, each under the preparer's limit and together above it; every part is a defect.
Decoys: a routine fixed-price item (monthly fee or unit price) in the same 90-99.9% band, backed
by a contract that names the vendor, the fixed price equal to the amount and a term covering the
posting date. ``near_miss`` pushes decoys closer to the limit.

Required evidence: the approval authority matrix, ``master:users`` and the entry (plus the other
parts of a split); a decoy is cleared by the matrix, ``master:users``, its contract and the entry.

The base population keeps manual amounts out of 80-100% of the preparer's limit; ``plant`` also
re-checks that band and breaks up any run of same-preparer, same-vendor manual entries that would
read as a split, so only planted entries trip the rule.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.errors import ConfigError
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import APPROVERS, PERIOD_END, PERIOD_START, VENDOR_NAMES, business_days

SPEC = spec(
    "JE-5",
    "L2",
    'Approval-limit avoidance',
    objective="Find manual entries sized just below the preparer's approval limit, or split into several entries that together exceed it, without supporting contract.",
    defect="amount just below the preparer's approval limit, or a split above it",
    decoys='a routine fixed-price item near the limit backed by a contract',
    required_evidence='approval-limit matrix and the invoice/contract',
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
_ALL_VENDOR_IDS = tuple(f"V{1001 + i}" for i in range(len(VENDOR_NAMES)))
_INVOICE_ACCOUNTS = ("6200", "6300", "6400", "6600", "6700", "6900", "7000", "7100", "1200")

# vendor name -> (service, expense account, price unit) for vendors billed under fixed-price contracts
CONTRACTABLE = {
    "Evergreen Facilities": ("janitorial and facilities management services for the Denver site", "6600", "month"),
    "Falcon IT Services": ("managed IT infrastructure and help-desk services", "7100", "month"),
    "Granite Legal LLP": ("general counsel retainer (up to 20 hours per month)", "6400", "month"),
    "Ironclad Insurance Co.": ("property and casualty insurance premium, payable by instalment", "7000", "instalment"),
    "Juniper Marketing Group": ("marketing agency retainer", "6700", "month"),
    "Keystone Properties LLC": ("lease of warehouse Building C, 12 Harbor Road", "6100", "month"),
    "Lumen Software Inc.": ("ERP subscription (120 named-user licences)", "7100", "month"),
    "Northstar Consulting": ("finance transformation advisory retainer", "6400", "month"),
    "Redwood Maintenance": ("preventive maintenance of production lines 1-3", "6600", "service visit"),
    "Summit Staffing": ("two contract bookkeepers seconded to Accounts Payable", "6400", "month"),
    "Titan Equipment Rental": ("rental of a fleet of six electric forklifts", "6600", "month"),
    "Unity Telecom": ("telephony and wide-area network services", "6200", "month"),
}
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
        "2. Release. A manual entry within the preparer's limit is released after review by an approver other than "
        "the preparer. An entry above the preparer's limit must be approved by a user whose own limit covers the "
        "full amount.\n"
        "3. Splitting. A transaction is recorded at its full amount. Recording one purchase as several entries for "
        "the same vendor by the same preparer on the same or adjacent days, so that each part stays within the "
        "preparer's limit, is prohibited; such parts are assessed together against the limit and each of them is "
        "in breach of this policy.\n"
        f"4. Entries close to the limit. A manual entry at {REVIEW_SHARE:.0%} or more of the preparer's limit, but "
        "below it, is acceptable only where a signed contract or price agreement on file fixes that amount (for "
        "example a fixed monthly fee or a fixed unit price) for the period of the entry. Otherwise it must be "
        "re-routed to an approver with sufficient authority.\n"
        "5. Evidence. Contracts supporting fixed-price items are kept in the contract register of the support pack."
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

    def approver(self, prep: str, cents: int) -> str:
        ok = [a for a in APPROVERS if a != prep and self.limits[a] >= cents]
        return ok[int(self.rng.integers(0, min(3, len(ok))))]

    def invoice(self, idx: int, prep: str, vendor: str, day: int, cents: int, account: str) -> None:
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
        e["approver"][idx] = self.approver(prep, cents)
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


def plant(b) -> None:
    rng = b.rng
    pl = _Planter(b)
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(), "2024-06-20")
    near = b.knobs.near_miss
    n_plant = b.n_defects + b.n_decoys
    # split defects need extra base entries: reserve them all at once from the whole slice
    sizes: list[int] = []
    left = b.n_defects
    while left > 0:
        want_split = left >= 2 and (not sizes and b.n_defects >= 3 or rng.random() < 0.35)
        if want_split:
            k = 3 if left >= 4 and rng.random() < 0.35 else 2
            sizes.append(k)
            left -= k
        else:
            sizes.append(1)
            left -= 1
    idxs = list(b.pick(n_plant, what="entries to plant"))
    idxs = [int(i) for i in rng.permutation(idxs)]

    # decoys: a fixed-price item with a contract; vendors distinct while they last
    contract_vendors = tuple(_VENDOR_ID[v] for v in CONTRACTABLE)
    decoy_vendors = [str(v) for v in rng.permutation(contract_vendors)]
    contracts: list[tuple[str, int]] = []  # (vendor, fee cents) of every contract on file
    for j in range(b.n_decoys):
        idx = idxs.pop()
        vendor_pref = decoy_vendors[j % len(decoy_vendors)]
        prep, vendor, (day,) = pl.slot((vendor_pref,))
        lim = pl.limits[prep]
        cents = _cents_in_band(rng, lim, REVIEW_SHARE + 0.08 * near)
        service, account, unit = CONTRACTABLE[_VENDOR_NAME[vendor]]
        pl.invoice(idx, prep, vendor, day, cents, account)
        doc = _contract(b, vendor, cents, service, account, unit)
        contracts.append((vendor, cents))
        b.add_decoy(idx, "contract_fixed_price", [policy, "master:users", doc, "entry"])

    # other contracts on file, for vendors without a decoy: their fees never match a near-limit entry
    spare = [v for v in contract_vendors if v not in {c[0] for c in contracts}]
    trap_vendors = [str(v) for v in rng.permutation(spare)[: int(rng.integers(2, 5))]] if spare else []
    for vendor in trap_vendors:
        service, account, unit = CONTRACTABLE[_VENDOR_NAME[vendor]]
        fee = int(rng.integers(8, 40)) * 10_000 + int(rng.integers(0, 4)) * 2_500
        _contract(b, vendor, fee, service, account, unit)
        contracts.append((vendor, fee))

    fees = set(contracts)
    for k in sizes:
        if k == 1:
            idx = idxs.pop()
            # half of them bill a vendor that has a contract on file, at another price
            pool = tuple(c[0] for c in contracts) if contracts and rng.random() < 0.5 else _ALL_VENDOR_IDS
            prep, vendor, (day,) = pl.slot(pool)
            lim = pl.limits[prep]
            cents = _cents_in_band(rng, lim, REVIEW_SHARE)
            while (vendor, cents) in fees:
                cents -= 1_011
            acct = CONTRACTABLE.get(_VENDOR_NAME[vendor], (None, None))[1] or str(rng.choice(_INVOICE_ACCOUNTS))
            pl.invoice(idx, prep, vendor, day, cents, acct)
            b.add_defect(idx, "near_limit", "LIMIT_AVOIDANCE", [policy, "master:users", "entry"], cents)
        else:
            prep, vendor, days = pl.slot(_ALL_VENDOR_IDS, n_days=k)
            parts = _split_parts(rng, pl.limits[prep], k)
            acct = str(rng.choice(_INVOICE_ACCOUNTS))
            group = [idxs.pop() for _ in range(k)]
            for idx, day, cents in zip(group, days, parts):
                pl.invoice(idx, prep, vendor, day, cents, acct)
            for idx, cents in zip(group, parts):
                siblings = [("entry", j) for j in group if j != idx]
                b.add_defect(idx, "split_entry", "LIMIT_AVOIDANCE", [policy, "master:users", "entry", *siblings], cents)
    _sanitise(b, pl)


def _contract(b, vendor: str, cents: int, service: str, account: str, unit: str) -> int:
    rng = b.rng
    name = _VENDOR_NAME[vendor]
    start = np.datetime64("2024-01-01", "M") + int(rng.integers(0, 12))
    end = (start + 24).astype("datetime64[D]") - 1
    start_d = start.astype("datetime64[D]")
    signed = start_d - int(rng.integers(10, 40))
    no = f"CTR-{int(rng.integers(2100, 2999))}"
    price = f"a fixed fee of USD {cents / 100:,.2f} per {unit}"
    billing = ("invoiced monthly in arrears" if unit == "month" else f"invoiced after each {unit}")
    body = (
        f"Agreement {no}\n"
        f"Parties: {b.facts['company_name']} (the Customer) and {name}, vendor no. {vendor} (the Supplier).\n"
        f"Scope: {service}.\n"
        f"Term: {start_d} to {end}, renewable by written agreement.\n"
        f"Price: {price}, {billing}, payable 30 days from invoice. The price is fixed for the term; no "
        f"indexation, volume adjustment or additional charges apply without a written amendment.\n"
        f"Charged to account {account}.\n"
        f"Signed for the Customer: Isabel Brown, Controller. Signed for the Supplier: "
        f"{_SIGNATORIES[int(rng.integers(0, len(_SIGNATORIES)))]}."
    )
    return b.add_document("contract", f"Service agreement {no} - {name}", body, str(signed))


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
_LEDGER_COLS = ["entry_id", "posting_date", "preparer", "vendor_id", "debit", "reference", "description"]


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


_FEE = re.compile(r"fixed fee of USD ([\d,]+\.\d\d) per")
_TERM = re.compile(r"Term: (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)")
_VENDOR_NO = re.compile(r"vendor no\. (V\d+)")


def _parse_contract(body: str) -> dict:
    fee, term, vendor = _FEE.search(body), _TERM.search(body), _VENDOR_NO.search(body)
    return {
        "fee": float(fee.group(1).replace(",", "")) if fee else None,
        "start": term.group(1) if term else None,
        "end": term.group(2) if term else None,
        "vendor": vendor.group(1) if vendor else None,
    }


def careful(kit: Kit):
    """Reads the matrix and the user limits, finds near-limit entries and splits, opens each
    candidate (and each split's parts), checks near-limit entries against the vendor's contracts,
    clears contract-backed fixed prices and flags the rest."""
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
    contracts = [d for d in docs if d["doc_type"] == "contract"]
    parsed: dict[str, dict] = {}
    n_flag = n_clear = 0

    # splits first: they are exceptions whatever the documents say
    for g in splits:
        if kit.calls_left <= len(g) + 2:
            break
        for r in g:
            yield from kit.call("get_entry", entry_id=r["entry_id"])
        total = sum(r["debit"] for r in g)
        ids = [r["entry_id"] for r in g]
        lim = limits[g[0]["preparer"]]
        for r in g:
            if kit.calls_left <= 1:
                break
            others = ", ".join(i for i in ids if i != r["entry_id"])
            yield from kit.flag(
                r["entry_id"], "LIMIT_AVOIDANCE", [*base_ev, *ids],
                f"Entry {r['entry_id']} ({r['debit']:,.2f}, {r['posting_date']}) is one of {len(g)} invoices keyed by "
                f"{r['preparer']} for vendor {r['vendor_id']} on the same or adjacent days (with {others}); each is "
                f"within the preparer's USD {lim:,.0f} limit but together they total USD {total:,.2f}, above it. "
                f"Splitting is prohibited by section 3 of {policy}.")
            n_flag += 1

    # entries whose vendor has no contract on file first: if the budget runs short, what is left
    # undisposed are the likely contract-backed items (undisposed counts as approved)
    has_contract = {v for v, nm in vendors.items() if any(d["title"].endswith(f"- {nm}") for d in contracts)}
    for r in sorted(band, key=lambda x: (x.get("vendor_id") in has_contract, x["entry_id"])):
        if kit.calls_left <= 3:
            break
        eid = r["entry_id"]
        entry = yield from kit.call("get_entry", entry_id=eid)
        vendor = entry.get("vendor_id") or r.get("vendor_id") or ""
        amount = float(entry.get("total_debit", r["debit"]))
        lim = limits.get(r["preparer"], 0.0)
        name = vendors.get(vendor, "")
        match = None
        for d in contracts:
            if not name or not d["title"].endswith(f"- {name}"):
                continue
            if d["doc_id"] not in parsed:
                if kit.calls_left <= 3:
                    break
                parsed[d["doc_id"]] = _parse_contract((yield from kit.open(d["doc_id"])).get("body", ""))
            c = parsed[d["doc_id"]]
            date = str(entry.get("posting_date", r["posting_date"]))
            if (c["fee"] is not None and abs(c["fee"] - amount) < 0.005 and c["vendor"] == vendor
                    and c["start"] and c["start"] <= date <= c["end"]):
                match = d["doc_id"]
                break
        seen = [d["doc_id"] for d in contracts if d["doc_id"] in parsed and d["title"].endswith(f"- {name}")]
        if match:
            yield from kit.clear(
                eid, [*base_ev, match, eid],
                f"Entry {eid} of USD {amount:,.2f} is {amount / lim:.1%} of {r['preparer']}'s USD {lim:,.0f} limit, "
                f"but {match} fixes a price of exactly USD {amount:,.2f} for vendor {vendor} ({name}) over a term "
                f"covering {entry.get('posting_date')}; a contracted fixed price is allowed by section 4 of {policy}.")
            n_clear += 1
        else:
            why = (f"the contract(s) on file for {name} ({', '.join(seen)}) fix a different price or term"
                   if seen else f"no contract on file fixes this amount for vendor {vendor} {name}".rstrip())
            yield from kit.flag(
                eid, "LIMIT_AVOIDANCE", [*base_ev, *seen, eid],
                f"Entry {eid} of USD {amount:,.2f} by {r['preparer']} is {amount / lim:.1%} of the preparer's "
                f"USD {lim:,.0f} approval limit (band {share:.0%}-100% under section 4 of {policy}) and {why}.")
            n_flag += 1
    yield from kit.submit(f"Reviewed manual entries against the approval matrix: flagged {n_flag} entries "
                          f"(near-limit amounts without a fixed-price contract, and split invoices), cleared "
                          f"{n_clear} contracted fixed-price items.")
