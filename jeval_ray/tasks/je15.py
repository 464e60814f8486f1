"""JE-15 (L4): shell-vendor scheme.

Planted on the simulated year's purchasing: one AP clerk (the *scheme user*) gets a vendor into
the master during the year (two once the scheme has four invoices or more) whose bank account is
the clerk's own account in the user master. Either the clerk creates the vendor directly with that
account, or the vendor-master team (FNGUYEN, who keys no invoices and, in this world, set up every
vendor) creates it and the clerk later changes its bank account; the vendor change log
(``master:vendor_changes``) records who did what, and the set-up form shows no TIN match and bank
details sent by e-mail. The shell's invoices are the books' own vendor invoices without goods
receipt (office, travel, maintenance, marketing or freight bills under the approver's 25,000
limit, spread over the rest of the year) re-pointed to the shell and keyed by the clerk, all
approved by one approver; the payment run that paid each invoice is re-pointed with it, so every
invoice is paid in the ledger (the vendor payment, Dr 2000 / Cr 1000) and the monthly statement of
the company's one operating account (the books' own statements, every cash posting of the year)
shows the transfer going to the employee's account. Amounts and dates stay the books', so cash,
payables and the bank still tie. Every invoice of the scheme is a defect (criteria
``SHELL_VENDOR``, misstatement = the invoice amount). Required evidence: the entry
(``get_entry``), ``master:vendors``, ``master:vendor_changes``, ``master:users`` and the bank
statement showing the payment. Decisive facts: the vendor's bank account, the employee it belongs
to (user id), the vendor id, the invoice amount and the statement.

Decoys: the invoices of the other vendors set up during the year, as many vendors as give each
about the scheme vendors' number of invoices (so "the new vendor with the most invoices" tells
nothing). They are drawn exactly as the shell's: set-up date and order of vendor ids, category
(and so account), name (each new vendor its own prefix and a stem of its category at random, named
and given its invoices in set-up order, not shells first), one AP clerk keying every invoice of the
vendor, one approver, the same spread over the year, a payment in the ledger and on the statement.
A legitimate vendor's bank account may also be changed after set-up (with probability 0.6 x
``near_miss``) by the vendor-master team on a new bank letter verified by call-back. Clearing
evidence: the vendor's set-up form (W-9 matched, Treasury call-back), ``master:vendors`` and
``master:users`` (no employee has that account). Decisive facts: the vendor's bank account, the
vendor id, the set-up form and its call-back.

Red-flag rule (naive): invoices of vendors created during FY2025. Every base vendor was created
before FY2025, so the rule catches no unplanted entry (0 % over seeds 0-49). The broader screen
"vendors created or given new bank details in FY2025" (the change log) also catches the invoices
of the base vendors whose bank account the vendor-master team changed in the year (routine
maintenance of two to four vendors of the new vendors' categories, half of them bank changes,
each with its change form and Treasury's call-back: honest look-alikes): over seeds 0-49 at
default knobs, 47 % of that screen's hits are such unplanted invoices (both measured by
``tests/test_key_audit_je15.py::test_key_audit_lookalike_rate``). Decisive test (careful): the
vendor's bank account is an employee's, who put it there, and the statement showing the money
going there. The brief's criteria text names the scheme, not the test.

Dates: every date the task writes falls on a business day of the company (Monday to Friday, not a
holiday of ``master:calendar``): vendor set-ups, bank-account changes, the set-up and change forms
(request, TIN match, letter received, call-back) for shells and legitimate vendors alike, and the
value date of every statement line. The books value some cheque payments and customer receipts on
a weekend or a holiday (no bank does); the statements show the next business day instead, or the
previous one when the next is in another month, so every line stays on its month's statement and
the balances tie.

Default slice: a year of 800 entries (the L4 default of 600 has too few paid bills of these
categories for 8 + 8 planted invoices on some seeds). The new vendors take their invoices in set-up
order, each of its drawn category or, when that has too few left after its set-up, of the category
with the most; when even that is too few for a vendor set up late (seed 40378: four vendors of four
invoices, the last set up in late April), the vendors set up latest take theirs first. Only a year
where that fails too raises a ``ConfigError``.

Scoring hook: ``outcome_adjust`` rewards naming the scheme user (id or full name) in the rationales
of at least half of the correct flags (at least one correct flag of a scheme invoice, then):
outcome = 0.85 * outcome + 0.15 * named. A rationale naming more than three staff members does not
count (no shotgun naming), and the submit summary earns nothing: the user is readable from the
listing (the preparer of the flagged invoices), so only a right flag that names the user shows the
finding (issue 30, point 4).
"""


from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.books import calendar as cal, chart, master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import Knobs, key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, INT, LINE, MONEY, NAME, TOKEN, WORD, Disposition, Form, Many, SurfaceRule,
                                     Task, clear, dispose, fixed, flag, mentions, read_while, review, surface_naive)

SPEC = spec(
    "JE-15",
    "L4",
    'Shell-vendor scheme',
    step_budget=120,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find a shell-vendor scheme spread over the year and name the user behind it; flag every entry of the scheme.',
    defect='shell-vendor scheme: invoices of a vendor paid to an employee, keyed by that employee',
    decoys='new legitimate vendors',
    required_evidence='vendor change log, employee master, bank statements, approvals',
    sources=('general_ledger', 'vendor_master', 'vendor_change_log', 'employee_master', 'bank_statements', 'approvals'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('SHELL_VENDOR', "invoices of a vendor set up or used to divert the company's payments (a shell vendor)",
         "the invoice's amount"),
    ),
    withheld_variant=('search_documents',),
    # a year of the L4 default (600) has too few paid bills in these categories for 16 planted invoices
    default_knobs=Knobs(n_entries=800),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "shell_vendor_invoice",
        evidence="master:vendors and master:users (the vendor's bank account is an employee's), master:vendor_changes "
                 "(who created the vendor or put the account on it), the bank statement of the payment",
        facts="the vendor's bank account; the employee (user id) who holds it and keyed the invoice; the vendor id; "
              "the invoice amount; the statement line paying that amount to that account",
        conclusion="Invoices of a vendor whose payments go to the personal account of the AP clerk who set the "
                   "account up and keyed the invoices: a fictitious vendor used to misappropriate cash; the "
                   "payments are a loss, to be reported to the audit committee.",
        standard="AS 2401.07 (misappropriation: causing the entity to pay for goods or services not received); "
                 "ISA 240 A5"),
    key("decoy", "legitimate_new_vendor",
        evidence="the vendor's set-up form; master:vendors and master:users",
        facts="the vendor id and bank account; no employee holds the account; the form's W-9 TIN match and the "
              "Treasury call-back to an independently sourced number",
        conclusion="A vendor set up in the year under the vendor-master policy (TIN matched, bank account verified by "
                   "call-back, paid to its own account): no exception.",
        standard="AS 2401.07"),
)

