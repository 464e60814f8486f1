"""JE-15 (L4): shell-vendor scheme.

Planted: one employee (an AP clerk or GL accountant, the *scheme user*) sets up a vendor during
the year (two once the scheme has four invoices or more) whose bank account is the employee's own
account in the user master. Either the scheme user creates the vendor directly with that account,
or the vendor-master team creates it and the scheme user later changes its bank account; the vendor change log (``master:vendor_changes``)
records who did what, and the set-up form shows no TIN match and no Treasury call-back. The scheme
user keys the vendor's invoices, spread over the rest of the year, each under his or her approval
limit and all approved by one approver. Each invoice is paid in the ledger's payment run (Dr 2000
/ Cr 1000, under the payment reference the bank statement shows), and the monthly statement of
the operating account shows the transfer going to the employee's account. Every invoice of the
scheme is a defect (criteria ``SHELL_VENDOR``, misstatement = the invoice amount). Required
evidence: the entry (``get_entry``), ``master:vendors``, ``master:vendor_changes``,
``master:users`` and the bank statement showing the payment. Decisive facts: the vendor's bank
account, the employee it belongs to (user id), the vendor id, the invoice amount and the statement.

Decoys: the invoices of the other vendors set up during the year, as many vendors as give each
about the scheme vendors' number of invoices (so "the new vendor with the most invoices" tells
nothing). They come from the same
surface distribution as the scheme's: set-up date and order of vendor ids, who set them up, the
service and expense account, one clerk keying every invoice of the vendor under his or her limit,
one approver, the same spread over the year, a payment in the ledger. A legitimate vendor's bank
account may also be changed after set-up (with probability 0.6 x ``near_miss``), by the
vendor-master team on a new bank letter verified by call-back. Clearing evidence: the vendor's
set-up form (W-9 matched, Treasury call-back), ``master:vendors`` and ``master:users`` (no
employee has that account). Decisive facts: the vendor's bank account, the vendor id, the set-up
form and its call-back.

Red-flag rule (naive): invoices from vendors created during FY2025. Decisive test (careful): the
vendor's bank account is an employee's, and who put it there. The base vendors were all created
before FY2025 with their own accounts and their changes are made by the vendor-master team, so the
base never trips either; ``plant`` re-checks the bank accounts. The brief's criteria text names
the scheme, not the test.

Scoring hook: ``outcome_adjust`` rewards naming the scheme user (id or full name) in the submit
summary or in the rationales of at least half of the correct flags: outcome = 0.85 * outcome +
0.15 * named. A summary naming more than three staff members does not count (no shotgun naming).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow.compute as pc

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import HOLIDAY_DATES, MONTH_ABBR

SPEC = spec(
    "JE-15",
    "L4",
    'Shell-vendor scheme',
    objective='Find a shell-vendor scheme spread over the year and name the user behind it; flag every entry of the scheme.',
    defect='shell-vendor scheme (vendor bank = employee bank, invoices under limit, same approver)',
    decoys='new legitimate vendors',
    required_evidence='vendor change log, employee master, bank statements, approvals',
    sources=('general_ledger', 'vendor_master', 'vendor_change_log', 'employee_master', 'bank_statements', 'approvals'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('SHELL_VENDOR', "invoices of a vendor set up or used to divert the company's payments (a shell vendor)"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Vendor master data policy (PROC-007)"
#: staff who key vendor invoices and could run the scheme (limits 5,000 / 10,000)
SCHEME_USERS = ("AKIM", "BOKAFOR", "DPATEL", "EMUELLER")
#: approvers whose limits cover any amount under a clerk's limit
SCHEME_APPROVERS = ("FNGUYEN", "GSILVA", "HJOHANSSON")
#: who maintains the vendor master
VENDOR_ADMINS = ("GSILVA", "FNGUYEN")
#: names of vendors set up during FY2025: the shell and the legitimate ones draw from one pool
NEW_VENDOR_NAMES = (
    "Meridian Advisory Group", "Apex Business Services LLC", "Crestline Consulting Partners",
    "Northgate Supply Co.", "Silverline Facility Services", "Brightpath Analytics",
    "Copperfield Office Solutions", "Highland Technical Services", "Riverside Print & Mail",
    "Oakmont Engineering Services", "Pinnacle Data Systems", "Lakeshore Cleaning Services",
)
#: what each new vendor would sell: expense account and business purpose
SERVICES = (
    ("6400", "advisory and consulting services"), ("6600", "facility repairs and maintenance"),
    ("7100", "IT support and software services"), ("6900", "office supplies and printing"),
    ("6700", "marketing and design services"),
)
REQUESTERS = (("HJOHANSSON", "Finance"), ("IBROWN", "Finance"), ("LGARCIA", "Sales"), ("MCHEN", "IT"),
              ("FNGUYEN", "General Ledger"))
_YEAR_END = np.datetime64("2025-12-31")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_INV_REF = re.compile(r"\((INV-\d+)\)")


def _business_day(d: np.datetime64) -> np.datetime64:
    return min(np.busday_offset(np.datetime64(d, "D"), 0, roll="forward", holidays=HOLIDAY_DATES), _YEAR_END)


def _cents_under(limit_usd: float, rng, lo: float = 0.6, hi: float = 0.97) -> int:
    """An amount (cents) between ``lo`` and ``hi`` of a limit, never a whole hundred."""
    cents = int(limit_usd * 100 * rng.uniform(lo, hi)) + int(rng.integers(1, 100))
    return cents + 137 if cents % 10_000 == 0 else cents


def plant(b) -> None:
    """Plant the shell vendor, its invoices and payments; legitimate new vendors with their invoices."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    users = {u["user_id"]: u for u in b.users}
    staff_banks = {u["bank_account"] for u in b.users if u["bank_account"]}
    # the base must not pay an employee: re-draw any (astronomically unlikely) collision
    for v in b.vendors:
        while v["bank_account"] in staff_banks:
            v["bank_account"] = b.bank_account()
    _add_policy(b)

    scheme_user = str(rng.choice(SCHEME_USERS))
    su = users[scheme_user]
    names = [NEW_VENDOR_NAMES[i] for i in rng.permutation(len(NEW_VENDOR_NAMES))]
    post = e["post_date"].astype("datetime64[D]")
    invoices = e["template"] == "vendor_invoice"

    # every vendor set up during the year comes from one distribution: set-up date, who set it up,
    # service, one clerk keying its invoices and one approver, amounts under the clerk's limit, a
    # bank-account change after set-up or none. Only the master data, the change log, the set-up
    # form and the bank statements tell the shell from the legitimate vendors.
    # as many legitimate vendors as make their invoice counts about the scheme's: "the new vendor with
    # the most invoices" says nothing
    # the scheme runs through one vendor, or two once it has four invoices or more
    n_shell = 1 + int(b.n_defects >= 4)
    per_shell = max(1, b.n_defects / n_shell)
    k_legit = 1 if b.n_decoys == 0 else max(1, min(b.n_decoys, round(b.n_decoys / per_shell)))
    scheme_approver = str(rng.choice([a for a in SCHEME_APPROVERS if a != scheme_user]))
    new = []
    for k in range(n_shell + k_legit):
        shell_k = k < n_shell
        created = np.datetime64("2025-01-13") + int(rng.integers(0, 150))
        v = {"name": names[k], "created_on": created, "created_by": str(rng.choice(VENDOR_ADMINS)),
             "service": SERVICES[int(rng.integers(0, len(SERVICES)))], "changes": [], "shell": shell_k,
             "form_bank": b.bank_account(), "start": created,
             "clerk": scheme_user if shell_k else str(rng.choice(SCHEME_USERS))}
        v["approver"] = scheme_approver if shell_k else str(rng.choice([a for a in SCHEME_APPROVERS if a != v["clerk"]]))
        change = rng.random() < (0.5 if shell_k else 0.6 * near)
        if shell_k and not change:
            # the scheme user sets the vendor up with his or her own account
            v["created_by"] = scheme_user
            v["form_bank"] = su["bank_account"]
        v["bank_account"] = v["form_bank"]
        if change:
            when = created + int(rng.integers(6, 40))
            v["bank_account"] = su["bank_account"] if shell_k else b.bank_account()
            who = scheme_user if shell_k else v["created_by"]
            v["changes"].append(("bank_account", v["form_bank"], v["bank_account"], when, who))
            v["start"] = when
            if not shell_k:
                v["change_verified"] = when
        new.append(v)
    shells, legit = new[:n_shell], new[n_shell:]

    # vendor ids rise with the creation date, as in an ERP
    for i, v in enumerate(sorted(new, key=lambda v: (v["created_on"], v["name"]))):
        v["vendor_id"] = f"V{1001 + len(b.vendors) + i}"
    changes = _routine_changes(b)
    for v in sorted(new, key=lambda v: v["vendor_id"]):
        b.vendors.append({"vendor_id": v["vendor_id"], "name": v["name"], "bank_account": v["bank_account"],
                          "created_on": str(v["created_on"]), "created_by": v["created_by"], "status": "active"})
        changes.append({"vendor_id": v["vendor_id"], "field": "vendor_created", "old_value": "", "new_value": v["name"],
                        "changed_on": str(v["created_on"]), "changed_by": v["created_by"]})
        changes.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": "", "new_value": v["form_bank"],
                        "changed_on": str(v["created_on"]), "changed_by": v["created_by"]})
        for field, old, newv, when, who in v["changes"]:
            changes.append({"vendor_id": v["vendor_id"], "field": field, "old_value": old, "new_value": newv,
                            "changed_on": str(when), "changed_by": who})

    # --- the invoices: each vendor's spread over the rest of the year, one per time bin
    def shares(n: int, k: int) -> list[int]:
        return [n // k + (1 if j < n % k else 0) for j in range(k)]

    forms = {v["vendor_id"]: _setup_form(b, v, verified=True) for v in legit}
    for v in shells:
        forms[v["vendor_id"]] = _setup_form(b, v, verified=False, requester=scheme_user)
    paid: list[tuple[int, dict]] = []
    for v, n in zip(new, [*shares(b.n_defects, n_shell), *shares(b.n_decoys, k_legit)]):
        for idx in _spread(b, n, v["start"] + 4, invoices, post):
            _repoint(b, idx, v, v["service"][0])
            _make_manual(b, idx, v["clerk"], v["approver"], _cents_under(users[v["clerk"]]["approval_limit"], rng))
            paid.append((idx, v))

    statements, payments = _bank_statements(b, paid, {v["vendor_id"] for v in new}, changes)
    _ledger_payments(b, payments)
    for idx, v in paid:
        cents = int(e["debit_cents"][idx])
        stmt = statements[idx]
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


def _spread(b, n: int, first: np.datetime64, invoices: np.ndarray, post: np.ndarray) -> list[int]:
    """``n`` unused vendor invoices posted from ``first`` to mid-December, one per equal time bin."""
    if n <= 0:
        return []
    last = np.datetime64("2025-12-15")
    edges = np.linspace(0, 1, n + 1)
    span = max(1, int((last - first).astype(int)))
    out = []
    for k in range(n):
        lo, hi = first + int(edges[k] * span), first + int(edges[k + 1] * span)
        where = invoices & (post >= lo) & (post <= hi)
        if int((where & ~b.used).sum()) == 0:
            where = invoices & (post >= first) & (post <= last)
            if int((where & ~b.used).sum()) == 0:
                where = invoices & (post >= first)
        out.append(int(b.pick(1, where=where, what="vendor invoices after a new vendor's set-up")[0]))
    return out


def _ledger_payments(b, payments: dict[int, tuple[str, str, int]]) -> None:
    """Each paid invoice of a new vendor gets its payment in the ledger (Dr 2000 / Cr 1000 in the
    batch payment run), on the statement's date and under the statement's payment reference."""
    e = b.e
    rng = b.rng
    pool = e["template"] == "vendor_payment"
    for idx, (day, ref, cents) in sorted(payments.items()):
        j = int(b.pick(1, where=pool, what="vendor payments")[0])
        d = np.datetime64(day)
        e["post_date"][j] = e["entry_date"][j] = e["doc_date"][j] = d
        e["time_s"][j] = int(rng.integers(1 * 3600, 5 * 3600))
        e["manual"][j] = False
        e["preparer"][j] = "SYS_BATCH"
        e["approver"][j] = ""
        e["doc_type"][j] = "KZ"
        e["debit_account"][j], e["credit_account"][j] = "2000", "1000"
        e["debit_cents"][j] = e["credit_cents"][j] = cents
        vid = str(e["vendor_id"][idx])
        e["vendor_id"][j] = vid
        name = next(v["name"] for v in b.vendors if v["vendor_id"] == vid)
        e["reference"][j] = ref
        e["description"][j] = f"Payment run {MONTH_ABBR[int(str(d)[5:7]) - 1]} {name}"


def _add_policy(b) -> int:
    return b.add_document(
        "policy", POLICY_TITLE,
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
        "6. Invoices are approved in the ERP workflow by a user whose approval limit covers the amount.",
        "2024-10-15",
    )


def _routine_changes(b) -> list[dict]:
    """Ordinary vendor-master maintenance on base vendors (address and bank updates by the team)."""
    rng = b.rng
    out = []
    streets = ("1200 Commerce Blvd, Dayton OH", "77 Harbor Way, Toledo OH", "410 Industrial Pkwy, Akron OH",
               "9 Market Street, Pittsburgh PA", "3300 Lakeview Dr, Cleveland OH")
    for i in sorted(rng.choice(len(b.vendors), size=int(rng.integers(2, 5)), replace=False)):
        v = b.vendors[int(i)]
        when = str(np.datetime64("2025-01-10") + int(rng.integers(0, 320)))
        who = str(rng.choice(VENDOR_ADMINS))
        if rng.random() < 0.5:
            new = b.bank_account()
            out.append({"vendor_id": v["vendor_id"], "field": "bank_account", "old_value": v["bank_account"],
                        "new_value": new, "changed_on": when, "changed_by": who})
            v["bank_account"] = new
        else:
            out.append({"vendor_id": v["vendor_id"], "field": "remit_address", "old_value": str(rng.choice(streets)),
                        "new_value": str(rng.choice(streets)), "changed_on": when, "changed_by": who})
    return out


def _repoint(b, idx: int, v: dict, account: str) -> None:
    """Make entry ``idx`` an invoice of vendor ``v`` booked to ``account``."""
    e = b.e
    e["vendor_id"][idx] = v["vendor_id"]
    e["debit_account"][idx] = account
    e["credit_account"][idx] = "2000"
    desc = str(e["description"][idx])
    if desc.startswith("Invoice "):
        e["description"][idx] = f"Invoice {e['reference'][idx]} {v['name']}"


def _make_manual(b, idx: int, preparer: str, approver: str, cents: int) -> None:
    """A manually keyed invoice on a business day in office hours, with the given people and amount."""
    e = b.e
    rng = b.rng
    day = np.busday_offset(e["post_date"][idx], 0, roll="forward", holidays=HOLIDAY_DATES)
    if day > _YEAR_END:
        day = np.busday_offset(e["post_date"][idx], 0, roll="backward", holidays=HOLIDAY_DATES)
    e["post_date"][idx] = day
    e["entry_date"][idx] = day
    e["doc_date"][idx] = day - int(rng.integers(0, 5))
    e["time_s"][idx] = int(rng.integers(9 * 3600, 17 * 3600))
    e["manual"][idx] = True
    e["preparer"][idx] = preparer
    e["approver"][idx] = approver
    e["debit_cents"][idx] = cents
    e["credit_cents"][idx] = cents


def _setup_form(b, v: dict, *, verified: bool, requester: str | None = None) -> int:
    """The vendor set-up form; a verified one documents W-9 and the Treasury call-back."""
    rng = b.rng
    created = v["created_on"]
    req, dept = REQUESTERS[int(rng.integers(0, len(REQUESTERS)))] if requester is None else (requester, "Accounts Payable")
    tin = f"{int(rng.integers(10, 99))}-{int(rng.integers(1_000_000, 9_999_999))}"
    lines = [
        f"Vendor: {v['name']}",
        f"Vendor id assigned: {v['vendor_id']}",
        f"Requested by: {req} ({dept}) on {created - int(rng.integers(2, 9))}",
        f"Goods / services: {v['service'][1]}; default expense account {v['service'][0]}",
        f"Form W-9 received; TIN {tin}.",
        f"Bank account on the bank letter: {v['form_bank']}",
    ]
    if verified:
        phone = f"+1 (614) {int(rng.integers(200, 999))}-{int(rng.integers(1000, 9999))}"
        lines += [
            f"TIN matched with the IRS TIN matching service on {created - 1}.",
            f"Bank confirmation letter on vendor letterhead received. Treasury (KLEE) call-back to {phone}, "
            f"the number on the vendor's public website, confirmed the account on {created}.",
            f"Approved: {v['created_by']} (vendor master) and HJOHANSSON (Accounting Manager) on {created}.",
        ]
        if v.get("change_verified") is not None:
            lines.append(f"Update {v['change_verified']}: new bank letter received, account {v['bank_account']}; "
                         f"Treasury call-back to {phone} confirmed the change.")
    else:
        lines += [
            "TIN matching: pending.",
            "Bank details provided by the requester by e-mail.",
            f"Set up by {v['created_by']} on {created}.",
        ]
    return b.add_document("vendor_form", f"New vendor set-up form - {v['name']}", "\n".join(lines), str(created))


def _bank_statements(b, paid: list[tuple[int, dict]], new_ids: set[str], changes: list[dict]) -> tuple[dict, dict]:
    """Monthly statements of the operating account listing outgoing vendor payments (to the bank
    account the vendor had on the payment day). Returns the statement handle of every planted
    invoice's payment, and each one's (date, payment reference, cents)."""
    rng = b.rng
    e = b.e
    names = {v["vendor_id"]: v for v in b.vendors}
    bank_changes = sorted((r["changed_on"], r["vendor_id"], r["new_value"]) for r in changes if r["field"] == "bank_account")

    def bank_on(vid: str, day: str) -> str:
        hist = [acct for when, v, acct in bank_changes if v == vid and when <= day]
        if hist:
            return hist[-1]
        # before its first logged change a base vendor paid to the account the change replaced
        olds = [r["old_value"] for r in changes if r["vendor_id"] == vid and r["field"] == "bank_account" and r["old_value"]]
        return olds[0] if olds else names[vid]["bank_account"]
    lines: dict[int, list[tuple[str, str, str, int, str]]] = {m: [] for m in range(1, 13)}
    where_paid: dict[int, int] = {}

    payments: dict[int, tuple[str, str, int]] = {}

    def pay(idx: int, vendor: dict, delay: int) -> int:
        day = _business_day(e["post_date"][idx] + delay)
        month = int(str(day)[5:7])
        pay_ref = f"PAY-{int(rng.integers(400_000, 499_999))}"
        lines[month].append((str(day), vendor["name"], bank_on(vendor["vendor_id"], str(day)), int(e["debit_cents"][idx]),
                             f"{pay_ref} ({e['reference'][idx]})"))
        payments[idx] = (str(day), pay_ref, int(e["debit_cents"][idx]))
        return month

    for idx, v in paid:
        where_paid[idx] = pay(idx, names[v["vendor_id"]], int(rng.integers(10, 26)))
    base = np.flatnonzero((e["template"] == "vendor_invoice") & ~b.used & ~np.isin(e["vendor_id"], sorted(new_ids)))
    for idx in np.sort(rng.choice(base, size=min(len(base), 84), replace=False)):
        pay(int(idx), names[str(e["vendor_id"][idx])], int(rng.integers(10, 31)))

    handle = {}
    for m in range(1, 13):
        last = (np.datetime64(f"2025-{m:02d}", "M") + 1).astype("datetime64[D]") - 1
        rows = sorted(lines[m])
        body = [
            "First Federal Bank - commercial account statement",
            f"Account holder: {b.facts['company_name']}, operating account US{int(rng.integers(10**17, 10**18))}",
            f"Statement period: 2025-{m:02d}-01 to {last}",
            "Outgoing transfers (ACH / wire):",
            "Date | Beneficiary | Beneficiary account | Amount USD | Payment reference",
        ]
        body += [f"{d} | {nm} | {acct} | {c / 100:,.2f} | {ref}" for d, nm, acct, c, ref in rows]
        body.append(f"{len(rows)} outgoing transfers, total USD {sum(r[3] for r in rows) / 100:,.2f}. Incoming receipts and "
                    "bank charges are reported on the cash reconciliation.")
        handle[m] = b.add_document("bank_statement", f"Bank statement - operating account - {_MONTHS[m - 1]} 2025",
                                   "\n".join(body), str(last))
    return {idx: handle[m] for idx, m in where_paid.items()}, {idx: payments[idx] for idx in where_paid}


# ----------------------------------------------------------------------------- scoring hook
def _mentions(text: str, user: dict) -> bool:
    pat = rf"\b{re.escape(user['user_id'])}\b|\b{re.escape(user['name'])}\b"
    return bool(re.search(pat, text or "", flags=re.I))


def outcome_adjust(world, state, outcome: float) -> tuple[float, dict]:
    """Reward naming the scheme user: outcome = 0.85 * outcome + 0.15 * named.

    The scheme user is the preparer of the scheme's invoices (scorer side, from the defect ledger).
    Named: the user's id or full name is in the submit summary (which names at most three staff
    members), or in the rationales of at least half of the correct, non-void flags.
    """
    from jeval_ray.scoring.verifier import final_dispositions

    ids = world.defect_ids
    if not ids:
        return outcome, {"scheme_user_named": None}
    led = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1)).to_pylist()
    preps = [r["preparer"] for r in led if r["entry_id"] in ids]
    scheme = max(sorted(set(preps)), key=preps.count)
    users = [u for u in world.master["users"].to_pylist() if u.get("role") != "System"]
    user = next(u for u in users if u["user_id"] == scheme)
    named_staff = sum(_mentions(state.summary, u) for u in users)
    in_summary = _mentions(state.summary, user) and named_staff <= 3
    final = final_dispositions(state)
    tp = [d for k, d in final.items() if k in ids and d.decision == "flag"]
    # a rationale names the user only when it names at most three staff members (listing all is not naming)
    in_flags = bool(tp) and 2 * sum(_mentions(d.rationale, user) and sum(_mentions(d.rationale, u) for u in users) <= 3
                                    for d in tp) >= len(tp)
    named = bool(in_summary or in_flags)
    return 0.85 * outcome + 0.15 * float(named), {"scheme_user_named": named}


