"""JE-8 (L2): unsupported round-amount entries.

The red-flag rule: a manual entry whose amount (its total debits) is a whole number of hundreds.
The pack's manual JE policy governs top-side adjustments (document type TS: manual journal
entries keyed by Finance management directly in the general ledger): each needs the number of its
supporting document in the reference field (section 2.1), a description stating its purpose
(2.2) and, for a round sum, the document that fixes the amount dated no later than the day the
entry was recorded (2.3).

Planted as perturbations of the books: the candidates are the books' own year-end top-side
adjustments (the bonus, audit fee, litigation and marketing accruals, whole thousands, posted to
31 December and keyed in January) and new top-side adjustments of the same kind (copies of one,
Dr an expense / Cr 2100 Accrued Liabilities, a whole number of thousands, posted to a month end of
January-November and keyed by the accounting manager in that close, the Controller above his
limit; approved by the lowest approver tier that covers the amount). Each states its purpose and
carries the number of the document that should fix it in the reference field (``BR-2025-<nn>``
for a board resolution, ``CTR-2025-<nnn>`` for a fixed-fee agreement, numbered in one register
per kind in posting order). Each is then made a defect or a decoy at random; only the support pack
differs. Minutes and agreements are titled by meeting date, never by the reference. An agreement's
counterparty fits its scope (``FIRMS``): a vendor of the vendor master whose kind of firm does the
work (an audit by a CPA firm, litigation by a law firm, the efficiency review by consultants or
advisers), else, for the year-end audit and litigation fees, the auditors or outside counsel
engaged outside the master (the firms JE-9's close binder names); a new agreement is drawn only
among the scopes the master has a fitting firm for.

Decoys (``round_amount_with_support``): the minutes or agreement carrying the reference exist,
are dated 3-40 days before the posting date and fix exactly the entry's amount for the stated
purpose. Decisive facts: the document, the reference and the amount.

Planted defects (criteria ``UNSUPPORTED_ROUND``):
  * ``amount_not_supported``: the referenced document exists but fixes a smaller round sum (half
    the entry's amount or more), so the entry records more than was approved (decisive facts: the
    reference, the document, the figure it shows, the entry's amount); misstated by the excess,
    booked less supported (the document supports the rest);
  * ``approved_after_posting``: the referenced document fixes the amount but is dated 3-40 days
    after the entry was recorded (facts: the reference, the document, its date, the entry date);
    misstated by the whole entry, which nothing supported when it was recorded;
  * ``no_support``: no document in the pack carries the reference (facts: the reference and the
    amount); misstated by the whole entry; more often at a high ``near_miss``, the pack holds
    minutes approving the same figure under another number for another purpose, which do not
    support it.
A defect without its own document otherwise has, like every candidate, a document of its kind
dated shortly before it: one under another number, for activity of a month of the first quarter of
2026 that the document names (an expo to be held, a programme or service period, work to be
performed then; never a settlement or a true-up, which would settle something of FY2025), so the
year's books rightly accrue nothing of it. Required evidence: the policy, and the referenced document
where one exists; a decoy is cleared by its document. Every top-side adjustment of the year is a candidate at the default knobs;
with fewer candidates than the books' four year-end ones, the rest keep a supporting document and
stay out of the key. Their descriptions state their purpose at any ``description_quality``.

Unplanted look-alikes: the rule also catches the books' honest round manual entries outside the
policy's scope: rent instalments and fixed fees billed in whole hundreds (vendor invoices, which
the AP policy supports by the vendor's invoice) and month-end accrual estimates that happen to be
whole hundreds: 775 of the 8,701 unplanted manual entries of seeds 0-49 (8.9 %, about 15 a
world, 58 % of what the rule returns; 763 vendor invoices, 12 accruals, no top-side adjustment).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, close, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import APPROVERS
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (APPROVED_WHEN_RECORDED, DATE, MONEY, NAME, TOKEN, Disposition, Form, SurfaceRule,
                                     Task, clear, dispose, gather_while, flag, parse_any, read_while, surface_naive,
                                     tally)

SPEC = spec(
    "JE-8",
    "L2",
    'Unsupported round-amount entries',
    step_budget=80,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find round-sum manual adjustments keyed in the general ledger that no document supports.',
    defect='round-sum top-side adjustment whose referenced document does not fix it',
    decoys='round amounts backed by a board resolution or contract',
    required_evidence='the support document (or its absence)',
    sources=('general_ledger', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNSUPPORTED_ROUND', 'round-sum manual adjustment that no supporting document fixes',
         'what no document supports (the excess over the figure a document fixes, else the entry\'s total)'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "amount_not_supported",
        evidence="the manual JE policy (section 2.3) and the board minutes or agreement carrying the entry's reference",
        facts="the referenced document fixes a smaller round sum than the entry records",
        conclusion="The top-side adjustment records more than the document approves: the approved figure is "
                   "supported, the excess over it has no support at all; report the exception, misstated by the "
                   "excess (amount booked less amount supported).",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("defect", "approved_after_posting",
        evidence="the manual JE policy (section 2.3) and the board minutes or agreement carrying the entry's reference",
        facts="the referenced document fixes the amount but is dated after the day the entry was recorded",
        conclusion="The entry was recorded before any document fixed its amount; an approval given afterwards does "
                   "not support it under section 2.3: an exception.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("defect", "no_support",
        evidence="the manual JE policy (sections 2.1, 2.3) and the support pack searched for the entry's reference",
        facts="no minute or agreement carries the reference; a document approving the same figure under another "
              "number for another purpose (at high near_miss) is not its support, nor is one under another number "
              "for activity of a month of 2026 it names (which FY2025 rightly does not accrue)",
        conclusion="Round-sum top-side adjustment without the document the policy requires: unsupported, reported.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
    key("decoy", "round_amount_with_support",
        evidence="the board minutes or agreement carrying the entry's reference",
        facts="the document names the reference, fixes exactly the entry's amount for its stated purpose and is "
              "dated before the posting date",
        conclusion="The round sum is fixed by a board resolution or a fixed-fee agreement in force before it was "
                   "recorded: supported, no exception.",
        standard="AS 2401.58, .61; ISA 240.32(a)"),
)

POLICY_TITLE = "Manual journal entry policy - supporting documentation"
#: board-approved items: (purpose, short description, debit account)
BOARD_ITEMS = (
    ("a special bonus for the ERP implementation team", "ERP team special bonus accrual", "6000"),
    ("the settlement of the warranty claim brought by a customer over faulty castings", "Warranty claim settlement accrual", "5000"),
    ("a contribution to the employee wellness programme", "Employee wellness programme contribution accrual", "6000"),
    ("the sponsorship of the Colorado Manufacturing Expo", "Colorado Manufacturing Expo sponsorship accrual", "6700"),
    ("a retention award for the plant leadership team", "Plant leadership retention award accrual", "6000"),
)
#: fixed-fee agreements: (vendor category, scope, short description, debit account)
CONTRACT_ITEMS = (
    ("professional", "a fixed-fee operational efficiency review", "fixed-fee efficiency review accrual", "6400"),
    ("professional", "the fixed-fee tax structuring advice", "fixed-fee tax advice accrual", "6400"),
    ("software", "the enterprise licence true-up", "licence true-up accrual", "7100"),
    ("marketing", "the spring campaign fixed fee", "spring campaign fee accrual", "6700"),
    ("maintenance", "the annual preventive maintenance contract", "preventive maintenance contract accrual", "6600"),
)
#: the kind of professional firm each scope needs: (word in the scope, name endings of the vendor
#: master's firms that fit, the outside firm engaged when none does). The auditors and counsel are the
#: firms JE-9's close binder names; the non-audit scopes never go to a CPA firm, so no agreement puts
#: the auditors' independence in question.
FIRMS = (
    ("audit", ("CPAs",), ("Ridgeway & Stone LLP", "independent auditors")),
    ("litigation", ("Legal LLP",), ("Hartwell & Crane LLP", "outside counsel")),
    ("efficiency review", ("Consulting", "Advisors"), None),
    ("tax structuring", ("Legal LLP", "Advisors", "Consulting"), None),
)
#: the books' year-end top-side adjustments (``close.TOP_SIDE``, by ``ext_ref``) and what fixes each:
#: (board item or vendor category, scope)
YEAR_END_SUPPORT = (
    ("board", "the FY2025 year-end bonus pool for employees"),
    ("professional", "the audit of the FY2025 financial statements"),
    ("professional", "the defence of the open litigation through year end (fees incurred to 31 December 2025)"),
    ("marketing", "the Q4 2025 marketing campaign"),
)
#: what minutes under another number approve for the next year (the look-alikes a defect has around it):
#: activity of the month named, so that nothing of it belongs to FY2025
LATER_BOARD = (
    "the sponsorship of the Colorado Manufacturing Expo to be held in {month}",
    "the company's contribution to the employee wellness programme for {month}",
    "a retention award for the plant leadership team for their service in {month}",
    "the customer open day at the Denver plant to be held in {month}",
)
CAPEX_ITEMS = ("a replacement CNC milling machine for the Denver plant", "a forklift fleet upgrade for the warehouse",
               "a new packaging line", "roof replacement at the Commerce City site")
MONTHS = md.MONTH_NAMES
#: defect kinds and their shares
_KINDS = (("amount_not_supported", 0.4), ("approved_after_posting", 0.3), ("no_support", 0.3))


# ------------------------------------------------------------------ documents
@dataclass(frozen=True)
class Policy:
    """The manual JE policy's scope and supporting-documentation sections (fixed text)."""