POLICY_TITLE = "Vendor master data policy (PROC-007)"
#: AP clerks who key vendor invoices: the scheme runs through one of them, every new vendor's invoices are keyed by one
CLERKS = ("AKIM", "BOKAFOR")
#: who maintains the vendor master: a senior accountant who keys no vendor invoice (policy section 5)
VENDOR_ADMIN = "FNGUYEN"
#: the approval tier of invoices under 25,000: the lowest approver, sometimes one tier up (as the books route them)
APPROVERS = ("FNGUYEN", "GSILVA")
APPROVER_LIMIT_CENTS = 25_000_00
#: categories billed by invoice without a goods receipt and without monthly accruals: a new vendor's invoices are
#: the books' own invoices of such a category, so its account is one the category allows
CATEGORIES = ("office", "travel", "maintenance", "marketing", "freight")
NEW_PREFIXES = ("Ashford", "Bayview", "Brightpath", "Copperfield", "Crestline", "Highland", "Lakeshore", "Northgate",
                "Oakmont", "Riverside", "Silverline", "Stonebridge")
REQUESTERS = (("HJOHANSSON", "Finance"), ("IBROWN", "Finance"), ("NPARK", "Purchasing"), ("FNGUYEN", "General Ledger"))


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Policy:
    """The vendor master data policy PROC-007 (fixed text)."""


@dataclass(frozen=True)
class Titled:
    """A vendor form's title: the vendor's name."""
    name: str


@dataclass(frozen=True)
class BankChange:
    """A base vendor's bank details change: the letter, Treasury's call-back (+1 (614) exchange-line), the ERP change."""
    name: str
    vendor_id: str
    new: str
    old: str
    received: str
    exchange: int
    line: int
    when: str
    who: str


@dataclass(frozen=True)
class SetupForm:
    """A new vendor's set-up form: the request, the goods, the W-9 and the bank letter's account."""
    name: str
    vendor_id: str
    requester: str
    department: str
    requested: str
    what: str
    category: str
    account: str
    account_name: str
    tin: str
    form_bank: str
    created_by: str
    created: str


@dataclass(frozen=True)
class Pending(SetupForm):
    """Set up without verification: TIN matching pending, bank details from the requester by e-mail."""


@dataclass(frozen=True)
class Verified(SetupForm):
    """Set up under the policy: TIN matched, the account confirmed by Treasury's call-back."""
    matched: str
    exchange: int
    line: int


@dataclass(frozen=True)
class VerifiedChange(Verified):
    """A verified set-up whose bank account was changed later, on a new letter confirmed by call-back."""
    changed: str
    bank_account: str


@dataclass(frozen=True)
class ColumnHeads:
    """A bank statement's column heads (fixed text)."""


@dataclass(frozen=True)
class StatementLine:
    """A line of a bank statement (``amount`` in cents, negative for a payment)."""
    value_date: str
    reference: str
    details: str
    counterparty: str
    amount: int


@dataclass(frozen=True)
class Statement:
    """A monthly statement of the operating account."""
    bank: str
    holder: str
    account: str
    start: str
    end: str
    opening: int
    credits: int
    debits: int
    closing: int
    lines: tuple[Any, ...]


@dataclass(frozen=True)
class StatementTitle:
    """A statement's title: its month and year."""
    month: str
    year: int


@dataclass(frozen=True)
class PaymentText:
    """How the books word a vendor payment (an entry's description and its statement line's details)."""
    vendor: str
    invoice: str


POLICY = Form(Policy, (
    "1. Scope. This policy governs the creation and maintenance of vendor master data in the ERP of Northwind "
    "Components Inc.\n"
    "2. New vendors are set up by the vendor master team on a signed set-up form from the requesting "
    "department, with a completed Form W-9 (TIN matched with the IRS) and a bank confirmation letter on the "
    "vendor's letterhead.\n"
    "3. Bank details. Treasury verifies every new bank account, and every change of bank account, by a "
    "call-back to a telephone number sourced independently of the request (never one given in the request "
    "itself). No payment is released to an unverified account.\n"
    "4. Employees. Employees may not be set up as vendors and no vendor payment may be made to an employee's "
    "bank account; employee reimbursements go through payroll only.\n"
    "5. Segregation of duties. Users who key vendor invoices should not create vendors or change vendor bank "
    "details; the ERP logs every vendor creation and change (vendor change log) and the Controller reviews "
    "the log quarterly.\n"
    "6. Invoices are approved in the ERP workflow by a user whose approval limit covers the amount."))
SETUP_TITLE = Form(Titled, "New vendor set-up form - {name}", name=NAME)
CHANGE_TITLE = Form(Titled, "Vendor bank details change - {name}", name=NAME)
BANK_CHANGE = Form(BankChange, (
    "Vendor: {name} ({vendor_id})\nRequest: new bank account {new} replacing {old}, on the vendor's letterhead, "
    "received {received}.\nTreasury (KLEE) call-back to +1 (614) {exchange}-{line}, the number in the vendor master "
    "since set-up, confirmed the change on {when}.\nChanged in the ERP by {who} (vendor master) on {when}."),
    name=NAME, vendor_id=TOKEN, new=TOKEN, old=TOKEN, received=DATE, when=DATE, who=TOKEN)
