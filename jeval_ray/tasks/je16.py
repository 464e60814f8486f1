"""JE-16 (L4): mixed engagement with completeness.

One world holds the exceptions of six criteria at once, plus one entry missing from the listing.
``n_defects`` counts them all: the missing entry is one of them (when ``n_defects`` >= 1) and the
others cycle through the criteria from a seed-chosen start, so every criterion appears once there
are seven defects. Decoys cycle through the matching legitimate look-alikes the same way.

Within each criterion the candidates (what its red-flag rule catches) are drawn from one
distribution and then made a defect or a decoy at random, so the listing alone does not separate
them: only the evidence differs. Where the listing field is itself what the rule reads (the size
of an imbalance, the time of a keying, the recording date, the preparer), the decisive difference
sits in evidence the agent must read: the interface's rounding report, an out-of-hours
authorisation, a close calendar change, an approval log, the user master. Nor does ranking the
candidates within one world help: every imbalance is within the tolerance, and each leaver's
entries lie on one side of his or her termination date.

| criteria | planted exception (required evidence) | decoy (clearing evidence) | decisive facts |
|---|---|---|---|
| UNBALANCED | a billing-interface customer invoice whose credits differ from its debits (within the policy's tolerance) by a difference that is not on the interface's rounding report of the month, or (near miss) that the report gives as another figure (entry, the report, journal entry policy) | the report lists the upload with exactly that difference (same) | debits, credits, the difference, the report; the tolerance |
| SELF_APPROVAL | a manual entry of the books keyed during a workflow incident, recorded with its preparer as approver and not signed off on the incident's manual approval log, or signed off only after it was posted (the log, `master:users`, policy) | signed off on the log before posting by a second approver whose limit covers it (same) | the preparer, the amount and the log; the approver and the date signed |
| INVALID_ACCOUNT | a month's bank charges (keyed by the GL team a few business days after the month end, no vendor) posted to a bank-charge sub-account opened after the posting date and on or before the keying day: back-dated before the account existed (`master:accounts`; an ERP rejects postings to blocked, closed or unknown accounts, so none are planted) | posted to a sub-account opened during the year before the posting date (`master:accounts`) | the account, its opening date, the posting date |
| UNAUTHORISED_USER | an entry of the kind the leaver's role keys (AP clerk: vendor invoices; GL accountant: accruals, bank items, tax returns), keyed in the weeks after his or her termination date (`master:users`) | keyed by another leaver in the weeks before his or her termination date (`master:users`) | the user, the termination date, the posting date |
| OFF_HOURS | a vendor invoice or accrual keyed within a week of its posting date (inside its period's close and before its payment or reversal) on a weekend, a holiday, an evening or an early morning, with no out-of-hours work authorisation for that day; near misses: the day's authorisation does not name the preparer or does not cover the time (`master:calendar`, posting-window policy, the authorisation) | the day's authorisation names the preparer and covers the time (the authorisation, policy) | the preparer, the day, the time; the authorisation |
| CUTOFF | an entry posted in the last ten days of a month (January-November), recorded 1-6 business days after the period's close date (before anything the books derive from it), with no close calendar change for the period or one that ends before the recording date (entry, `master:calendar`, policy, the change) | a close calendar change issued by the close date extends the close to or past the recording date (`master:calendar`, policy, the change) | the posting, recording and close dates; the change and its new close date |
| COMPLETENESS_GAP | an entry left out of the listing: a gap in the consecutive numbering, and the two accounts it moved do not roll forward from opening to closing balance (`master:balances` via `get_balances`) | none | the missing id, its amount, the two accounts |

Decoys are legitimate by the evidence an auditor would accept: an authorisation names the users,
the date and the hours and its purpose (keying the period's supplier invoices and accruals)
matches the entries (a memo for another purpose would clear nothing); an approval is dated on or
before what it approves; a close extension is issued on or before the close it extends; no decoy is cleared by a policy
merely saying a control exists. DUPLICATE is offered as a criteria code but not planted: an
engagement's test list is broader than its findings. The misstatement is the entry amount, the
keying difference for UNBALANCED, and the amount of the missing entry (the roll-forward
difference) for COMPLETENESS_GAP; the gap is reported by flagging the missing id, which
``flag_entry`` accepts inside the numbering range. ``premature_penalty`` (0.05 off the process
score per disposition made before its required or clearing evidence was opened) makes the order
of work part of the score. ``near_miss`` moves interface differences towards the tolerance,
opened-account decoys towards the opening date, narrows the window of leaver entries around the
termination dates, brings close extensions down to the recording date, and from 0.5 adds the
near-miss UNBALANCED, OFF_HOURS, SELF_APPROVAL and CUTOFF variants.

Only what a real exception changes is planted: who approved, which sub-account, who keyed, when an
entry was recorded (its posting date, amounts and documents stay the books'), or, for an
imbalance, the revenue line of an interface upload. ``plant`` asserts the properties of the books
it relies on (balanced entries, manual entries approved by someone else and keyed in office hours
on business days by users with posting rights, within the close of their period). Unplanted
look-alikes: the books' honest look-alikes (round amounts, weekend system runs, amounts near a
limit, recurring payments) trip none of these rules, which read the approval, account, user, time
and close fields: over seeds 0-49 the rules caught no unplanted entry but the year-end closing
entry, which closes the expense sub-accounts opened in the year (on 2025-12-31, when all are open)
and so trips the plain "account changed in the year" screen once per world. Candidates of the
account exception are February-November bank charges, so every sub-account is open at the close.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.protocol.kit import Kit, entries_of
from jeval_ray.books import calendar as cal
from jeval_ray.books.calendar import BUSINESS_HOURS, business_days, month_close_dates
from jeval_ray.errors import ConfigError
from jeval_ray.builder.spec import key, spec
from jeval_ray.builder._base import APPROVERS, MONTH_ABBR, PREPARERS

SPEC = spec(
    "JE-16",
    "L4",
    'Mixed engagement with completeness',
    objective="Test the full listing against several criteria at once and roll the balances forward to find any entry missing from the listing. Open every flagged entry's evidence before you dispose of it.",
    defect='several criteria at once, plus an entry missing from the listing (roll-forward gap)',
    decoys='all of the above kinds',
    required_evidence="every flagged entry's evidence, opened before its disposition",
    sources=('general_ledger', 'trial_balance', 'user_master', 'chart_of_accounts', 'holiday_calendar', 'close_calendar', 'approval_logs', 'authorisations', 'policies'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'get_balances', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits differ, and the difference is not a reported, tolerated one'),
        ('SELF_APPROVAL', 'manual entry approved by its preparer'),
        ('INVALID_ACCOUNT', 'posting to an account not open for posting on the posting date'),
        ('UNAUTHORISED_USER', 'posted without rights or after termination'),
        ('OFF_HOURS', 'manual posting off hours without authorisation'),
        ('DUPLICATE', 'same invoice posted twice'),
        ('CUTOFF', 'entry recorded after period close'),
        ('COMPLETENESS_GAP', 'an entry missing from the listing, revealed by the roll-forward of balances'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    premature_penalty=0.05,
    available=True,
)

_JE = "AS 2401.58-.62 (examining journal entries); ISA 240.32(a)"
_LATE = "AS 2401.61 (characteristics of fraudulent entries: post-closing entries); ISA 240.A43; " + _JE


def _k(kind: str, type_: str, evidence: str, facts: str, conclusion: str, standard: str = _JE):
    return key(kind, type_, evidence=evidence, facts=facts, conclusion=conclusion, standard=standard)


KEY_RATIONALE = (
    _k("defect", "entry_missing_from_listing", "master:balances (get_balances) against the listing's movements; the "
       "entry numbering", "the missing entry id, its amount, the two accounts whose closing balance does not roll forward",
       "The listing omits an entry: the numbering has a gap and two accounts' closing balances differ from opening plus "
       "listed movements by the same amount. The population tested is incomplete; obtain and test the missing entry.",
       "AS 2401.58-.62 (the journal entries tested come from a complete population); ISA 240.32(a)"),
    _k("defect", "unbalanced_not_reported", "the entry, the billing interface's rounding report of its month, the journal "
       "entry policy", "debits, credits and their difference; the report, which does not list the upload",
       "A billing upload whose credits differ from its debits by an amount the interface did not report as rounding: a "
       "keying or interface error the policy requires corrected before the close."),
    _k("defect", "unbalanced_reported_otherwise", "the entry, the rounding report, the journal entry policy",
       "debits, credits and the difference posted; the report's other figure for the upload",
       "The rounding report gives this upload a different difference than the one posted: the posted difference is "
       "unexplained and not tolerated by the policy."),
    _k("defect", "self_approved_not_logged", "the outage's manual approval log, master:users, the journal entry policy",
       "the preparer recorded as approver, the amount, the log without the entry",
       "Recorded with its preparer as approver during the workflow incident and never signed off by a second approver: "
       "self-approved, against policy 3 and 3a.", "AS 2201 (segregation of duties over journal entries); " + _JE),
    _k("defect", "self_approved_signed_after_posting", "the manual approval log, master:users, the journal entry policy",
       "the preparer, the amount, the log's sign-off date after the posting date",
       "The second approver signed the log only after the entry was posted: approval did not precede posting, so the "
       "entry was self-approved when posted.", "AS 2201 (segregation of duties over journal entries); " + _JE),
    _k("defect", "posting_to_not_yet_open_account", "master:accounts; the entry's timestamp",
       "the account, its opening date after the posting date, the posting date; the entry keyed on or after the opening",
       "A month's bank charges keyed after the month end to a sub-account created after it and dated back to the month "
       "end: the account was not open on the posting date, so the ERP's check at keying did not stop a back-dated "
       "posting; the classification and period of the charges are unsupported.",
       "AS 2401.61 (entries to unusual or new accounts, back-dated entries); ISA 240.A43; " + _JE),
    _k("defect", "posted_after_termination", "master:users", "the preparer, the termination date, the later posting date",
       "Keyed under the user id of an employee after the termination date: access was not removed and someone used the "
       "leaver's credentials.", "AS 2401.61 (entries by individuals who do not normally make them); ISA 240.A43; " + _JE),
    _k("defect", "off_hours_unauthorised", "master:calendar, the posting-window policy",
       "the preparer, the day (weekend, holiday or business day) and the time outside 08:00-18:00",
       "Manual entry keyed outside the posting window with no out-of-hours work authorisation for that day."),
    _k("defect", "off_hours_unlisted_user", "master:calendar, the posting-window policy, the day's authorisation",
       "the preparer, the day, the time; the authorisation, which does not name the preparer",
       "The only authorisation for that day names other users: this preparer worked out of hours unauthorised."),
    _k("defect", "off_hours_outside_hours", "master:calendar, the posting-window policy, the day's authorisation",
       "the preparer, the day, the time; the authorisation's hours, which do not cover it",
       "The preparer was authorised for that day but keyed the entry outside the authorised hours."),
    _k("defect", "entry_after_close_no_extension", "the entry, master:calendar, the period-close policy",
       "the posting date, the recording date, the period's close date",
       "Recorded after the period's close date and back-dated into the locked period, with no close extension: a "
       "post-closing entry against policy 4.", _LATE),
    _k("defect", "entry_after_close_after_extension", "the entry, master:calendar, the period-close policy, the close "
       "calendar change", "the posting and recording dates, the close date, the extension's new close date",
       "The period's close was extended, but the entry was recorded after even the extended date.", _LATE),
    _k("decoy", "interface_rounding_reported", "the rounding report, the journal entry policy",
       "debits, credits, the difference, the report's identical figure, the tolerance",
       "The difference is the interface's reported rounding, as reported and within the policy's tolerance: no exception."),
    _k("decoy", "signed_off_on_outage_log", "the manual approval log, master:users, the journal entry policy",
       "the log row: the second approver and the sign-off date on or before posting; the approver's limit",
       "The ERP recorded the preparer as approver during the incident, but a second approver whose limit covers the "
       "amount signed the entry off before posting (policy 3a): approved, no exception.",
       "AS 2201 (segregation of duties over journal entries); " + _JE),
    _k("decoy", "account_opened_before_posting", "master:accounts", "the account, its opening date, the later posting date",
       "A new account opened during the year, before this posting: valid for posting."),
    _k("decoy", "posted_before_termination", "master:users", "the preparer, the termination date, the earlier posting date",
       "Keyed by a leaver while still employed, with posting rights for the document type: no exception."),
    _k("decoy", "authorised_out_of_hours_work", "the day's out-of-hours authorisation, the posting-window policy",
       "the authorisation: issued before the day, naming the preparer, the day, hours covering the time, and the purpose "
       "(the period's supplier invoices and accruals), which is what the entry is",
       "Keyed out of hours under a prior written authorisation that covers the user, the day, the time and the kind of "
       "entry: no exception."),
    _k("decoy", "recorded_within_close_extension", "master:calendar, the period-close policy, the close calendar change",
       "the change: issued by the original close date, extending the close to or past the recording date",
       "Recorded after the calendar close but within a close extension issued before the close: no exception.", _LATE),
)

JE_POLICY_TITLE = "Journal entry policy - balancing and approval (FIN-POL-010)"
CLOSE_POLICY_TITLE = "Posting windows and period-close policy (FIN-POL-014)"
KINDS = ("UNBALANCED", "SELF_APPROVAL", "INVALID_ACCOUNT", "UNAUTHORISED_USER", "OFF_HOURS", "CUTOFF")
AR_TEMPLATES = ("customer_invoice", "customer_receipt")
#: staff who leave during FY2025, with the document types their role keys (as their colleagues')
LEAVERS = (("NWALSH", "Nora Walsh", "AP Clerk", "Accounts Payable", 5_000, ("VI", "VN")),
           ("OBAKER", "Omar Baker", "GL Accountant", "General Ledger", 10_000, ("AC", "BC", "BI", "TX")),
           ("PROSSI", "Paolo Rossi", "AP Clerk", "Accounts Payable", 5_000, ("VI", "VN")))
HOURS = (BUSINESS_HOURS[0] // 3600, BUSINESS_HOURS[1] // 3600)  # 08:00-18:00
_MONTH_WORD = re.compile(r"\b(" + "|".join(MONTH_ABBR) + r")\b")


# ----------------------------------------------------------------------------- world
def plant(b) -> None:
    """Plant the missing entry, the exceptions and look-alikes of every criterion, and their documents."""
    rng = b.rng
    _assert_clean_base(b)
    tol_cents = int(rng.choice([2_500, 5_000, 10_000, 25_000]))  # the interface rounding tolerance
    closes = dict(month_close_dates())
    pol_je = b.add_document("policy", JE_POLICY_TITLE, _je_policy(b, tol_cents), "2024-11-20")
    pol_close = b.add_document("policy", CLOSE_POLICY_TITLE, _close_policy(b), "2024-11-29")
    b.facts["brief_notes"] = {
        "journal numbering": "the ERP numbers journal entries consecutively; report an entry missing from the listing by "
                             "flagging its entry id",
        "trial balance": "opening and closing balances per account come from get_balances (cite master:balances)",
        "year end close": f"the FY2025 books were closed on {b.facts['year_end_close']}",
    }

    n_kinds = max(0, b.n_defects - 1)
    start = int(rng.integers(0, len(KINDS)))
    def_kinds = [KINDS[(start + i) % len(KINDS)] for i in range(n_kinds)]
    start = int(rng.integers(0, len(KINDS)))
    dec_kinds = [KINDS[(start + i) % len(KINDS)] for i in range(b.n_decoys)]

    def count(kinds: list[str], kind: str) -> int:
        return sum(x == kind for x in kinds)

    if b.n_defects >= 1:
        _plant_gap(b)
    ctx = {"tol": tol_cents, "pol_je": pol_je, "pol_close": pol_close, "closes": closes}
    _plant_unbalanced(b, ctx, count(def_kinds, "UNBALANCED"), count(dec_kinds, "UNBALANCED"))
    _plant_self_approval(b, ctx, count(def_kinds, "SELF_APPROVAL"), count(dec_kinds, "SELF_APPROVAL"))
    _plant_accounts(b, count(def_kinds, "INVALID_ACCOUNT"), count(dec_kinds, "INVALID_ACCOUNT"))
    _plant_users(b, count(def_kinds, "UNAUTHORISED_USER"), count(dec_kinds, "UNAUTHORISED_USER"))
    _plant_off_hours(b, ctx, count(def_kinds, "OFF_HOURS"), count(dec_kinds, "OFF_HOURS"))
    _plant_cutoff(b, ctx, count(def_kinds, "CUTOFF"), count(dec_kinds, "CUTOFF"))
    for u in b.users:
        # empty text, not None: a text column with nulls does not hash (builder/_hash.py)
        u["termination_date"] = u["termination_date"] or ""


def _assert_clean_base(b) -> None:
    """The properties of the books this task relies on (the rules must not fire on them): balanced
    entries, manual entries approved by someone else, keyed in office hours on business days by
    users with posting rights, within the close of the period they post to."""
    e = b.e
    manual = e["manual"]
    if (e["debit_cents"] != e["credit_cents"]).any():
        raise RuntimeError("JE-16 base has unbalanced entries")
    if (manual & (e["approver"] == e["preparer"])).any():
        raise RuntimeError("JE-16 base has self-approved manual entries")
    day = e["entry_date"].astype("datetime64[D]")
    off = manual & (~cal.is_business_day(day) | (e["time_s"] < HOURS[0] * 3600) | (e["time_s"] >= HOURS[1] * 3600))
    if off.any():
        raise RuntimeError("JE-16 base has manual entries outside the posting window")
    no_rights = [u["user_id"] for u in b.users if not u["posting_rights"] or u["status"] != "active"]
    if np.isin(e["preparer"][manual], no_rights).any():
        raise RuntimeError("JE-16 base has manual entries by users without posting rights")
    if (day > _close_of(e["post_date"])).any():
        raise RuntimeError("JE-16 base has entries recorded after the close of their period")


def _close_of(post: np.ndarray) -> np.ndarray:
    """The close date of each posting date's period (the year-end close for December)."""
    closes = np.array([c for _, c in month_close_dates()], dtype="datetime64[D]")
    return closes[post.astype("datetime64[M]").astype(np.int64) % 12]


