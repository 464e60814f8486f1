"""JE-11 (L3): related-party transactions and unusual account pairings without approval.

Every candidate is drawn the same way: its kind first (a vendor invoice from a related vendor,
about 60%, or a manual entry with a non-standard account combination), then, independently,
whether it is an exception. Only the approvals (and, for a capitalisation of repairs, its basis)
tell them apart.

Planted defects, as perturbations of the simulated year's entries:

* ``related_party_unapproved`` (criteria ``RELATED_PARTY``): one of the books' vendor invoices
  without goods receipt (marketing, maintenance, freight, office or travel bills) re-pointed, with the
  payment that settled it, to a vendor on the related-party register (an entity owned or managed
  by a director, an officer or a close family member; the vendor's category is the bill's, so
  the accounts are ones it may post). The board never approved it: with probability
  ``near_miss`` the minutes of a meeting held after the invoice date discuss it but defer or
  decline it, so "the minutes mention it" is not enough. Decisive facts: the vendor, the
  interested person on the register, the amount (and the minutes that discuss it without
  approving it, where they exist).
* ``unusual_pairing_unapproved:<kind>`` (criteria ``UNUSUAL_PAIRING``): a manual entry with a
  combination the journal-entry policy lists as non-standard, recorded without the CFO's prior
  written approval: ``manual_revenue`` (Dr 1100 receivables / Cr 4000 revenue: one of the books'
  customer invoices booked instead by a manual journal (document type TS, the only manual type
  the accounting staff may post) of the accounting manager or the controller, same customer,
  reference, amounts and tax line, posted to the invoice date and recorded 1-3 business days
  later), ``capitalised_expense`` (Dr 1500 PP&E / Cr 6600 repairs: a year-end top-side
  adjustment of the books, keyed in January, that capitalises the work of one of the two largest
  repairs bills of the year left (USD 1,000 or more), at its amount, as the overhaul of a plant
  asset) and ``reserve_release`` (Dr 1190 allowance / Cr 6500 bad debt expense: a year-end
  top-side release of the allowance outside the monthly allowance review, 40-80 % of what the
  allowance holds, in whole hundreds); a kind without room (no such bill, too small an
  allowance) gives way to ``manual_revenue``. With probability ``near_miss`` / 2 an approval memo exists but
  is dated after the entry was recorded, or records that the CFO asked for support and did not
  approve. Decisive
  facts: the debit and credit accounts and the amount (and the memo, where it exists).
* ``unusual_pairing_unsupported:capitalised_expense`` (criteria ``UNUSUAL_PAIRING``): in half the
  capitalisation defects the CFO approved the entry beforehand, as for a decoy, but the
  capitalisation has no basis under the policy's section 6.1.1: the contractor's invoice the memo
  names bills the repair of the asset after a breakdown (the register still records an
  addition), or it bills an improvement but the fixed-asset register records no addition for it.
  Decisive facts: the accounts, the amount and the invoice.

Every capitalisation, defect or decoy, has the same kinds of documents around it: the
contractor's invoice behind the repairs bill (the books' own ``VN`` bill: its vendor, number,
dates and total) describing the work on a named plant asset, and, except where the register's
addition is the missing fact, the fixed-asset register's addition at that invoice's cost entered
in the close; the memo, where there is one, names the invoice. Only the decisive fact differs.
Decoys: the same kinds, approved before the entry was recorded. A related-party invoice is
approved in the minutes of a board meeting held after the invoice date and before the entry,
naming the counterparty, the amount and the invoice reference, with "RESOLVED that the
transaction be approved": only directors vote, an interested director abstains, an interested
officer (who has no vote) leaves the room. A non-standard entry is approved by a memo of the CFO
dated on or after the document date and before the entry, naming the reference, the accounts,
the amount and the reason. Decisive facts: the minutes or memo, its date, the counterparty (or
the accounts) and the amount; a capitalisation of repairs also by its basis (an invoice for an
improvement that extends the asset's useful life, and its addition to the fixed-asset register at
that cost). A master services agreement exists for every related vendor used,
signed by management: it supports the price but is not an approval, so it never clears anything.
Refunds and grants are not related-party transactions and are not planted as such.

Required evidence: the entry (``get_entry``), plus for related-party defects the related-party
register (``master:related_parties``) and the related-party policy, and for pairings the
non-standard combinations policy (plus the minutes or memo that discuss the entry, and for a
capitalisation approved without a basis the invoice and the register addition).

Red-flag rule (naive): invoices of a vendor on the register, and manual entries whose (debit,
credit) pair the policy lists. Besides the planted entries it catches the releases of the monthly
allowance review (document type AL, Dr 1190 / Cr 6500), which the policy names as the standard
process: honest look-alikes. Over seeds 0-49 at default knobs, 34 % of the rule's hits are such
unplanted entries (``tests/test_key_audit_je11.py::test_key_audit_lookalike_rate``). The payments
that settled the related-party invoices carry the related vendor too; they are settlements, not
transactions to approve, and the rule leaves them out.
"""


from __future__ import annotations

import dataclasses
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.books.documents import TYPE_CODES, doc_number
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import APPROVERS
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, INT, LINE, MONEY, NAME, TOKEN, Disposition, Form, Many, SurfaceRule, Task,
                                     clear, dispose, flag, parse_any, read_while, review, surface_naive)

