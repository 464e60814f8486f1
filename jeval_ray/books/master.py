"""Master data of the company: calendar, users, vendors, customers, employees, fixed assets, policies.

Defined once and read by every process. Master data decide what the postings may be: a vendor's
*category* decides which accounts its documents post to and how it is bought from (a purchase
order with a goods receipt, a purchase order without one, or a recurring bill); a user's *role*
decides which document types they may post and up to which amount they may approve. Names are
drawn from category-specific word lists, so a freight carrier is never booked to insurance.

Dates are integer day numbers (days since 1970-01-01) in the hot path; ``day()`` and ``iso()``
convert. The company's fiscal year is calendar 2025; the simulation starts its purchasing and
sales chains in October 2024 so that the year opens with real open items.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from jeval_ray.books.chart import idx
from jeval_ray._rng import stable_int

COMPANY = "1000"
COMPANY_NAME = "Northwind Components Inc."
CURRENCY = "USD"
#: the company's one operating bank account (every statement carries it)
BANK_ACCOUNT = "US44 0210 0002 1987 6543 21"
BANK_NAME = "First Harbor Bank, N.A."


def day(iso_date: str) -> int:
    """ISO date -> day number."""
    return int(np.datetime64(iso_date, "D").astype(np.int64))


def iso(d) -> str:
    """Day number -> ISO date."""
    return str(np.datetime64(int(d), "D"))


YEAR_START = day("2025-01-01")
YEAR_END = day("2025-12-31")
#: the simulation starts here, so opening open items (invoices, receipts, accruals) are real documents
SIM_START = day("2024-10-01")
YEAR_END_CLOSE = day("2026-01-09")
HOLIDAYS = (
    ("2024-10-14", "Columbus Day"), ("2024-11-11", "Veterans Day"), ("2024-11-28", "Thanksgiving Day"),
    ("2024-12-25", "Christmas Day"),
    ("2025-01-01", "New Year's Day"), ("2025-01-20", "Martin Luther King Jr. Day"), ("2025-02-17", "Presidents' Day"),
    ("2025-05-26", "Memorial Day"), ("2025-06-19", "Juneteenth"), ("2025-07-04", "Independence Day"),
    ("2025-09-01", "Labor Day"), ("2025-10-13", "Columbus Day"), ("2025-11-11", "Veterans Day"),
    ("2025-11-27", "Thanksgiving Day"), ("2025-12-25", "Christmas Day"),
    ("2026-01-01", "New Year's Day"), ("2026-01-19", "Martin Luther King Jr. Day"),
)
HOLIDAY_DATES = np.array([h for h, _ in HOLIDAYS], dtype="datetime64[D]")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


def rng(seed: int, stream: str) -> np.random.Generator:
    """The generator of one named stream: adding a stream or a process shifts no other stream."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(stable_int("books", int(seed), stream))))


def month_start(year: int, month: int) -> int:
    return day(f"{year + (month - 1) // 12}-{(month - 1) % 12 + 1:02d}-01")


def month_end(year: int, month: int) -> int:
    return month_start(year, month + 1) - 1


def first_day_of(months) -> np.ndarray:
    """Day number of the first day of each month, months counted as ``12 * year + month - 1``."""
    m = np.asarray(months, dtype=np.int64) - 1970 * 12
    return m.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)


def last_day_of(months) -> np.ndarray:
    """Day number of the last day of each month (months as for ``first_day_of``)."""
    return first_day_of(np.asarray(months, dtype=np.int64) + 1) - 1


#: first and last day of the 12 fiscal months (index 0 = January 2025)
MONTH_STARTS = np.array([month_start(2025, m) for m in range(1, 13)], dtype=np.int64)
MONTH_ENDS = np.array([month_end(2025, m) for m in range(1, 13)], dtype=np.int64)


_BUSINESS_DAYS = np.busdaycalendar(holidays=HOLIDAY_DATES)


def is_business_day(days: np.ndarray) -> np.ndarray:
    return np.is_busday(np.asarray(days, dtype=np.int64).astype("datetime64[D]"), busdaycal=_BUSINESS_DAYS)