def _children_first_entry(b) -> np.ndarray:
    """Per entry, the earliest recording day of a document the books derive from it (a payment of an
    invoice, the reversal of an accrual): an entry may not be recorded after those."""
    d = b.books.docs
    has = np.flatnonzero((d.parent >= 0) & (d.entry_date >= 0))
    first = np.full(len(d), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, d.parent[has], d.entry_date[has].astype(np.int64))
    bd = b.e["books_doc"]
    out = np.where(bd >= 0, first[np.maximum(bd, 0)], np.iinfo(np.int64).max)
    return np.minimum(out, np.datetime64("2100-01-01", "D").astype(np.int64)).astype("datetime64[D]")


def _je_policy(b, tol_cents: int) -> str:
    return (
        "1. Scope. All journal entries posted to the general ledger of Northwind Components Inc.\n"
        "2. Balancing. Every journal entry must balance: total debits must equal total credits. Entries uploaded by the "
        "billing interface (SYS_INTERFACE) may carry the interface's unit-price and tax rounding; the interface reports "
        "each such difference, by upload reference, on its monthly rounding report. A difference on the report, as "
        f"reported, of up to USD {tol_cents / 100:,.2f} per entry is tolerated and is cleared monthly to the suspense "
        "account by the GL team. Any other difference (not on the report, not as reported, or larger) is a keying or "
        "interface error and must be corrected before period close.\n"
        "3. Approval. Every manual journal entry must be approved in the ERP workflow, before it is posted, by a user "
        "other than its preparer whose approval limit covers the amount. A preparer may never approve his or her own "
        "entry.\n"
        "3a. Workflow outages. When the approval workflow fails, IT opens an incident and the ERP records the preparer "
        "as approver of the entries posted meanwhile. Each such entry must be signed off before posting, on the "
        "incident's manual approval log, by a second approver whose limit covers the amount. An entry recorded with "
        "its preparer as approver and not so signed off is self-approved.\n"
        "4. Posting rights. Only users with posting rights in the user master may post; access ends on the "
        "termination date."
    )