SPEC = spec(
    "JE-11",
    "L3",
    'Related-party and unusual pairings',
    step_budget=90,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find related-party transactions or unusual account pairings that were not approved.',
    defect='related-party transaction or non-standard account pairing without the required prior approval',
    decoys='related-party transactions approved in board minutes; non-standard entries approved by the CFO beforehand (a capitalisation of repairs with its basis)',
    required_evidence='related-party register, policies, board minutes, approval memos, the invoices and fixed-asset register additions a capitalisation rests on',
    sources=('general_ledger', 'related_party_list', 'board_minutes', 'approval_memos', 'contracts', 'invoices',
             'fixed_asset_register'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('RELATED_PARTY', 'transaction with a party on the related-party register without prior board approval'),
        ('UNUSUAL_PAIRING', 'non-standard account combination recorded without the approval (or the support) the journal-entry policy requires'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

_RP_STD = "ISA 550.23(b) (related-party transactions authorised and approved)"
_PAIR_STD = "AS 2401.61 (entries to unrelated, unusual or seldom-used accounts); ISA 240 A43"
KEY_RATIONALE = (
    key("defect", "related_party_unapproved",
        evidence="master:related_parties, the vendor master and the related-party policy; the board minutes",
        facts="the vendor and the director or officer the register links it to; the amount; no minutes approve "
              "the invoice before it was recorded (minutes that defer or decline it, where they exist)",
        conclusion="A purchase from a related party recorded without the board approval the policy requires "
                   "(deferred or declined where discussed): report to the audit committee and assess disclosure.",
        standard=_RP_STD),
    key("decoy", "related_party_approved",
        evidence="the board minutes and master:related_parties",
        facts="the meeting date (after the invoice date, before the entry); the counterparty, the amount and "
              "the invoice reference in the resolution; the interested director abstained or the officer left",
        conclusion="Related-party purchase approved by the disinterested directors before it was recorded: "
                   "no exception (disclosure is assessed separately).",
        standard=_RP_STD),
    key("defect", "unusual_pairing_unapproved:manual_revenue",
        evidence="the entry (manual, Dr 1100 / Cr 4000) and the non-standard combinations policy",
        facts="the accounts 1100 and 4000; the amount; a manual journal instead of the billing interface; no CFO "
              "approval before the entry (or one dated after it, or refused)",
        conclusion="Revenue recorded by a manual entry outside the billing interface without the required prior "
                   "approval: vouch to the shipment and customer, report the control deviation.",
        standard=_PAIR_STD + "; AS 2401.58"),
    key("decoy", "unusual_pairing_approved:manual_revenue",
        evidence="the CFO's approval memo and the non-standard combinations policy",
        facts="memo dated before the entry was recorded, naming the reference, the accounts 1100 / 4000, the amount "
              "and the reason (the interface rejected the invoice run; keyed from the shipping documents)",
        conclusion="Manual revenue entry approved beforehand as the policy requires: no exception.",
        standard=_PAIR_STD),
    key("defect", "unusual_pairing_unapproved:capitalised_expense",
        evidence="the entry (year-end top-side, Dr 1500 / Cr 6600) and the non-standard combinations policy",
        facts="the accounts 1500 and 6600; the amount; keyed in January for 31 December; no prior CFO approval",
        conclusion="Repairs capitalised by a year-end top-side entry without approval: overstates assets and "
                   "profit by the amount unless supported; report.",
        standard=_PAIR_STD + "; AS 2401.58"),
    key("decoy", "unusual_pairing_approved:capitalised_expense",
        evidence="the CFO's approval memo, the contractor's invoice it names, the fixed-asset register's addition and "
                 "the non-standard combinations policy (section 6.1.1)",
        facts="memo dated before the entry was recorded, naming the reference, 1500 / 6600, the amount and the "
              "invoice; the invoice bills an overhaul that replaces parts with units of higher capacity and extends "
              "the asset's useful life; the register records the addition at the invoice's cost",
        conclusion="An improvement, capitalised on its invoice and recorded in the fixed-asset register, approved "
                   "beforehand as the policy requires: no exception.",
        standard=_PAIR_STD + "; IAS 16.7, .12-13 (subsequent costs)"),
    key("defect", "unusual_pairing_unsupported:capitalised_expense",
        evidence="the CFO's approval memo, the contractor's invoice it names, the fixed-asset register's additions and "
                 "the non-standard combinations policy (section 6.1.1)",
        facts="the accounts 1500 and 6600; the amount; the invoice the memo names bills the repair of the asset after "
              "a breakdown, restoring normal operation, or the register records no addition for it",
        conclusion="The CFO's approval does not turn a repair into an asset, nor make an asset the register does not "
                   "hold: the capitalisation has no basis and overstates assets and profit by the amount; report.",
        standard=_PAIR_STD + "; IAS 16.12 (day-to-day servicing is expensed); AS 2401.58"),
    key("defect", "unusual_pairing_unapproved:reserve_release",
        evidence="the entry (year-end top-side, Dr 1190 / Cr 6500, not an allowance review) and the non-standard "
                 "combinations policy",
        facts="the accounts 1190 and 6500; the amount; a top-side outside the monthly allowance review; no prior "
              "CFO approval",
        conclusion="Allowance released to profit by a year-end top-side entry without approval: possible "
                   "earnings management through a reserve; report.",
        standard=_PAIR_STD + "; AS 2401.58"),
    key("decoy", "unusual_pairing_approved:reserve_release",
        evidence="the CFO's approval memo and the non-standard combinations policy",
        facts="memo dated before the entry was recorded, naming the reference, 1190 / 6500, the amount and the reason",
        conclusion="Release approved beforehand as the policy requires: no exception.",
        standard=_PAIR_STD),
)

CODE = "RELATED_PARTY"
PAIR_CODE = "UNUSUAL_PAIRING"
RP_POLICY_TITLE = "Related party transactions policy"
PAIR_POLICY_TITLE = "Journal entry policy - non-standard account combinations"
MEMO_TITLE = "CFO approval - non-standard journal entry"
BOARD = ("Margaret Osei (Chair)", "Robert Hale", "Priya Raman", "Thomas Becker")
DIRECTORS = ("Margaret Osei", "Robert Hale", "Priya Raman", "Thomas Becker")

# name, relationship, interested person, vendor category (its bills), service
RP_VENDORS = (
    ("Hale Print & Media LLC", "Owned by Robert Hale, non-executive director", "Robert Hale", "marketing",
     "printing of the product catalogue"),
    ("Osei Facility Services", "Controlled by Margaret Osei, chair of the board", "Margaret Osei", "maintenance",
     "repairs at the Commerce City warehouse"),
    ("Raman Office Supply Co.", "Majority-owned by Priya Raman, director", "Priya Raman", "office",
     "office supplies and printing"),
    ("Wright & Sons Logistics", "Managed by the brother of James Wright, CFO", "James Wright", "freight",
     "inbound freight for raw materials"),
    ("Becker Mechanical", "Thomas Becker, director, holds 35% of the shares", "Thomas Becker", "maintenance",
     "press-line maintenance"),
    ("Brown Street Travel", "Owned by the spouse of Isabel Brown, Controller", "Isabel Brown", "travel",
     "travel bookings for the sales team"),
)
# related parties that do not trade with the company in the period (they make the register realistic)
RP_OTHERS = (
    ("Northwind Holdings Ltd", "Parent company, holds 62% of the shares", "parent"),
    ("Wright Family Trust", "Shareholder (8%); trustee is James Wright, CFO", "shareholder"),
)

#: kind -> (debit account, credit account, description of the entry, reason in the approval memo)
PAIRS = {
    "manual_revenue": ("1100", "4000", None,
                       "the billing interface rejected the evening invoice run of {doc_date}; the invoice to {customer} "
                       "for shipment {parent} is booked by manual journal from the shipping documents"),
    "capitalised_expense": ("1500", "6600", "Capitalise {short} overhaul FY2025",
                            "the overhaul of {asset} billed by {vendor} on invoice {invoice} and booked to repairs "
                            "extends the asset's useful life; capitalised under the fixed-asset policy"),
    "reserve_release": ("1190", "6500", "Allowance release FY2025",
                        "the year-end review of the aged receivables shows the allowance exceeds the expected credit "
                        "losses"),
}
#: the plant assets whose overhaul is capitalised: (the asset, its short name in the entry, the parts worked on)
ASSETS = (("press line 2", "press-line", "main hydraulic drive"),
          ("the CNC machining centre at the Denver plant", "CNC-centre", "spindle and control system"),
          ("the packaging line", "packaging-line", "drive motors and controls"),
          ("the curing oven of the paint shop", "curing-oven", "burners and insulation"))
#: who keys a manual journal (document type TS) booking a customer invoice
MANUAL_BILLERS = ("HJOHANSSON", "IBROWN")
CFO = ("James Wright", "JWRIGHT")


def _account_name(code: str) -> str:
    return chart.ACCOUNTS[chart.CODE[code]].name


def _approver_for(b: WorldBuilder, cents: int, preparer: str) -> str:
    """The lowest approver whose limit covers the amount, never the preparer (as the books route it)."""
    return next(a for a in APPROVERS if a != preparer and b.user(a)["approval_limit"] * 100 >= cents)


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class RelatedPartyPolicy:
    """The related party transactions policy (fixed text)."""


@dataclass(frozen=True)
class Pair:
    """A combination the journal-entry policy lists as non-standard."""
    dr: str
    dr_name: str
    cr: str
    cr_name: str


@dataclass(frozen=True)
class PairPolicy:
    """The journal-entry policy on non-standard account combinations: the combinations it lists."""
    pairs: tuple[Pair, ...]


@dataclass(frozen=True)
class CfoMemo:
    """A memo on a non-standard entry: the entry, its accounts and amount, the reason; ``day`` of the decision."""
    ref: str
    dr: str
    dr_name: str
    cr: str
    cr_name: str
    amount: int
    reason: str
    day: str


@dataclass(frozen=True)
class Approval(CfoMemo):
    """The CFO's written approval of a non-standard entry."""
    cfo: str


@dataclass(frozen=True)
class Refusal(CfoMemo):
    """The CFO asked for support and gave no approval."""


@dataclass(frozen=True)
class CapitalBasis:
    """The reason a CFO memo gives for capitalising repairs: the work and the invoice it names."""
    asset: str
    vendor: str
    invoice: str


@dataclass(frozen=True)
class WorksInvoice:
    """A maintenance contractor's invoice for work on a plant asset (one of the books' repairs bills)."""
    number: int
    vendor: str
    vendor_id: str
    date: str
    asset: str
    part: str
    total: int
    ref: str
    posted: str


@dataclass(frozen=True)
class Improvement(WorksInvoice):
    """Work that improves the asset: new parts of higher capacity, a longer useful life."""
    years: int


@dataclass(frozen=True)
class Repair(WorksInvoice):
    """Work that restores the asset after a breakdown."""


@dataclass(frozen=True)
class Addition:
    """An addition to the fixed-asset register: the asset, its cost and the invoice it rests on."""
    asset_id: str
    asset: str
    cost: int
    invoice: str
    vendor: str
    months: int
    day: str


@dataclass(frozen=True)
class Contract:
    """A master services agreement with a related vendor (supports prices, approves nothing)."""
    signed: str
    name: str
    vendor_id: str
    service: str


@dataclass(frozen=True)
class Item:
    """An item of board minutes presenting a related-party invoice (``n``: its number in the minutes)."""
    n: int
    name: str
    person: str
    ref: str
    dated: str
    amount: int
    service: str


@dataclass(frozen=True)
class Deferred(Item):
    """The board deferred the decision."""


@dataclass(frozen=True)
class Declined(Item):
    """The board declined to approve."""


@dataclass(frozen=True)
class Approved(Item):
    """The board resolved to approve, the interested director abstaining."""


@dataclass(frozen=True)
class ApprovedOfficerOut(Approved):
    """The board resolved to approve, the interested officer (no vote) out of the meeting."""


@dataclass(frozen=True)
class Minutes:
    """The minutes of a board meeting: the day, the related-party items, the number of the last item."""
    day: str
    items: tuple[Item, ...]
    last: int


@dataclass(frozen=True)
class Named:
    """A document title naming a party or a day."""
    name: str


RP_POLICY = Form(RelatedPartyPolicy, (
    "Section 1. Scope. This policy applies to every transaction between Northwind Components Inc. and a "
    "related party.\n"
    "Section 2. Related parties. A related party is any person or entity on the related-party register "
    "maintained by the company secretary: directors, officers, their close family members, entities they "
    "own, control or manage, and shareholders holding more than 5% of the shares. Customers, lenders and "
    "grant bodies are not related parties unless they are on the register.\n"
    "Section 3. Approval. Every transaction with a related party, whatever its amount, requires the approval "
    "of the board of directors before it is recorded. Only directors vote; an interested director declares the "
    "interest and abstains, an interested officer declares it and leaves the meeting for the item. The approval "
    "is recorded in the board minutes, naming the counterparty, the amount and the invoice reference. A signed "
    "contract or purchase order does not replace board approval.\n"
    "Section 4. Reporting. Transactions recorded without board approval are reported to the audit committee "
    "and disclosed to the external auditor."))
PAIR_POLICY = Form(PairPolicy, (
    "Section 6.1. The account combinations below are non-standard when posted by a manual journal entry. Such an "
    "entry may only be recorded after the CFO has approved it in writing; the approval memo names the entry "
    "reference, the accounts, the amount and the reason, and is dated before the entry is recorded.\n{pairs}\n"
    "Section 6.1.1. Repairs are capitalised (Debit 1500 / Credit 6600) only on a capitalisation basis: the "
    "contractor's invoice for work that improves the asset (new parts of higher capacity, a longer useful life), "
    "and the asset's addition to the fixed-asset register at that invoice's cost. Work that restores an asset "
    "after a breakdown is a repair and stays in expense, whoever approves the entry.\n"
    "Section 6.2. Standard processes. Revenue is recorded by the billing interface from shipments. The monthly "
    "allowance review (document type AL, prepared by a senior accountant and approved under the approval "
    "matrix) is the standard process for provisions and releases of the allowance for doubtful accounts; its "
    "entries are not non-standard.\n"
    "Section 6.3. Entries with these combinations recorded without the required approval are reported to the "
    "audit committee. Other combinations follow the standard approval matrix."),
    pairs=Many((Form(Pair, "  - Debit {dr} ({dr_name}) / Credit {cr} ({cr_name})", dr=TOKEN, dr_name=LINE, cr=TOKEN,
                     cr_name=LINE),)))
_MEMO_HEAD = "Journal entry {ref}: Debit {dr} {dr_name} / Credit {cr} {cr_name}, USD {amount}.\nReason: {reason}.\n"
_MEMO_KINDS: dict[str, Any] = dict(ref=TOKEN, dr=TOKEN, dr_name=LINE, cr=TOKEN, cr_name=LINE, amount=MONEY, reason=LINE,
                                   day=DATE)
APPROVAL = Form(Approval, _MEMO_HEAD + "Approved: {cfo}, CFO, on {day}.", cfo=NAME, **_MEMO_KINDS)
REFUSAL = Form(Refusal, _MEMO_HEAD + "Not approved: the CFO asked for the supporting analysis before deciding; no "
               "approval given as of {day}.", **_MEMO_KINDS)
CAPITAL_BASIS = Form(CapitalBasis, PAIRS["capitalised_expense"][3], asset=LINE, vendor=NAME, invoice=TOKEN)
_WORKS_HEAD = ("INVOICE {number}\nFrom: {vendor} (our vendor no. {vendor_id})\nBill to: Northwind Components Inc., "
               "Accounts Payable\nInvoice date: {date}\nWork performed: ")
_WORKS_TAIL = "\nInvoice total: USD {total}\nAP stamp: posted as {ref} on {posted}."
_WORKS_KINDS: dict[str, Any] = dict(vendor=NAME, vendor_id=TOKEN, date=DATE, asset=LINE, part=LINE, total=MONEY,
                                    ref=TOKEN, posted=DATE)
IMPROVEMENT = Form(Improvement, _WORKS_HEAD + "overhaul of {asset}: the {part} replaced with new units of higher "
                   "capacity, extending its useful life by {years} years." + _WORKS_TAIL, **_WORKS_KINDS)
REPAIR = Form(Repair, _WORKS_HEAD + "repair of {asset} after a breakdown: the worn {part} repaired and refitted, "
              "restoring normal operation." + _WORKS_TAIL, **_WORKS_KINDS)
ADDITION = Form(Addition, (
    "Fixed-asset register - addition {asset_id}\nAsset: overhaul of {asset} (class: machinery and equipment)\n"
    "Cost: USD {cost}, per invoice {invoice} of {vendor}\nUseful life: {months} months, depreciated straight-line "
    "from January 2026 (additions recorded at the year-end close are depreciated from the following month).\n"
    "Entered in the fixed-asset register by Isabel Brown (Controller) on {day}."),
    asset_id=TOKEN, asset=LINE, cost=MONEY, invoice=TOKEN, vendor=NAME, day=DATE)
ADDITION_TITLE = Form(Named, "Fixed-asset register - addition {name}", name=TOKEN)
CONTRACT_TITLE = Form(Named, "Master services agreement - {name}", name=NAME)
CONTRACT = Form(Contract, (
    "Agreement dated {signed} between Northwind Components Inc. and {name} ({vendor_id}) for {service}. Fees are "
    "invoiced as services are delivered, at the rates in Schedule A. Payment terms 30 days. Signed for Northwind "
    "Components Inc. by James Wright, CFO, and for {name} by its managing partner."),
    signed=DATE, name=NAME, vendor_id=TOKEN, service=LINE)
_ITEM = ("Item {n}. Related-party transaction - {name}. {person} declared an interest in {name}. Management presented "
         "invoice {ref} from {name} dated {dated} for USD {amount} for {service}. ")
_ITEM_KINDS: dict[str, Any] = dict(name=NAME, person=NAME, ref=TOKEN, dated=DATE, amount=MONEY, service=LINE)
_RESOLVED = "directors present voted in favour and it was RESOLVED that the transaction be approved."
MINUTES_TITLE = Form(Named, "Minutes of the board of directors meeting - {name}", name=DATE)
MINUTES = Form(Minutes, (
    "Minutes of the meeting of the board of directors of Northwind Components Inc. held on {day}.\n\n"
    f"Present: {', '.join(BOARD)}. In attendance: James Wright (CFO), Isabel Brown (Controller), the company "
    "secretary.\n\nItem 1. The minutes of the previous meeting were read and signed.\n\n{items}\n\n"
    "Item {last}. Management presented the trading update; no further business."),
    day=DATE, items=Many((
        Form(Deferred, _ITEM + "The board asked for two competing quotes and deferred the decision to a later meeting; "
             "no approval was given.", **_ITEM_KINDS),
        Form(Declined, _ITEM + "The board considered the price above market and declined to approve the transaction.",
             **_ITEM_KINDS),
        Form(ApprovedOfficerOut, _ITEM + "After discussion, with {person}, who attends as an officer and has no vote, "
             "having left the meeting for this item, the " + _RESOLVED, **_ITEM_KINDS),
        Form(Approved, _ITEM + "After discussion, with {person} abstaining, the other " + _RESOLVED, **_ITEM_KINDS)),
        "\n\n"))


#: the policy on non-standard combinations as the world states it
LISTED = PairPolicy(tuple(Pair(dr, _account_name(dr), cr, _account_name(cr)) for dr, cr, _d, _r in PAIRS.values()))


# ---------------------------------------------------------------------------- planting
def _policies(b: WorldBuilder) -> tuple[int, int]:
    rp = b.add_document("policy", RP_POLICY_TITLE, RP_POLICY.render(RelatedPartyPolicy()), "2024-11-20")
    pair = b.add_document("policy", PAIR_POLICY_TITLE, PAIR_POLICY.render(LISTED), "2024-11-20")
    return rp, pair


#: an approval to write: (earliest, latest meeting day, the minutes item,
#: (role, entry, type, criteria, evidence, facts))
MinutesItem = tuple[Any, Any, Item, tuple[str, int, str, str | None, list[Any], list[Any]]]


def plant(b: WorldBuilder) -> None:
    """Add the policies, the related-party register and related vendors; draw each candidate's kind
    (related-party invoice or non-standard pairing) and, independently, whether it is an exception;
    plant them and write the board minutes and CFO memos that approve (or discuss) them."""
    rng = b.rng
    rp_policy, pair_policy = _policies(b)

    # the related-party register and the related vendors (new vendor ids: no base entry uses them)
    k_rp = int(rng.integers(3, 5))
    order = [int(i) for i in rng.permutation(len(RP_VENDORS))]
    register: list[dict[str, Any]] = []
    rp_vendors = [_related_vendor(b, RP_VENDORS[i], register) for i in sorted(order[:k_rp])]
    spare = order[k_rp:]
    for name, rel, kind in RP_OTHERS:
        register.append({"party": name, "relationship": rel, "party_type": kind,
                         "identified_on": str(np.datetime64("2015-01-01") + int(rng.integers(0, 1800)))})

    # One surface for every candidate: its kind (related-party invoice or non-standard pairing) is
    # drawn first, then whether it is an exception, independently (a listing shows kinds, not answers).
    n_all = b.n_defects + b.n_decoys
    labels = rng.permutation(np.array([True] * b.n_defects + [False] * b.n_decoys, dtype=bool))
    is_rp = rng.random(n_all) < 0.6
    rp_labels, pair_labels = labels[is_rp], labels[~is_rp]
    minutes_items: list[MinutesItem] = []
    _related_party_invoices(b, rp_vendors, spare, register, rp_labels, rp_policy, minutes_items)
    b.related_parties.extend(sorted(register, key=lambda r: r["party"]))
    b.claim("JE-11", rows=[("related_parties", r["party"]) for r in register], documents=[rp_policy, pair_policy])
    _pairings(b, pair_labels, pair_policy)
    _minutes(b, minutes_items)


def _related_vendor(b: WorldBuilder, row: tuple[str, str, str, str, str],
                    register: list[dict[str, Any]]) -> tuple[str, str, str, str, str]:
    """Add a related vendor to the vendor master and its register entry; returns its planting tuple."""
    rng = b.rng
    name, rel, person, category, service = row
    vid = b.books.master.vendor_id(len(b.vendors))
    b.vendors.append({"vendor_id": vid, "name": name, "category": category, "bank_account": b.bank_account(),
                      "payment_terms_days": 30, "created_on": str(np.datetime64("2018-01-01") + int(rng.integers(0, 2400))),
                      "created_by": "GSILVA", "status": "active"})
    b.claim("JE-11", rows=[("vendors", vid)])
    register.append({"party": name, "relationship": rel, "party_type": "entity",
                     "identified_on": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800)))})
    return vid, name, person, category, service