_SETUP = ("Vendor: {name}\nVendor id assigned: {vendor_id}\nRequested by: {requester} ({department}) on {requested}\n"
          "Goods / services: {what}; category {category}; default account {account} {account_name}\n"
          "Form W-9 received; TIN {tin}.\nBank account on the bank letter: {form_bank}\n")
_SETUP_KINDS: dict[str, Any] = dict(name=NAME, vendor_id=TOKEN, requester=TOKEN, department=NAME, requested=DATE,
                                    what=LINE, category=WORD, account=TOKEN, account_name=LINE, tin=TOKEN,
                                    form_bank=TOKEN, created_by=TOKEN, created=DATE)
_VERIFIED = (_SETUP + "TIN matched with the IRS TIN matching service on {matched}.\nBank confirmation letter on vendor "
             "letterhead received. Treasury (KLEE) call-back to +1 (614) {exchange}-{line}, the number on the vendor's "
             "public website, confirmed the account on {created}.\nApproved: {created_by} (vendor master) and "
             "HJOHANSSON (Accounting Manager) on {created}.")
PENDING = Form(Pending, _SETUP + "TIN matching: pending.\nBank details provided by the requester by e-mail.\nSet up by "
               "{created_by} on {created}.", **_SETUP_KINDS)
VERIFIED = Form(Verified, _VERIFIED, matched=DATE, **_SETUP_KINDS)
VERIFIED_CHANGE = Form(VerifiedChange, _VERIFIED + "\nUpdate {changed}: new bank letter received, account "
                       "{bank_account}; Treasury call-back to +1 (614) {exchange}-{line} confirmed the change.",
                       matched=DATE, changed=DATE, bank_account=TOKEN, **_SETUP_KINDS)
STATEMENT_LINE = Form(StatementLine, "{value_date} | {reference} | {details} | {counterparty} | {amount}",
                      value_date=DATE, reference=TOKEN, details=LINE, counterparty=TOKEN, amount=fixed(2))
STATEMENT = Form(Statement, (
    "{bank} - statement of account\nAccount holder: {holder}; account {account}\nStatement period: {start} to {end}\n"
    "Opening balance USD {opening}; credits USD {credits}; debits USD {debits}; closing balance USD {closing}\n"
    "{lines}"),
    bank=LINE, holder=LINE, account=LINE, start=DATE, end=DATE, opening=MONEY, credits=MONEY, debits=MONEY,
    closing=MONEY,
    lines=Many((Form(ColumnHeads, "Value date | Reference | Details | Counterparty account | Amount USD"),
                STATEMENT_LINE)))
STATEMENT_TITLE = Form(StatementTitle, "Bank statement - operating account - {month} {year}", month=NAME)
#: the books' wording of a vendor payment (jeval_ray.books.tables), kept when the vendor is renamed
PAYMENT_TEXT = Form(PaymentText, "Payment run {vendor} invoice {invoice}", vendor=LINE, invoice=TOKEN)


# ---------------------------------------------------------------------------- planting
def plant(b: WorldBuilder) -> None:
    """Plant the shell vendor on the books' invoices and payments; legitimate new vendors alike."""
    rng = b.rng
    users = {u["user_id"]: u for u in b.users}
    staff_banks = {u["bank_account"] for u in b.users if u["bank_account"]}
    # the base must not pay an employee: re-draw any (astronomically unlikely) collision
    for v in b.vendors:
        while v["bank_account"] in staff_banks:
            v["bank_account"] = b.bank_account()
        v["created_by"] = VENDOR_ADMIN
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-10-15")
    b.claim("JE-15", rows=[("vendors", v["vendor_id"]) for v in b.vendors], documents=[policy])
    changes = _routine_changes(b)
    pay = _payments(b)
    scheme_user = str(rng.choice(CLERKS))
    new, prefixes = _draw_vendors(b, scheme_user, users[scheme_user]["bank_account"])
    paid = _invoices(b, new, pay, prefixes)
    _master_rows(b, new, changes)
    forms = {v["vendor_id"]: _setup_form(b, v, verified=not v["shell"], requester=scheme_user if v["shell"] else None)
             for v in new}
    pay_ref = {idx: str(b.cols.reference[pay["of"](idx)[0]]) for idx, _v in paid}
    statement_of = _bank_statements(b, pay, changes, sorted(pay_ref.values()))
    for idx, v in paid:
        cents = int(b.cols.debit_cents[idx])
        stmt = statement_of[pay_ref[idx]]
        if v["shell"]:
            # decisive: the vendor pays the scheme user's own account (users master), the change log shows
            # who put it there, the statement shows the payment to it
            b.add_defect(idx, "shell_vendor_invoice", "SHELL_VENDOR",
                         ["entry", "master:vendors", "master:vendor_changes", "master:users", stmt],
                         facts=[v["bank_account"], scheme_user, v["vendor_id"], cents / 100, f"{{D:{stmt}}}"])
        else:
            form = forms[v["vendor_id"]]
            b.add_decoy(idx, "legitimate_new_vendor", [form, "master:vendors", "master:users"],
                        facts=[v["bank_account"], v["vendor_id"], f"{{D:{form}}}", "call-back"])
    b.vendor_changes.extend(sorted(changes, key=lambda r: (r["changed_on"], r["vendor_id"], r["field"] != "vendor_created")))
    b.facts["brief_notes"] = {"vendor master": "vendor set-up and bank changes are logged in master data vendor_changes"}