def _close_policy(b) -> str:
    return (
        "1. Posting window. Manual journal entries are keyed on business days (Monday to Friday, excluding the "
        f"company holidays in the calendar master data) between {HOURS[0]:02d}:00 and {HOURS[1]:02d}:00 local time, "
        "as shown by the entry timestamp.\n"
        "2. Work outside the window (weekends, holidays, evenings and early mornings) requires a prior written "
        "out-of-hours work authorisation from the Controller naming the users, the date and the hours. Entries keyed "
        "outside the window by anyone not so authorised are to be investigated.\n"
        "3. Automated postings by the system users run overnight on the batch schedule and are not subject to the "
        "manual posting window.\n"
        "4. Period close. Each monthly period is closed on the close date set in the financial close calendar "
        "(calendar master data, kind period_close). Entries recorded up to and including the close date may still be "
        "posted into the period being closed; this is normal close work. After the close date the period is locked "
        "and entries may not be back-dated into it.\n"
        "4a. Close extensions. The Controller may extend the close of a period by a written close calendar change "
        "issued on or before the period's close date, stating the period and the new close date; entries recorded up "
        "to and including the new close date may then be posted into that period.\n"
        f"5. The FY2025 year-end close date is {b.facts['year_end_close']}."
    )


def _plant_gap(b) -> None:
    """Leave one ordinary manual entry out of the listing, well inside the numbering range."""
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    where = e["manual"] & (post >= np.datetime64("2025-02-03")) & (post <= np.datetime64("2025-11-28")) & \
        np.isin(e["template"], ("accrual", "vendor_invoice")) & (e["n_lines"] == 2)
    idx = int(b.pick(1, where=where, what="manual entries")[0])
    b.hide(idx)
    b.add_defect(idx, "entry_missing_from_listing", "COMPLETENESS_GAP", ["master:balances"], int(e["debit_cents"][idx]),
                 facts=[f"{{E:{idx}}}", int(e["debit_cents"][idx]) / 100, str(e["debit_account"][idx]),
                        str(e["credit_account"][idx])])


def _split(b, n_def: int, n_dec: int, where: np.ndarray, what: str) -> tuple[list[int], list[int]]:
    """Pick ``n_def + n_dec`` candidates from one pool and make each a defect or a decoy at random."""
    n = n_def + n_dec
    if n == 0:
        return [], []
    idx = [int(i) for i in b.pick(n, where=where, what=what)]
    order = b.rng.permutation(n)
    return [idx[k] for k in order[:n_def]], [idx[k] for k in order[n_def:]]