def _related_party_invoices(b: WorldBuilder, rp_vendors: list[tuple[str, str, str, str, str]], spare: list[int],
                            register: list[dict[str, Any]], rp_labels: np.ndarray, rp_policy: int,
                            items: list[MinutesItem]) -> None:
    """Bills of the related vendors' categories re-pointed (with their payments) to the related vendors;
    when the register's trading vendors have no bill of their category left, another related vendor
    (a spare) joins the register."""
    rng, c = b.rng, b.cols
    near = b.knobs.near_miss
    # each entry's vendor category ("" without a vendor), from the books' partner of the document
    m = b.books.master
    vcat_idx = np.where(c.vendor_id != "", m.vendor_category[b.books.docs.partner[c.books_doc]], -1)
    vcat = np.array(list(md.CATEGORY) + [""])[np.where(vcat_idx >= 0, vcat_idx, len(md.CATEGORY))]
    # a board meeting fits between the invoice date and the day the invoice is recorded
    gap = cal.business_count(c.doc_date + 1, c.entry_date)
    bills = (c.doc_code == "VN") & (gap >= 1)
    names = {v["vendor_id"]: v["name"] for v in b.vendors}
    used_vendors = set()
    vorder = rng.permutation(len(rp_vendors))
    for k, is_defect in enumerate(rp_labels):
        # every related vendor trades at least once (when there are enough entries), the rest at random;
        # a vendor whose category has no bill left gives way to one that has
        j = int(vorder[k]) if k < len(vorder) else int(rng.integers(0, len(rp_vendors)))
        left = [int(x) for x in np.roll(vorder, -int(np.flatnonzero(vorder == j)[0]))
                if (bills & ~b.used & (vcat == rp_vendors[int(x)][3])).any()]
        if not left:
            extra = [i for i in spare if (bills & ~b.used & (vcat == RP_VENDORS[i][3])).any()]
            if extra:
                spare.remove(extra[0])
                rp_vendors.append(_related_vendor(b, RP_VENDORS[extra[0]], register))
                vorder = np.append(vorder, len(rp_vendors) - 1)
                left = [len(rp_vendors) - 1]
        vid, name, person, category, service = rp_vendors[left[0] if left else j]
        idx = int(b.pick(1, bills & (vcat == category), what=f"{category} bills")[0])
        used_vendors.add(vid)
        old = names[str(c.vendor_id[idx])]
        moved = [idx, *_payments_of(b, idx)]
        b.claim("JE-11", entries=moved)
        for x in moved:
            c.vendor_id[x] = vid
            c.description[x] = str(c.description[x]).replace(old, name)
        cents = int(c.debit_cents[idx])
        doc_date = c.doc_date[idx]
        lo, hi = doc_date + 1, c.entry_date[idx] - 1
        item = Item(0, name, person, str(c.reference[idx]), b.date_str(doc_date), cents, service)
        evidence: list[Any] = ["entry", "master:related_parties", rp_policy]
        if is_defect:
            facts: list[Any] = [name, person, cents / 100]
            if rng.random() < near:
                verdict = Deferred if rng.random() < 0.5 else Declined
                items.append((lo, hi, verdict(**vars(item)), ("defect", idx, "related_party_unapproved", CODE,
                                                             evidence, facts)))
            else:
                b.add_defect(idx, "related_party_unapproved", CODE, evidence, facts=facts)
        else:
            # only directors vote: an interested director abstains, an interested officer leaves the room
            approved = Approved if person in DIRECTORS else ApprovedOfficerOut
            items.append((lo, hi, approved(**vars(item)), ("decoy", idx, "related_party_approved", None,
                                                          ["master:related_parties"], [name, cents / 100])))

    # contracts exist for every related vendor used: they support prices, they do not approve anything
    for vid, name, person, category, service in rp_vendors:
        if vid not in used_vendors:
            continue
        d = str(np.datetime64("2023-01-01") + int(rng.integers(0, 600)))
        b.claim("JE-11", documents=[b.add_document("contract", CONTRACT_TITLE.render(Named(name)),
                                                   CONTRACT.render(Contract(d, name, vid, service)), d)])