@dataclass(frozen=True)
class Resolution:
    """Board minutes whose third item is a resolution approving an amount under an accounting reference."""
    date: str
    ref: str
    purpose: str
    amount: int
    period: str


@dataclass(frozen=True)
class CapitalBudget:
    """Board minutes whose third item approves a capital budget (no accounting reference)."""
    date: str
    capex: str
    amount: int
    item: str


@dataclass(frozen=True)
class Agreement:
    """A fixed-fee services agreement recorded under an accounting reference."""
    ref: str
    vendor: str
    who: str
    date: str
    purpose: str
    amount: int
    period: str


@dataclass(frozen=True)
class Dated:
    """A minute's or an agreement's title: its date."""
    date: str


POLICY = Form(Policy, (
    "Section 1 Scope. This policy governs top-side adjustments: manual journal entries keyed by Finance "
    "management directly in the general ledger (document type TS). Vendor invoices are governed by the accounts "
    "payable policy (the vendor's invoice is their support); month-end accruals, allowance reviews, bank and tax "
    "entries follow the close checklist. "
    "Section 2.1 Every top-side adjustment must be supported by source documentation (contract, board "
    "resolution or a reviewed calculation) whose number is recorded in the entry's reference field. "
    "Section 2.2 The description must state the business purpose of the entry; terms such as 'adjustment' or "
    "'per management' alone are not sufficient. Section 2.3 Adjustments in round sums require the document that "
    "fixes the amount, dated no later than the day the entry is recorded (its entry timestamp); an approval "
    "given after the entry was recorded does not support it. Adjustments without support must not be approved "
    "and are reported to the Controller."))