def _draw_vendors(b: WorldBuilder, scheme_user: str, scheme_bank: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The vendors set up during the year (the shells first), each drawn from one distribution:
    set-up date, category, one clerk keying its invoices, one approver, a bank-account change after
    set-up or none; their ids (rising with the set-up date), invoice counts and time bins; and the
    order of the name prefixes. Only the master data, the change log, the set-up form and the bank
    statements tell the shell from the others."""
    rng = b.rng
    near = b.knobs.near_miss
    # as many legitimate vendors as make their invoice counts about the scheme's
    n_shell = 1 + int(b.n_defects >= 4)
    per_shell = max(1, b.n_defects / n_shell)
    k_legit = 1 if b.n_decoys == 0 else max(1, min(b.n_decoys, round(b.n_decoys / per_shell)))
    prefixes = [p for p in rng.permutation(NEW_PREFIXES).tolist()]
    new: list[dict[str, Any]] = []
    for k in range(n_shell + k_legit):
        shell_k = k < n_shell
        created = _business_day(np.datetime64("2025-01-06") + int(rng.integers(0, 90)))
        v: dict[str, Any] = {"created_on": created, "created_by": VENDOR_ADMIN, "changes": [], "shell": shell_k,
                             "form_bank": b.bank_account(), "start": created, "category": str(rng.choice(CATEGORIES)),
                             "clerk": scheme_user if shell_k else str(rng.choice(CLERKS)),
                             "approver": APPROVERS[int(rng.random() < 0.15)]}
        if shell_k and k > 0:
            v["approver"] = new[0]["approver"]  # the scheme's invoices all go to one approver
        change = rng.random() < (0.5 if shell_k else 0.6 * near)
        if shell_k and not change:
            # the scheme user sets the vendor up with his or her own account
            v["created_by"] = scheme_user
            v["form_bank"] = scheme_bank
        v["bank_account"] = v["form_bank"]
        if change:
            when = _business_day(created + int(rng.integers(6, 30)))
            v["bank_account"] = scheme_bank if shell_k else b.bank_account()
            who = scheme_user if shell_k else VENDOR_ADMIN
            v["changes"].append(("bank_account", v["form_bank"], v["bank_account"], when, who))
            v["start"] = when
            if not shell_k:
                v["change_verified"] = when
        new.append(v)
    # vendor ids rise with the creation date, as in an ERP
    base_n = len(b.vendors)
    for i, v in enumerate(sorted(new, key=lambda v: (v["created_on"], v["start"]))):
        v["vendor_id"] = b.books.master.vendor_id(base_n + i)

    # the invoices: each vendor's spread over the rest of the year, one per time bin
    def shares(n: int, k: int) -> list[int]:
        return [n // k + (1 if j < n % k else 0) for j in range(k)]

    groups = [(j, n_shell) for j in range(n_shell)] + [(j, k_legit) for j in range(k_legit)]
    for v, n, (phase, of) in zip(new, [*shares(b.n_defects, n_shell), *shares(b.n_decoys, k_legit)], groups):
        v["n"], v["phase"], v["of"] = n, phase, of
    return new, prefixes


def _invoices(b: WorldBuilder, new: list[dict[str, Any]], pay: dict[str, Any],
              prefixes: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """Name the new vendors and re-point to each its invoices (the books' paid bills of its category,
    spread over the year) with their payments, keyed by its clerk and approved by its approver;
    (invoice entry, vendor) pairs."""
    c = b.cols
    # each entry's vendor category (-1 without a vendor), from the books' partner of the document
    m = b.books.master
    vcat_idx = np.where(c.vendor_id != "", m.vendor_category[b.books.docs.partner[c.books_doc]], -1)
    vcat = np.array(list(md.CATEGORY) + [""])[np.where(vcat_idx >= 0, vcat_idx, len(md.CATEGORY))]
    pool = (c.doc_code == "VN") & pay["paid"] & (c.debit_cents < APPROVER_LIMIT_CENTS)
    names = {v["vendor_id"]: v["name"] for v in b.vendors}
    by_id = sorted(new, key=lambda v: v["vendor_id"])
    # the invoices are drawn vendor by vendor in set-up order; when a vendor set up late finds too few
    # invoices of any category left after its set-up, the vendors set up latest draw first instead
    plan = _plan_invoices(b, by_id, prefixes, pool, vcat, by_id)
    if plan is None:
        latest_first = sorted(by_id, key=lambda v: (-int(v["start"].astype(int)), v["vendor_id"]))
        plan = _plan_invoices(b, by_id, prefixes, pool, vcat, latest_first)
    if plan is None:
        raise ConfigError(
            f"impossible knobs for JE-15: the shell vendors share n_defects invoices and the other new vendors "
            f"n_decoys (up to {max(v['n'] for v in new)} a vendor), each vendor's the books' paid invoices of one "
            f"category under the approver's limit dated after its set-up, and the year of {b.n} entries holds too "
            "few of them; raise n_entries or lower n_defects/n_decoys")
    paid: list[tuple[int, dict[str, Any]]] = []
    for v in by_id:
        for idx in plan[v["vendor_id"]]:
            b.used[idx] = True
            old = names[str(c.vendor_id[idx])]
            moved = [idx, *pay["of"](idx)]
            b.claim("JE-15", entries=moved)
            for j in moved:
                c.vendor_id[j] = v["vendor_id"]
                c.description[j] = str(c.description[j]).replace(old, v["name"])
                if j != idx:  # the statement words the payment as the ledger does
                    pay["text"][str(c.reference[j])] = str(c.description[j])
            c.preparer[idx] = v["clerk"]
            c.approver[idx] = v["approver"]
            paid.append((idx, v))
    return paid


def _plan_invoices(b: WorldBuilder, by_id: list[dict[str, Any]], prefixes: list[str], pool: np.ndarray,
                   vcat: np.ndarray, order: list[dict[str, Any]]) -> dict[str, list[int]] | None:
    """Each new vendor's category, name and invoices, drawn vendor by vendor in ``order`` (changing
    nothing of the world but the vendors' category and name): {vendor id: invoice entries}, or None when
    a vendor finds too few invoices of any category after its set-up. Names are given in set-up order
    (the ``i``-th vendor the ``i``-th prefix), not shells first, so neither the name (each its own prefix, a
    stem of its category at random) nor first pick of the invoices tells the shell from the others."""
    rng, c = b.rng, b.cols
    taken = {v["name"] for v in b.vendors}
    used = b.used.copy()
    plan: dict[str, list[int]] = {}
    for v in order:
        n, first = v["n"], v["start"] + 1
        avail = {k: int((pool & ~used & (vcat == k) & (c.doc_date >= first)).sum()) for k in CATEGORIES}
        if avail[v["category"]] < n:
            v["category"] = max(CATEGORIES, key=lambda k: (avail[k], k))
            if avail[v["category"]] < n:
                return None
        v["name"] = _new_name(rng, md.CATEGORIES[md.CATEGORY[v["category"]]].stems, prefixes,
                              by_id.index(v), taken)
        taken.add(v["name"])
        plan[v["vendor_id"]] = _spread(b, used, n, first, pool & (vcat == v["category"]), v["phase"], v["of"])
    return plan


def _master_rows(b: WorldBuilder, new: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
    """The new vendors' rows of the vendor master and of the change log (set-up, bank account, changes)."""
    for v in sorted(new, key=lambda v: v["vendor_id"]):
        b.vendors.append({"vendor_id": v["vendor_id"], "name": v["name"], "category": v["category"],
                          "bank_account": v["bank_account"], "payment_terms_days": 30,
                          "created_on": str(v["created_on"]), "created_by": v["created_by"], "status": "active"})
        b.claim("JE-15", rows=[("vendors", v["vendor_id"])])
        changes.append({"vendor_id": v["vendor_id"], "field": "vendor_created", "old_value": "", "new_value": v["name"],
                        "changed_on": str(v["created_on"]), "changed_by": v["created_by"]})
        changes.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": "", "new_value": v["form_bank"],
                        "changed_on": str(v["created_on"]), "changed_by": v["created_by"]})
        for field, old, newv, when, who in v["changes"]:
            changes.append({"vendor_id": v["vendor_id"], "field": field, "old_value": old, "new_value": newv,
                            "changed_on": str(when), "changed_by": who})