def _payments_of(b: WorldBuilder, idx: int) -> list[int]:
    """The payment entries that settled invoice entry ``idx`` (the books' parent links)."""
    c = b.cols
    vp = np.flatnonzero(c.doc_code == "VP")
    out: list[int] = vp[b.books.docs.parent[c.books_doc[vp]] == c.books_doc[idx]].tolist()
    return out


def _pairings(b: WorldBuilder, pair_labels: np.ndarray, pair_policy: int) -> None:
    """Non-standard combinations: customer invoices booked by manual journal, year-end top-sides re-targeted."""
    rng, c = b.rng, b.cols
    # what the allowance holds (a release never exceeds it); a capitalisation rests on one of the repairs bills
    year_end = b.books.balances_at(md.YEAR_END)
    room = {"reserve_release": -int(year_end[chart.CODE["1190"]])}
    for is_defect in pair_labels:
        kind = str(rng.choice(list(PAIRS)))
        topside = (c.doc_code == "TS") & ~b.used
        works = _repairs_bills(b)
        if kind != "manual_revenue" and (not topside.any() or (kind == "reserve_release" and room[kind] < 2_000_00)
                                         or (kind == "capitalised_expense" and not works.any())):
            kind = "manual_revenue"
        basis: tuple[int, int | None] | None = None
        if kind == "capitalised_expense":
            idx, why, works_bill = _capitalisation(b, topside, works)
        else:
            idx, why = _manual_revenue(b) if kind == "manual_revenue" else _topside(b, kind, topside, room)
        dr, cr = PAIRS[kind][:2]
        cents = int(c.debit_cents[idx])
        memo = CfoMemo(str(c.reference[idx]), dr, _account_name(dr), cr, _account_name(cr), cents, why, "")
        # the CFO approves on a business day from the document date to the day before the entry
        window = cal.business_days(c.doc_date[idx], c.entry_date[idx] - 1)
        typ = f"unusual_pairing_{'un' if is_defect else ''}approved:{kind}"
        b.claim("JE-11", entries=[idx])
        # a capitalisation approved beforehand without a basis: the invoice is for a repair, or no addition
        flaw = str(rng.choice(["repair", "unregistered"])) if kind == "capitalised_expense" and is_defect \
            and rng.random() < 0.5 else ""
        if kind == "capitalised_expense":
            basis = _capital_basis(b, idx, works_bill, flaw, window)
        if flaw:
            assert basis is not None
            day = window[int(rng.integers(0, len(window)))]
            h = _cfo_memo(b, Approval(**{**vars(memo), "day": b.date_str(day)}, cfo=CFO[0]))
            inv, reg = basis
            b.add_defect(idx, f"unusual_pairing_unsupported:{kind}", PAIR_CODE,
                         ["entry", pair_policy, h, inv] + ([reg] if reg is not None else []),
                         facts=[dr, cr, cents / 100, f"{{D:{inv}}}"])
        elif not is_defect:
            day = window[int(rng.integers(0, len(window)))]
            h = _cfo_memo(b, Approval(**{**vars(memo), "day": b.date_str(day)}, cfo=CFO[0]))
            docs = [x for x in (basis or ()) if x is not None]
            b.add_decoy(idx, typ, [h, *docs, pair_policy],
                        facts=[f"{{D:{h}}}", b.date_str(day), dr, cr, cents / 100, *(f"{{D:{x}}}" for x in docs)])
        elif rng.random() < b.knobs.near_miss * 0.5:
            if rng.random() < 0.5:
                day = cal.business_offset(c.entry_date[idx], int(rng.integers(1, 8)))
                h = _cfo_memo(b, Approval(**{**vars(memo), "day": b.date_str(day)}, cfo=CFO[0]))
            else:
                day = window[int(rng.integers(0, len(window)))]
                h = _cfo_memo(b, Refusal(**{**vars(memo), "day": b.date_str(day)}))
            b.add_defect(idx, typ, PAIR_CODE, ["entry", pair_policy, h], facts=[dr, cr, cents / 100, f"{{D:{h}}}"])
        else:
            b.add_defect(idx, typ, PAIR_CODE, ["entry", pair_policy], facts=[dr, cr, cents / 100])