_MINUTES = ("Northwind Components Inc. - minutes of the meeting of the Board of Directors held on {date}.\n"
            "Present: the Chair, four directors, the CEO, the CFO (James Wright); the Controller attended.\n"
            "1. The minutes of the previous meeting were approved.\n"
            "2. The CFO presented the monthly results; the board noted them.\n3. ")
_MINUTES_END = " The resolution was carried unanimously.\n4. There being no other business, the meeting closed."
RESOLUTION = Form(Resolution, _MINUTES + "Resolution {ref}: RESOLVED, that the Company approves {purpose} in the "
                  "amount of USD {amount}, to be accrued in {period} under accounting reference {ref}." + _MINUTES_END,
                  date=DATE, ref=TOKEN, amount=MONEY, period=NAME)
CAPITAL_BUDGET = Form(CapitalBudget, _MINUTES + "Capital budget request {capex}: RESOLVED, that a capital budget of "
                      "USD {amount} is approved for {item}; purchases are to be capitalised as property, plant and "
                      "equipment against supplier invoices." + _MINUTES_END, date=DATE, capex=TOKEN, amount=MONEY)
AGREEMENT = Form(Agreement, "SERVICES AGREEMENT {ref}\nBetween Northwind Components Inc. (the Client) and {vendor} "
                 "({who}, the Provider), dated {date}.\nScope: {purpose}.\nClause 3 Fees: a fixed fee of USD {amount}, "
                 "exclusive of any expenses, earned in {period} and accrued by the Client on that basis; invoicing "
                 "follows completion. The Client records the fee under reference {ref}.\nSigned for the Client by "
                 "Isabel Brown, Controller, and for the Provider by an authorised signatory.",
                 ref=TOKEN, who=NAME, date=DATE, amount=MONEY, period=NAME)
