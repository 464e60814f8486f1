"""JE-11 (L3): related-party transactions and unusual account pairings without approval.

Every candidate is drawn the same way: its kind first (a vendor invoice from a related vendor,
about 60%, or a manual entry with a non-standard account combination), then, independently,
whether it is an exception. Only the approvals tell them apart.

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
  adjustment of the books, keyed in January, that capitalises repairs instead of accruing) and
  ``reserve_release`` (Dr 1190 allowance / Cr 6500 bad debt expense: a year-end top-side release
  of the allowance outside the monthly allowance review); a top-side's amount becomes 40-80 % of
  what the allowance holds or repairs cost in the year, in whole hundreds (a kind without room
  gives way to ``manual_revenue``). With probability ``near_miss`` / 2 an approval memo exists but
  is dated after the entry was recorded, or records that the CFO asked for support and did not
  approve. Decisive
  facts: the debit and credit accounts and the amount (and the memo, where it exists).

Decoys: the same kinds, approved before the entry was recorded. A related-party invoice is
approved in the minutes of a board meeting held after the invoice date and before the entry,
naming the counterparty, the amount and the invoice reference, with "RESOLVED that the
transaction be approved": only directors vote, an interested director abstains, an interested
officer (who has no vote) leaves the room. A non-standard entry is approved by a memo of the CFO
dated on or after the document date and before the entry, naming the reference, the accounts,
the amount and the reason. Decisive facts: the minutes or memo, its date, the counterparty (or
the accounts) and the amount. A master services agreement exists for every related vendor used,
signed by management: it supports the price but is not an approval, so it never clears anything.
Refunds and grants are not related-party transactions and are not planted as such.

Required evidence: the entry (``get_entry``), plus for related-party defects the related-party
register (``master:related_parties``) and the related-party policy, and for pairings the
non-standard combinations policy (plus the minutes or memo that discuss the entry).

Red-flag rule (naive): invoices of a vendor on the register, and manual entries whose (debit,
credit) pair the policy lists. Besides the planted entries it catches the releases of the monthly
allowance review (document type AL, Dr 1190 / Cr 6500), which the policy names as the standard
process: honest look-alikes. Over seeds 0-49 at default knobs, 34 % of the rule's hits are such
unplanted entries (``tests/test_key_audit_je11.py::test_key_audit_lookalike_rate``). The payments
that settled the related-party invoices carry the related vendor too; they are settlements, not
transactions to approve, and the rule leaves them out.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.protocol.kit import Kit, entries_of
from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.books.documents import doc_number, TYPE_CODES
from jeval_ray.builder.spec import key, spec
from jeval_ray.builder._base import APPROVERS


SPEC = spec(
    "JE-11",
    "L3",
    'Related-party and unusual pairings',
    objective='Find related-party transactions or unusual account pairings that were not approved.',
    defect='related-party transaction or non-standard account pairing without the required prior approval',
    decoys='related-party transactions approved in board minutes; non-standard entries approved by the CFO beforehand',
    required_evidence='related-party register, policies, board minutes, approval memos',
    sources=('general_ledger', 'related_party_list', 'board_minutes', 'approval_memos', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('RELATED_PARTY', 'transaction with a party on the related-party register without prior board approval'),
        ('UNUSUAL_PAIRING', 'non-standard account combination recorded without the approval the journal-entry policy requires'),
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
        evidence="the CFO's approval memo and the non-standard combinations policy",
        facts="memo dated before the entry was recorded, naming the reference, 1500 / 6600, the amount and the reason "
              "(an overhaul that extends the line's life)",
        conclusion="Capitalisation approved beforehand as the policy requires: no exception.",
        standard=_PAIR_STD),
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
     "repairs at the Reno plant"),
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
    "capitalised_expense": ("1500", "6600", "Capitalise press-line overhaul FY2025",
                            "the overhaul of press line 2 booked to repairs extends the line's useful life by five "
                            "years; capitalised under the fixed-asset policy"),
    "reserve_release": ("1190", "6500", "Allowance release FY2025",
                        "the year-end review of the aged receivables shows the allowance exceeds the expected credit "
                        "losses"),
}
#: who keys a manual journal (document type TS) booking a customer invoice
MANUAL_BILLERS = ("HJOHANSSON", "IBROWN")
CFO = ("James Wright", "JWRIGHT")


def _money(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def _account_name(code: str) -> str:
    return chart.ACCOUNTS[chart.CODE[code]].name


def _approver_for(b, cents: int, preparer: str) -> str:
    """The lowest approver whose limit covers the amount, never the preparer (as the books route it)."""
    return next(a for a in APPROVERS if a != preparer and b.user(a)["approval_limit"] * 100 >= cents)


def _policies(b) -> tuple[int, int]:
    rp = b.add_document(
        "policy", RP_POLICY_TITLE,
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
        "and disclosed to the external auditor.",
        "2024-11-20",
    )
    lines = [f"  - Debit {dr} ({_account_name(dr)}) / Credit {cr} ({_account_name(cr)})"
             for dr, cr, _d, _r in PAIRS.values()]
    pair = b.add_document(
        "policy", PAIR_POLICY_TITLE,
        "Section 6.1. The account combinations below are non-standard when posted by a manual journal entry. Such an "
        "entry may only be recorded after the CFO has approved it in writing; the approval memo names the entry "
        "reference, the accounts, the amount and the reason, and is dated before the entry is recorded.\n"
        + "\n".join(lines) + "\n"
        "Section 6.2. Standard processes. Revenue is recorded by the billing interface from shipments. The monthly "
        "allowance review (document type AL, prepared by a senior accountant and approved under the approval "
        "matrix) is the standard process for provisions and releases of the allowance for doubtful accounts; its "
        "entries are not non-standard.\n"
        "Section 6.3. Entries with these combinations recorded without the required approval are reported to the "
        "audit committee. Other combinations follow the standard approval matrix.",
        "2024-11-20",
    )
    return rp, pair


def plant(b) -> None:
    rng = b.rng
    rp_policy, pair_policy = _policies(b)

    # the related-party register and the related vendors (new vendor ids: no base entry uses them)
    k_rp = int(rng.integers(3, 5))
    order = [int(i) for i in rng.permutation(len(RP_VENDORS))]
    register: list[dict] = []
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
    # approvals to write: (earliest, latest meeting or memo day, text, record) per item
    minutes_items: list[tuple] = []
    _related_party_invoices(b, rp_vendors, spare, register, rp_labels, rp_policy, minutes_items)
    b.related_parties.extend(sorted(register, key=lambda r: r["party"]))
    _pairings(b, pair_labels, pair_policy)
    _minutes(b, minutes_items)


def _related_vendor(b, row: tuple, register: list[dict]) -> tuple:
    """Add a related vendor to the vendor master and its register entry; returns its planting tuple."""
    rng = b.rng
    name, rel, person, category, service = row
    vid = b.books.master.vendor_id(len(b.vendors))
    b.vendors.append({"vendor_id": vid, "name": name, "category": category, "bank_account": b.bank_account(),
                      "payment_terms_days": 30, "created_on": str(np.datetime64("2018-01-01") + int(rng.integers(0, 2400))),
                      "created_by": "GSILVA", "status": "active"})
    register.append({"party": name, "relationship": rel, "party_type": "entity",
                     "identified_on": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800)))})
    return vid, name, person, category, service


def _related_party_invoices(b, rp_vendors: list[tuple], spare: list[int], register: list[dict], rp_labels: np.ndarray,
                            rp_policy: int, items: list) -> None:
    """Bills of the related vendors' categories re-pointed (with their payments) to the related vendors;
    when the register's trading vendors have no bill of their category left, another related vendor
    (a spare) joins the register."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    # each entry's vendor category ("" without a vendor), from the books' partner of the document
    m = b.books.master
    vcat_idx = np.where(e["vendor_id"] != "", m.vendor_category[b.books.docs.partner[e["books_doc"]]], -1)
    vcat = np.array(list(md.CATEGORY) + [""])[np.where(vcat_idx >= 0, vcat_idx, len(md.CATEGORY))]
    # a board meeting fits between the invoice date and the day the invoice is recorded
    gap = cal.business_count(e["doc_date"] + 1, e["entry_date"])
    bills = (e["doc_code"] == "VN") & (gap >= 1)
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
        old = names[str(e["vendor_id"][idx])]
        for x in [idx, *_payments_of(b, idx)]:
            e["vendor_id"][x] = vid
            e["description"][x] = str(e["description"][x]).replace(old, name)
        ref = str(e["reference"][idx])
        cents = int(e["debit_cents"][idx])
        doc_date = e["doc_date"][idx]
        lo, hi = doc_date + 1, e["entry_date"][idx] - 1
        head = (f"Related-party transaction - {name}. {person} declared an interest in {name}. Management "
                f"presented invoice {ref} from {name} dated {b.date_str(doc_date)} for USD {_money(cents)} "
                f"for {service}.")
        evidence = ["entry", "master:related_parties", rp_policy]
        if is_defect:
            facts = [name, person, cents / 100]
            if rng.random() < near:
                verdict = ("The board asked for two competing quotes and deferred the decision to a later "
                           "meeting; no approval was given." if rng.random() < 0.5 else
                           "The board considered the price above market and declined to approve the transaction.")
                items.append((lo, hi, f"{head} {verdict}", ("defect", idx, "related_party_unapproved", CODE,
                                                            evidence, facts)))
            else:
                b.add_defect(idx, "related_party_unapproved", CODE, evidence, facts=facts)
        else:
            # only directors vote: an interested director abstains, an interested officer leaves the room
            recusal = (f"{person} abstaining, the other directors present" if person in DIRECTORS else
                       f"{person}, who attends as an officer and has no vote, having left the meeting for this item, "
                       "the directors present")
            items.append((lo, hi, f"{head} After discussion, with {recusal} voted in favour and it was RESOLVED that "
                                  f"the transaction be approved.",
                          ("decoy", idx, "related_party_approved", None, ["master:related_parties"],
                           [name, cents / 100])))

    # contracts exist for every related vendor used: they support prices, they do not approve anything
    for vid, name, person, category, service in rp_vendors:
        if vid not in used_vendors:
            continue
        d = str(np.datetime64("2023-01-01") + int(rng.integers(0, 600)))
        b.add_document("contract", f"Master services agreement - {name}",
                       f"Agreement dated {d} between Northwind Components Inc. and {name} ({vid}) for "
                       f"{service}. Fees are invoiced as services are delivered, at the rates in Schedule A. "
                       f"Payment terms 30 days. Signed for Northwind Components Inc. by James Wright, CFO, and "
                       f"for {name} by its managing partner.", d)