def _manual_revenue(b: WorldBuilder) -> tuple[int, str]:
    """One of the books' customer invoices booked instead by a manual journal of the accounting
    manager or the controller, keyed from the shipment 1-3 business days after the invoice date and
    posted to that date; (the entry, the reason a CFO memo gives)."""
    rng, c, d = b.rng, b.cols, b.books.docs
    idx = int(b.pick(1, (c.doc_code == "CI") & (c.credit_account == "4000"), what="customer invoices")[0])
    prep = MANUAL_BILLERS[int(rng.integers(0, len(MANUAL_BILLERS)))]
    c.manual[idx] = True
    c.doc_type[idx] = "TS"
    c.entry_date[idx] = cal.business_offset(c.post_date[idx], int(rng.integers(1, 4)))
    c.time_s[idx] = int(md.office_hours(rng, 1)[0])
    c.preparer[idx] = prep
    c.approver[idx] = _approver_for(b, int(c.debit_cents[idx]), prep)
    bd = int(c.books_doc[idx])
    parent = doc_number(str(TYPE_CODES[d.type[d.parent[bd]]]), int(d.parent[bd])) if d.parent[bd] >= 0 else ""
    customer = next(x["name"] for x in b.customers if x["customer_id"] == str(c.customer_id[idx]))
    why = PAIRS["manual_revenue"][3]
    return idx, why.format(doc_date=b.date_str(c.doc_date[idx]), customer=customer, parent=parent)