MINUTES_TITLE = Form(Dated, "Minutes of the Board of Directors meeting of {date}", date=DATE)
AGREEMENT_TITLE = Form(Dated, "Services agreement dated {date}", date=DATE)
#: the documents that fix an amount under a reference (and minutes that fix one under none)
SUPPORT = (RESOLUTION, CAPITAL_BUDGET, AGREEMENT)


# ------------------------------------------------------------------ world
@dataclass(frozen=True)
class _Item:
    """What a candidate is for: a board item or a fixed-fee agreement (``cat``: 'board' or the
    vendor category), its purpose, description, debit account and amount."""
    board: bool
    purpose: str
    short: str
    dr: str
    cat: str
    cents: int


@dataclass
class _Plan:
    """The candidates (planted first, then the books' year-end adjustments left unplanted) and what
    each becomes: kind, item, posting and keying dates, document date, reference."""
    every: np.ndarray
    n_cands: int
    kinds: list[str]
    items: list[_Item]
    post: list[str]
    keyed: list[str]
    lag: np.ndarray
    doc_dates: list[str]
    refs: list[str]
    taken: set[int]
    contracts: list[tuple[str, str, str, str]]
    policy: int
    #: the references entries carry and the other numbers drawn since
    used_refs: set[str] = field(default_factory=set)
    docs: list[int] = field(default_factory=list)


def _minutes(b: WorldBuilder, plan: _Plan, item: Resolution | CapitalBudget) -> int:
    """Board minutes in the company's usual form, with one substantive item."""
    body = RESOLUTION.render(item) if isinstance(item, Resolution) else CAPITAL_BUDGET.render(item)
    h = b.add_document("board_minutes", MINUTES_TITLE.render(Dated(item.date)), body, item.date)
    plan.docs.append(h)
    return h


def _agreement(b: WorldBuilder, plan: _Plan, date: str, ref: str, vendor: tuple[str, str], purpose: str, cents: int,
               period: str) -> int:
    a = Agreement(ref, vendor[0], vendor[1], date, purpose, cents, period)
    h = b.add_document("contract", AGREEMENT_TITLE.render(Dated(date)), AGREEMENT.render(a), date)
    plan.docs.append(h)
    return h


def _new_topsides(b: WorldBuilder, k: int) -> np.ndarray:
    """``k`` new top-side adjustments at month ends of January-November: copies of one of the books'
    top-side entries, posted to a month end and keyed by the accounting manager in the close."""
    rng = b.rng
    template = np.flatnonzero(b.cols.doc_code == "TS")
    if not len(template) or not k:
        return np.zeros(0, dtype=np.int64)
    new = b.copy_entries(np.full(k, template[0]))
    c = b.cols
    months = np.sort(rng.integers(1, 12, k))
    for i, m in zip(new.tolist(), months.tolist()):
        end = cal.last_day_of_month(np.datetime64(f"2025-{m:02d}-01"))
        c.post_date[i] = c.doc_date[i] = end
        c.entry_date[i] = cal.business_offset(end + 1, int(rng.integers(0, 3)))
        c.time_s[i] = int(rng.integers(*cal.OFFICE_HOURS))
    return new


def _set_amount(b: WorldBuilder, i: int, cents: int, account: str) -> None:
    """Amount, debit account, and the preparer and approver the books would give it (a top-side by the
    accounting manager, by the Controller above his limit; approved by the lowest tier that covers it)."""
    c = b.cols
    c.debit_cents[i] = c.credit_cents[i] = cents
    c.debit_account[i] = account
    prep = "HJOHANSSON" if cents <= b.user("HJOHANSSON")["approval_limit"] * 100 else "IBROWN"
    c.preparer[i] = prep
    c.approver[i] = next(a for a in APPROVERS if a != prep and b.user(a)["approval_limit"] * 100 >= cents)


def _round_amounts(b: WorldBuilder, k: int, taken: set[int]) -> list[int]:
    """Whole-thousand amounts, distinct (USD 2,000-60,000, wider only when a huge knob setting needs it)."""
    top = max(60, 2 * (len(taken) + k) + 10)
    pool = [c for c in range(2 * 1_000_00, (top + 1) * 1_000_00, 1_000_00) if c not in taken]
    out = [int(c) for c in b.rng.choice(pool, size=k, replace=False)]
    taken.update(out)
    return out