def _payments_of(b, idx: int) -> list[int]:
    """The payment entries that settled invoice entry ``idx`` (the books' parent links)."""
    e = b.e
    vp = np.flatnonzero(e["doc_code"] == "VP")
    return vp[b.books.docs.parent[e["books_doc"][vp]] == e["books_doc"][idx]].tolist()


def _pairings(b, pair_labels: np.ndarray, pair_policy: int) -> None:
    """Non-standard combinations: customer invoices booked by manual journal, year-end top-sides re-targeted."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    d = b.books.docs
    # what the allowance holds and what repairs cost in the year (a release or a capitalisation never exceeds it)
    year_end = b.books.balances_at(md.YEAR_END)
    room = {"reserve_release": -int(year_end[chart.CODE["1190"]]), "capitalised_expense": int(year_end[chart.CODE["6600"]])}
    for is_defect in pair_labels:
        kind = str(rng.choice(list(PAIRS)))
        topside = (e["doc_code"] == "TS") & ~b.used
        if kind != "manual_revenue" and (not topside.any() or room[kind] < 2_000_00):
            kind = "manual_revenue"
        dr, cr, desc, reason = PAIRS[kind]
        if kind == "manual_revenue":
            idx = int(b.pick(1, (e["doc_code"] == "CI") & (e["credit_account"] == "4000"), what="customer invoices")[0])
            # a manual journal keyed from the shipment 1-3 business days after the invoice date, posted to that date
            prep = MANUAL_BILLERS[int(rng.integers(0, len(MANUAL_BILLERS)))]
            e["manual"][idx] = True
            e["doc_type"][idx] = "TS"
            e["entry_date"][idx] = cal.business_offset(e["post_date"][idx], int(rng.integers(1, 4)))
            e["time_s"][idx] = int(md.office_hours(rng, 1)[0])
            e["preparer"][idx] = prep
            e["approver"][idx] = _approver_for(b, int(e["debit_cents"][idx]), prep)
            bd = int(e["books_doc"][idx])
            parent = doc_number(str(TYPE_CODES[d.type[d.parent[bd]]]), int(d.parent[bd])) if d.parent[bd] >= 0 else ""
            customer = next(c["name"] for c in b.customers if c["customer_id"] == str(e["customer_id"][idx]))
            why = reason.format(doc_date=b.date_str(e["doc_date"][idx]), customer=customer, parent=parent)
        else:
            idx = int(b.pick(1, topside, what="year-end top-side entries")[0])
            # an estimate in whole hundreds, within what the allowance holds or repairs cost
            cents = min(int(room[kind] * rng.uniform(0.4, 0.8)), md.MAX_MANUAL_CENTS // 2) // 10_000 * 10_000
            room[kind] -= cents
            e["debit_account"][idx], e["credit_account"][idx] = dr, cr
            e["debit_cents"][idx] = e["credit_cents"][idx] = cents
            e["description"][idx] = desc
            e["approver"][idx] = _approver_for(b, cents, str(e["preparer"][idx]))
            why = reason
        cents = int(e["debit_cents"][idx])
        ref = str(e["reference"][idx])
        # the CFO approves on a business day from the document date to the day before the entry
        window = cal.business_days(e["doc_date"][idx], e["entry_date"][idx] - 1)
        head = (f"Journal entry {ref}: Debit {dr} {_account_name(dr)} / Credit {cr} {_account_name(cr)}, "
                f"USD {_money(cents)}.\nReason: {why}.")
        typ = f"unusual_pairing_{'un' if is_defect else ''}approved:{kind}"
        if is_defect:
            facts = [dr, cr, cents / 100]
            evidence = ["entry", pair_policy]
            if rng.random() < near * 0.5:
                if rng.random() < 0.5:
                    day = cal.business_offset(e["entry_date"][idx], int(rng.integers(1, 8)))
                    text = f"{head}\nApproved: {CFO[0]}, CFO, on {b.date_str(day)}."
                else:
                    day = window[int(rng.integers(0, len(window)))]
                    text = (f"{head}\nNot approved: the CFO asked for the supporting analysis before deciding; "
                            f"no approval given as of {b.date_str(day)}.")
                h = b.add_document("memo", MEMO_TITLE, text, b.date_str(day))
                b.add_defect(idx, typ, PAIR_CODE, [*evidence, h], facts=[*facts, f"{{D:{h}}}"])
            else:
                b.add_defect(idx, typ, PAIR_CODE, evidence, facts=facts)
        else:
            day = window[int(rng.integers(0, len(window)))]
            h = b.add_document("memo", MEMO_TITLE, f"{head}\nApproved: {CFO[0]}, CFO, on {b.date_str(day)}.",
                               b.date_str(day))
            b.add_decoy(idx, typ, [h, pair_policy], facts=[f"{{D:{h}}}", b.date_str(day), dr, cr, cents / 100])


def _minutes(b, items: list[tuple]) -> None:
    """Board meetings for the related-party items: each item's meeting is a business day after its
    invoice date and before its entry; a meeting is held at the latest day of the first open item and
    takes every item whose window contains it."""
    order = sorted(range(len(items)), key=lambda i: (items[i][1], i))
    meetings: list[tuple[np.datetime64, list[int]]] = []
    placed = set()
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
        body = [f"Minutes of the meeting of the board of directors of Northwind Components Inc. held on {day}.",
                f"Present: {', '.join(BOARD)}. In attendance: James Wright (CFO), Isabel Brown (Controller), "
                "the company secretary.",
                "Item 1. The minutes of the previous meeting were read and signed."]
        members = [members[int(j)] for j in rng.permutation(len(members))]
        for k, i in enumerate(members):
            body.append(f"Item {k + 2}. {items[i][2]}")
        body.append(f"Item {len(members) + 2}. Management presented the trading update; no further business.")
        h = b.add_document("board_minutes", f"Minutes of the board of directors meeting - {day}", "\n\n".join(body), day)
        for i in members:
            role, idx, kind, code, ev, facts = items[i][3]
            if role == "decoy":
                b.add_decoy(idx, kind, [h, *ev], facts=[f"{{D:{h}}}", day, *facts])
            else:
                # discussed but deferred or declined: these minutes are part of the proof that nothing approved it
                b.add_defect(idx, kind, code, [*ev, h], facts=[*facts, f"{{D:{h}}}"])
# ------------------------------------------------------------------ strategies
def parse_pairs(body: str) -> set[tuple[str, str]]:
    """(debit, credit) account pairs from the policy's 'Debit … / Credit …' lines."""
    out = set()
    for dr, cr in re.findall(r"Debit ([^()]+?) \([^)]*\) / Credit ([^()]+?) \(", body):
        for a in re.findall(r"\d{4}", dr):
            for c in re.findall(r"\d{4}", cr):
                out.add((a, c))
    return out