def _topside(b: WorldBuilder, kind: str, topside: np.ndarray, room: dict[str, int]) -> tuple[int, str]:
    """A year-end top-side entry of the books re-targeted to the pairing ``kind`` (the allowance release), for an
    estimate in whole hundreds within what the allowance holds; (the entry, the memo's reason)."""
    rng, c = b.rng, b.cols
    dr, cr, desc, reason = PAIRS[kind]
    idx = int(b.pick(1, topside, what="year-end top-side entries")[0])
    cents = min(int(room[kind] * rng.uniform(0.4, 0.8)), md.MAX_MANUAL_CENTS // 2) // 10_000 * 10_000
    room[kind] -= cents
    c.debit_account[idx], c.credit_account[idx] = dr, cr
    c.debit_cents[idx] = c.credit_cents[idx] = cents
    c.description[idx] = desc
    c.approver[idx] = _approver_for(b, cents, str(c.preparer[idx]))
    return idx, str(reason)


def _repairs_bills(b: WorldBuilder) -> np.ndarray:
    """The books' repairs bills still free (vendor invoices Dr 6600) large enough for an overhaul (USD 1,000 or
    more), whose work a capitalisation may rest on."""
    c = b.cols
    return (c.doc_code == "VN") & (c.debit_account == "6600") & (c.debit_cents >= 1_000_00) & ~b.used


def _capitalisation(b: WorldBuilder, topside: np.ndarray, works: np.ndarray) -> tuple[int, str, int]:
    """A year-end top-side of the books re-targeted to capitalise the work of one of the two largest repairs
    bills left (Dr 1500 / Cr 6600 at the bill's amount); (the entry, the memo's reason, the bill's entry)."""
    rng, c = b.rng, b.cols
    dr, cr, desc, reason = PAIRS["capitalised_expense"]
    free = np.flatnonzero(works)
    top = free[np.argsort(-c.debit_cents[free], kind="stable")[:2]]
    bill = int(b.pick(1, np.isin(np.arange(b.n), top), what="repairs bills")[0])
    idx = int(b.pick(1, topside, what="year-end top-side entries")[0])
    asset, short, _part = ASSETS[int(rng.integers(0, len(ASSETS)))]
    cents = int(c.debit_cents[bill])
    c.debit_account[idx], c.credit_account[idx] = dr, cr
    c.debit_cents[idx] = c.credit_cents[idx] = cents
    c.description[idx] = str(desc).format(short=short)
    c.approver[idx] = _approver_for(b, cents, str(c.preparer[idx]))
    vendor = next(v["name"] for v in b.vendors if v["vendor_id"] == str(c.vendor_id[bill]))
    b.claim("JE-11", entries=[bill])
    return idx, str(reason).format(asset=asset, vendor=vendor, invoice=str(c.reference[bill])), bill


def _capital_basis(b: WorldBuilder, idx: int, bill: int, flaw: str,
                   window: np.ndarray) -> tuple[int, int | None]:
    """The capitalisation's basis as the pack holds it: the contractor's invoice behind the repairs bill (an
    improvement, or for ``flaw`` 'repair' the repair it was) and the fixed-asset register's addition at its cost,
    entered in the close (none for ``flaw`` 'unregistered'); (the invoice, the addition)."""
    rng, c, d = b.rng, b.cols, b.books.docs
    asset, _short, part = next(a for a in ASSETS if f"Capitalise {a[1]} " in str(c.description[idx]))
    vid = str(c.vendor_id[bill])
    vendor = next(v["name"] for v in b.vendors if v["vendor_id"] == vid)
    years = int(rng.integers(4, 9))
    head = dict(number=int(d.ext_ref[int(c.books_doc[bill])]), vendor=vendor, vendor_id=vid,
                date=b.date_str(c.doc_date[bill]), asset=asset, part=part, total=int(c.debit_cents[bill]),
                ref=str(c.reference[bill]), posted=b.date_str(c.post_date[bill]))
    body = REPAIR.render(Repair(**head)) if flaw == "repair" else IMPROVEMENT.render(Improvement(**head, years=years))
    inv = b.add_document("invoice", f"Vendor invoice {head['ref']} - {vendor}", body, str(head["date"]))
    reg = None
    if flaw != "unregistered":
        asset_id = f"FA-2025-{int(rng.integers(100, 1000)):03d}"
        day = b.date_str(window[int(rng.integers(0, len(window)))])
        reg = b.add_document("asset_register", ADDITION_TITLE.render(Named(asset_id)), ADDITION.render(
            Addition(asset_id, asset, int(c.debit_cents[bill]), str(head["ref"]), vendor, years * 12, day)), day)
    b.claim("JE-11", documents=[inv] + ([reg] if reg is not None else []))
    return inv, reg


def _cfo_memo(b: WorldBuilder, memo: Approval | Refusal) -> int:
    """Add a CFO memo on a non-standard entry, dated the day of its decision."""
    body = APPROVAL.render(memo) if isinstance(memo, Approval) else REFUSAL.render(memo)
    return b.add_document("memo", MEMO_TITLE, body, memo.day)


def _minutes(b: WorldBuilder, items: list[MinutesItem]) -> None:
    """Board meetings for the related-party items: each item's meeting is a business day after its
    invoice date and before its entry; a meeting is held at the latest day of the first open item and
    takes every item whose window contains it."""
    order = sorted(range(len(items)), key=lambda i: (items[i][1], i))
    meetings: list[tuple[np.datetime64, list[int]]] = []
    placed: set[int] = set()
    for i in order:
        if i in placed:
            continue
        lo, hi = items[i][0], items[i][1]
        day = cal.business_days(lo, hi)[-1]
        members = [j for j in order if j not in placed and items[j][0] <= day <= items[j][1]]
        placed.update(members)
        meetings.append((day, members))
    rng = b.rng
    for d, members in meetings:
        day = str(d)
        members = [members[int(j)] for j in rng.permutation(len(members))]
        listed = tuple(dataclasses.replace(items[i][2], n=k + 2) for k, i in enumerate(members))
        h = b.add_document("board_minutes", MINUTES_TITLE.render(Named(day)),
                           MINUTES.render(Minutes(day, listed, len(members) + 2)), day)
        b.claim("JE-11", documents=[h])
        for i in members:
            role, idx, kind, code, ev, facts = items[i][3]
            if role == "decoy":
                b.add_decoy(idx, kind, [h, *ev], facts=[f"{{D:{h}}}", day, *facts])
            else:
                # discussed but deferred or declined: these minutes are part of the proof that nothing approved it
                b.add_defect(idx, kind, str(code), [*ev, h], facts=[*facts, f"{{D:{h}}}"])


# ---------------------------------------------------------------------------- strategies
def _survey(kit: Kit, read_policies: bool) -> Generator[Step, Any, tuple[dict[str, dict[str, Any]],
                                                                             list[dict[str, Any]], dict[str, Any]]]:
    """Shared first steps: register, vendor master, policies, ledger; returns the candidates (each
    with its ``kind``, rp or pair, ``what`` it is and the register's relationship ``rel``)."""
    register = yield from kit.master("related_parties")
    vendors = yield from kit.master("vendors")
    rel = {r["party"]: r["relationship"] for r in register}
    rp_ids = {v["vendor_id"]: v["name"] for v in vendors if v["name"] in rel}
    docs = yield from kit.documents()
    pol: dict[str, Any] = {"rp": None, "pair": None}
    pairs: set[tuple[str, str]] = set()
    for d in docs:
        if d["doc_type"] == "policy" and d["title"] == RP_POLICY_TITLE and read_policies:
            pol["rp"] = d["doc_id"]
        if d["doc_type"] == "policy" and "non-standard account" in d["title"].lower():
            pol["pair"] = d["doc_id"]
    if pol["rp"]:
        yield from kit.open(pol["rp"])
    if pol["pair"]:
        # the pairing rule itself is in this policy, so even the naive screen reads it
        policy = PAIR_POLICY.parse((yield from kit.open(pol["pair"])).get("body", ""))
        pairs = {(p.dr, p.cr) for p in policy.pairs} if policy else set()
    rows = yield from kit.ledger(columns=["entry_id", "line_no", "account", "debit", "credit", "vendor_id", "reference",
                                          "posting_date", "entry_timestamp", "source", "document_type"])
    ents = entries_of(sorted(rows, key=lambda r: (r["entry_id"], r["line_no"])))
    dr_of: dict[str, list[str]] = {}
    cr_of: dict[str, list[str]] = {}
    for r in rows:
        (dr_of if (r.get("debit") or 0) > 0 else cr_of).setdefault(r["entry_id"], []).append(r["account"])
    cands = {}
    for eid, ent in ents.items():
        hit = sorted((a, c) for a in dr_of.get(eid, ()) for c in cr_of.get(eid, ()) if (a, c) in pairs)
        if ent.get("vendor_id") in rp_ids:
            name = rp_ids[ent["vendor_id"]]
            cands[eid] = {**ent, "kind": "rp", "what": name, "rel": rel[name]}
        elif hit and ent.get("source") == "manual":
            cands[eid] = {**ent, "kind": "pair", "what": f"Dr {hit[0][0]} / Cr {hit[0][1]}", "rel": ""}
    return cands, docs, pol


def _surface(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The red-flag rule's hits: invoices of a vendor on the register (a payment settles an invoice:
    the transaction to approve is the invoice) and manual entries with a pairing the policy lists."""
    cands, _docs, pol = yield from _survey(kit, read_policies=False)
    rp = {"criteria": CODE, "rp_ev": "master:related_parties", "pair_ev": "", "finding": "is a transaction with "
          "related party"}
    pair = {"criteria": PAIR_CODE, "rp_ev": "", "pair_ev": pol["pair"] or "",
            "finding": "uses the non-standard pairing"}
    return {k: {**c, **(rp if c["kind"] == "rp" else pair)} for k, c in cands.items()
            if c["kind"] != "rp" or c.get("document_type") in ("VN", "VI")}


RULE = SurfaceRule("an invoice of a vendor on the related-party register, or a manual entry with a combination the "
                   "policy lists as non-standard", CODE, _surface, "Entry {entry_id} {finding} {what}.",
                   "Flagged {n} related-party or non-standard entries.", ("{rp_ev}", "{pair_ev}"),
                   criteria_of="criteria")
naive = surface_naive(RULE)


Survey = tuple[dict[str, dict[str, Any]], dict[str, Any], list[str], dict[str, str]]


def _targeted(kit: Kit) -> Generator[Step, Any, Survey]:
    """Careful's survey, by filters only: the register and vendors, the policies, the related
    vendors' invoices and the manual entries with a listed pairing (outside the allowance review),
    a few columns each; returns the candidates, the policies, the minutes, memos and fixed-asset
    register additions to read, and the contractors' invoices in the pack by their reference."""
    rel = {r["party"]: r["relationship"] for r in (yield from kit.master("related_parties"))}
    rp_ids = {v["vendor_id"]: v["name"] for v in (yield from kit.master("vendors")) if v["name"] in rel}
    docs = [d for ds in (yield from kit.listings(["policy", "board_minutes", "memo", "asset_register", "invoice"]))
            for d in ds]
    invoices = {d["title"].split()[2]: d["doc_id"] for d in docs
                if d["doc_type"] == "invoice" and d["title"].startswith("Vendor invoice ")}
    pol = {"rp": next((d["doc_id"] for d in docs if d["title"] == RP_POLICY_TITLE), None),
           "pair": next((d["doc_id"] for d in docs if "non-standard account" in d["title"].lower()), None)}
    if pol["rp"]:
        yield from kit.open(pol["rp"])
    policy = PAIR_POLICY.parse((yield from kit.open(pol["pair"])).get("body", "")) if pol["pair"] else None
    cols = ["entry_id", "debit", "reference", "entry_timestamp"]
    cands: dict[str, dict[str, Any]] = {}
    rows = yield from kit.ledger([{"column": "vendor_id", "op": "in", "value": sorted(rp_ids)},
                                  {"column": "document_type", "op": "in", "value": ["VN", "VI"]},
                                  {"column": "debit", "op": "gt", "value": 0}], cols + ["vendor_id"])
    for eid, inv in entries_of(rows).items():
        name = rp_ids[inv["vendor_id"]]
        cands[eid] = {**inv, "kind": "rp", "what": name, "rel": rel[name]}
    for p in (policy.pairs if policy else ()):
        manual = [{"column": "source", "op": "eq", "value": "manual"},
                  {"column": "document_type", "op": "ne", "value": "AL"}]
        drs = entries_of((yield from kit.ledger(manual + [{"column": "account", "op": "eq", "value": p.dr},
                                                         {"column": "debit", "op": "gt", "value": 0}], cols)))
        crs = (yield from kit.ledger(manual + [{"column": "account", "op": "eq", "value": p.cr},
                                               {"column": "credit", "op": "gt", "value": 0},
                                               {"column": "entry_id", "op": "in", "value": sorted(drs)[:500]}],
                                     ["entry_id"])) if drs else []
        for eid in sorted({r["entry_id"] for r in crs} - set(cands)):
            cands[eid] = {**drs[eid], "kind": "pair", "what": f"Dr {p.dr} / Cr {p.cr}", "rel": ""}
    ids = sorted(d["doc_id"] for d in docs if d["doc_type"] in ("board_minutes", "asset_register")
                 or d["title"] == MEMO_TITLE)
    return cands, pol, ids, invoices


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Finds candidates by filtered queries (related-vendor invoices; manual non-standard pairings
    outside the allowance review), reads the board minutes, the CFO's approval memos and the
    fixed-asset register's additions, and the contractors' invoices the capitalisation memos name;
    clears what was approved before the entry was recorded (a capitalisation of repairs only on its
    basis: an invoice for an improvement and its addition to the register), flags the rest."""
    cands, pol, ids, invoices = yield from _targeted(kit)
    # keep at least one call per candidate
    bodies = yield from read_while(kit, ids, reserve=len(cands) + 2)
    approvals, named = _approvals(bodies), _named_invoices(bodies)
    bodies |= yield from read_while(kit, [invoices[r] for r in named.values() if r in invoices],
                                    reserve=len(cands) + 2)
    basis = _bases(bodies, named, invoices)
    seen = {eid: approvals.get(cands[eid].get("reference", ""), (None, False, "")) for eid in sorted(cands)}
    rests = {eid: basis.get(cands[eid].get("reference", ""), (None, [])) for eid in seen}
    prior = [eid for eid, (_doc, ok, day) in seen.items() if ok and day < _recorded(cands[eid]) and not rests[eid][0]]
    late = [eid for eid in seen if eid not in prior]

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        entry = yield from kit.call("get_entry", entry_id=eid)
        return _unapproved(eid, cands[eid], entry, seen[eid], pol, rests[eid])

    yield from review(kit, late, decide)
    yield from dispose(kit, [_approved(eid, cands[eid], seen[eid], pol, rests[eid][1]) for eid in prior])
    yield from kit.submit(f"{len(cands)} related-party or non-standard entries examined: {len(late)} without prior "
                          f"approval flagged, {len(prior)} approved beforehand cleared.")


def _recorded(ent: dict[str, Any]) -> str:
    return str(ent.get("entry_timestamp", ""))[:10]


def _approvals(bodies: dict[str, str]) -> dict[str, tuple[str | None, bool, str]]:
    """Reference -> (the document, approved?, its day) from the minutes and memos read, in the order
    read: an approval wins over a mention."""
    out: dict[str, tuple[str | None, bool, str]] = {}
    for doc_id, body in bodies.items():
        v = parse_any(body, (MINUTES, APPROVAL, REFUSAL))
        found: dict[str, tuple[bool, str]] = {}
        if isinstance(v, Minutes):
            for it in v.items:
                found[it.ref] = (found.get(it.ref, (False, ""))[0] or isinstance(it, Approved), v.day)
        elif isinstance(v, CfoMemo):
            found[v.ref] = (True, v.day) if isinstance(v, Approval) else (False, "")
        for ref, (ok, day) in found.items():
            if ok or ref not in out:
                out[ref] = (doc_id, ok, day)
    return out


def _named_invoices(bodies: dict[str, str]) -> dict[str, str]:
    """Entry reference -> the contractor's invoice a CFO memo capitalising repairs names as its basis."""
    out = {}
    for body in bodies.values():
        v = parse_any(body, (APPROVAL, REFUSAL))
        basis = CAPITAL_BASIS.parse(v.reason) if isinstance(v, CfoMemo) else None
        if basis is not None:
            out[v.ref] = basis.invoice
    return out


def _bases(bodies: dict[str, str], named: dict[str, str],
           invoices: dict[str, str]) -> dict[str, tuple[str | None, list[str]]]:
    """Entry reference -> (why its capitalisation basis falls short, None where it holds; the invoice and the
    register addition read): section 6.1.1 wants an invoice for an improvement and the asset's addition at its
    cost."""
    adds = {a.invoice: (d, a) for d, body in bodies.items() if (a := ADDITION.parse(body)) is not None}
    out: dict[str, tuple[str | None, list[str]]] = {}
    for ref, inv_ref in named.items():
        doc = invoices.get(inv_ref)
        inv = parse_any(bodies.get(doc, ""), (IMPROVEMENT, REPAIR)) if doc else None
        add = adds.get(inv_ref)
        why = None
        if isinstance(inv, Repair):
            why = f"invoice {inv_ref} ({doc}) bills the repair of {inv.asset} after a breakdown, which restores it"
        elif not isinstance(inv, Improvement):
            why = f"invoice {inv_ref}, which the memo names, is not in the pack"
        elif add is None:
            why = f"the fixed-asset register records no addition for invoice {inv_ref} ({doc})"
        elif add[1].cost != inv.total:
            why = f"register addition {add[0]} is for USD {add[1].cost / 100:,.2f}, not the invoice's"
        out[ref] = (why, [x for x in (doc, add[0] if add else None) if x])
    return out


def _unapproved(eid: str, c: dict[str, Any], entry: dict[str, Any], seen: tuple[str | None, bool, str],
                pol: dict[str, Any], rests: tuple[str | None, list[str]] = (None, [])) -> Disposition:
    """The flag of a candidate no minutes or memo approved before it was recorded (or, for a capitalisation of
    repairs, approved without the basis section 6.1.1 requires: ``rests`` says what falls short, and the invoice
    and register addition read)."""
    doc, ok, day = seen
    short, basis = rests
    ref = entry.get("reference", c.get("reference"))
    amt = entry.get("total_debit", c.get("total_debit", 0.0))
    if doc and ok and short and day < _recorded(c):
        why = (f" {doc} approves {ref} on {day}, but the capitalisation has no basis under section 6.1.1: {short}; "
               "the CFO's approval does not make it an asset.")
    elif doc and ok:
        why = f" {doc} approves {ref} only on {day}, after it was recorded on {_recorded(c)}."
    elif doc:
        why = f" {doc} discusses {ref} but records no approval."
    else:
        why = " No board minutes or approval memo approve it."
    if c["kind"] == "rp":
        ev = [eid, "master:related_parties"] + ([pol["rp"]] if pol["rp"] else [])
        text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) is an invoice from {c['what']}, on the related-party register "
                f"({c['rel']}); policy {pol['rp']} requires prior board approval.{why}")
    else:
        ev = [eid] + ([pol["pair"]] if pol["pair"] else [])
        text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) is a manual entry posting {c['what']}, a non-standard combination "
                f"under policy {pol['pair']} that needs the CFO's prior written approval.{why}")
    basis = basis if short and ok else []
    return flag(eid, CODE if c["kind"] == "rp" else PAIR_CODE, ev + ([doc] if doc else []) + basis, text)