def business_offset(days, offset: int, roll: str = "forward") -> np.ndarray:
    """``offset`` business days from each day (rolled to a business day first), as day numbers."""
    d = np.asarray(days, dtype=np.int64).astype("datetime64[D]")
    return np.busday_offset(d, offset, roll=roll, busdaycal=_BUSINESS_DAYS).astype(np.int64)


def month_of(days) -> np.ndarray:
    """Fiscal month 1-12 of 2025 day numbers (0 before the year, 13 after it)."""
    return np.searchsorted(MONTH_STARTS, np.asarray(days), side="right")


@functools.cache
def close_dates() -> tuple[int, ...]:
    """Close date of each month: the 5th business day after month end; the year end closes on 2026-01-09."""
    out = [int(business_offset(MONTH_ENDS[m] + 1, 4)) for m in range(11)]
    return tuple(out + [YEAR_END_CLOSE])


def office_hours(g: np.random.Generator, n: int) -> np.ndarray:
    """Seconds of the day of entries keyed by people (08:30-17:30)."""
    return g.integers(8 * 3600 + 1800, 17 * 3600 + 1800, n)


def night_batch(g: np.random.Generator, n: int) -> np.ndarray:
    """Seconds of the day of scheduled batch jobs (01:00-05:00)."""
    return g.integers(3600, 5 * 3600, n)


def evening_interface(g: np.random.Generator, n: int) -> np.ndarray:
    """Seconds of the day of interface postings (warehouse, billing, lockbox: 19:00-23:30)."""
    return g.integers(19 * 3600, 23 * 3600 + 1800, n)


def uniform_days(g: np.random.Generator, lo: int, hi: int, n: int, business: bool = True) -> np.ndarray:
    """``n`` days in [lo, hi], business days only when asked."""
    days = np.arange(lo, hi + 1)
    if business:
        days = days[is_business_day(days)]
    return days[g.integers(0, len(days), n)]