def _fitting(b: WorldBuilder, category: str, scope: str) -> list[dict[str, Any]]:
    """The vendors of ``category`` in the vendor master whose kind of firm fits ``scope`` (``FIRMS``)."""
    stems = next((st for word, st, _outside in FIRMS if word in scope), None)
    return [v for v in b.vendors if v["category"] == category and (stems is None or any(t in v["name"] for t in stems))]


def _vendor(b: WorldBuilder, category: str, scope: str) -> tuple[str, str]:
    """The agreement's counterparty as (name, how the agreement introduces it): a fitting vendor of the
    vendor master (by its vendor number), else the outside firm ``FIRMS`` names for the scope (the
    auditors and counsel the year-end adjustments need, whom the master may not hold)."""
    pick = _fitting(b, category, scope)
    outside = next((o for word, _st, o in FIRMS if word in scope), None)
    if pick or outside is None:
        pick = pick or [v for v in b.vendors if v["category"] == category]
        v = pick[int(b.rng.integers(0, len(pick)))]
        return v["name"], f"vendor {v['vendor_id']}"
    return outside


def plant(b: WorldBuilder) -> None:
    """Plant the policy and round-sum top-side adjustments with a purpose and a reference (the books'
    year-end ones and new month-end ones), each a defect or a decoy at random; decoys get the document
    that fixes them, defects a document that does not (or none)."""
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-10-01")
    plan = _plan(b, policy)
    for j, i in enumerate(plan.every.tolist()):
        _plant_one(b, plan, j, i)
    b.claim("JE-8", entries=plan.every.tolist(), documents=[policy, *plan.docs])


def _plan(b: WorldBuilder, policy: int) -> _Plan:
    """The candidates: the books' year-end top-side adjustments first, then new month-end ones; each
    a defect (of a kind drawn) or a decoy, what it is for, its dates and its reference."""
    rng, c = b.rng, b.cols
    n = b.n_defects + b.n_decoys
    year_end = np.flatnonzero(c.doc_code == "TS")
    year_end = year_end[rng.permutation(len(year_end))]
    taken = {int(x) for x in c.debit_cents[year_end]}
    new = _new_topsides(b, max(0, n - len(year_end)))
    cands = np.concatenate([year_end[:n], new]).astype(np.int64)
    spare = year_end[n:]
    b.used[cands] = True
    b.used[spare] = True
    new_amounts = iter(_round_amounts(b, len(new), taken))
    is_defect = np.zeros(len(cands) + len(spare), dtype=bool)
    is_defect[rng.permutation(len(cands))[: b.n_defects]] = True
    names, shares = [k for k, _ in _KINDS], [p for _, p in _KINDS]
    kinds = [str(rng.choice(names, p=shares)) if is_defect[j] else "support" for j in range(len(cands))]
    kinds += ["support"] * len(spare)  # a year-end adjustment left unplanted keeps its support (not in the key)
    every = np.concatenate([cands, spare]).astype(np.int64)
    # agreements only for the scopes the vendor master has a fitting firm for
    contracts = [x for x in CONTRACT_ITEMS if _fitting(b, x[0], x[1])] or list(CONTRACT_ITEMS)
    items = _items(b, every, set(year_end.tolist()), new_amounts, contracts)
    post = [b.date_str(c.post_date[i]) for i in every]
    keyed = [b.date_str(c.entry_date[i]) for i in every]
    lag = rng.integers(3, 41, len(every))
    # supported: dated 3-40 days before the posting date; approved afterwards: 3-40 days after it was keyed
    doc_dates = [str(np.datetime64(k) + int(g)) if kd == "approved_after_posting" else str(np.datetime64(p) - int(g))
                 for p, k, g, kd in zip(post, keyed, lag, kinds)]
    refs = _refs(rng, items, post)
    return _Plan(every, len(cands), kinds, items, post, keyed, lag, doc_dates, refs, taken, contracts, policy,
                 set(refs))