def _payments(b: WorldBuilder) -> dict[str, Any]:
    """The payment entries of the year's vendor invoices (vectorised: a year may hold millions of entries).

    ``of(idx)``: invoice entry -> its payment entries; ``paid``: per entry, the invoice is paid in one
    payment of its whole amount that is on a statement of the year; ``lines``: the books' statement lines."""
    c = b.cols
    lines = b.books.bank_tables()["bank_statement_lines"]
    bd = c.books_doc
    order = np.argsort(bd, kind="stable")
    vp = np.flatnonzero(c.doc_code == "VP")
    parent = b.books.docs.parent[bd[vp]]
    pos = np.searchsorted(bd, parent, sorter=order).clip(0, b.n - 1)
    found = bd[order[pos]] == parent
    inv, vp = order[pos[found]], vp[found]
    on_stmt = pc.is_in(c.reference.to_arrow().take(pa.array(vp)), value_set=lines.column("reference"))
    on_stmt = on_stmt.to_numpy(zero_copy_only=False)
    # one payment per invoice, of its whole amount (none left for next year), so the statement line shows it
    paid = np.zeros(b.n, dtype=bool)
    whole = on_stmt & (c.debit_cents[vp] == c.credit_cents[inv])
    paid[inv[whole]] = True
    paid &= np.bincount(inv, minlength=b.n) == 1
    return {"of": lambda idx: vp[inv == idx].tolist(), "paid": paid, "lines": lines, "text": {}}


def _new_name(rng: np.random.Generator, stems: tuple[str, ...], prefixes: list[str], i: int, taken: set[str]) -> str:
    """A new vendor's name: the ``i``-th prefix (the next one whose names are not all taken) and a stem
    of its category drawn at random."""
    for p in prefixes[i % len(prefixes):] + prefixes[:i % len(prefixes)]:
        free = [f"{p} {s}" for s in stems if f"{p} {s}" not in taken]
        if free:
            return free[int(rng.integers(len(free)))]
    raise ConfigError(f"impossible knobs for JE-15: more new vendors than names ({len(prefixes) * len(stems)} per "
                      "category); lower n_decoys or raise n_defects")


def _spread(b: WorldBuilder, used: np.ndarray, n: int, first: np.datetime64, pool: np.ndarray, phase: int = 0,
            of: int = 1) -> list[int]:
    """``n`` unused invoices of ``pool`` dated from ``first``, posted up to mid-December, one per time
    bin: the period is cut into ``n * of`` equal bins and this vendor takes bins ``phase``,
    ``phase + of`` … (the vendors of one group interleave, so together they cover the year). ``used``
    (the caller's copy of the planted entries) marks those taken; the caller has checked that ``n``
    unused invoices of ``pool`` are dated from ``first``."""
    if n <= 0:
        return []
    post, doc = b.cols.post_date, b.cols.doc_date
    last = max(np.datetime64("2025-12-15"), first + 1)
    edges = np.linspace(0, 1, n * of + 1)
    span = max(1, int((last - first).astype(int)))
    out: list[int] = []
    # the candidates (invoices of the pool dated from ``first``), in entry order: every test below is on them
    cand = np.flatnonzero(pool & (doc >= first))
    post_c = post[cand]
    month_c = post_c.astype("datetime64[M]")
    for k in range(phase, n * of, of):
        lo, hi = first + int(edges[k] * span), first + int(edges[k + 1] * span)
        fresh = ~np.isin(month_c, post[out].astype("datetime64[M]")) if out else np.ones(len(cand), dtype=bool)
        # the bin, else a month the vendor has no invoice in yet, else any invoice after the set-up
        for where in ((post_c >= lo) & (post_c <= hi) & fresh, fresh, np.ones(len(cand), dtype=bool)):
            if (where & ~used[cand]).any():
                break
        among = cand[where]
        out.append(int(b.rng.choice(among[~used[among]], size=1, replace=False)[0]))
        used[out[-1]] = True
    return out