def _plant_unbalanced(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """Billing-interface uploads (customer invoices) whose credits differ from their debits, every difference drawn from one
    distribution within the policy's tolerance: a decoy's difference is on the interface's rounding
    report of its month as it stands; a defect's is not (or, with ``near_miss`` >= 0.5, the report
    shows another figure for the upload). Each month with such an upload has its report, so neither
    the size of a difference nor the list of reports tells them apart."""
    rng = b.rng
    e = b.e
    tol = ctx["tol"]
    # customer invoices: the interface prices units and computes tax, so rounding can only arise there
    pool = ~e["manual"] & (e["doc_code"] == "CI") & (e["debit_cents"] > 20 * tol)
    defects, decoys = _split(b, n_def, n_dec, pool, "billing interface uploads")
    if not defects and not decoys:
        return
    lo = 0.1 + 0.6 * b.knobs.near_miss
    for idx in defects + decoys:
        diff = max(1, int(tol * rng.uniform(lo, 1.0)))
        e["credit_cents"][idx] += diff if rng.random() < 0.5 else -diff
    variants = ["not_reported"] + (["reported_otherwise"] if b.knobs.near_miss >= 0.5 else [])
    first = int(rng.integers(0, len(variants)))
    kinds = {idx: variants[(first + j) % len(variants)] for j, idx in enumerate(defects)}
    lines: dict[int, list[tuple[str, int]]] = {}
    for idx in defects + decoys:
        m = int(str(e["post_date"][idx])[5:7])
        diff = int(e["debit_cents"][idx]) - int(e["credit_cents"][idx])
        if idx in decoys:
            lines.setdefault(m, []).append((str(e["reference"][idx]), diff))
        elif kinds[idx] == "reported_otherwise":
            other = int(diff * rng.uniform(0.05, 0.5)) or (1 if diff > 0 else -1)
            lines.setdefault(m, []).append((str(e["reference"][idx]), other))
        else:
            lines.setdefault(m, [])
    reports = {}
    for m, rows in sorted(lines.items()):
        rows = sorted(rows)
        body = (f"Billing interface (SYS_INTERFACE) - rounding report for period 2025-{m:02d}.\n"
                "Uploads whose credits differ from their debits by unit-price or tax rounding; the GL team clears the "
                "total to the suspense account at month end.\nUpload reference | Difference USD (debits - credits)\n"
                + "\n".join(f"{ref} | {d / 100:+,.2f}" for ref, d in rows)
                + f"\n{len(rows)} upload(s) with a rounding difference.")
        last = (np.datetime64(f"2025-{m:02d}", "M") + 1).astype("datetime64[D]") - 1
        reports[m] = b.add_document("report", f"Billing interface rounding report - {MONTH_ABBR[m - 1]} 2025", body, str(last))
    for idx in defects + decoys:
        m = int(str(e["post_date"][idx])[5:7])
        dr, cr = int(e["debit_cents"][idx]), int(e["credit_cents"][idx])
        diff = abs(dr - cr)
        ev = ["entry", reports[m], ctx["pol_je"]]
        facts = [dr / 100, cr / 100, diff / 100, f"{{D:{reports[m]}}}"]
        if idx in decoys:
            b.add_decoy(idx, "interface_rounding_reported", ev, facts=facts + [tol / 100])
        else:
            b.add_defect(idx, f"unbalanced_{kinds[idx]}", "UNBALANCED", ev, diff, facts=facts)


def _outage_days(rng, k: int) -> list[np.ndarray]:
    """``k`` workflow outages of 3-6 consecutive business days between February and November."""
    days = business_days(np.datetime64("2025-02-03"), np.datetime64("2025-11-28"))
    starts = np.sort(rng.choice(len(days) - 7, size=k, replace=False))
    return [days[s : s + int(rng.integers(3, 7))] for s in starts]


def _plant_self_approval(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """Manual entries keyed during a workflow outage, which the ERP recorded with their preparer as
    approver: decoys were signed off on the outage's manual approval log before posting by an approver
    whose limit covers them; defects were not (missing from the log, or with ``near_miss`` >= 0.5
    signed off only after posting: an approval is dated after what it approves). The entries are the
    books' own, keyed on the outage days; only the recorded approver changes."""
    rng = b.rng
    e = b.e
    if n_def + n_dec == 0:
        return
    limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}
    staff = e["manual"] & np.isin(e["preparer"], [u for u in PREPARERS]) & ~np.isin(e["template"], AR_TEMPLATES) \
        & (e["debit_cents"] < 60_000_00) & (e["entry_date"] == e["post_date"]) & ~b.used
    k = 1 + int(n_def + n_dec > 3)
    for _ in range(40):
        outages = _outage_days(rng, k)
        inside = [staff & np.isin(e["entry_date"], days) for days in outages]
        if int(np.logical_or.reduce(inside).sum()) >= n_def + n_dec:
            break
        k += 1
    defects, decoys = _split(b, n_def, n_dec, np.logical_or.reduce(inside), "manual entries keyed during an outage")
    where: dict[int, int] = {}
    for idx in defects + decoys:
        where[idx] = next(j for j, m in enumerate(inside) if m[idx])
        e["approver"][idx] = e["preparer"][idx]
    variants = ["not_logged"] + (["signed_after_posting"] if b.knobs.near_miss >= 0.5 else [])
    first = int(rng.integers(0, len(variants)))
    plan: list[tuple[int, str]] = [(i, variants[(first + j) % len(variants)]) for j, i in enumerate(defects)]
    plan += [(i, "signed_off") for i in decoys]
    rows: dict[int, tuple] = {}
    for idx, kind in plan:
        cents, prep, day = int(e["debit_cents"][idx]), str(e["preparer"][idx]), e["post_date"][idx]
        if kind == "not_logged":
            continue
        approver = str(rng.choice([a for a in APPROVERS if a != prep and limits[a] >= cents]))
        signed = day + int(rng.integers(1, 4)) if kind == "signed_after_posting" else \
            max(e["doc_date"][idx], day - int(rng.integers(0, 2)))
        rows[idx] = (approver, str(signed), kind)
    handles = []
    for k, days in enumerate(outages):
        lines = [f"{e['reference'][i]} | {int(e['debit_cents'][i]) / 100:,.2f} | {e['preparer'][i]} | {rows[i][0]} | "
                 f"{rows[i][1]}" for i in sorted(rows, key=lambda i: (str(e['post_date'][i]), str(e['reference'][i])))
                 if where[i] == k]
        inc = int(rng.integers(10_000, 99_999))
        handles.append(b.add_document(
            "memo", f"Manual approval log - ERP workflow incident INC-{inc}",
            f"IT incident INC-{inc}: the ERP approval workflow failed intermittently from {days[0]} to {days[-1]}. "
            "Entries posted while it was failing were recorded with their preparer as approver. Under FIN-POL-010 3a "
            "each of them was to be signed off on this log by a second approver before posting.\n"
            "Reference | Amount USD | Preparer | Signed off by | Date signed\n" + "\n".join(lines),
            str(days[-1] + 1)))
    for idx, kind in plan:
        log = handles[where[idx]]
        prep, cents, day = str(e["preparer"][idx]), int(e["debit_cents"][idx]), str(e["post_date"][idx])
        ev = [log, "master:users", ctx["pol_je"]]
        if kind == "signed_off":
            b.add_decoy(idx, "signed_off_on_outage_log", ev, facts=[f"{{D:{log}}}", rows[idx][0], rows[idx][1]])
            continue
        kind = rows[idx][2] if idx in rows else "not_logged"
        facts = [prep, cents / 100, f"{{D:{log}}}"]
        if kind == "signed_after_posting":
            facts += [rows[idx][1], day]
        b.add_defect(idx, f"self_approved_{kind}", "SELF_APPROVAL", ev, facts=facts)


#: bank-charge sub-accounts that may open during FY2025: (code, name). Each seed blocks one, closes
#: one and opens others during the year, so a code on the listing says nothing until the chart is
#: read. Bank charges are keyed by the GL team from the bank statement without a vendor, so a
#: sub-account changes nothing else in the books.
CHANGING_ACCOUNTS = (
    ("6945", "Bank Charges - Payroll Account"), ("6951", "Bank Charges - Card Processing"),
    ("6952", "Bank Charges - Lockbox Fees"), ("6953", "Bank Charges - Foreign Payments"),
    ("6954", "Bank Charges - Cash Management"), ("6955", "Bank Charges - Wire Transfers"),
    ("6956", "Bank Charges - Former Operating Bank"), ("6957", "Bank Charges - Letters of Credit"),
    ("6958", "Bank Charges - Merchant Services"), ("6959", "Bank Charges - Sweep Account"),
    ("6961", "Bank Charges - Positive Pay"), ("6962", "Bank Charges - ACH Origination"),
    ("6963", "Bank Charges - Remote Deposit"), ("6964", "Bank Charges - Account Analysis"),
    ("6966", "Bank Charges - Returned Items"),
)


def _plant_accounts(b, n_def: int, n_dec: int) -> None:
    """Bank-charge sub-accounts opened during the year. A decoy is a month's bank charges posted to a
    sub-account opened before the posting date; a defect is a month's bank charges keyed (as the books
    key them, a few business days after the month end) to a sub-account opened after the month end
    and back-dated to it: the ERP accepted the account because it existed when the entry was keyed,
    but it was not open on the posting date. Two sub-accounts blocked or closed before the year stand
    in the chart untouched (an ERP rejects postings to them)."""
    rng = b.rng
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    keyed = e["entry_date"].astype("datetime64[D]")
    # February-November postings: a defect's sub-account opens after its posting date, and a December
    # posting would leave it opening in 2026, after the year-end closing entry that closes it
    pool = (e["doc_code"] == "BC") & (post >= np.datetime64("2025-02-01")) & (post < np.datetime64("2025-12-01")) \
        & (keyed > post)
    gap_max = 2 + int(round((1 - b.knobs.near_miss) * 45))
    codes = [CHANGING_ACCOUNTS[i] for i in rng.permutation(len(CHANGING_ACCOUNTS))]
    (blk_code, blk_name), (cl_code, cl_name) = codes[0], codes[1]
    rows = []
    defects, decoys = _split(b, n_def, n_dec, pool, "bank charge entries keyed after the month end")
    free = iter(codes[2:])
    if decoys:
        # the earlier decoys go to one opened account, the later ones to another
        by_date = sorted(decoys, key=lambda i: (post[i], i))
        half = (len(by_date) + 1) // 2
        for share in (by_date[:half], by_date[half:]):
            if not share:
                continue
            code, name = next(free)
            opened_on = max(np.datetime64("2025-01-02"), min(post[i] for i in share) - int(rng.integers(1, gap_max + 1)))
            rows.append({"account": code, "name": name, "type": "expense", "normal_balance": "debit", "contra_of": None,
                         "status": "active", "opened": str(opened_on), "closed": "", "blocked_on": ""})
            for idx in share:
                e["debit_account"][idx] = code
                b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"],
                            facts=[code, str(opened_on), str(post[idx])])
    for idx in defects:
        code, name = next(free)
        # opened after the posting date, on or before the day the entry was keyed
        span = int((keyed[idx] - post[idx]).astype(int))
        opened_on = post[idx] + int(rng.integers(1, span + 1))
        rows.append({"account": code, "name": name, "type": "expense", "normal_balance": "debit", "contra_of": None,
                     "status": "active", "opened": str(opened_on), "closed": "", "blocked_on": ""})
        e["debit_account"][idx] = code
        b.add_defect(idx, "posting_to_not_yet_open_account", "INVALID_ACCOUNT", ["master:accounts"],
                     facts=[code, str(opened_on), str(post[idx])])
    blk_on = str(np.datetime64("2024-03-01") + int(rng.integers(0, 300)))
    cl_on = str(np.datetime64("2024-03-31") + int(rng.integers(0, 240)))
    rows.append({"account": blk_code, "name": blk_name, "type": "expense", "normal_balance": "debit", "contra_of": None,
                 "status": "blocked", "opened": "2015-01-01", "closed": "", "blocked_on": blk_on})
    rows.append({"account": cl_code, "name": cl_name, "type": "expense", "normal_balance": "debit", "contra_of": None,
                 "status": "closed", "opened": "2015-01-01", "closed": cl_on, "blocked_on": ""})
    for a in b.accounts:
        a["closed"] = a["closed"] or ""
        a["blocked_on"] = a["blocked_on"] or ""
    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])