def _items(b: WorldBuilder, every: np.ndarray, books_year_end: set[int], new_amounts: Iterator[int],
           contracts: list[tuple[str, str, str, str]]) -> list[_Item]:
    """What each candidate is: a board item or a fixed-fee agreement (the books' year-end ones keep
    their purpose and amount)."""
    rng, c, d = b.rng, b.cols, b.books.docs
    board_order, ctr_order = rng.permutation(len(BOARD_ITEMS)), rng.permutation(len(contracts))
    nb = nc = 0
    items = []
    for i in every.tolist():
        if i in books_year_end:
            part = int(d.ext_ref[int(c.books_doc[i])])
            kind, scope = YEAR_END_SUPPORT[part]
            items.append(_Item(kind == "board", scope, close.TOP_SIDE[part][0], str(c.debit_account[i]), kind,
                               int(c.debit_cents[i])))
        elif rng.random() < 0.5:
            purpose, short, dr = BOARD_ITEMS[int(board_order[nb % len(BOARD_ITEMS)])]
            nb += 1
            items.append(_Item(True, purpose, short, dr, "board", next(new_amounts)))
        else:
            cat, purpose, short, dr = contracts[int(ctr_order[nc % len(contracts)])]
            nc += 1
            items.append(_Item(False, purpose, short, dr, cat, next(new_amounts)))
    return items


def _refs(rng: np.random.Generator, items: list[_Item], post: list[str]) -> list[str]:
    """Accounting references, rising with the posting date in one register per kind, whatever the document's date."""
    refs = [""] * len(items)
    counters: dict[str, int] = {}
    for j in sorted(range(len(items)), key=lambda j: (post[j], j)):
        kd = "BR" if items[j].board else "CTR"
        # (the first number is drawn every time, as the register was pinned)
        counters[kd] = counters.get(kd, int(rng.integers(1, 6) if kd == "BR" else rng.integers(10, 40))) \
            + int(rng.integers(1, 4))
        refs[j] = f"BR-2025-{counters[kd]:02d}" if kd == "BR" else f"CTR-2025-{counters[kd]:03d}"
    return refs