def _routine_changes(b: WorldBuilder) -> list[dict[str, Any]]:
    """Ordinary vendor-master maintenance on base vendors (address and bank updates by the team); a
    bank change comes with its change form: the vendor's letter and Treasury's call-back (policy 3)."""
    rng = b.rng
    out = []
    streets = md.VENDOR_ADDRESSES
    # vendors of the categories new vendors come from: their bills look like the new vendors' in the listing
    same = [i for i, v in enumerate(b.vendors) if v["category"] in CATEGORIES]
    for i in sorted(rng.choice(same, size=min(len(same), int(rng.integers(2, 5))), replace=False)):
        v = b.vendors[int(i)]
        when = str(_business_day(np.datetime64("2025-01-10") + int(rng.integers(0, 320))))
        who = VENDOR_ADMIN
        if rng.random() < 0.5:
            new = b.bank_account()
            out.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": v["bank_account"],
                        "new_value": new, "changed_on": when, "changed_by": who})
            exchange, line = int(rng.integers(200, 999)), int(rng.integers(1000, 9999))
            body = BANK_CHANGE.render(BankChange(v["name"], v["vendor_id"], new, v["bank_account"],
                                                 str(cal.business_offset(np.datetime64(when), -3)), exchange, line, when, who))
            b.claim("JE-15", documents=[b.add_document("vendor_form", CHANGE_TITLE.render(Titled(v["name"])), body,
                                                       when)])
            v["bank_account"] = new
        else:
            out.append({"vendor_id": v["vendor_id"], "field": "remit_address", "old_value": str(rng.choice(streets)),
                        "new_value": str(rng.choice(streets)), "changed_on": when, "changed_by": who})
    return out


def _setup_form(b: WorldBuilder, v: dict[str, Any], *, verified: bool, requester: str | None = None) -> int:
    """The vendor set-up form; a verified one documents the W-9 TIN match and the Treasury call-back."""
    rng = b.rng
    created = v["created_on"]
    cat = md.CATEGORIES[md.CATEGORY[v["category"]]]
    account = next(a for a in b.accounts if a["account"] == _cost_account(v["category"]))
    req, dept = REQUESTERS[int(rng.integers(0, len(REQUESTERS)))] if requester is None else (requester, "Accounts Payable")
    tin = f"{int(rng.integers(10, 99))}-{int(rng.integers(1_000_000, 9_999_999))}"
    head: dict[str, Any] = dict(
        name=v["name"], vendor_id=v["vendor_id"], requester=req, department=dept,
        requested=str(cal.business_offset(created, -int(rng.integers(2, 7)))), what=cat.what, category=v["category"],
        account=account["account"], account_name=account["name"], tin=tin, form_bank=v["form_bank"],
        created_by=v["created_by"], created=str(created))
    if not verified:
        body = PENDING.render(Pending(**head))
    else:
        exchange, line = int(rng.integers(200, 999)), int(rng.integers(1000, 9999))
        head.update(matched=str(cal.business_offset(created, -1)), exchange=exchange, line=line)
        body = (VERIFIED.render(Verified(**head)) if v.get("change_verified") is None else VERIFIED_CHANGE.render(
            VerifiedChange(**head, changed=str(v["change_verified"]), bank_account=v["bank_account"])))
    h = b.add_document("vendor_form", SETUP_TITLE.render(Titled(v["name"])), body, str(created))
    b.claim("JE-15", documents=[h])
    return h


def _cost_account(category: str) -> str:
    return chart.ACCOUNTS[chart.idx(md.CATEGORIES[md.CATEGORY[category]].account)].code


def _bank_statements(b: WorldBuilder, pay: dict[str, Any], changes: list[dict[str, Any]],
                     refs: list[str]) -> dict[str, int]:
    """The books' monthly statements of the operating account as support-pack documents: every line of
    the year (receipts, payment runs, payroll, tax, charges), a vendor payment with the beneficiary's
    account on its value date. Returns the statement handle of each of ``refs`` (payment references).
    Vectorised with Arrow: a year may hold hundreds of thousands of statement lines."""
    c = b.cols
    lines = pay["lines"]
    ref_col = lines.column("reference")
    # each vendor payment's vendor (after planting) and the account the vendor had on the value date
    vp = np.flatnonzero(c.doc_code == "VP")
    at = pc.fill_null(pc.index_in(ref_col, value_set=c.reference.to_arrow().take(pa.array(vp))), -1)
    at = at.to_numpy(zero_copy_only=False)
    is_vp = at >= 0
    vid = np.where(is_vp, c.vendor_id[vp][np.maximum(at, 0)], "")
    accounts = {v["vendor_id"]: v["bank_account"] for v in b.vendors}
    ids = np.array(sorted(accounts))
    k = np.searchsorted(ids, vid).clip(0, len(ids) - 1)
    counter = np.where(is_vp & (ids[k] == vid), np.array([accounts[x] for x in ids.tolist()])[k], "-").astype(object)
    value_days = _value_dates(lines.column("value_date").to_numpy().astype("datetime64[D]"))
    value_date = pa.array(value_days.astype(str))
    history: dict[str, list[tuple[str, str, str]]] = {}
    for r in changes:
        if r["field"] == "bank_account":
            history.setdefault(r["vendor_id"], []).append((r["changed_on"], r["old_value"], r["new_value"]))
    for v_id, hist in history.items():
        hist.sort()
        for i in np.flatnonzero(vid == v_id).tolist():
            day = value_date[i].as_py()
            done = [new for when, _old, new in hist if when <= day]
            counter[i] = done[-1] if done else (hist[0][1] or accounts[v_id])
    text = lines.column("text").combine_chunks()
    if pay["text"]:
        mask = pc.is_in(ref_col, value_set=pa.array(sorted(pay["text"])))
        over = [pay["text"][r] for r in ref_col.filter(mask).to_pylist()]
        text = pc.replace_with_mask(text, mask.combine_chunks(), pa.array(over, pa.string()))
    cents = np.rint(lines.column("amount").to_numpy() * 100).astype(np.int64)
    rows = [StatementLine(*x) for x in zip(value_date.to_pylist(), ref_col.to_pylist(), text.to_pylist(),
                                           counter.tolist(), cents.tolist())]
    sdate = lines.column("statement_date").to_numpy().astype("datetime64[D]")
    # the lines of a statement in value-date order (a moved date keeps its line in its month's statement)
    order = np.lexsort((np.arange(len(rows)), value_days, sdate))
    rows = [rows[i] for i in order.tolist()]
    handle: dict[str, int] = {}
    for s in b.books.bank_tables()["bank_statements"].to_pylist():
        sd = str(s["statement_date"])
        lo, hi = np.searchsorted(sdate, np.datetime64(sd), "left"), np.searchsorted(sdate, np.datetime64(sd), "right")
        body = STATEMENT.render(Statement(
            s["bank"], b.facts["company_name"], s["account_number"], f"{sd[:8]}01", sd, _cents(s["opening_balance"]),
            _cents(s["credits"]), _cents(s["debits"]), _cents(s["closing_balance"]), (ColumnHeads(), *rows[lo:hi])))
        title = STATEMENT_TITLE.render(StatementTitle(md.MONTH_NAMES[int(sd[5:7]) - 1], int(sd[:4])))
        handle[sd] = b.add_document("bank_statement", title, body, sd)
    b.claim("JE-15", documents=list(handle.values()))
    where = pc.index_in(pa.array(refs, pa.string()), value_set=ref_col).to_pylist()
    return {r: handle[str(sdate[i])] for r, i in zip(refs, where)}