def _plant_users(b, n_def: int, n_dec: int) -> None:
    """Two leavers (terminated during the year): one keyed manual entries in the weeks before the
    termination date (decoys), the other in the weeks after it (defects). Which leaver is which, and
    where the dates fall, only the user master tells: on the listing each is a preparer whose
    entries cluster in a window (``near_miss`` narrows it), and neither's entries straddle a date."""
    rng = b.rng
    e = b.e
    post = e["post_date"].astype("datetime64[D]")
    w0 = 10 + int(round((1 - b.knobs.near_miss) * 40))
    pair = [LEAVERS[i] for i in rng.permutation(len(LEAVERS))[:2]]
    for (uid, name, role, dept, limit, posts), n, after in ((pair[0], n_dec, False), (pair[1], n_def, True)):
        term = np.datetime64("2025-03-03") + int(rng.integers(0, 220))
        # entries of the kinds the leaver's role keys, recorded on their posting day
        ok = e["manual"] & np.isin(e["doc_code"], posts) & (e["entry_date"] == e["post_date"])
        w = w0

        def window(w: int) -> np.ndarray:
            return ok & ((post > term) & (post <= term + w) if after else (post < term) & (post >= term - w))

        while int((window(w) & ~b.used).sum()) < n and w < 400:
            w += 14
        for idx in b.pick(n, where=window(w), what="manual entries around a termination") if n else []:
            e["preparer"][idx] = uid
            if e["approver"][idx] == uid:
                e["approver"][idx] = "JWRIGHT"
            facts = [uid, str(term), str(post[idx])]
            if after:
                b.add_defect(idx, "posted_after_termination", "UNAUTHORISED_USER", ["master:users"], facts=facts)
            else:
                b.add_decoy(idx, "posted_before_termination", ["master:users"], facts=facts)
        b.users.append({"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
                        "may_post": ", ".join(posts), "approval_limit": float(limit), "status": "terminated",
                        "hire_date": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800))),
                        "termination_date": str(term), "bank_account": b.bank_account()})


def _off_time(rng, day_kind: str) -> int:
    """Seconds after midnight of an out-of-hours keying: any daytime hour on a weekend or a holiday,
    an evening or an early morning on a business day."""
    if day_kind != "evening":
        return int(rng.integers(8 * 3600, 20 * 3600))
    return int(rng.integers(18 * 3600 + 900, 22 * 3600 + 1800)) if rng.random() < 0.75 else \
        int(rng.integers(5 * 3600 + 1800, 7 * 3600 + 2700))


#: the holidays the posting-window rule is read against: those of the calendar master table (the
#: fiscal year's), so every keying day drawn is out of the window as the agent reads it (New Year's
#: Day 2026, not in the table, is an evening like any business day's)
_LISTED_HOLIDAYS = cal.holiday_dates(cal.FISCAL_YEAR)
#: the listed holidays that fall on a weekday
_BUSINESS_HOLIDAYS = _LISTED_HOLIDAYS[np.is_busday(_LISTED_HOLIDAYS)]
#: who keys which of the entries this task moves out of hours (the books' users)
_KEYS = {"VI": ("AKIM", "BOKAFOR", "GSILVA"), "VN": ("AKIM", "BOKAFOR", "GSILVA"), "AC": ("DPATEL", "EMUELLER", "FNGUYEN")}


def _keying_days(b, idx: int, child_first: np.ndarray) -> np.ndarray:
    """Days entry ``idx`` could have been keyed on: from its posting day (or the day it was keyed, if
    later) until a week later, within its period's close and before anything the books derive from it."""
    e = b.e
    lo = max(e["post_date"][idx], e["entry_date"][idx])
    hi = min(e["post_date"][idx] + 6, _close_of(e["post_date"][idx : idx + 1])[0], child_first[idx] - 1)
    return np.arange(lo, hi + 1, dtype="datetime64[D]") if hi >= lo else np.zeros(0, dtype="datetime64[D]")


def _slot(rng, days: np.ndarray, avoid: set) -> tuple[np.datetime64, str] | None:
    """An out-of-hours keying day among ``days`` (a weekend, a holiday or a business day's evening)."""
    kinds = {"weekend": days[~np.is_busday(days)], "holiday": days[np.isin(days, _BUSINESS_HOLIDAYS)],
             "evening": days[np.is_busday(days, holidays=_LISTED_HOLIDAYS)]}
    for kind in rng.choice(["weekend", "holiday", "evening"], size=3, replace=False, p=[0.5, 0.15, 0.35]).tolist():
        ok = [d for d in kinds[kind].tolist() if np.datetime64(d, "D") not in avoid]
        if ok:
            return np.datetime64(ok[int(rng.integers(0, len(ok)))], "D"), kind
    return None