# ----------------------------------------------------------------------------- strategies
def _new_vendors(kit: Kit):
    vendors = yield from kit.master("vendors")
    return vendors, {v["vendor_id"]: v for v in vendors if (v.get("created_on") or "") >= "2025-01-01"}


def _invoices_of(kit: Kit, vendor_ids: list[str]):
    """The vendors' invoices (document type KR; their payments, KZ, are not invoices)."""
    rows = yield from kit.ledger(
        filters=[{"column": "vendor_id", "op": "in", "value": vendor_ids}, {"column": "line_no", "op": "eq", "value": 1},
                 {"column": "document_type", "op": "eq", "value": "KR"}],
        columns=["entry_id", "posting_date", "preparer", "approver", "debit", "reference", "vendor_id", "description"])
    return entries_of(rows)


def naive(kit: Kit):
    """Flags every invoice from a vendor created during the year, without reading the set-up forms,
    the employee master or the bank statements."""
    _all, new = yield from _new_vendors(kit)
    ents = (yield from _invoices_of(kit, sorted(new))) if new else {}
    for eid in sorted(ents):
        if kit.calls_left <= 1:
            break
        h = ents[eid]
        v = new[h["vendor_id"]]
        yield from kit.flag(eid, "SHELL_VENDOR", ["master:vendors"],
                            f"Entry {eid}: invoice of USD {h['total_debit']:.2f} from {v['name']} ({v['vendor_id']}), "
                            f"a vendor created on {v['created_on']}.")
    yield from kit.submit(f"Flagged {len(ents)} invoices from vendors created during FY2025.")