def _plant_one(b: WorldBuilder, plan: _Plan, j: int, i: int) -> None:
    """Candidate ``j`` (entry ``i``): its amount, reference and description, the document that fixes
    it (a smaller figure for amount_not_supported; none for no_support), and its key."""
    rng, c = b.rng, b.cols
    it, ref, doc_date, kind = plan.items[j], plan.refs[j], plan.doc_dates[j], plan.kinds[j]
    _set_amount(b, i, it.cents, it.dr)
    post = plan.post[j]
    period = f"{MONTHS[int(post[5:7]) - 1]} 2025" if post < "2025-12-31" else "FY2025"
    c.reference[i] = ref
    c.description[i] = f"{it.short} per {ref}"
    # the figure the document fixes: the entry's, or for amount_not_supported a smaller round sum
    doc_cents = it.cents
    if kind == "amount_not_supported":
        thousands = it.cents // 1_000_00
        choices = [x for x in range((thousands + 1) // 2, thousands) if x * 1_000_00 not in plan.taken] \
            or [thousands - 1]
        doc_cents = int(choices[int(rng.integers(0, len(choices)))]) * 1_000_00
    doc = None
    if kind != "no_support":
        if it.board:
            doc = _minutes(b, plan, Resolution(doc_date, ref, it.purpose, doc_cents, period))
        else:
            doc = _agreement(b, plan, doc_date, ref, _vendor(b, it.cat, it.purpose), it.purpose, doc_cents, period)
    if j >= plan.n_cands:
        return  # an unplanted year-end adjustment: supported, not in the key
    amount = it.cents / 100
    # a decoy's document supports it under section 2.3; a defect's does not (or there is none)
    supported = APPROVED_WHEN_RECORDED.check(None if doc is None else doc_cents, it.cents, doc_date, plan.keyed[j])
    assert supported.ok is (kind == "support"), (kind, supported.why)
    if kind == "support":
        b.add_decoy(i, "round_amount_with_support", [doc], facts=[f"{{D:{doc}}}", ref, amount])
        return
    if kind == "amount_not_supported":
        facts = [ref, f"{{D:{doc}}}", doc_cents / 100, amount]
    elif kind == "approved_after_posting":
        facts = [ref, f"{{D:{doc}}}", doc_date, plan.keyed[j]]
    else:
        facts = [ref, amount]
    _look_alikes(b, plan, j)
    # misstated by what no document supports: the excess over the figure fixed, or the whole entry
    unsupported = it.cents - doc_cents if kind == "amount_not_supported" else it.cents
    b.add_defect(i, kind, "UNSUPPORTED_ROUND", [plan.policy] + ([doc] if doc is not None else []), unsupported,
                 facts=facts)


def _look_alikes(b: WorldBuilder, plan: _Plan, j: int) -> None:
    """The documents a defect without its own has around it: at a high ``near_miss``, minutes
    approving the same figure for something else (matching on the amount alone is not support);
    otherwise, like every candidate, a document of its kind dated shortly before it, under another
    number and for activity of a month of the next year that it names (``LATER_BOARD``; an agreement's work
    to be performed then, never a licence true-up, which settles past usage), so the books rightly record
    nothing of it in FY2025."""
    rng = b.rng
    it, kind = plan.items[j], plan.kinds[j]
    dd = str(np.datetime64(plan.post[j]) - int(plan.lag[j]))
    trap = kind == "no_support" and it.board and rng.random() < b.knobs.near_miss
    if trap:
        capex = f"CAPEX-2025-{int(rng.integers(100, 999))}"
        _minutes(b, plan, CapitalBudget(dd, capex, it.cents, CAPEX_ITEMS[int(rng.integers(0, len(CAPEX_ITEMS)))]))
    if kind not in ("no_support", "approved_after_posting") or trap:
        return
    other = _free_ref(rng, "BR" if it.board else "CTR", "2025", plan.used_refs)
    o_period = f"{MONTHS[int(rng.integers(0, 3))]} 2026"
    if it.board:
        o_purpose = LATER_BOARD[int(rng.integers(0, len(LATER_BOARD)))].format(month=o_period)
        _minutes(b, plan, Resolution(dd, other, o_purpose, int(rng.integers(2, 61)) * 1_000_00, o_period))
    else:
        # work performed in the month named (a licence true-up, which settles past usage, is never a later one)
        later = [x for x in plan.contracts if "true-up" not in x[1]] or plan.contracts
        o_cat, o_purpose = later[int(rng.integers(0, len(later)))][:2]
        o_period = "March 2026" if "spring" in o_purpose else o_period  # a spring campaign runs in spring
        _agreement(b, plan, dd, other, _vendor(b, o_cat, o_purpose), f"{o_purpose}, work to be performed in {o_period}",
                   int(rng.integers(2, 61)) * 1_000_00, o_period)


def _free_ref(rng: np.random.Generator, kind: str, year: str, used: set[str]) -> str:
    """A register number no entry carries."""
    while True:
        ref = f"BR-{year}-{int(rng.integers(1, 99)):02d}" if kind == "BR" else f"CTR-{year}-{int(rng.integers(10, 999)):03d}"
        if ref not in used:
            used.add(ref)
            return ref


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "entry_timestamp", "document_type", "account", "debit", "preparer", "description",
         "reference"]
Record = dict[str, Any]


def _round_manual(kit: Kit, *only: dict[str, Any]) -> Generator[Step, Any, dict[str, Record]]:
    """Manual entries (matching the filters ``only`` too) whose amount (their total debits) is a whole
    number of hundreds; one row per entry (its first line, ``debit`` set to the total)."""
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"}, *only],
                                 columns=_COLS + ["line_no"])
    heads: dict[str, Record] = {}
    total: dict[str, int] = {}
    for r in rows:
        total[r["entry_id"]] = total.get(r["entry_id"], 0) + round(float(r["debit"] or 0) * 100)
        if r["line_no"] == 1:
            heads[r["entry_id"]] = r
    return {e: {**heads[e], "debit": total[e] / 100} for e in sorted(heads)
            if total[e] > 0 and total[e] % 10_000 == 0}