def _plant_off_hours(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """Manual entries keyed outside the posting window (weekend, holiday, evening or early morning)
    within a week of their posting date, all drawn from one distribution; a decoy's day has an
    out-of-hours work authorisation naming its preparer and covering its time, whose purpose (keying
    the period's supplier invoices and accruals) is what the entry is; a defect's day has none (or,
    with ``near_miss`` >= 0.5, one that does not name the preparer or does not cover the time). Only
    when the entry was keyed changes: its posting date, preparer and documents are the books'."""
    rng = b.rng
    e = b.e
    child_first = _children_first_entry(b)
    staff = e["manual"] & np.isin(e["preparer"], PREPARERS) & np.isin(e["doc_code"], tuple(_KEYS)) & ~b.used
    order = rng.permutation(np.flatnonzero(staff)).tolist()

    keyed: dict[int, tuple] = {}  # when the entries moved here were keyed in the books

    def place(avoid: set, want=None):
        """Reserve the next pool entry that can be keyed out of hours (on ``want``'s day, if given)."""
        for idx in order:
            if b.used[idx]:
                continue
            days = _keying_days(b, idx, child_first)
            if want is not None:
                day, prep_ok = want
                if not (days == day).any() or not prep_ok(str(e["preparer"][idx])):
                    continue
                kind = "evening" if np.is_busday(day, holidays=_LISTED_HOLIDAYS) else "weekend"
            else:
                got = _slot(rng, days, avoid)
                if got is None:
                    continue
                day, kind = got
            b.used[idx] = True
            keyed[idx] = (e["entry_date"][idx], int(e["time_s"][idx]))
            e["entry_date"][idx] = day
            e["time_s"][idx] = _off_time(rng, kind)
            return idx
        return None

    memos: dict[np.datetime64, dict] = {}
    decoys = []
    for _ in range(n_dec):
        idx = place(set())
        if idx is None:
            raise ConfigError("impossible knobs for JE-16: not enough manual entries to key out of hours")
        decoys.append(idx)
        m = memos.setdefault(e["entry_date"][idx], {"users": set(), "times": [], "defects": [], "unlisted": set()})
        m["users"].add(str(e["preparer"][idx]))
        m["times"].append(int(e["time_s"][idx]))
    near = b.knobs.near_miss >= 0.5 and bool(memos)
    variants = ["unauthorised"] + (["unlisted_user", "outside_hours"] if near else [])
    first = int(rng.integers(0, len(variants)))
    kinds, defects = {}, []
    for j in range(n_def):
        kind = variants[(first + j) % len(variants)]
        idx = None
        if kind != "unauthorised":
            for day in rng.permutation(sorted(memos)).tolist():
                day = np.datetime64(day, "D")
                m = memos[day]
                ok = (lambda p, m=m: p not in m["users"]) if kind == "unlisted_user" else (lambda p, m=m: p in m["users"])
                idx = place(set(), (day, ok))
                if idx is not None:
                    t = int(e["time_s"][idx])
                    lo, hi = min(m["times"]), max(m["times"])
                    if kind == "outside_hours" and lo // 3600 <= t // 3600 <= hi // 3600 + 1:
                        # inside the span the authorisation must cover: only the preparer can make it a defect
                        kind = "outside_hours_inside"
                    if kind == "outside_hours":
                        m["defects"].append(t)
                    else:
                        m["unlisted"].add(str(e["preparer"][idx]))
                    break
            if kind == "outside_hours_inside":
                # the preparer is listed and the time is covered: it would be authorised; key it elsewhere
                kind = "unauthorised"
                b.used[idx] = False
                e["entry_date"][idx], e["time_s"][idx] = keyed[idx]
                idx = None
        if idx is None:
            kind = "unauthorised"
            idx = place(set(memos))
            if idx is None:
                raise ConfigError("impossible knobs for JE-16: not enough manual entries to key out of hours")
        kinds[idx] = kind
        defects.append(idx)
    handles = {}
    for day, m in sorted(memos.items()):
        lo, hi = min(m["times"]) // 3600, max(m["times"]) // 3600 + 1
        outside = m["defects"]
        start = max(5, lo - int(rng.integers(0, 2)))
        end = min(24, hi + int(rng.integers(0, 2)))
        start = max(start, max([t // 3600 + 1 for t in outside if t // 3600 < lo], default=start))
        end = min(end, min([t // 3600 for t in outside if t // 3600 >= hi], default=end))
        m["window"] = (start, end)
        extra = sorted(set(_KEYS["VI"] + _KEYS["AC"]) - m["users"] - m["unlisted"])
        users = sorted(m["users"] | ({str(rng.choice(extra))} if extra and rng.random() < 0.5 else set()))
        m["listed"] = users
        period = str(np.datetime64(day, "M"))
        periods = sorted({str(np.datetime64(e["post_date"][i], "M")) for i in decoys if e["entry_date"][i] == day})
        issued = day - int(rng.integers(2, 6))  # a prior authorisation
        handles[day] = b.add_document(
            "memo", f"Out-of-hours work authorisation OW-{int(rng.integers(100, 999))}",
            f"From: IBROWN (Controller)\nTo: Finance team, IT operations\nDate: {issued}\n\n"
            f"The following users are authorised to work on {_weekday(day)} {day}, between {start:02d}:00 and "
            f"{'23:59' if end >= 24 else f'{end:02d}:00'}, to key supplier invoices and accruals of period "
            f"{' and '.join(periods) or period}, and to post them in the ERP on that day.\n"
            f"Authorised users: {', '.join(users)}\nEvery entry keyed during this window follows the normal approval workflow.",
            str(issued),
        )
    for idx in decoys:
        day = e["entry_date"][idx]
        b.add_decoy(idx, "authorised_out_of_hours_work", [handles[day], ctx["pol_close"]],
                    facts=[f"{{D:{handles[day]}}}", str(e["preparer"][idx]), str(day)])
    for idx in defects:
        day, kind = e["entry_date"][idx], kinds[idx]
        t = int(e["time_s"][idx])
        facts = [str(e["preparer"][idx]), str(day), f"{t // 3600:02d}:{t % 3600 // 60:02d}"]
        ev = ["master:calendar", ctx["pol_close"]]
        if kind != "unauthorised":
            ev.append(handles[day])
            facts.append(f"{{D:{handles[day]}}}")
        b.add_defect(idx, f"off_hours_{kind}", "OFF_HOURS", ev, facts=facts)


def _record_late(b, idx: int, day) -> None:
    """Record entry ``idx`` on ``day`` in office hours; its posting date stays in its period."""
    b.e["entry_date"][idx] = np.datetime64(day, "D")
    b.e["time_s"][idx] = int(b.rng.integers(9 * 3600, 17 * 3600))


def _weekday(day) -> str:
    return cal.WEEKDAY_NAMES[int(cal.weekday(np.datetime64(day, "D")))]


def _plant_cutoff(b, ctx: dict, n_def: int, n_dec: int) -> None:
    """The books' month-end entries recorded 1-6 business days after their period's close date (their
    posting date kept: back-dated into a locked period), all drawn alike; a decoy's period has a close calendar change (issued by the close date)
    extending the close past the recording date, a defect's has none (or, with ``near_miss`` >= 0.5,
    one that ends before the recording date)."""
    rng = b.rng
    e = b.e
    closes = ctx["closes"]
    post = e["post_date"]
    close = _close_of(post)
    # the books' own work posted in a month's last ten days (January-November: December's close ends
    # the year) that nothing in the books follows until two weeks after the close
    last_days = post >= cal.last_day_of_month(post) - 9
    pool = e["manual"] & ~np.isin(e["template"], AR_TEMPLATES) & np.isin(e["preparer"], PREPARERS) & last_days \
        & (post < np.datetime64("2025-12-01")) & (_children_first_entry(b) > close + 16)
    defects, decoys = _split(b, n_def, n_dec, pool, "manual entries posted late in a month")
    if not defects and not decoys:
        return
    month_of = {}
    for idx in decoys + defects:
        m = int(str(post[idx])[5:7])
        _record_late(b, idx, cal.business_offset(close[idx], int(rng.integers(1, 7))))
        month_of[idx] = m
    ext: dict[int, np.datetime64] = {}
    for idx in decoys:
        m = month_of[idx]
        rec = e["entry_date"][idx]
        slack = int(rng.integers(0, 3)) if b.knobs.near_miss < 1 else 0
        ext[m] = max(ext.get(m, rec), cal.business_offset(rec, slack))
    kinds = {}
    for idx in defects:
        m = month_of[idx]
        close = np.datetime64(closes[f"2025-{m:02d}"])
        kinds[idx] = "no_extension"
        if m in ext:
            if e["entry_date"][idx] <= ext[m]:
                _record_late(b, idx, cal.business_offset(ext[m], int(rng.integers(1, 3))))
            kinds[idx] = "after_extension"
        elif b.knobs.near_miss >= 0.5 and rng.random() < 0.5 and e["entry_date"][idx] > close + 1 \
                and sum(month_of[j] == m for j in month_of) == 1:
            new = cal.business_offset(e["entry_date"][idx], -int(rng.integers(1, 3)), roll="backward")
            if new > close:
                ext[m] = new
                kinds[idx] = "after_extension"
    handles = {}
    for m, new in sorted(ext.items()):
        close = np.datetime64(closes[f"2025-{m:02d}"])
        issued = cal.business_offset(close, -int(rng.integers(0, 3)), roll="backward")
        handles[m] = b.add_document(
            "memo", f"Close calendar change CC-{int(rng.integers(100, 999))}",
            f"From: IBROWN (Controller)\nDate: {issued}\n\nThe close of period 2025-{m:02d} is extended from {close} to "
            f"{new} to allow late supplier invoices and accruals of the period to be recorded. Entries recorded up to and "
            f"including {new} may be posted into period 2025-{m:02d}; the period is locked after that date.",
            str(issued),
        )
    for idx in decoys:
        m = month_of[idx]
        b.add_decoy(idx, "recorded_within_close_extension", ["master:calendar", ctx["pol_close"], handles[m]],
                    facts=[f"{{D:{handles[m]}}}", str(e["entry_date"][idx]), str(ext[m])])
    for idx in defects:
        m = month_of[idx]
        close = closes[f"2025-{m:02d}"]
        ev = ["entry", "master:calendar", ctx["pol_close"]]
        facts = [str(e["post_date"][idx]), str(e["entry_date"][idx]), close]
        if kinds[idx] == "after_extension":
            ev.append(handles[m])
            facts += [f"{{D:{handles[m]}}}", str(ext[m])]
        b.add_defect(idx, f"entry_after_close_{kinds[idx]}", "CUTOFF", ev, facts=facts)


# ----------------------------------------------------------------------------- strategies
_SCAN_COLUMNS = ["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "preparer",
                 "approver", "source", "reference"]


def _standing(acct: dict | None) -> bool:
    """A plain active account, unchanged during FY2025."""
    return bool(acct) and acct.get("status") == "active" and (acct.get("opened") or "") < "2025-01-01" \
        and not acct.get("closed") and not acct.get("blocked_on")


def _account_ok(acct: dict | None, posted: str) -> tuple[bool, str]:
    """Whether ``acct`` accepted postings on ``posted``, with the reason."""
    if acct is None:
        return False, "does not exist in the chart of accounts"
    if acct.get("status") == "blocked" and (not acct.get("blocked_on") or posted >= acct["blocked_on"]):
        return False, f"is blocked for posting since {acct.get('blocked_on') or 'before the period'}"
    if acct.get("opened") and posted < acct["opened"]:
        return False, f"was only opened on {acct['opened']}"
    if acct.get("closed") and posted > acct["closed"]:
        return False, f"was closed on {acct['closed']}"
    if acct.get("status") not in ("active", "blocked", "closed"):
        return False, f"has status {acct.get('status')}"
    return True, f"was opened on {acct.get('opened')}, before the posting date"


def _user_ok(user: dict | None, posted: str) -> tuple[bool, str]:
    if user is None:
        return False, "is not in the user master"
    if not user.get("posting_rights"):
        return False, f"has no posting rights ({user.get('role')})"
    term = user.get("termination_date") or ""
    if term and posted > term:
        return False, f"was terminated on {term}"
    if term:
        return True, f"was terminated only on {term}, after the posting date"
    return True, "is active with posting rights"


def _off_window(ts: str, holidays: set[str]) -> str | None:
    """Why a manual entry keyed at ``ts`` is outside the posting window (None when inside)."""
    day = ts[:10]
    hour = int(ts[11:13]) + int(ts[14:16]) / 60
    if day in holidays:
        return f"keyed on the holiday {day} at {ts[11:16]}"
    if not np.is_busday(np.datetime64(day)):
        return f"keyed on a weekend day ({day}) at {ts[11:16]}"
    if hour < HOURS[0] or hour >= HOURS[1]:
        return f"keyed on {day} at {ts[11:16]}, outside {HOURS[0]:02d}:00-{HOURS[1]:02d}:00"
    return None


def _scan(kit: Kit):
    """Every line of the listing, grouped by entry."""
    rows = yield from kit.ledger(columns=_SCAN_COLUMNS)
    return entries_of(rows), rows


def _gap_ids(kit: Kit, ents: dict) -> list[str]:
    present = {int(k) for k in ents}
    if not present:
        return []
    return [str(i) for i in range(min(present), max(present) + 1) if i not in present]


def _closes(cal: list[dict]) -> dict[str, str]:
    """Period (YYYY-MM) -> close date, from the calendar master data."""
    out = {}
    for r in cal:
        m = re.search(r"(\d{4}-\d{2})", r.get("description", ""))
        if r.get("kind") == "period_close" and m:
            out[m.group(1)] = r["date"][:10]
    return out


def _rules(ents: dict, users: dict, chart: dict, holidays: set[str], closes: dict[str, str]) -> dict[str, list[str]]:
    """Candidates per criterion by the red-flag rules (the listing and master data, no documents)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for eid in sorted(ents):
        h = ents[eid]
        if abs(h["total_debit"] - h["total_credit"]) > 0.004:
            out["UNBALANCED"].append(eid)
        if h.get("approver") and h["approver"] == h["preparer"]:
            out["SELF_APPROVAL"].append(eid)
        if any(not _standing(chart.get(a)) for a in h["accounts"]):
            out["INVALID_ACCOUNT"].append(eid)
        u = users.get(h["preparer"])
        if h["source"] == "manual" and (u is None or not u.get("posting_rights") or u.get("status") != "active"):
            out["UNAUTHORISED_USER"].append(eid)
        if h["source"] == "manual" and _off_window(h["entry_timestamp"], holidays):
            out["OFF_HOURS"].append(eid)
        close = closes.get(h["posting_date"][:7])
        if close and h["entry_timestamp"][:10] > close:
            out["CUTOFF"].append(eid)
    return out


def naive(kit: Kit):
    """Applies every red-flag rule to the listing and master data and flags all hits, without reading
    the policies, the approval logs, the authorisations, the close calendar changes or the balances;
    reports the numbering gap without an amount."""
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    cal_rows = yield from kit.master("calendar")
    holidays = {r["date"][:10] for r in cal_rows if r.get("kind") == "holiday"}
    ents, _rows = yield from _scan(kit)
    hits = _rules(ents, users, chart, holidays, _closes(cal_rows))
    done = set()
    n = 0
    for crit in KINDS:
        for eid in hits[crit]:
            if eid in done or kit.calls_left <= 2:
                continue
            done.add(eid)
            h = ents[eid]
            amount = abs(h["total_debit"] - h["total_credit"]) if crit == "UNBALANCED" else h["total_debit"]
            yield from kit.flag(eid, crit, [], f"Entry {eid} ({h['total_debit']:.2f}) trips the {crit} rule.", amount=amount)
            n += 1
    for gap in _gap_ids(kit, ents):
        if kit.calls_left > 1:
            yield from kit.flag(gap, "COMPLETENESS_GAP", [], f"Entry number {gap} is missing from the listing.")
            n += 1
    yield from kit.submit(f"Flagged {n} entries that trip a red-flag rule.")


def _docs(kit: Kit):
    """Open the two policies, the interface rounding reports, the approval logs, the out-of-hours
    authorisations and the close calendar changes; returns (tolerance, policy ids, logs,
    authorisations, extensions, rounding reports)."""
    pol = yield from kit.documents("policy")
    ids = {}
    for name, words in (("je", "balancing and approval"), ("close", "period-close")):
        doc = next((d for d in pol if words in d["title"].lower()), None)
        ids[name] = doc["doc_id"] if doc else None
    tol = 0.0
    if ids["je"]:
        body = (yield from kit.open(ids["je"])).get("body", "")
        m = re.search(r"up to USD ([\d,]+\.\d\d)", body)
        tol = float(m.group(1).replace(",", "")) if m else 0.0
    if ids["close"]:
        yield from kit.open(ids["close"])
    reports = {}
    for d in (yield from kit.documents("report")):
        if "rounding report" not in d["title"].lower():
            continue
        body = (yield from kit.open(d["doc_id"])).get("body", "")
        period = re.search(r"rounding report for period (\d{4}-\d\d)", body)
        rows = {}
        for line in body.splitlines():
            m = re.fullmatch(r"(\S+) \| ([+-][\d,]+\.\d\d)", line.strip())
            if m:
                rows[m.group(1)] = float(m.group(2).replace(",", ""))
        if period:
            reports[period.group(1)] = {"doc_id": d["doc_id"], "rows": rows}
    logs, auths, exts = [], [], {}
    for d in (yield from kit.documents("memo")):
        title = d["title"].lower()
        if not any(w in title for w in ("approval log", "out-of-hours", "close calendar change")):
            continue
        body = (yield from kit.open(d["doc_id"])).get("body", "")
        if "approval log" in title:
            span = re.search(r"from (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)", body)
            rows = {}
            for line in body.splitlines():
                cells = [c.strip() for c in line.split("|")]
                if len(cells) == 5 and re.fullmatch(r"\d{4}-\d\d-\d\d", cells[4]):
                    rows[cells[0]] = {"signer": cells[3], "date": cells[4]}
            if span:
                logs.append({"doc_id": d["doc_id"], "from": span.group(1), "to": span.group(2), "rows": rows})
        elif "out-of-hours" in title:
            day = re.search(r"on \w+ (\d{4}-\d\d-\d\d), between (\d\d):(\d\d) and (\d\d):(\d\d)", body)
            users = re.search(r"Authorised users: ([A-Z_, ]+)", body)
            if day and users:
                auths.append({"doc_id": d["doc_id"], "day": day.group(1), "users": {u.strip() for u in users.group(1).split(",")},
                              "hours": f"{day.group(2)}:{day.group(3)}-{day.group(4)}:{day.group(5)}",
                              "from": int(day.group(2)) + int(day.group(3)) / 60,
                              "to": int(day.group(4)) + int(day.group(5)) / 60})
        else:
            m = re.search(r"close of period (\d{4}-\d\d) is extended from (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)", body)
            issued = re.search(r"Date: (\d{4}-\d\d-\d\d)", body)
            if m and issued and issued.group(1) <= m.group(2):  # issued by the original close date
                exts[m.group(1)] = {"doc_id": d["doc_id"], "to": m.group(3)}
    return tol, ids, logs, auths, exts, reports


def careful(kit: Kit):
    """Reads the whole listing, the balances, the user master, the chart, the calendar, the policies,
    the approval logs, the authorisations and the close calendar changes first; then judges every rule
    hit against its evidence, rolls the balances forward to size the missing entry, and disposes of
    everything with what it opened."""
    ents, rows = yield from _scan(kit)
    balances = (yield from kit.call("get_balances")).get("rows", [])
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    chart = {a["account"]: a for a in (yield from kit.master("accounts"))}
    cal_rows = yield from kit.master("calendar")
    holidays = {r["date"][:10] for r in cal_rows if r.get("kind") == "holiday"}
    closes = _closes(cal_rows)
    tol, pol, logs, auths, exts, reports = yield from _docs(kit)
    pj = [pol["je"]] if pol["je"] else []
    pc_ = [pol["close"]] if pol["close"] else []

    hits = _rules(ents, users, chart, holidays, closes)
    flags: dict[str, tuple] = {}   # eid -> (criteria, evidence, rationale, amount, needs_entry)
    clears: dict[str, tuple] = {}  # eid -> (evidence, rationale, needs_entry)
    for eid in hits["UNBALANCED"]:
        h = ents[eid]
        signed = round(h["total_debit"] - h["total_credit"], 2)
        d = abs(signed)
        rep = reports.get(h["posting_date"][:7])
        ev = [eid] + ([rep["doc_id"]] if rep else []) + pj
        reported = rep["rows"].get(h.get("reference") or "") if rep else None
        head = f"debits {h['total_debit']:.2f} vs credits {h['total_credit']:.2f}, a difference of {d:.2f}"
        where = f"rounding report {rep['doc_id']}" if rep else "no interface rounding report for the period"
        if reported is not None and abs(reported - signed) < 0.005 and d <= tol + 1e-9:
            clears[eid] = (ev, f"{head}, reported as such on {where} and within the USD {tol:.2f} tolerance of the journal "
                           "entry policy", True)
        elif reported is not None:
            flags[eid] = ("UNBALANCED", ev, f"{head}; {where} reports {reported:+,.2f} for this upload, not the "
                          "difference posted: an unexplained difference", d, True)
        else:
            flags[eid] = ("UNBALANCED", ev, f"{head}, not on {where}: not an interface rounding difference but a keying "
                          "or interface error", d, True)
    for eid in hits["SELF_APPROVAL"]:
        h = ents[eid]
        day, prep = h["posting_date"], h["preparer"]
        log = next((g for g in logs if g["from"] <= day <= g["to"]), None)
        ev = ([log["doc_id"]] if log else []) + ["master:users", *pj]
        row = log["rows"].get(h.get("reference") or "") if log else None
        where = f"manual approval log {log['doc_id']}" if log else "no workflow incident log"
        base = f"manual entry of {h['total_debit']:,.2f} posted on {day} with its preparer {prep} recorded as approver"
        if row is None:
            flags.setdefault(eid, ("SELF_APPROVAL", ev, f"{base}; it is not signed off on {where}: self-approved",
                                   h["total_debit"], False))
            continue
        signer = users.get(row["signer"], {})
        limit = float(signer.get("approval_limit") or 0)
        if row["signer"] == prep or row["date"] > day:
            flags.setdefault(eid, ("SELF_APPROVAL", ev, f"{base}; {where} shows it signed off by {row['signer']} only on "
                                   f"{row['date']}, after it was posted on {day}", h["total_debit"], False))
        elif limit < h["total_debit"]:
            flags.setdefault(eid, ("SELF_APPROVAL", ev, f"{base}; {where} shows it signed off by {row['signer']}, whose "
                                   f"approval limit of {limit:,.2f} does not cover it", h["total_debit"], False))
        else:
            clears.setdefault(eid, (ev, f"{base} during the workflow incident; {where} shows it signed off by "
                                    f"{row['signer']} on {row['date']}, before posting, within a limit of {limit:,.2f}", False))
    for eid in hits["INVALID_ACCOUNT"]:
        h = ents[eid]
        odd = [a for a in dict.fromkeys(h["accounts"]) if not _standing(chart.get(a))]
        verdicts = [(a, *_account_ok(chart.get(a), h["posting_date"])) for a in odd]
        bad = [f"account {a} {why}" for a, ok, why in verdicts if not ok]
        if bad:
            flags.setdefault(eid, ("INVALID_ACCOUNT", ["master:accounts"], f"posted on {h['posting_date']} to an account not "
                                   f"open for posting: {'; '.join(bad)}", h["total_debit"], False))
        else:
            why = "; ".join(f"account {a} {r}" for a, _ok, r in verdicts)
            clears.setdefault(eid, (["master:accounts"], f"posted on {h['posting_date']} to an account active at that date "
                                    f"per the chart of accounts: {why}", False))
    for eid in hits["UNAUTHORISED_USER"]:
        h = ents[eid]
        ok, why = _user_ok(users.get(h["preparer"]), h["posting_date"])
        if ok:
            clears.setdefault(eid, (["master:users"], f"keyed on {h['posting_date']} by {h['preparer']}, who {why}", False))
        else:
            flags.setdefault(eid, ("UNAUTHORISED_USER", ["master:users"], f"keyed on {h['posting_date']} by {h['preparer']}, "
                                   f"who {why}", h["total_debit"], False))
    for eid in hits["OFF_HOURS"]:
        h = ents[eid]
        ts = h["entry_timestamp"]
        why = _off_window(ts, holidays)
        hour = int(ts[11:13]) + int(ts[14:16]) / 60
        day_memos = [m for m in auths if m["day"] == ts[:10]]
        memo = next((m for m in day_memos if h["preparer"] in m["users"] and m["from"] <= hour < m["to"]), None)
        if memo:
            clears.setdefault(eid, ([memo["doc_id"], *pc_], f"{why}, but out-of-hours work authorisation {memo['doc_id']} "
                                    f"names {h['preparer']} for {ts[:10]}, {memo['hours']}, which covers {ts[11:16]}", False))
        elif day_memos:
            m = day_memos[0]
            gap = f"does not name {h['preparer']}" if h["preparer"] not in m["users"] else \
                f"covers {m['hours']} only, not {ts[11:16]}"
            flags.setdefault(eid, ("OFF_HOURS", ["master:calendar", *pc_, m["doc_id"]], f"manual entry of "
                                   f"{h['total_debit']:.2f} {why} by {h['preparer']}; the only authorisation for that day, "
                                   f"{m['doc_id']}, {gap}", h["total_debit"], False))
        else:
            flags.setdefault(eid, ("OFF_HOURS", ["master:calendar", *pc_], f"manual entry of {h['total_debit']:.2f} {why} by "
                                   f"{h['preparer']}, with no out-of-hours work authorisation for that day",
                                   h["total_debit"], False))
    for eid in hits["CUTOFF"]:
        h = ents[eid]
        rec, posted = h["entry_timestamp"][:10], h["posting_date"]
        close = closes.get(posted[:7])
        ext = exts.get(posted[:7])
        if ext and rec <= ext["to"]:
            clears.setdefault(eid, (["master:calendar", *pc_, ext["doc_id"]], f"posted on {posted} and recorded on {rec}, "
                                    f"after the calendar close {close} but within the extension of the close to "
                                    f"{ext['to']} by close calendar change {ext['doc_id']}", False))
        else:
            ev = [eid, "master:calendar", *pc_] + ([ext["doc_id"]] if ext else [])
            more = f"; close calendar change {ext['doc_id']} extended it only to {ext['to']}" if ext else ""
            flags.setdefault(eid, ("CUTOFF", ev, f"posted on {posted} but recorded on {rec}, after the period's close date "
                                   f"{close}{more}; the period was locked", h["total_debit"], True))
    clears = {k: v for k, v in clears.items() if k not in flags}

    # roll-forward: closing - opening minus the listed movements = what the listing is missing
    moved: dict[str, float] = {}
    for r in rows:
        moved[r["account"]] = moved.get(r["account"], 0.0) + (r.get("debit") or 0.0) - (r.get("credit") or 0.0)
    diffs = {b["account"]: round(b["closing_balance"] - b["opening_balance"] - moved.get(b["account"], 0.0), 2) for b in balances}
    diffs = {a: d for a, d in diffs.items() if abs(d) > 0.005}
    gaps = _gap_ids(kit, ents)
    gap_amount = max((abs(d) for d in diffs.values()), default=0.0)

    for eid in sorted(flags, key=lambda k: (not flags[k][4], k)):
        if kit.calls_left <= 2 + len(gaps):
            break
        crit, ev, why, amount, needs_entry = flags[eid]
        if needs_entry:
            entry = yield from kit.call("get_entry", entry_id=eid)
            if crit == "UNBALANCED" and "total_debit" in entry:
                amount = round(abs(entry["total_debit"] - entry["total_credit"]), 2)
        yield from kit.flag(eid, crit, ev, f"Entry {eid}: {why}.", amount=amount)
    for gap in gaps:
        if kit.calls_left <= 2:
            break
        dr = ", ".join(f"{a} {d:+,.2f}" for a, d in sorted(diffs.items()))
        yield from kit.flag(gap, "COMPLETENESS_GAP", ["master:balances"],
                            f"Entry number {gap} is missing from the consecutively numbered listing, and the roll-forward of "
                            f"the trial balance (closing - opening - listed movements) does not agree for: {dr}. The missing "
                            f"entry moved {gap_amount:,.2f}.", amount=gap_amount)
    for eid in sorted(clears):
        if kit.calls_left <= 1:
            break
        ev, why, needs_entry = clears[eid]
        if needs_entry:
            if kit.calls_left <= 2:
                continue
            yield from kit.call("get_entry", entry_id=eid)
        yield from kit.clear(eid, ev, f"Entry {eid} (USD {ents[eid]['total_debit']:,.2f}): {why}.")
    by = {}
    for crit, *_ in flags.values():
        by[crit] = by.get(crit, 0) + 1
    yield from kit.submit(
        "Flagged " + ", ".join(f"{n} {c}" for c, n in sorted(by.items())) + (f"; {len(gaps)} entry missing from the listing "
        f"(roll-forward difference {gap_amount:,.2f})" if gaps else "") + f". Cleared {len(clears)} look-alikes with their evidence.")