def _statement_refs(kit: Kit, accounts: set[str]):
    """Open the bank statements that may show payments to ``accounts``; map invoice reference -> statement."""
    if kit.has("search_documents") and accounts:
        ids = []
        for acct in sorted(accounts):
            hits = (yield from kit.call("search_documents", query=acct, limit=50)).get("documents", [])
            ids += [d["doc_id"] for d in hits if d["doc_type"] == "bank_statement"]
        ids = sorted(set(ids))
    else:
        ids = sorted(d["doc_id"] for d in (yield from kit.documents("bank_statement")))
    refs: dict[str, tuple[str, str, str]] = {}
    for doc_id in ids:
        if kit.calls_left <= 4:
            break
        body = (yield from kit.open(doc_id)).get("body", "")
        for line in body.splitlines():
            parts = [p.strip() for p in line.split("|")]
            m = _INV_REF.search(line)
            if m and len(parts) == 5:
                refs[m.group(1)] = (doc_id, parts[0], parts[2])
    return refs


def _forms(kit: Kit, vendors: dict):
    """The set-up form of each vendor (by name in the title), opened."""
    docs = yield from kit.documents("vendor_form")
    out = {}
    for vid, v in sorted(vendors.items()):
        doc = next((d for d in docs if d["title"].endswith(v["name"])), None)
        if doc and kit.calls_left > 4:
            yield from kit.open(doc["doc_id"])
            out[vid] = doc["doc_id"]
    return out


