"""Master data of the company: users, vendors, customers, employees, fixed assets, policies (the
calendar is ``calendar``'s, read here too).

Defined once and read by every process. Master data decide what the postings may be: a vendor's
*category* decides which accounts its documents post to and how it is bought from (a purchase
order with a goods receipt, a purchase order without one, or a recurring bill); a user's *role*
decides which document types they may post and up to which amount they may approve. Names are
drawn from category-specific word lists, so a freight carrier is never booked to insurance.

Dates are integer day numbers (days since 1970-01-01) in the hot path; ``day()`` and ``iso()``
(of ``calendar``) convert. The company's fiscal year is calendar 2025; the simulation starts its purchasing and
sales chains in October 2024 so that the year opens with real open items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books.chart import idx
# the company calendar is defined in ``calendar``; the books' processes read it through this module
from jeval_ray.books.calendar import (  # noqa: F401
    HOLIDAY_DATES, HOLIDAYS, MONTH_ENDS, MONTH_NAMES, OFFICE_HOURS, SIM_START, YEAR_END, YEAR_END_CLOSE, YEAR_START,
    business_offset, calendar_rows, close_dates, day, first_day_of, fiscal_month_code, is_business_day, iso,
    last_day_of, month_end, month_of)
from jeval_ray._rng import stable_int

COMPANY = "1000"
COMPANY_NAME = "Northwind Components Inc."
CURRENCY = "USD"
#: the company's one operating bank account (every statement carries it)
BANK_ACCOUNT = "US44 0210 0002 1987 6543 21"
BANK_NAME = "First Harbor Bank, N.A."
#: the state the company is in: every site of the company, and every address the books and the
#: tasks write for it or for the vendors it remits to, is in this state
STATE = "CO"
STATE_NAME = "Colorado"
#: the company's sites (head office and plant share the Denver campus); documents word them from here
PLANT = "Denver plant, 1200 Industrial Way, Denver, CO 80216"
WAREHOUSE = "Warehouse Unit 7, Riverside Industrial Park, Commerce City, CO 80022"
SALES_OFFICE = "Sales office, 95 Pearl Street, Boulder, CO 80302"
SITES = (PLANT, WAREHOUSE, SALES_OFFICE)
#: remit-to addresses of the company's local vendors (the vendor master's address changes)
VENDOR_ADDRESSES = ("1200 Commerce Blvd, Aurora, CO 80011", "77 Harbor Way, Lakewood, CO 80226",
                    "410 Industrial Pkwy, Pueblo, CO 81001", "9 Market Street, Fort Collins, CO 80524",
                    "3300 Lakeview Dr, Colorado Springs, CO 80903")


def rng(seed: int, stream: str) -> np.random.Generator:
    """The generator of one named stream: adding a stream or a process shifts no other stream."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(stable_int("books", int(seed), stream))))


def office_hours(g: np.random.Generator, n: int) -> np.ndarray:
    """Seconds of the day of entries keyed by people (08:30-17:30)."""
    return g.integers(*OFFICE_HOURS, n)


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