def _approved(eid: str, c: dict[str, Any], seen: tuple[str | None, bool, str], pol: dict[str, Any],
              basis: list[str]) -> Disposition:
    """The clearance of a candidate approved before it was recorded (a capitalisation with its basis read)."""
    doc, _ok, day = seen
    ref, amt = c.get("reference"), c.get("total_debit", 0.0)
    if c["kind"] == "rp":
        return clear(eid, [str(doc), "master:related_parties"],
                     f"Entry {eid} ({ref}, USD {amt:,.2f}) with related party {c['what']} was approved by the board "
                     f"before it was recorded: minutes {doc} of the meeting on {day} resolve to approve {ref} for USD "
                     f"{amt:,.2f}.")
    on = (f" Its capitalisation basis (section 6.1.1): invoice {basis[0]} bills an improvement that extends the "
          f"asset's life, and register addition {basis[1]} records the asset at that cost.") if len(basis) == 2 else ""
    return clear(eid, [str(doc), *basis] + ([pol["pair"]] if pol["pair"] else []),
                 f"Entry {eid} ({ref}, USD {amt:,.2f}) posting {c['what']} was approved in writing by the CFO on {day}, "
                 f"before it was recorded on {_recorded(c)}: memo {doc} names {ref}, the accounts and USD {amt:,.2f}."
                 + on)


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=RP_POLICY.template + "\n" + PAIR_POLICY.render(LISTED),
            decisive="the date of the board minutes or CFO memo that approves the entry (naming its reference) "
                     "against the day the entry was recorded; for a capitalisation of repairs, its basis: an invoice "
                     "for an improvement and the asset's addition to the fixed-asset register")