def careful(kit: Kit):
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
    named = {}
    total = 0.0
    for eid in flags:
        if kit.calls_left <= 2:
            break
        h = ents[eid]
        vid = h["vendor_id"]
        v, emp = vmap[vid], shells[vid]
        named[emp["user_id"]] = emp
        entry = yield from kit.call("get_entry", entry_id=eid)
        amount = entry.get("total_debit", h["total_debit"])
        total += amount
        acts = [f"{r['changed_by']} {'created the vendor' if r['field'] == 'vendor_created' else 'set its bank account to ' + r['new_value']} on {r['changed_on']}"
                for r in log if r["vendor_id"] == vid and (r["field"] == "vendor_created" or r["new_value"] == v["bank_account"])]
        stmt = refs.get(h["reference"])
        ev = [eid, "master:vendors", "master:vendor_changes", "master:users"] + ([stmt[0]] if stmt else [])
        paid = f"; bank statement {stmt[0]} shows USD {amount:,.2f} paid on {stmt[1]} to account {stmt[2]}" if stmt else ""
        yield from kit.flag(
            eid, "SHELL_VENDOR", ev,
            f"Entry {eid}: invoice {h['reference']} of USD {amount:,.2f} from {v['name']} ({vid}), created "
            f"{v['created_on']}. The vendor's bank account {v['bank_account']} is the personal account of employee "
            f"{emp['user_id']} ({emp['name']}, {emp['role']}) in master:users; vendor change log: {'; '.join(acts)}. "
            f"Keyed by {entry.get('preparer', h['preparer'])} under the {emp['approval_limit']:,.0f} approval limit and "
            f"approved by {entry.get('approver', h['approver'])}, as every invoice of this vendor{paid}.")
    for eid in clears:
        if kit.calls_left <= 1:
            break
        h = ents[eid]
        v = vmap[h["vendor_id"]]
        form = forms.get(h["vendor_id"])
        yield from kit.clear(
            eid, ["master:vendors", "master:users"] + ([form] if form else []),
            f"Entry {eid}: invoice {h['reference']} of USD {h['total_debit']:,.2f} from {v['name']} ({v['vendor_id']}), a "
            f"vendor created {v['created_on']} by {v['created_by']}; its bank account {v['bank_account']} matches no "
            f"employee in master:users" + (f", and set-up form {form} documents the W-9 and the Treasury call-back." if form else "."))
    who = "; ".join(f"{u['user_id']} ({u['name']}, {u['role']})" for u in named.values()) or "none found"
    shell_names = ", ".join(f"{vmap[k]['name']} ({k})" for k in sorted(shells)) or "no vendor"
    yield from kit.submit(
        f"Shell-vendor scheme: {len(flags)} invoices (USD {total:,.2f}) from {shell_names} paid to the bank account "
        f"of employee {who}. Cleared {len(clears)} invoices of new vendors with verified bank accounts.")