def _approvals(body: str) -> dict[str, bool]:
    """Reference -> approved? for each minutes item that names an entry reference."""
    out = {}
    for item in re.split(r"\n\s*\n", body):
        approved = bool(re.search(r"RESOLVED that the \w+ be approved", item))
        for ref in re.findall(r"\b[A-Z]{2,4}-\d{4,}\b", item):
            out[ref] = out.get(ref, False) or approved
    return out


def _survey(kit: Kit, read_policies: bool):
    """Shared first steps: register, vendor master, policies, ledger; returns the candidates."""
    register = yield from kit.master("related_parties")
    vendors = yield from kit.master("vendors")
    rel = {r["party"]: r["relationship"] for r in register}
    rp_ids = {v["vendor_id"]: v["name"] for v in vendors if v["name"] in rel}
    docs = yield from kit.documents()
    pol = {"rp": None, "pair": None}
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
        pairs = parse_pairs((yield from kit.open(pol["pair"])).get("body", ""))
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
            cands[eid] = ("rp", name, rel[name], ent)
        elif hit and ent.get("source") == "manual":
            cands[eid] = ("pair", f"Dr {hit[0][0]} / Cr {hit[0][1]}", "", ent)
    return cands, docs, pol


def naive(kit: Kit):
    """Flags every invoice of a related vendor and every manual entry with a listed pairing, without
    reading the board minutes, the approval memos or the policy's standard processes."""
    cands, _docs, pol = yield from _survey(kit, read_policies=False)
    # a payment settles an invoice: the transaction to approve is the invoice
    cands = {k: c for k, c in cands.items() if c[0] != "rp" or c[3].get("document_type") in ("VN", "VI")}
    for eid, (kind, what, _rel, ent) in sorted(cands.items()):
        if kit.calls_left <= 1:
            break
        ev = ["master:related_parties"] if kind == "rp" else ([pol["pair"]] if pol["pair"] else [])
        text = (f"Entry {eid} is a transaction with related party {what}." if kind == "rp" else
                f"Entry {eid} uses the non-standard pairing {what}.")
        yield from kit.flag(eid, CODE if kind == "rp" else PAIR_CODE, ev, text)
    yield from kit.submit(f"Flagged {len(cands)} related-party or non-standard entries.")