def fiscal_month_code(days) -> np.ndarray:
    """yyyymm of day numbers (e.g. 202503)."""
    m = np.asarray(days, dtype=np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
    return (1970 + m // 12) * 100 + m % 12 + 1


def calendar_rows() -> list[dict]:
    rows = [{"date": d, "kind": "holiday", "description": nm} for d, nm in HOLIDAYS if d.startswith("2025")]
    rows += [{"date": iso(c), "kind": "period_close", "description": f"close of period 2025-{m + 1:02d}"}
             for m, c in enumerate(close_dates())]
    return sorted(rows, key=lambda r: (r["date"], r["kind"]))


# ------------------------------------------------------------------------------------------- users
@dataclass(frozen=True)
class User:
    user_id: str
    name: str
    role: str
    department: str
    approval_limit_cents: int
    kind: str  # human | system
    posts: tuple[str, ...]  # document types this user may post


USERS: tuple[User, ...] = (
    User("AKIM", "Anna Kim", "AP Clerk", "Accounts Payable", 5_000_00, "human", ("VI", "VN")),
    User("BOKAFOR", "Ben Okafor", "AP Clerk", "Accounts Payable", 5_000_00, "human", ("VI", "VN")),
    User("CRUIZ", "Carla Ruiz", "AR Clerk", "Accounts Receivable", 5_000_00, "human", ("WO",)),
    User("DPATEL", "Dev Patel", "GL Accountant", "General Ledger", 10_000_00, "human", ("AC", "BC", "BI", "TX")),
    User("EMUELLER", "Eva Mueller", "GL Accountant", "General Ledger", 10_000_00, "human", ("AC", "BC", "BI", "TX")),
    User("FNGUYEN", "Frank Nguyen", "Senior Accountant", "General Ledger", 25_000_00, "human", ("AC", "AL", "TX")),
    User("GSILVA", "Grace Silva", "Senior Accountant", "Accounts Payable", 25_000_00, "human", ("VI", "VN")),
    User("HJOHANSSON", "Henrik Johansson", "Accounting Manager", "Finance", 100_000_00, "human", ("AL", "TS")),
    User("IBROWN", "Isabel Brown", "Controller", "Finance", 500_000_00, "human", ("TS",)),
    User("JWRIGHT", "James Wright", "CFO", "Executive", 5_000_000_00, "human", ()),
    User("KLEE", "Kevin Lee", "Treasury Analyst", "Treasury", 0, "human", ()),
    User("NPARK", "Nina Park", "Buyer", "Purchasing", 0, "human", ("PO",)),
    User("SYS_BATCH", "Batch scheduler", "System", "IT", 0, "system", ("VP", "DP", "PA", "RV", "MF", "RR", "YC")),
    User("SYS_INTERFACE", "Billing and warehouse interface", "System", "IT", 0, "system", ("GR", "SO", "SH", "CI", "CR")),
    User("SYS_PAYROLL", "Payroll interface", "System", "IT", 0, "system", ("PR", "PN", "PT")),
)
USER = {u.user_id: i for i, u in enumerate(USERS)}
USER_IDS = np.array([u.user_id for u in USERS])
#: approvers in ascending order of limit; the first one whose limit covers an amount is its tier
APPROVERS = ("FNGUYEN", "GSILVA", "HJOHANSSON", "IBROWN", "JWRIGHT")
APPROVER_IDX = np.array([USER[a] for a in APPROVERS], dtype=np.int64)
APPROVER_LIMITS = np.array([USERS[USER[a]].approval_limit_cents for a in APPROVERS], dtype=np.int64)
#: manual amounts stay within the CFO's limit
MAX_MANUAL_CENTS = int(APPROVER_LIMITS[-1]) - 1


def assign_approvers(g: np.random.Generator, cents: np.ndarray, preparer: np.ndarray) -> np.ndarray:
    """An approver for each manual document: another user whose limit covers the gross amount.

    Mostly the lowest tier that covers it (that is how a workflow routes), sometimes one tier up.
    """
    tier = np.searchsorted(APPROVER_LIMITS, np.abs(cents), side="left")
    tier = np.minimum(tier + (g.random(len(cents)) < 0.15), len(APPROVERS) - 1)
    out = APPROVER_IDX[tier]
    # a preparer never approves their own entry: the other senior of the tier, or one tier up
    same = out == preparer
    alt = np.where(tier <= 1, APPROVER_IDX[1 - np.minimum(tier, 1)], APPROVER_IDX[np.minimum(tier + 1, len(APPROVERS) - 1)])
    return np.where(same, alt, out)


# ------------------------------------------------------------------------------------------ vendors
@dataclass(frozen=True)
class Category:
    """How the company buys from a kind of vendor, and where the cost goes."""

    name: str
    flow: str  # three_way (PO, goods receipt, invoice) | two_way (PO, invoice) | bill (no PO) | recurring | prepaid
    account: str  # the role debited by the goods receipt or the invoice
    stems: tuple[str, ...]  # vendor name endings
    mu: float  # log of a typical document amount in USD
    sigma: float
    share: float  # share of the vendor base
    what: str  # what the company buys, as the documents word it


CATEGORIES: tuple[Category, ...] = (
    Category("raw_materials", "three_way", "inventory_raw", ("Steel Works", "Components", "Chemicals", "Packaging",
             "Metals", "Plastics", "Castings"), 8.6, 0.9, 0.26, "raw materials"),
    Category("capex", "three_way", "ppe", ("Machinery", "Equipment Co.", "Automation", "Industrial Systems"),
             10.4, 0.7, 0.04, "production equipment"),
    Category("freight", "two_way", "freight", ("Freight", "Logistics", "Trucking", "Carriers"), 7.0, 0.8, 0.10,
             "freight and haulage"),
    Category("maintenance", "two_way", "maintenance", ("Maintenance", "Facility Services", "Mechanical"), 7.4, 0.9,
             0.10, "repairs and maintenance"),
    Category("marketing", "two_way", "marketing", ("Marketing Group", "Media", "Print Solutions"), 8.0, 0.9, 0.06,
             "marketing services"),
    Category("professional", "bill", "professional_fees", ("Consulting", "Legal LLP", "Advisors", "CPAs"), 8.6, 0.7,
             0.08, "professional services"),
    Category("utilities", "bill", "utilities", ("Power & Light", "Water Utility", "Gas Company", "Telecom"), 8.3, 0.5,
             0.06, "utilities"),
    Category("office", "bill", "office_supplies", ("Office Products", "Supply Co.", "Stationers"), 6.0, 0.8, 0.10,
             "office supplies"),
    Category("travel", "bill", "travel", ("Travel Agency", "Air Travel", "Hotels"), 6.6, 0.9, 0.08,
             "travel and accommodation"),
    Category("rent", "recurring", "rent", ("Properties LLC", "Realty Trust"), 9.8, 0.4, 0.04, "lease of premises"),
    Category("software", "recurring", "software", ("Software Inc.", "Cloud Systems"), 8.4, 0.7, 0.04,
             "software subscriptions"),
    Category("insurance", "prepaid", "prepaid", ("Insurance Co.", "Mutual Assurance"), 10.4, 0.5, 0.04,
             "insurance premium"),
)
CATEGORY = {c.name: i for i, c in enumerate(CATEGORIES)}


def _allowed(c: Category) -> frozenset[int]:
    roles = {c.account, "ap", "cash"}
    if c.flow == "three_way":
        roles |= {"grir", "price_variance"}
    if c.name in ("professional", "utilities"):
        roles |= {"accrued"}  # billed a month late, so accrued at month end
    if c.flow == "prepaid":
        roles |= {"insurance"}  # the premium is amortised to insurance expense
    return frozenset(idx(r) for r in roles)


#: the accounts the documents of each category's vendors may post: its cost account and the
#: payables, cash and clearing accounts its flow uses
ALLOWED_ACCOUNTS = {c.name: _allowed(c) for c in CATEGORIES}
_PREFIXES = ("Acme", "Apex", "Beacon", "Bluegate", "Cedar", "Cobalt", "Crescent", "Delta", "Eagle", "Evergreen",
             "Falcon", "Frontier", "Granite", "Harbor", "Horizon", "Ironclad", "Juniper", "Keystone", "Liberty", "Lumen",
             "Maple", "Meridian", "Northstar", "Oakridge", "Orion", "Pinnacle", "Pioneer", "Quantum", "Redwood",
             "Riverbend", "Sterling", "Summit", "Titan", "Trident", "Unity", "Valley", "Vista", "Westbrook",
             "Yellowstone", "Zenith")
_REGIONS = ("", " West", " East", " Midwest", " South", " Pacific", " Atlantic", " Central")
_CUSTOMER_STEMS = ("Motors", "Retail", "Devices", "Robotics", "Appliances", "Medical", "Rail Systems", "Aerospace",
                   "Farm Equipment", "Marine", "Industries", "Electronics", "Tooling", "Energy")


def _names(g: np.random.Generator, stems: tuple[str, ...], k: int) -> list[str]:
    """``k`` distinct names from prefix x stem (x region when the plain names run out)."""
    plain = len(_PREFIXES) * len(stems)
    space = plain * (len(_REGIONS) if k > plain // 2 else 1)
    pick = g.choice(space, size=min(k, space), replace=False)
    return [f"{_PREFIXES[p % len(_PREFIXES)]} {stems[(p // len(_PREFIXES)) % len(stems)]}{_REGIONS[p // plain]}"
            for p in pick.tolist()]


def _bank_accounts(g: np.random.Generator, k: int) -> list[str]:
    digits = g.integers(0, 10, size=(k, 18))
    return ["US" + "".join(map(str, row)) for row in digits.tolist()]


@dataclass(frozen=True, eq=False)
class Master:
    """All master data of one simulated company; arrays are indexed by partner or asset number."""

    seed: int
    size: int
    vendor_name: list[str]
    vendor_category: np.ndarray  # category index per vendor
    vendor_terms: np.ndarray  # payment terms in days
    vendor_bank: list[str]
    vendor_created: np.ndarray  # day number
    customer_name: list[str]
    customer_terms: np.ndarray
    customer_credit_limit: np.ndarray  # cents
    n_employees: int
    annual_payroll_cents: int
    asset_class: np.ndarray  # index into ASSET_CLASSES
    asset_cost: np.ndarray  # cents
    asset_in_service: np.ndarray  # day number (first of a month)
    asset_vendor: np.ndarray  # vendor index, -1 for assets bought before the vendor base
    asset_acquired_by: np.ndarray  # goods receipt document index for assets bought in the year, else -1

    @property
    def n_vendors(self) -> int:
        return len(self.vendor_name)

    @property
    def n_customers(self) -> int:
        return len(self.customer_name)

    def vendors_of(self, category: str) -> np.ndarray:
        return np.flatnonzero(self.vendor_category == CATEGORY[category])

    def vendor_id(self, i: int) -> str:
        return f"V{10001 + int(i)}"

    def customer_id(self, i: int) -> str:
        return f"C{50001 + int(i)}"


#: fixed-asset classes: (name, useful life in months, log of a typical cost in USD)
ASSET_CLASSES = (("Buildings and improvements", 480, 13.2), ("Machinery and equipment", 120, 11.6),
                 ("Vehicles", 60, 10.4), ("Computer equipment", 36, 8.6), ("Furniture and fixtures", 84, 9.0))


def build_master(seed: int, size: int) -> Master:
    """Master data for a company whose year holds about ``size`` journal entries."""
    g = rng(seed, "master")
    n_vendors = int(np.clip(size // 250, 24, 4000))
    n_customers = int(np.clip(size // 400, 10, 3000))
    share = np.array([c.share for c in CATEGORIES])
    per_cat = np.maximum(1, np.floor(share / share.sum() * n_vendors)).astype(int)
    cats, names = [], []
    for k, c in enumerate(CATEGORIES):
        cats += [k] * int(per_cat[k])
        names += _names(g, c.stems, int(per_cat[k]))
    nv = len(cats)
    terms = g.choice(np.array([30, 30, 45, 60]), size=nv)
    n_assets = int(np.clip(size // 4000, 8, 600))
    cls = g.choice(len(ASSET_CLASSES), size=n_assets, p=[0.08, 0.42, 0.15, 0.22, 0.13])
    life = np.array([c[1] for c in ASSET_CLASSES])[cls]
    mu = np.array([c[2] for c in ASSET_CLASSES])[cls]
    cost = np.rint(np.exp(g.normal(mu, 0.5)) * 100).astype(np.int64)
    # in service between 2015 and 2024, never longer ago than twice the useful life
    months_ago = np.minimum(g.integers(1, 120, n_assets), 2 * life)
    in_service = first_day_of(12 * 2025 - months_ago)
    n_emp = int(np.clip(size // 3000, 12, 1500))  # a pay run stays within the CFO's limit
    return Master(
        seed=int(seed), size=int(size),
        vendor_name=names, vendor_category=np.array(cats, dtype=np.int64), vendor_terms=terms.astype(np.int64),
        vendor_bank=_bank_accounts(g, nv),
        vendor_created=day("2016-01-01") + g.integers(0, 2900, nv),
        customer_name=_names(g, _CUSTOMER_STEMS, n_customers),
        customer_terms=g.choice(np.array([30, 30, 45, 60]), size=n_customers).astype(np.int64),
        customer_credit_limit=(np.rint(np.exp(g.normal(12.5, 0.8, n_customers))) * 100).astype(np.int64),
        n_employees=n_emp,
        annual_payroll_cents=int(n_emp * 68_000_00 * g.uniform(0.9, 1.1)),
        asset_class=cls.astype(np.int64), asset_cost=cost, asset_in_service=in_service,
        asset_vendor=np.full(n_assets, -1, dtype=np.int64), asset_acquired_by=np.full(n_assets, -1, dtype=np.int64),
    )