def _business_day(day: np.datetime64) -> np.datetime64:
    """``day``, or the next business day when it falls on a weekend or a holiday: the company's staff
    (the vendor-master team, Treasury, the requesters and the scheme user alike) act on business days."""
    return cal.business_offset(day, 0)


def _value_dates(days: np.ndarray) -> np.ndarray:
    """The value date each statement line shows: a business day of the same month. The books value
    some cheques and receipts on a weekend or a holiday, which no bank does; the statement shows
    the next business day, or the previous one when the next is in another month, so every line
    stays on its month's statement and the balances hold."""
    fwd = cal.business_offset(days, 0)
    back = cal.business_offset(days, 0, roll="backward")
    return np.where(fwd.astype("datetime64[M]") == days.astype("datetime64[M]"), fwd, back)


def _cents(usd: float) -> int:
    return int(round(usd * 100))


# ----------------------------------------------------------------------------- scoring hook
def _mentions(text: str, user: dict[str, Any]) -> bool:
    return mentions(text, user["user_id"]) or mentions(text, user["name"])


def outcome_adjust(world: Any, state: Any, outcome: float, final: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Reward naming the scheme user: outcome = 0.85 * outcome + 0.15 * named.

    The scheme user is the preparer of the scheme's invoices (scorer side, from the defect ledger).
    Named: the user's id or full name is in the rationales (each naming at most three staff members)
    of at least half of the correct, non-void flags, so it needs at least one correct flag of a scheme
    invoice. The submit summary earns nothing: without a right flag there is no finding to credit.
    """
    ids = world.defect_ids
    if not ids:
        return outcome, {"scheme_user_named": None}
    led = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1)).to_pylist()
    preps = [r["preparer"] for r in led if r["entry_id"] in ids]
    scheme = max(sorted(set(preps)), key=preps.count)
    users = [u for u in world.master["users"].to_pylist() if u.get("role") != "System"]
    user = next(u for u in users if u["user_id"] == scheme)
    tp = [d for k, d in final.items() if k in ids and d.decision == "flag"]
    # a rationale names the user only when it names at most three staff members (listing all is not naming)
    named = bool(tp) and 2 * sum(_mentions(d.rationale, user) and sum(_mentions(d.rationale, u) for u in users) <= 3
                                 for d in tp) >= len(tp)
    return 0.85 * outcome + 0.15 * float(named), {"scheme_user_named": named}


# ----------------------------------------------------------------------------- strategies
Vendors = dict[str, dict[str, Any]]


def _new_vendors(kit: Kit) -> Generator[Step, Any, tuple[list[dict[str, Any]], Vendors]]:
    vendors = yield from kit.master("vendors")
    return vendors, {v["vendor_id"]: v for v in vendors if (v.get("created_on") or "") >= "2025-01-01"}


def _invoices_of(kit: Kit, vendor_ids: list[str]) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The vendors' invoices (document types VN and VI; their payments, VP, are not invoices)."""
    rows = yield from kit.ledger(
        filters=[{"column": "vendor_id", "op": "in", "value": vendor_ids}, {"column": "line_no", "op": "eq", "value": 1},
                 {"column": "document_type", "op": "in", "value": ["VN", "VI"]}],
        columns=["entry_id", "posting_date", "preparer", "approver", "debit", "reference", "vendor_id", "description"])
    return entries_of(rows)


def _new_vendor_invoices(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The invoices of vendors created during FY2025, each with its vendor's name and set-up date."""
    _all, new = yield from _new_vendors(kit)
    ents = (yield from _invoices_of(kit, sorted(new))) if new else {}
    return {eid: {**h, "name": new[h["vendor_id"]]["name"], "created_on": new[h["vendor_id"]]["created_on"]}
            for eid, h in ents.items()}


RULE = SurfaceRule("an invoice of a vendor created during the year", "SHELL_VENDOR", _new_vendor_invoices,
                   "Entry {entry_id}: invoice of USD {total_debit:.2f} from {name} ({vendor_id}), a vendor created on "
                   "{created_on}.", "Flagged {n} invoices from vendors created during FY2025.", ("master:vendors",))
naive = surface_naive(RULE)


def _statement_refs(kit: Kit, accounts: set[str]) -> Generator[Step, Any, dict[str, tuple[str, str, str, str]]]:
    """Open the bank statements that may show payments to ``accounts``; map invoice reference ->
    (statement, value date, counterparty account, amount)."""
    if kit.has("search_documents") and accounts:
        ids = []
        for acct in sorted(accounts):
            hits = (yield from kit.call("search_documents", query=acct, limit=50)).get("documents", [])
            ids += [d["doc_id"] for d in hits if d["doc_type"] == "bank_statement"]
        ids = sorted(set(ids))
    else:
        ids = sorted(d["doc_id"] for d in (yield from kit.documents("bank_statement")))
    refs: dict[str, tuple[str, str, str, str]] = {}
    for doc_id, body in (yield from read_while(kit, ids, reserve=4)).items():
        statement = STATEMENT.parse(body)
        for ln in statement.lines if statement else ():
            paid = PAYMENT_TEXT.parse(ln.details) if isinstance(ln, StatementLine) and ln.counterparty in accounts \
                else None
            if paid:
                refs[paid.invoice] = (doc_id, ln.value_date, ln.counterparty, f"{abs(ln.amount) / 100:.2f}")
    return refs


def _forms(kit: Kit, vendors: Vendors) -> Generator[Step, Any, dict[str, str]]:
    """The set-up form of each vendor (by name in the title), opened."""
    docs = yield from kit.documents("vendor_form")
    found = {vid: doc["doc_id"] for vid, v in sorted(vendors.items())
             if (doc := next((d for d in docs if d["title"].endswith(v["name"])), None))}
    opened = yield from read_while(kit, list(found.values()), reserve=4)
    return {vid: doc for vid, doc in found.items() if doc in opened}


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Matches every vendor's bank account against the employees' accounts, reads the vendor change
    log, vouches the shell vendor's invoices to the bank statements and flags them naming the
    employee; clears the invoices of verified new vendors."""
    users = yield from kit.master("users")
    vendors, new = yield from _new_vendors(kit)
    log = yield from kit.master("vendor_changes")
    staff = {u["bank_account"]: u for u in users if u.get("bank_account")}
    shells = {v["vendor_id"]: staff[v["bank_account"]] for v in vendors if v.get("bank_account") in staff}
    legit = {k: v for k, v in new.items() if k not in shells}
    ents = (yield from _invoices_of(kit, sorted(set(new) | set(shells)))) if (new or shells) else {}
    refs = yield from _statement_refs(kit, {v["bank_account"] for v in vendors if v["vendor_id"] in shells})
    forms = (yield from _forms(kit, legit)) if any(h["vendor_id"] in legit for h in ents.values()) else {}
    vmap = {v["vendor_id"]: v for v in vendors}
    flags = sorted(k for k, h in ents.items() if h["vendor_id"] in shells)
    clears = sorted(k for k, h in ents.items() if h["vendor_id"] in legit)
    named: dict[str, dict[str, Any]] = {}
    paid: list[float] = []

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        h = ents[eid]
        emp = named[shells[h["vendor_id"]]["user_id"]] = shells[h["vendor_id"]]
        entry = yield from kit.call("get_entry", entry_id=eid)
        paid.append(entry.get("total_debit", h["total_debit"]))
        return _scheme(eid, h, entry, paid[-1], vmap[h["vendor_id"]], emp, log, refs.get(h["reference"]))

    yield from review(kit, flags, decide)
    yield from dispose(kit, [_verified(eid, ents[eid], vmap[ents[eid]["vendor_id"]], forms.get(ents[eid]["vendor_id"]))
                             for eid in clears])
    who = "; ".join(f"{u['user_id']} ({u['name']}, {u['role']})" for u in named.values()) or "none found"
    shell_names = ", ".join(f"{vmap[k]['name']} ({k})" for k in sorted(shells)) or "no vendor"
    yield from kit.submit(
        f"Shell-vendor scheme: {len(flags)} invoices (USD {sum(paid):,.2f}) from {shell_names} paid to the bank "
        f"account of employee {who}. Cleared {len(clears)} invoices of new vendors with verified bank accounts.")


def _scheme(eid: str, h: dict[str, Any], entry: dict[str, Any], amount: float, v: dict[str, Any],
            emp: dict[str, Any], log: list[dict[str, Any]], stmt: tuple[str, str, str, str] | None) -> Disposition:
    """The flag of an invoice of a vendor whose bank account is an employee's, naming the employee."""
    vid = v["vendor_id"]
    acts = [f"{r['changed_by']} "
            f"{'created the vendor' if r['field'] == 'vendor_created' else 'set its bank account to ' + r['new_value']} "
            f"on {r['changed_on']}" for r in log
            if r["vendor_id"] == vid and (r["field"] == "vendor_created" or r["new_value"] == v["bank_account"])]
    ev = [eid, "master:vendors", "master:vendor_changes", "master:users"] + ([stmt[0]] if stmt else [])
    paid = f". Bank statement {stmt[0]} shows USD {stmt[3]} paid on {stmt[1]} to account {stmt[2]}" if stmt else ""
    return flag(
        eid, "SHELL_VENDOR", ev,
        f"Entry {eid}: invoice {h['reference']} of USD {amount:,.2f} from {v['name']} ({vid}), created "
        f"{v['created_on']}. The vendor's bank account {v['bank_account']} is the personal account of employee "
        f"{emp['user_id']} ({emp['name']}, {emp['role']}) in master:users; vendor change log: {'; '.join(acts)}. "
        f"Keyed by {entry.get('preparer', h['preparer'])} and approved by {entry.get('approver', h['approver'])}, as "
        f"every invoice of this vendor{paid}.")


def _verified(eid: str, h: dict[str, Any], v: dict[str, Any], form: str | None) -> Disposition:
    """The clearance of an invoice of a new vendor whose bank account is no employee's."""
    return clear(
        eid, ["master:vendors", "master:users"] + ([form] if form else []),
        f"Entry {eid}: invoice {h['reference']} of USD {h['total_debit']:,.2f} from {v['name']} ({v['vendor_id']}), a "
        f"vendor created {v['created_on']} by {v['created_by']}; its bank account {v['bank_account']} matches no "
        f"employee in master:users" + (f", and set-up form {form} documents the W-9 and the Treasury call-back."
                                       if form else "."))


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="the vendor's bank account (master:vendors) against the employees' accounts (master:users), who "
                     "put it on the vendor (master:vendor_changes) and the statement line paying the invoice to it")