RULE = SurfaceRule("a manual entry whose amount is a whole number of hundreds", "UNSUPPORTED_ROUND", _round_manual,
                   "Entry {entry_id}: manual entry for a round {debit:,.2f} ('{description}').",
                   "Flagged {n} round-amount manual entries.")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy (its scope: top-side adjustments), then the minutes and agreements that carry
    each round top-side adjustment's reference; clears an entry whose document fixes its amount and is
    dated no later than the day it was recorded, flags the rest. Round vendor invoices and accruals
    are outside the policy's scope (their own procedures support them).

    With ``search_documents`` it searches each reference and opens the minutes and agreements that
    mention it; without, it reads every minute and agreement (nearest to a candidate first). A
    document "carries" a reference when it is recorded under it (the same figure under another
    number, for another purpose, is not support).
    """
    cands = yield from _round_manual(kit, {"column": "document_type", "op": "eq", "value": "TS"})
    docs = (yield from kit.documents()) if cands else []
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "manual journal" in d["title"].lower()),
                  None)
    support = {d["doc_id"]: d["date"] for d in docs if d["doc_type"] in ("board_minutes", "contract")}
    look = {e: list(support) for e in cands}
    first = [("open_document", {"doc_id": policy})] if policy and cands else []
    searches = [("search_documents", {"query": cands[e]["reference"]}) for e in cands] if kit.has("search_documents") else []
    hits = (yield from gather_while(kit, first + searches, reserve=2 * len(cands) + 2))[len(first):]
    look.update({e: [h["doc_id"] for h in res.get("documents", []) if h["doc_id"] in support]
                 for e, res in zip(cands, hits)})
    bodies = yield from read_while(kit, _nearest_first(cands, look, support), reserve=len(cands) + 2)
    decided = [d for e, r in cands.items() if (d := _judge(e, r, look[e], bodies, support, policy))]
    done = yield from dispose(kit, decided)
    n_flag, n_clear = tally(decided[:done])
    left = len(cands) - n_flag - n_clear
    yield from kit.submit(f"{len(cands)} round-sum top-side adjustments: {n_flag} unsupported and flagged, "
                          f"{n_clear} cleared against board resolutions or agreements"
                          + (f"; {left} left unresolved for lack of budget." if left else "."))


def _nearest_first(cands: dict[str, Record], look: dict[str, list[str]], support: dict[str, str]) -> list[str]:
    """The documents to read, nearest in date to a candidate they may support first."""
    def gap(d: str) -> int:
        return min(abs((dt.date.fromisoformat(cands[e]["posting_date"]) - dt.date.fromisoformat(support[d])).days)
                   for e in cands if d in look[e])
    return sorted({d for ds in look.values() for d in ds}, key=lambda d: (gap(d), d))


def _judge(eid: str, r: Record, look: list[str], bodies: dict[str, str], support: dict[str, str],
           policy: str | None) -> Disposition | None:
    """The disposition of a round top-side adjustment, from the documents read among those that may
    carry its reference (``None``: not all read within the budget and none found: left undisposed)."""
    ref, amt, keyed = r["reference"], float(r["debit"]), str(r["entry_timestamp"])[:10]
    cents = round(amt * 100)
    fixed_by = {d: parse_any(bodies[d], SUPPORT) for d in look if d in bodies}
    carrying = [d for d in look if d in bodies and ref and isinstance(fixed_by[d], (Resolution, Agreement))
                and fixed_by[d].ref == ref]
    if not all(d in bodies for d in look) and not carrying:
        return None
    figure = {d: fixed_by[d].amount / 100 for d in carrying}
    ok = next((d for d in carrying if APPROVED_WHEN_RECORDED.check(fixed_by[d].amount, cents, support[d], keyed).ok),
              None)
    if ok:
        return clear(eid, [ok], f"Entry {eid}: top-side adjustment of a round {amt:,.2f} under reference {ref} is "
                     f"fixed by {ok} (dated {support[ok]}, before the entry was recorded on {keyed}), which names "
                     f"reference {ref} and USD {amt:,.2f}.")
    ev = [x for x in (policy,) if x]
    if carrying:
        d = carrying[0]
        if fixed_by[d].amount != cents:
            why = (f"{d}, the document carrying reference {ref}, fixes USD {figure[d]:,.2f}, not the {amt:,.2f} "
                   "recorded")
        else:
            why = (f"{d}, the document carrying reference {ref}, is dated {support[d]}, after the entry was recorded "
                   f"on {keyed}; an approval given afterwards does not support it")
        ev.append(d)
    else:
        why = f"no board minute or agreement in the pack carries reference {ref}"
    return flag(eid, "UNSUPPORTED_ROUND", ev,
                f"Entry {eid}: manual round amount {amt:,.2f} ('{r['description']}', reference {ref}); {why}, so it "
                f"lacks the support section 2.3 of {policy or 'the manual JE policy'} requires.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template, rules=(APPROVED_WHEN_RECORDED,),
            decisive="for a round top-side adjustment, the board minutes or agreement recorded under its reference: "
                     "the figure it fixes against the entry's amount and its date against the day the entry was "
                     "recorded (manual JE policy section 2.3)")