def _memo_approvals(body: str) -> dict[str, tuple[bool, str]]:
    """Reference -> (approved?, date) from a CFO approval memo."""
    m = re.search(r"Journal entry ([A-Z]{2,4}-\d{4,})", body)
    if not m:
        return {}
    ok = re.search(r"Approved: [^,]+, CFO, on (\d{4}-\d\d-\d\d)", body)
    return {m.group(1): (bool(ok), ok.group(1) if ok else "")}


def careful(kit: Kit):
    """Finds candidates (related-vendor invoices; manual non-standard pairings outside the allowance
    review), reads the board minutes and the CFO's approval memos, clears what was approved before
    the entry was recorded, flags the rest."""
    cands, docs, pol = yield from _survey(kit, read_policies=True)
    # the payments of an invoice are not transactions of their own; the allowance review is a standard process
    cands = {k: c for k, c in cands.items()
             if (c[0] == "rp" and c[3].get("document_type") in ("VN", "VI"))
             or (c[0] == "pair" and c[3].get("document_type") != "AL")}
    approvals: dict[str, tuple[str, bool, str]] = {}
    readable = sorted((d for d in docs if d["doc_type"] == "board_minutes" or d["title"] == MEMO_TITLE),
                      key=lambda d: d["doc_id"])
    for d in readable:
        if kit.calls_left <= len(cands) + 2:  # keep at least one call per candidate
            break
        body = (yield from kit.open(d["doc_id"])).get("body", "")
        if d["doc_type"] == "board_minutes":
            m = re.search(r"held on (\d{4}-\d\d-\d\d)", body)
            day = m.group(1) if m else d.get("date", "")
            found = {ref: (ok, day) for ref, ok in _approvals(body).items()}
        else:
            found = _memo_approvals(body)
        for ref, (ok, day) in found.items():
            if ok or ref not in approvals:
                approvals[ref] = (d["doc_id"], ok, day)
    flags, clears = [], []
    for eid, (kind, what, rel, ent) in sorted(cands.items()):
        doc, ok, day = approvals.get(ent.get("reference", ""), (None, False, ""))
        recorded = str(ent.get("entry_timestamp", ""))[:10]
        prior = ok and day < recorded
        (clears if prior else flags).append((eid, kind, what, rel, ent, doc, day, ok, recorded))
    for eid, kind, what, rel, ent, doc, day, ok, recorded in flags:
        if kit.calls_left <= 2:
            break
        entry = yield from kit.call("get_entry", entry_id=eid)
        ref = entry.get("reference", ent.get("reference"))
        amt = entry.get("total_debit", ent.get("total_debit", 0.0))
        if doc and ok:
            seen = f" {doc} approves {ref} only on {day}, after it was recorded on {recorded}."
        elif doc:
            seen = f" {doc} discusses {ref} but records no approval."
        else:
            seen = " No board minutes or approval memo approve it."
        if kind == "rp":
            ev = [eid, "master:related_parties"] + ([pol["rp"]] if pol["rp"] else [])
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) is an invoice from {what}, on the related-party register "
                    f"({rel}); policy {pol['rp']} requires prior board approval.{seen}")
        else:
            ev = [eid] + ([pol["pair"]] if pol["pair"] else [])
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) is a manual entry posting {what}, a non-standard combination "
                    f"under policy {pol['pair']} that needs the CFO's prior written approval.{seen}")
        if doc:
            ev.append(doc)
        yield from kit.flag(eid, CODE if kind == "rp" else PAIR_CODE, ev, text)
    for eid, kind, what, rel, ent, doc, day, _ok, recorded in clears:
        if kit.calls_left <= 1:
            break
        ref, amt = ent.get("reference"), ent.get("total_debit", 0.0)
        if kind == "rp":
            ev = [doc, "master:related_parties"]
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) with related party {what} was approved by the board before "
                    f"it was recorded: minutes {doc} of the meeting on {day} resolve to approve {ref} for USD {amt:,.2f}.")
        else:
            ev = [doc] + ([pol["pair"]] if pol["pair"] else [])
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) posting {what} was approved in writing by the CFO on {day}, "
                    f"before it was recorded on {recorded}: memo {doc} names {ref}, the accounts and USD {amt:,.2f}.")
        yield from kit.clear(eid, ev, text)
    yield from kit.submit(f"{len(cands)} related-party or non-standard entries examined: {len(flags)} without prior "
                          f"approval flagged, {len(clears)} approved beforehand cleared.")
