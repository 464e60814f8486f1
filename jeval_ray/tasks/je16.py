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
candidates within one world help: every residual is within its upload's tolerance, and each leaver's
entries lie on one side of his or her termination date.

| criteria | planted exception (required evidence) | decoy (clearing evidence) | decisive facts |
|---|---|---|---|
| UNBALANCED | a billing-interface customer invoice whose credits differ from its debits (within the policy's tolerance of USD 0.0087 x sqrt(n) for n priced lines, three standard deviations of n half-cent roundings) by a residual, posted by the interface to 2990 Suspense - Interface Differences on a line of its own, that is not on the interface's rounding report of the month, or (near miss) that the report gives as another figure (entry, the report, journal entry policy) | the report lists the upload with exactly that residual, within the tolerance for its priced lines (same) | debits, credits, the residual on suspense, the report and its priced lines; the tolerance |
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
engagement's test list is broader than its findings. Amounts are asked and scored for the
misstatements only: the keying difference for UNBALANCED and the amount of the missing entry (the
roll-forward difference) for COMPLETENESS_GAP (and a duplicate's amount). SELF_APPROVAL,
INVALID_ACCOUNT, UNAUTHORISED_USER, OFF_HOURS and CUTOFF (recorded late, posted in its month) are
control deviations, flagged without an amount: the key keeps the entry's total, never scored, and
an amount given for one is ignored. The gap is reported by flagging the missing id, which
``flag_entry`` accepts inside the numbering range. ``premature_penalty`` (0.05 off the process
score per disposition made before its required or clearing evidence was opened) makes the order
of work part of the score. ``near_miss`` moves interface residuals towards their tolerance,
opened-account decoys towards the opening date, narrows the window of leaver entries around the
termination dates, brings close extensions down to the recording date, and from 0.5 adds the
near-miss UNBALANCED, OFF_HOURS, SELF_APPROVAL and CUTOFF variants.

Only what a real exception changes is planted: who approved, which sub-account, who keyed, when an
entry was recorded (its posting date, amounts and documents stay the books'), or, for an
interface residual, the revenue line of an interface upload and the suspense line that balances it
(every entry and the year balance: ``tests/test_rounding_balance.py``). ``plant`` asserts the properties of the books
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

from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from jeval_ray.books import calendar as cal
from jeval_ray.books.calendar import BUSINESS_HOURS, business_days, month_close_dates
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder._base import APPROVERS, MONTH_ABBR, PREPARERS
from jeval_ray.builder.spec import KeyRationale, key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (ACCOUNT_OPEN, DATE, HHMM, INT, MONEY, NAME, POSTING_WINDOW, ROUNDING_LIMIT,
                                     SIGNED_MONEY, TOKEN, USER_MAY_POST, Disposition, Form, Many, RoundingLimit, clear,
                                     dispose, doc_ref, entry_ref, fixed, flag, Task, hhmm, review)

SPEC = spec(
    "JE-16",
    "L4",
    'Mixed engagement with completeness',
    step_budget=120,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective="Test the full listing against several criteria at once and roll the balances forward to find any entry missing from the listing. Open every flagged entry's evidence before you dispose of it.",
    defect='several criteria at once, plus an entry missing from the listing (roll-forward gap)',
    decoys='all of the above kinds',
    required_evidence="every flagged entry's evidence, opened before its disposition",
    sources=('general_ledger', 'trial_balance', 'user_master', 'chart_of_accounts', 'holiday_calendar', 'close_calendar', 'approval_logs', 'authorisations', 'policies'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'get_balances', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', "the upload's debits and credits differ, and the residual posted to suspense is not a reported, "
         'tolerated one', 'the residual posted to suspense'),
        ('SELF_APPROVAL', 'manual entry approved by its preparer'),
        ('INVALID_ACCOUNT', 'posting to an account not open for posting on the posting date'),
        ('UNAUTHORISED_USER', 'posted without rights or after termination'),
        ('OFF_HOURS', 'manual posting off hours without authorisation'),
        ('DUPLICATE', 'same invoice posted twice', "the duplicate posting's amount"),
        ('CUTOFF', 'entry recorded after period close'),
        ('COMPLETENESS_GAP', 'an entry missing from the listing, revealed by the roll-forward of balances',
         "the missing entry's amount, which the roll-forward difference gives"),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    premature_penalty=0.05,
    available=True,
)

_JE = "AS 2401.58-.62 (examining journal entries); ISA 240.32(a)"
_LATE = "AS 2401.61 (characteristics of fraudulent entries: post-closing entries); ISA 240.A43; " + _JE


def _k(kind: str, type_: str, evidence: str, facts: str, conclusion: str, standard: str = _JE) -> KeyRationale:
    return key(kind, type_, evidence=evidence, facts=facts, conclusion=conclusion, standard=standard)


KEY_RATIONALE = (
    _k("defect", "entry_missing_from_listing", "master:balances (get_balances) against the listing's movements; the "
       "entry numbering", "the missing entry id, its amount, the two accounts whose closing balance does not roll forward",
       "The listing omits an entry: the numbering has a gap and two accounts' closing balances differ from opening plus "
       "listed movements by the same amount. The population tested is incomplete; obtain and test the missing entry.",
       "AS 2401.58-.62 (the journal entries tested come from a complete population); ISA 240.32(a)"),
    _k("defect", "unbalanced_not_reported", "the entry, the billing interface's rounding report of its month, the journal "
       "entry policy", "debits, credits and their difference, posted to suspense 2990; the report, which does not list "
       "the upload",
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
       "debits, credits, the residual on suspense, the report's identical figure and the upload's priced lines n, the "
       "tolerance USD 0.0087 x sqrt(n)",
       "The residual is the interface's reported rounding, as reported and within the policy's tolerance for its priced "
       "lines (three standard deviations of n half-cent roundings): no exception."),
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
PLANT = "JE-16"
#: where the billing interface posts an upload's residual (an account the task adds to the chart)
SUSPENSE = "2990"
SUSPENSE_NAME = "Suspense - Interface Differences"


# ----------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class JePolicy:
    """FIN-POL-010: balancing (the interface rounding it tolerates: ten-thousandths of a USD per square
    root of the upload's priced lines) and approval."""
    per_root_line: int


@dataclass(frozen=True)
class ClosePolicy:
    """FIN-POL-014: the posting window (business hours, seconds after midnight) and the period close."""
    start: int
    end: int
    year_end_close: str


@dataclass(frozen=True)
class Rounding:
    """A line of the interface's rounding report: an upload, its priced lines and its difference (debits -
    credits, cents)."""
    reference: str
    lines: int
    difference: int


@dataclass(frozen=True)
class RoundingReport:
    """The billing interface's rounding report of one period (``period``: YYYY-MM)."""
    period: str
    uploads: tuple[Rounding, ...]
    count: int


@dataclass(frozen=True)
class SignOff:
    """A line of a manual approval log: an entry keyed during the incident and its second sign-off."""
    reference: str
    amount: int
    preparer: str
    signer: str
    signed: str


@dataclass(frozen=True)
class ApprovalLog:
    """The manual approval log of a workflow incident (from ``start`` to ``end``)."""
    incident: int
    start: str
    end: str
    rows: tuple[SignOff, ...]


@dataclass(frozen=True)
class Ident:
    """One id of a list (a user id, a period)."""
    id: str


@dataclass(frozen=True)
class OutOfHours:
    """An out-of-hours work authorisation: the users, the day and the hours (seconds after midnight)."""
    issued: str
    weekday: str
    day: str
    start: int
    end: int
    periods: tuple[Ident, ...]
    users: tuple[Ident, ...]


@dataclass(frozen=True)
class CloseChange:
    """A close calendar change: the close of ``period`` extended from ``close`` to ``new_close``."""
    issued: str
    period: str
    close: str
    new_close: str


JE_POLICY = Form(JePolicy, (
    "1. Scope. All journal entries posted to the general ledger of Northwind Components Inc.\n"
    "2. Balancing. Every journal entry must balance: total debits must equal total credits. Entries uploaded by the "
    "billing interface (SYS_INTERFACE) may carry the interface's unit-price and tax rounding; the interface posts "
    "each upload's residual (its debits less its credits) on a line of its own to account 2990 Suspense - "
    "Interface Differences, so that the entry balances, and reports it, by upload reference and number of priced "
    "lines, on its monthly rounding report. A residual on the report, as reported, of at most USD {per_root_line} "
    "x sqrt(n) for an upload of n priced lines (three standard deviations of n independent half-cent roundings) "
    "is tolerated and is cleared monthly from the suspense account by the GL team. Any other residual (not on "
    "the report, not as reported, or larger) is a keying or interface error and must be corrected before period "
    "close.\n"
    "3. Approval. Every manual journal entry must be approved in the ERP workflow, before it is posted, by a user "
    "other than its preparer whose approval limit covers the amount. A preparer may never approve his or her own "
    "entry.\n"
    "3a. Workflow outages. When the approval workflow fails, IT opens an incident and the ERP records the preparer "
    "as approver of the entries posted meanwhile. Each such entry must be signed off before posting, on the "
    "incident's manual approval log, by a second approver whose limit covers the amount. An entry recorded with "
    "its preparer as approver and not so signed off is self-approved.\n"
    "4. Posting rights. Only users with posting rights in the user master may post; access ends on the "
    "termination date."), per_root_line=fixed(4))
CLOSE_POLICY = Form(ClosePolicy, (
    "1. Posting window. Manual journal entries are keyed on business days (Monday to Friday, excluding the "
    "company holidays in the calendar master data) between {start} and {end} local time, "
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
    "5. The FY2025 year-end close date is {year_end_close}."), start=HHMM, end=HHMM, year_end_close=DATE)
ROUNDING = Form(Rounding, "{reference} | {lines} priced lines | {difference}", reference=TOKEN, lines=INT,
                difference=SIGNED_MONEY)
ROUNDING_REPORT = Form(RoundingReport, (
    "Billing interface (SYS_INTERFACE) - rounding report for period {period}.\n"
    "Uploads whose credits differ from their debits by unit-price or tax rounding; the GL team clears the "
    "total to the suspense account at month end.\nUpload reference | Difference USD (debits - credits)\n"
    "{uploads}\n{count} upload(s) with a rounding difference."), period=TOKEN, uploads=Many((ROUNDING,)))
SIGN_OFF = Form(SignOff, "{reference} | {amount} | {preparer} | {signer} | {signed}", reference=TOKEN, amount=MONEY,
                preparer=TOKEN, signer=TOKEN, signed=DATE)
APPROVAL_LOG = Form(ApprovalLog, (
    "IT incident INC-{incident}: the ERP approval workflow failed intermittently from {start} to {end}. "
    "Entries posted while it was failing were recorded with their preparer as approver. Under FIN-POL-010 3a "
    "each of them was to be signed off on this log by a second approver before posting.\n"
    "Reference | Amount USD | Preparer | Signed off by | Date signed\n{rows}"),
    incident=INT, start=DATE, end=DATE, rows=Many((SIGN_OFF,)))
IDENT = Form(Ident, "{id}", id=TOKEN)
OUT_OF_HOURS = Form(OutOfHours, (
    "From: IBROWN (Controller)\nTo: Finance team, IT operations\nDate: {issued}\n\n"
    "The following users are authorised to work on {weekday} {day}, between {start} and {end}, to key supplier "
    "invoices and accruals of period {periods}, and to post them in the ERP on that day.\n"
    "Authorised users: {users}\nEvery entry keyed during this window follows the normal approval workflow."),
    issued=DATE, weekday=NAME, day=DATE, start=HHMM, end=HHMM, periods=Many((IDENT,), " and "),
    users=Many((IDENT,), ", "))
CLOSE_CHANGE = Form(CloseChange, (
    "From: IBROWN (Controller)\nDate: {issued}\n\nThe close of period {period} is extended from {close} to "
    "{new_close} to allow late supplier invoices and accruals of the period to be recorded. Entries recorded up to and "
    "including {new_close} may be posted into period {period}; the period is locked after that date."),
    issued=DATE, period=TOKEN, close=DATE, new_close=DATE)


# ----------------------------------------------------------------------------- world
@dataclass(frozen=True)
class _Context:
    """What every planting phase shares: the two policies' handles and the periods' close dates."""
    pol_je: int
    pol_close: int
    closes: dict[str, str]


def plant(b: WorldBuilder) -> None:
    """Plant the missing entry, the exceptions and look-alikes of every criterion, and their documents."""
    rng = b.rng
    _assert_clean_base(b)
    closes = dict(month_close_dates())
    b.accounts.append({"account": SUSPENSE, "name": SUSPENSE_NAME, "type": "liability", "normal_balance": "credit",
                       "contra_of": None, "status": "active", "opened": "2015-01-01", "closed": None, "blocked_on": None})
    b.accounts.sort(key=lambda r: r["account"])
    pol_je = b.add_document("policy", JE_POLICY_TITLE, JE_POLICY.render(JePolicy(ROUNDING_LIMIT.per_root_line)),
                            "2024-11-20")
    pol_close = b.add_document("policy", CLOSE_POLICY_TITLE, CLOSE_POLICY.render(
        ClosePolicy(*BUSINESS_HOURS, b.facts["year_end_close"])), "2024-11-29")
    b.claim(PLANT, documents=[pol_je, pol_close])
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
    ctx = _Context(pol_je, pol_close, closes)
    _plant_unbalanced(b, ctx, count(def_kinds, "UNBALANCED"), count(dec_kinds, "UNBALANCED"))
    _plant_self_approval(b, ctx, count(def_kinds, "SELF_APPROVAL"), count(dec_kinds, "SELF_APPROVAL"))
    _plant_accounts(b, count(def_kinds, "INVALID_ACCOUNT"), count(dec_kinds, "INVALID_ACCOUNT"))
    _plant_users(b, count(def_kinds, "UNAUTHORISED_USER"), count(dec_kinds, "UNAUTHORISED_USER"))
    _plant_off_hours(b, ctx, count(def_kinds, "OFF_HOURS"), count(dec_kinds, "OFF_HOURS"))
    _plant_cutoff(b, ctx, count(def_kinds, "CUTOFF"), count(dec_kinds, "CUTOFF"))
    for u in b.users:
        # empty text, not None: a text column with nulls does not hash (builder/_hash.py)
        u["termination_date"] = u["termination_date"] or ""


def _assert_clean_base(b: WorldBuilder) -> None:
    """The properties of the books this task relies on (the rules must not fire on them): balanced
    entries, manual entries approved by someone else, keyed in office hours on business days by
    users with posting rights, within the close of the period they post to."""
    c = b.cols
    manual = c.manual
    if (c.debit_cents != c.credit_cents).any():
        raise RuntimeError("JE-16 base has unbalanced entries")
    if (manual & (c.approver == c.preparer)).any():
        raise RuntimeError("JE-16 base has self-approved manual entries")
    day = c.entry_date.astype("datetime64[D]")
    if (manual & POSTING_WINDOW.outside(day, c.time_s, cal.HOLIDAY_DATES, *BUSINESS_HOURS)).any():
        raise RuntimeError("JE-16 base has manual entries outside the posting window")
    no_rights = [u["user_id"] for u in b.users if not u["posting_rights"] or u["status"] != "active"]
    if np.isin(c.preparer[manual], no_rights).any():
        raise RuntimeError("JE-16 base has manual entries by users without posting rights")
    if (day > _close_of(c.post_date)).any():
        raise RuntimeError("JE-16 base has entries recorded after the close of their period")


def _close_of(post: np.ndarray) -> np.ndarray:
    """The close date of each posting date's period (the year-end close for December)."""
    closes = np.array([c for _, c in month_close_dates()], dtype="datetime64[D]")
    return closes[post.astype("datetime64[M]").astype(np.int64) % 12]


def _children_first_entry(b: WorldBuilder) -> np.ndarray:
    """Per entry, the earliest recording day of a document the books derive from it (a payment of an
    invoice, the reversal of an accrual): an entry may not be recorded after those."""
    d = b.books.docs
    has = np.flatnonzero((d.parent >= 0) & (d.entry_date >= 0))
    first = np.full(len(d), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, d.parent[has], d.entry_date[has].astype(np.int64))
    bd = b.cols.books_doc
    out = np.where(bd >= 0, first[np.maximum(bd, 0)], np.iinfo(np.int64).max)
    return np.minimum(out, np.datetime64("2100-01-01", "D").astype(np.int64)).astype("datetime64[D]")


def _plant_gap(b: WorldBuilder) -> None:
    """Leave one ordinary manual entry out of the listing, well inside the numbering range."""
    c = b.cols
    post = c.post_date.astype("datetime64[D]")
    where = c.manual & (post >= np.datetime64("2025-02-03")) & (post <= np.datetime64("2025-11-28")) & \
        np.isin(c.template, ("accrual", "vendor_invoice")) & (c.n_lines == 2)
    idx = int(b.pick(1, where=where, what="manual entries")[0])
    b.hide(idx)
    b.claim(PLANT, entries=[idx])
    b.add_defect(idx, "entry_missing_from_listing", "COMPLETENESS_GAP", ["master:balances"], int(c.debit_cents[idx]),
                 facts=[entry_ref(idx), int(c.debit_cents[idx]) / 100, str(c.debit_account[idx]),
                        str(c.credit_account[idx])])


def _split(b: WorldBuilder, n_def: int, n_dec: int, where: np.ndarray, what: str) -> tuple[list[int], list[int]]:
    """Pick ``n_def + n_dec`` candidates from one pool and make each a defect or a decoy at random: the
    first ``n_def`` of a random order are the defects, in that order (the draw JE-16's worlds were pinned
    with; the kit's ``roles`` assigns a role per candidate instead, a different draw)."""
    n = n_def + n_dec
    if n == 0:
        return [], []
    idx = [int(i) for i in b.pick(n, where=where, what=what)]
    order = b.rng.permutation(n)
    b.claim(PLANT, entries=idx)
    return [idx[k] for k in order[:n_def]], [idx[k] for k in order[n_def:]]


def _plant_unbalanced(b: WorldBuilder, ctx: _Context, n_def: int, n_dec: int) -> None:
    """Billing-interface uploads (customer invoices) whose credits differ from their debits, every residual
    drawn from one distribution within the policy's tolerance for the upload's priced lines (USD 0.0087 x
    sqrt(n)) and posted by the interface to the suspense account on a line of its own, so the entry and the
    year balance: a decoy's residual is on the interface's rounding report of its month as it stands; a
    defect's is not (or, with ``near_miss`` >= 0.5, the report shows another figure for the upload). Each
    month with such an upload has its report, so neither the size of a residual nor the list of reports
    tells them apart."""
    rng, c = b.rng, b.cols
    # customer invoices: the interface prices units and computes tax, so rounding can only arise there
    pool = ~c.manual & (c.doc_code == "CI") & (c.debit_cents > 50_000)
    defects, decoys = _split(b, n_def, n_dec, pool, "billing interface uploads")
    if not defects and not decoys:
        return
    lo = 0.1 + 0.6 * b.knobs.near_miss
    # per upload: its priced lines and its residual (debits - credits before the suspense line, cents)
    n_lines: dict[int, int] = {}
    residual: dict[int, int] = {}
    for idx in defects + decoys:
        n = n_lines[idx] = int(rng.integers(4, 121))
        diff = max(1, int(ROUNDING_LIMIT.limit_cents(n) * rng.uniform(lo, 1.0)))
        c.credit_cents[idx] += diff if rng.random() < 0.5 else -diff
        residual[idx] = int(c.debit_cents[idx]) - int(c.credit_cents[idx])
        b.set_line(idx, SUSPENSE, -residual[idx])  # the interface balances the entry on suspense
    variants = ["not_reported"] + (["reported_otherwise"] if b.knobs.near_miss >= 0.5 else [])
    first = int(rng.integers(0, len(variants)))
    kinds = {idx: variants[(first + j) % len(variants)] for j, idx in enumerate(defects)}
    lines: dict[int, list[tuple[str, int, int]]] = {}
    for idx in defects + decoys:
        m = int(str(c.post_date[idx])[5:7])
        diff = residual[idx]
        if idx in decoys:
            lines.setdefault(m, []).append((str(c.reference[idx]), n_lines[idx], diff))
        elif kinds[idx] == "reported_otherwise":
            other = int(diff * rng.uniform(0.05, 0.5)) or (1 if diff > 0 else -1)
            other = other if other != diff else diff + (1 if diff > 0 else -1)
            lines.setdefault(m, []).append((str(c.reference[idx]), n_lines[idx], other))
        else:
            lines.setdefault(m, [])
    reports = {}
    for m, rows in sorted(lines.items()):
        uploads = tuple(Rounding(ref, n, d) for ref, n, d in sorted(rows))
        body = ROUNDING_REPORT.render(RoundingReport(f"2025-{m:02d}", uploads, len(uploads)))
        last = (np.datetime64(f"2025-{m:02d}", "M") + 1).astype("datetime64[D]") - 1
        title = f"Billing interface rounding report - {MONTH_ABBR[m - 1]} 2025"
        reports[m] = b.add_document("report", title, body, str(last))
    b.claim(PLANT, documents=reports.values())
    for idx in defects + decoys:
        m = int(str(c.post_date[idx])[5:7])
        diff = abs(residual[idx])
        ev: list = ["entry", reports[m], ctx.pol_je]
        # the entry's totals as posted (balanced by the suspense line), the residual and the report
        facts: list = [int(c.debit_cents[idx]) / 100, diff / 100, doc_ref(reports[m])]
        if idx in decoys:
            assert diff <= ROUNDING_LIMIT.limit_cents(n_lines[idx])
            b.add_decoy(idx, "interface_rounding_reported", ev, facts=facts + [str(n_lines[idx])])
        else:
            b.add_defect(idx, f"unbalanced_{kinds[idx]}", "UNBALANCED", ev, diff, facts=facts)


def _outage_days(rng: np.random.Generator, k: int) -> list[np.ndarray]:
    """``k`` workflow outages of 3-6 consecutive business days between February and November."""
    days = business_days(np.datetime64("2025-02-03"), np.datetime64("2025-11-28"))
    starts = np.sort(rng.choice(len(days) - 7, size=k, replace=False))
    return [days[s : s + int(rng.integers(3, 7))] for s in starts]


def _plant_self_approval(b: WorldBuilder, ctx: _Context, n_def: int, n_dec: int) -> None:
    """Manual entries keyed during a workflow outage, which the ERP recorded with their preparer as
    approver: decoys were signed off on the outage's manual approval log before posting by an approver
    whose limit covers them; defects were not (missing from the log, or with ``near_miss`` >= 0.5
    signed off only after posting: an approval is dated after what it approves). The entries are the
    books' own, keyed on the outage days; only the recorded approver changes."""
    rng, c = b.rng, b.cols
    if n_def + n_dec == 0:
        return
    limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}
    staff = c.manual & np.isin(c.preparer, [u for u in PREPARERS]) & ~np.isin(c.template, AR_TEMPLATES) \
        & (c.debit_cents < 60_000_00) & (c.entry_date == c.post_date) & ~b.used
    k = 1 + int(n_def + n_dec > 3)
    for _ in range(40):
        outages = _outage_days(rng, k)
        inside = [staff & np.isin(c.entry_date, days) for days in outages]
        if int(np.logical_or.reduce(inside).sum()) >= n_def + n_dec:
            break
        k += 1
    defects, decoys = _split(b, n_def, n_dec, np.logical_or.reduce(inside), "manual entries keyed during an outage")
    where: dict[int, int] = {}
    for idx in defects + decoys:
        where[idx] = next(j for j, m in enumerate(inside) if m[idx])
        c.approver[idx] = c.preparer[idx]
    variants = ["not_logged"] + (["signed_after_posting"] if b.knobs.near_miss >= 0.5 else [])
    first = int(rng.integers(0, len(variants)))
    plan: list[tuple[int, str]] = [(i, variants[(first + j) % len(variants)]) for j, i in enumerate(defects)]
    plan += [(i, "signed_off") for i in decoys]
    rows: dict[int, tuple[str, str, str]] = {}
    for idx, kind in plan:
        cents, prep, day = int(c.debit_cents[idx]), str(c.preparer[idx]), c.post_date[idx]
        if kind == "not_logged":
            continue
        approver = str(rng.choice([a for a in APPROVERS if a != prep and limits[a] >= cents]))
        signed = day + int(rng.integers(1, 4)) if kind == "signed_after_posting" else \
            max(c.doc_date[idx], day - int(rng.integers(0, 2)))
        rows[idx] = (approver, str(signed), kind)
    handles = []
    for k, days in enumerate(outages):
        log = tuple(SignOff(str(c.reference[i]), int(c.debit_cents[i]), str(c.preparer[i]), rows[i][0], rows[i][1])
                    for i in sorted(rows, key=lambda i: (str(c.post_date[i]), str(c.reference[i]))) if where[i] == k)
        inc = int(rng.integers(10_000, 99_999))
        handles.append(b.add_document("memo", f"Manual approval log - ERP workflow incident INC-{inc}",
                                      APPROVAL_LOG.render(ApprovalLog(inc, str(days[0]), str(days[-1]), log)),
                                      str(days[-1] + 1)))
    b.claim(PLANT, documents=handles)
    for idx, kind in plan:
        log_doc = handles[where[idx]]
        prep, cents, posted = str(c.preparer[idx]), int(c.debit_cents[idx]), str(c.post_date[idx])
        ev: list = [log_doc, "master:users", ctx.pol_je]
        if kind == "signed_off":
            b.add_decoy(idx, "signed_off_on_outage_log", ev, facts=[doc_ref(log_doc), rows[idx][0], rows[idx][1]])
            continue
        kind = rows[idx][2] if idx in rows else "not_logged"
        facts: list = [prep, cents / 100, doc_ref(log_doc)]
        if kind == "signed_after_posting":
            facts += [rows[idx][1], posted]
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


def _sub_account(code: str, name: str, status: str = "active", opened: str = "2015-01-01", closed: str = "",
                 blocked_on: str = "") -> dict[str, Any]:
    """A bank-charge sub-account's row of the chart of accounts."""
    return {"account": code, "name": name, "type": "expense", "normal_balance": "debit", "contra_of": None,
            "status": status, "opened": opened, "closed": closed, "blocked_on": blocked_on}


def _plant_accounts(b: WorldBuilder, n_def: int, n_dec: int) -> None:
    """Bank-charge sub-accounts opened during the year. A decoy is a month's bank charges posted to a
    sub-account opened before the posting date; a defect is a month's bank charges keyed (as the books
    key them, a few business days after the month end) to a sub-account opened after the month end
    and back-dated to it: the ERP accepted the account because it existed when the entry was keyed,
    but it was not open on the posting date (``ACCOUNT_OPEN``). Two sub-accounts blocked or closed
    before the year stand in the chart untouched (an ERP rejects postings to them)."""
    rng, c = b.rng, b.cols
    post = c.post_date.astype("datetime64[D]")
    keyed = c.entry_date.astype("datetime64[D]")
    # February-November postings: a defect's sub-account opens after its posting date, and a December
    # posting would leave it opening in 2026, after the year-end closing entry that closes it
    pool = (c.doc_code == "BC") & (post >= np.datetime64("2025-02-01")) & (post < np.datetime64("2025-12-01")) \
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
            rows.append(_sub_account(code, name, opened=str(opened_on)))
            for idx in share:
                c.debit_account[idx] = code
                assert ACCOUNT_OPEN.check(rows[-1], str(post[idx])).ok
                b.add_decoy(idx, "account_opened_before_posting", ["master:accounts"],
                            facts=[code, str(opened_on), str(post[idx])])
    for idx in defects:
        code, name = next(free)
        # opened after the posting date, on or before the day the entry was keyed
        span = int((keyed[idx] - post[idx]).astype(int))
        opened_on = post[idx] + int(rng.integers(1, span + 1))
        rows.append(_sub_account(code, name, opened=str(opened_on)))
        c.debit_account[idx] = code
        assert not ACCOUNT_OPEN.check(rows[-1], str(post[idx])).ok
        b.add_defect(idx, "posting_to_not_yet_open_account", "INVALID_ACCOUNT", ["master:accounts"],
                     facts=[code, str(opened_on), str(post[idx])])
    blk_on = str(np.datetime64("2024-03-01") + int(rng.integers(0, 300)))
    cl_on = str(np.datetime64("2024-03-31") + int(rng.integers(0, 240)))
    rows.append(_sub_account(blk_code, blk_name, status="blocked", blocked_on=blk_on))
    rows.append(_sub_account(cl_code, cl_name, status="closed", closed=cl_on))
    b.claim(PLANT, rows=[("accounts", r["account"]) for r in rows])
    for a in b.accounts:
        a["closed"] = a["closed"] or ""
        a["blocked_on"] = a["blocked_on"] or ""
    b.accounts.extend(rows)
    b.accounts.sort(key=lambda r: r["account"])


def _plant_users(b: WorldBuilder, n_def: int, n_dec: int) -> None:
    """Two leavers (terminated during the year): one keyed manual entries in the weeks before the
    termination date (decoys), the other in the weeks after it (defects). Which leaver is which, and
    where the dates fall, only the user master tells: on the listing each is a preparer whose
    entries cluster in a window (``near_miss`` narrows it), and neither's entries straddle a date."""
    rng, c = b.rng, b.cols
    post = c.post_date.astype("datetime64[D]")
    w0 = 10 + int(round((1 - b.knobs.near_miss) * 40))
    pair = [LEAVERS[i] for i in rng.permutation(len(LEAVERS))[:2]]
    for (uid, name, role, dept, limit, posts), n, after in ((pair[0], n_dec, False), (pair[1], n_def, True)):
        term = np.datetime64("2025-03-03") + int(rng.integers(0, 220))
        # entries of the kinds the leaver's role keys, recorded on their posting day
        ok = c.manual & np.isin(c.doc_code, posts) & (c.entry_date == c.post_date)

        def window(term: np.datetime64, w: int) -> np.ndarray:
            return ok & ((post > term) & (post <= term + w) if after else (post < term) & (post >= term - w))

        def widened(term: np.datetime64) -> int:
            """The window's days: from ``w0`` by two weeks until it holds ``n`` free entries (at most 400)."""
            w = w0
            while int((window(term, w) & ~b.used).sum()) < n and w < 400:
                w += 14
            return w

        w = widened(term)
        for _ in range(20):  # a date the leaver's entries cannot reach (an early termination): another date
            if int((window(term, w) & ~b.used).sum()) >= n:
                break
            term = np.datetime64("2025-03-03") + int(rng.integers(0, 220))
            w = widened(term)
        idxs = [int(i) for i in b.pick(n, where=window(term, w), what="manual entries around a termination")
                ] if n else []
        for idx in idxs:
            c.preparer[idx] = uid
            if c.approver[idx] == uid:
                c.approver[idx] = "JWRIGHT"
            facts = [uid, str(term), str(post[idx])]
            if after:
                b.add_defect(idx, "posted_after_termination", "UNAUTHORISED_USER", ["master:users"], facts=facts)
            else:
                b.add_decoy(idx, "posted_before_termination", ["master:users"], facts=facts)
        row = {"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
               "may_post": ", ".join(posts), "approval_limit": float(limit), "status": "terminated",
               "hire_date": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800))),
               "termination_date": str(term), "bank_account": b.bank_account()}
        b.users.append(row)
        b.claim(PLANT, entries=idxs, rows=[("users", uid)])
        assert all(USER_MAY_POST.check(row, str(c.entry_date[i]), str(post[i])).ok is not after for i in idxs)


def _off_time(rng: np.random.Generator, day_kind: str) -> int:
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


def _keying_days(b: WorldBuilder, idx: int, child_first: np.ndarray) -> np.ndarray:
    """Days entry ``idx`` could have been keyed on: from its posting day (or the day it was keyed, if
    later) until a week later, within its period's close and before anything the books derive from it."""
    c = b.cols
    lo = max(c.post_date[idx], c.entry_date[idx])
    hi = min(c.post_date[idx] + 6, _close_of(c.post_date[idx : idx + 1])[0], child_first[idx] - 1)
    return np.arange(lo, hi + 1, dtype="datetime64[D]") if hi >= lo else np.zeros(0, dtype="datetime64[D]")


def _slot(rng: np.random.Generator, days: np.ndarray, avoid: set) -> tuple[np.datetime64, str] | None:
    """An out-of-hours keying day among ``days`` (a weekend, a holiday or a business day's evening)."""
    kinds = {"weekend": days[~np.is_busday(days)], "holiday": days[np.isin(days, _BUSINESS_HOLIDAYS)],
             "evening": days[np.is_busday(days, holidays=_LISTED_HOLIDAYS)]}
    for kind in rng.choice(["weekend", "holiday", "evening"], size=3, replace=False, p=[0.5, 0.15, 0.35]).tolist():
        ok = [d for d in kinds[kind].tolist() if np.datetime64(d, "D") not in avoid]
        if ok:
            return np.datetime64(ok[int(rng.integers(0, len(ok)))], "D"), kind
    return None


class _Keying:
    """The out-of-hours planting's pool: the books' staff entries of the kinds ``_KEYS`` names, in one
    drawn order; ``place`` moves the next one that fits to an out-of-hours keying time, ``undo`` puts
    one back where the books keyed it."""

    def __init__(self, b: WorldBuilder):
        self.b, c = b, b.cols
        self.child_first = _children_first_entry(b)
        staff = c.manual & np.isin(c.preparer, PREPARERS) & np.isin(c.doc_code, tuple(_KEYS)) & ~b.used
        self.order = b.rng.permutation(np.flatnonzero(staff)).tolist()
        self.keyed: dict[int, tuple[Any, int]] = {}  # when the entries moved here were keyed in the books

    def place(self, avoid: set, want: tuple[np.datetime64, Callable[[str], bool]] | None = None) -> int | None:
        """Reserve the next pool entry that can be keyed out of hours (on ``want``'s day, by a preparer
        ``want`` accepts, if given; else on a day not in ``avoid``) and move its keying there."""
        b, c = self.b, self.b.cols
        for idx in self.order:
            if b.used[idx]:
                continue
            days = _keying_days(b, idx, self.child_first)
            if want is not None:
                day, prep_ok = want
                if not (days == day).any() or not prep_ok(str(c.preparer[idx])):
                    continue
                kind = "evening" if np.is_busday(day, holidays=_LISTED_HOLIDAYS) else "weekend"
            else:
                got = _slot(b.rng, days, avoid)
                if got is None:
                    continue
                day, kind = got
            b.used[idx] = True
            self.keyed[idx] = (c.entry_date[idx], int(c.time_s[idx]))
            c.entry_date[idx] = day
            c.time_s[idx] = _off_time(b.rng, kind)
            return idx
        return None

    def undo(self, idx: int) -> None:
        """Put entry ``idx`` back as the books keyed it, and back in the pool."""
        c = self.b.cols
        self.b.used[idx] = False
        c.entry_date[idx], c.time_s[idx] = self.keyed[idx]


def _plant_off_hours(b: WorldBuilder, ctx: _Context, n_def: int, n_dec: int) -> None:
    """Manual entries keyed outside the posting window (weekend, holiday, evening or early morning)
    within a week of their posting date, all drawn from one distribution; a decoy's day has an
    out-of-hours work authorisation naming its preparer and covering its time, whose purpose (keying
    the period's supplier invoices and accruals) is what the entry is; a defect's day has none (or,
    with ``near_miss`` >= 0.5, one that does not name the preparer or does not cover the time). Only
    when the entry was keyed changes: its posting date, preparer and documents are the books'."""
    c = b.cols
    pool = _Keying(b)
    memos: dict[Any, dict[str, Any]] = {}
    decoys = []
    for _ in range(n_dec):
        idx = pool.place(set())
        if idx is None:
            raise ConfigError("impossible knobs for JE-16: not enough manual entries to key out of hours")
        decoys.append(idx)
        m = memos.setdefault(c.entry_date[idx], {"users": set(), "times": [], "defects": [], "unlisted": set()})
        m["users"].add(str(c.preparer[idx]))
        m["times"].append(int(c.time_s[idx]))
    kinds = _off_hours_defects(b, pool, memos, n_def)
    handles = _authorisations(b, memos, decoys)
    moved = decoys + list(kinds)
    b.claim(PLANT, entries=moved, documents=handles.values())
    holidays = cal.HOLIDAY_DATES
    assert not moved or POSTING_WINDOW.outside(c.entry_date[moved], c.time_s[moved], holidays, *BUSINESS_HOURS).all()
    for idx in decoys:
        day = c.entry_date[idx]
        b.add_decoy(idx, "authorised_out_of_hours_work", [handles[day], ctx.pol_close],
                    facts=[doc_ref(handles[day]), str(c.preparer[idx]), str(day)])
    for idx, kind in kinds.items():
        day = c.entry_date[idx]
        facts = [str(c.preparer[idx]), str(day), hhmm(int(c.time_s[idx]) // 60 * 60)]
        ev: list = ["master:calendar", ctx.pol_close]
        if kind != "unauthorised":
            ev.append(handles[day])
            facts.append(doc_ref(handles[day]))
        b.add_defect(idx, f"off_hours_{kind}", "OFF_HOURS", ev, facts=facts)


def _off_hours_defects(b: WorldBuilder, pool: _Keying, memos: dict[Any, dict[str, Any]], n_def: int) -> dict[int, str]:
    """Key ``n_def`` pool entries out of hours as defects: on a day without an authorisation, or (near
    miss) on an authorised day by a preparer it does not name, or at a time it does not cover. Each
    defect's kind, in the order drawn."""
    rng, c = b.rng, b.cols
    near = b.knobs.near_miss >= 0.5 and bool(memos)
    variants = ["unauthorised"] + (["unlisted_user", "outside_hours"] if near else [])
    first = int(rng.integers(0, len(variants)))
    kinds: dict[int, str] = {}
    for j in range(n_def):
        kind = variants[(first + j) % len(variants)]
        idx = None
        if kind != "unauthorised":
            for day in rng.permutation(sorted(memos)).tolist():
                day = np.datetime64(day, "D")
                m = memos[day]
                ok = (lambda p, m=m: p not in m["users"]) if kind == "unlisted_user" else (lambda p, m=m: p in m["users"])
                idx = pool.place(set(), (day, ok))
                if idx is not None:
                    t = int(c.time_s[idx])
                    lo, hi = min(m["times"]), max(m["times"])
                    if kind == "outside_hours" and lo // 3600 <= t // 3600 <= hi // 3600 + 1:
                        # inside the span the authorisation must cover: only the preparer can make it a defect
                        kind = "outside_hours_inside"
                    if kind == "outside_hours":
                        m["defects"].append(t)
                    else:
                        m["unlisted"].add(str(c.preparer[idx]))
                    break
            if kind == "outside_hours_inside" and idx is not None:
                # the preparer is listed and the time is covered: it would be authorised; key it elsewhere
                kind = "unauthorised"
                pool.undo(idx)
                idx = None
        if idx is None:
            kind = "unauthorised"
            idx = pool.place(set(memos))
            if idx is None:
                raise ConfigError("impossible knobs for JE-16: not enough manual entries to key out of hours")
        kinds[idx] = kind
    return kinds


def _authorisations(b: WorldBuilder, memos: dict[Any, dict[str, Any]], decoys: list[int]) -> dict[Any, int]:
    """One out-of-hours work authorisation per day with decoys: its users (and perhaps a colleague), and
    hours covering the decoys' times but not the outside-hours defects'. The handles by day."""
    rng, c = b.rng, b.cols
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
        periods = sorted({str(np.datetime64(c.post_date[i], "M")) for i in decoys if c.entry_date[i] == day})
        issued = day - int(rng.integers(2, 6))  # a prior authorisation
        title = f"Out-of-hours work authorisation OW-{int(rng.integers(100, 999))}"
        memo = OutOfHours(str(issued), _weekday(day), str(day), start * 3600, 23 * 3600 + 59 * 60 if end >= 24 else
                          end * 3600, tuple(Ident(p) for p in periods or [period]), tuple(Ident(u) for u in users))
        handles[day] = b.add_document("memo", title, OUT_OF_HOURS.render(memo), str(issued))
    return handles


def _record_late(b: WorldBuilder, idx: int, day: Any) -> None:
    """Record entry ``idx`` on ``day`` in office hours; its posting date stays in its period."""
    b.cols.entry_date[idx] = np.datetime64(day, "D")
    b.cols.time_s[idx] = int(b.rng.integers(9 * 3600, 17 * 3600))


def _weekday(day: Any) -> str:
    return cal.WEEKDAY_NAMES[int(cal.weekday(np.datetime64(day, "D")))]


def _plant_cutoff(b: WorldBuilder, ctx: _Context, n_def: int, n_dec: int) -> None:
    """The books' month-end entries recorded 1-6 business days after their period's close date (their
    posting date kept: back-dated into a locked period), all drawn alike; a decoy's period has a close calendar change (issued by the close date)
    extending the close past the recording date, a defect's has none or (half the time) one that ends 1-4
    business days before its recording date (1-2 with ``near_miss`` >= 0.5)."""
    rng, c = b.rng, b.cols
    closes = ctx.closes
    post = c.post_date
    close_of = _close_of(post)
    # the books' own work posted in a month's last ten days (January-November: December's close ends
    # the year) that nothing in the books follows until two weeks after the close
    last_days = post >= cal.last_day_of_month(post) - 9
    pool = c.manual & ~np.isin(c.template, AR_TEMPLATES) & np.isin(c.preparer, PREPARERS) & last_days \
        & (post < np.datetime64("2025-12-01")) & (_children_first_entry(b) > close_of + 16)
    # decoys first, then defects from the other months where the pool allows: a defect in a decoy's month
    # would have to be recorded after the extension that covers the decoy, so later than the decoys
    # (over the listing, defects' recording lags would run longer than decoys')
    decoys = [int(i) for i in b.pick(n_dec, where=pool, what="manual entries posted late in a month")] if n_dec else []
    month = post.astype("datetime64[M]")
    apart = pool & ~np.isin(month, month[decoys])
    defects = [int(i) for i in b.pick(n_def, where=apart if (apart & ~b.used).sum() >= n_def else pool,
                                      what="manual entries posted late in a month")] if n_def else []
    if not defects and not decoys:
        return
    b.claim(PLANT, entries=decoys + defects)
    month_of = {}
    for idx in decoys + defects:
        _record_late(b, idx, cal.business_offset(close_of[idx], int(rng.integers(1, 7))))
        month_of[idx] = int(str(post[idx])[5:7])
    ext: dict[int, Any] = {}
    for idx in decoys:
        m = month_of[idx]
        rec = c.entry_date[idx]
        slack = int(rng.integers(0, 3)) if b.knobs.near_miss < 1 else 0
        ext[m] = max(ext.get(m, rec), cal.business_offset(rec, slack))
    kinds = {}
    for idx in defects:
        m = month_of[idx]
        close = np.datetime64(closes[f"2025-{m:02d}"])
        kinds[idx] = "no_extension"
        if m in ext:
            if c.entry_date[idx] <= ext[m]:
                _record_late(b, idx, cal.business_offset(ext[m], int(rng.integers(1, 3))))
            kinds[idx] = "after_extension"
        elif rng.random() < 0.5:  # an extension for the month that ends before its defects were recorded
            first = min(c.entry_date[j] for j in defects if month_of[j] == m)
            new = cal.business_offset(first, -int(rng.integers(1, 3 if b.knobs.near_miss >= 0.5 else 5)),
                                      roll="backward")
            if new > close:
                ext[m] = new
                kinds[idx] = "after_extension"
    handles = {}
    for m, new in sorted(ext.items()):
        close = np.datetime64(closes[f"2025-{m:02d}"])
        issued = cal.business_offset(close, -int(rng.integers(0, 3)), roll="backward")
        title = f"Close calendar change CC-{int(rng.integers(100, 999))}"
        body = CLOSE_CHANGE.render(CloseChange(str(issued), f"2025-{m:02d}", str(close), str(new)))
        handles[m] = b.add_document("memo", title, body, str(issued))
    b.claim(PLANT, documents=handles.values())
    for idx in decoys:
        m = month_of[idx]
        b.add_decoy(idx, "recorded_within_close_extension", ["master:calendar", ctx.pol_close, handles[m]],
                    facts=[doc_ref(handles[m]), str(c.entry_date[idx]), str(ext[m])])
    for idx in defects:
        m = month_of[idx]
        ev: list = ["entry", "master:calendar", ctx.pol_close]
        facts = [str(c.post_date[idx]), str(c.entry_date[idx]), closes[f"2025-{m:02d}"]]
        if kinds[idx] == "after_extension":
            ev.append(handles[m])
            facts += [doc_ref(handles[m]), str(ext[m])]
        b.add_defect(idx, f"entry_after_close_{kinds[idx]}", "CUTOFF", ev, facts=facts)


# ----------------------------------------------------------------------------- strategies
_SCAN_COLUMNS = ["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "preparer",
                 "approver", "source", "reference"]
Listing = dict[str, dict[str, Any]]


@dataclass
class _Books:
    """What the listing is read against: the user master, the chart, the calendar (holidays, close dates
    by period) and the posting window's hours (the policy's, once read)."""
    users: dict[str, dict[str, Any]]
    chart: dict[str, dict[str, Any]]
    holidays: list[str]
    closes: dict[str, str]
    hours: tuple[int, int] = BUSINESS_HOURS


@dataclass
class _Pack(_Books):
    """The books and the documents careful opened: the rounding tolerance, the two policies, the approval
    logs (doc id, log, sign-offs by reference), the authorisations, the close extensions by period and
    the rounding reports by period (doc id, (difference USD, priced lines) by upload reference)."""
    rule: RoundingLimit = ROUNDING_LIMIT
    je: list[str] = field(default_factory=list)
    close: list[str] = field(default_factory=list)
    logs: list[tuple[str, ApprovalLog, dict[str, SignOff]]] = field(default_factory=list)
    auths: list[tuple[str, OutOfHours]] = field(default_factory=list)
    exts: dict[str, tuple[str, CloseChange]] = field(default_factory=dict)
    reports: dict[str, tuple[str, dict[str, tuple[float, int]]]] = field(default_factory=dict)


def _scan(kit: Kit) -> Generator[Step, Any, tuple[Listing, list[dict[str, Any]]]]:
    """Every line of the listing, grouped by entry."""
    rows = yield from kit.ledger(columns=_SCAN_COLUMNS)
    return _grouped(rows), rows


def _grouped(rows: list[dict[str, Any]]) -> Listing:
    """Lines grouped by entry, each entry with its ``residual``: what the interface posted to suspense
    (the upload's debits less its credits, USD; 0 for an entry with no suspense line)."""
    ents = entries_of(rows)
    for h in ents.values():
        h["residual"] = 0.0
    for r in rows:
        if r.get("account") == SUSPENSE:
            h = ents[r["entry_id"]]
            h["residual"] = round(h["residual"] + (r.get("credit") or 0.0) - (r.get("debit") or 0.0), 2)
    return ents


def _read_books(kit: Kit) -> Generator[Step, Any, _Books]:
    """The user master, the chart of accounts and the calendar."""
    user_rows, chart_rows, cal_rows = yield from kit.masters(["users", "accounts", "calendar"])
    users = {u["user_id"]: u for u in user_rows}
    chart = {a["account"]: a for a in chart_rows}
    holidays = sorted({r["date"][:10] for r in cal_rows if r.get("kind") == "holiday"})
    # a period-close row says "close of period YYYY-MM"
    closes = {r["description"].split()[-1]: r["date"][:10] for r in cal_rows if r.get("kind") == "period_close"}
    return _Books(users, chart, holidays, closes)


def _line1(*filters: tuple[str, str, Any]) -> tuple[list[dict], list[str]]:
    """A query for the ids of the entries matching ``filters`` (column, op, value), one column asked for."""
    return [{"column": "line_no", "op": "eq", "value": 1}, *({"column": c, "op": o, "value": v} for c, o, v in filters)], ["entry_id"]


def _ids(kit: Kit, *filters: tuple[str, str, Any]) -> Generator[Step, Any, list[str]]:
    """The ids of the entries matching ``filters`` (column, op, value), one column asked for."""
    return [r["entry_id"] for r in (yield from kit.ledger(*_line1(*filters)))]


def _late_or_odd(kit: Kit, books: _Books) -> Generator[Step, Any, set[str]]:
    """Entries recorded after their period's close (one small query a period, all in few replies) and
    entries with a line on an account outside the standing chart."""
    queries = [_line1(("posting_date", "ge", f"{period}-01"), ("posting_date", "le", close),
                      ("entry_timestamp", "ge", f"{np.datetime64(close) + 1}T00:00:00"))
               for period, close in sorted(books.closes.items())]
    standing = [a for a, row in books.chart.items() if ACCOUNT_OPEN.standing(row)]
    found = yield from kit.ledgers([*queries, _line1(("account", "not_in", standing))])
    return {r["entry_id"] for rows in found for r in rows}


def _targeted(kit: Kit, books: _Books, want: set[str]) -> Generator[Step, Any, Listing]:
    """Every entry a red-flag rule could catch, found with server-side filters (never the whole listing):
    ``want`` (from ``_late_or_odd``), the manual entries' headers (self-approval, leavers, off hours) and
    the entries with an interface residual on suspense; then those entries' lines, grouped."""
    manual, suspense = yield from kit.ledgers([
        ([{"column": "line_no", "op": "eq", "value": 1}, {"column": "source", "op": "eq", "value": "manual"}],
         ["entry_id", "entry_timestamp", "preparer", "approver"]),
        ([{"column": "account", "op": "eq", "value": SUSPENSE}], ["entry_id"])])
    heads = {r["entry_id"]: {**r, "source": "manual"} for r in manual}
    odd_users = {u for u, row in books.users.items() if USER_MAY_POST.suspect(row)}
    off = _outside(heads, sorted(heads), books)
    want = want | {e for e, h in heads.items() if e in off or h["preparer"] in odd_users or h["preparer"] == h.get("approver")}
    want |= {r["entry_id"] for r in suspense}
    rows = yield from kit.ledger([{"column": "entry_id", "op": "in", "value": sorted(want)}], _SCAN_COLUMNS)
    return _grouped(rows)


def _movements(kit: Kit) -> Generator[Step, Any, tuple[dict[str, float], list[dict[str, Any]]]]:
    """Net listed movement (debits - credits) per account, from ``compute_stats`` sums grouped by account,
    and the balances (``get_balances``), asked for in one reply."""
    net: dict[str, float] = {}
    firsts = yield from kit.gather([("compute_stats", {"measure": m, "group_by": "account", "top_z": 0, "offset": 0})
                                    for m in ("debit", "credit")] + [("get_balances", {})])
    for (measure, sign), obs in zip((("debit", 1.0), ("credit", -1.0)), firsts):
        while True:
            for acct, g in obs.get("groups", {}).items():
                net[acct] = round(net.get(acct, 0.0) + sign * g.get("sum", 0.0), 2)
            if obs.get("next_offset") is None:
                break
            obs = yield from kit.call("compute_stats", measure=measure, group_by="account", top_z=0,
                                      offset=obs["next_offset"])
    return net, firsts[2].get("rows", [])


def _range_args(a: int, b: int, width: int, limit: int) -> dict[str, Any]:
    """``query_ledger`` arguments for the entries numbered ``a`` to ``b``."""
    return {"filters": [{"column": "line_no", "op": "eq", "value": 1},
                        {"column": "entry_id", "op": "ge", "value": str(a).zfill(width)},
                        {"column": "entry_id", "op": "le", "value": str(b).zfill(width)}],
            "columns": ["entry_id"], "limit": limit}


def _find_gaps(kit: Kit) -> Generator[Step, Any, list[str]]:
    """Numbers missing from the consecutive numbering, by counting: the ends of the range (the first and
    last entries listed, then any ids below and above them), then halving every stretch whose count
    falls short of its width until it is small enough to list (the stretches of one round in few replies)."""
    first = yield from kit.call("query_ledger", filters=[{"column": "line_no", "op": "eq", "value": 1}],
                                columns=["entry_id"], limit=5)
    total = int(first.get("total_rows", 0))
    last = yield from kit.call("query_ledger", filters=[{"column": "line_no", "op": "eq", "value": 1}],
                               columns=["entry_id"], limit=5, offset=max(total - 5, 0))
    seen = sorted(r["entry_id"] for r in first.get("rows", []) + last.get("rows", []))
    if not seen:
        return []
    below, above = yield from kit.ledgers([_line1(("entry_id", "lt", seen[0])), _line1(("entry_id", "gt", seen[-1]))])
    width = len(seen[0])
    lo = int(min([seen[0], *(r["entry_id"] for r in below)]))
    hi = int(max([seen[-1], *(r["entry_id"] for r in above)]))
    todo, gaps = [(lo, hi, total)], []
    while todo:
        short = [(a, b, n) for a, b, n in todo if n < b - a + 1]
        small = [(a, b) for a, b, _n in short if b - a < 64]
        halves = [(a, (a + b) // 2, b, n) for a, b, n in short if b - a >= 64]
        got = yield from kit.gather([("query_ledger", _range_args(a, b, width, 64)) for a, b in small]
                                    + [("query_ledger", _range_args(a, mid, width, 1)) for a, mid, _b, _n in halves])
        for (a, b), obs in zip(small, got):
            present = {int(r["entry_id"]) for r in obs.get("rows", [])}
            gaps += [str(k).zfill(width) for k in range(a, b + 1) if k not in present]
        todo = []
        for (a, mid, b, n), obs in zip(halves, got[len(small):]):
            left = int(obs.get("total_rows", 0))
            todo += [(a, mid, left), (mid + 1, b, n - left)]
    return sorted(gaps)

def _gap_ids(ents: Listing) -> list[str]:
    present = {int(k) for k in ents}
    if not present:
        return []
    return [str(i) for i in range(min(present), max(present) + 1) if i not in present]


def _secs(ts: str) -> int:
    return int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + int(ts[17:19] or 0)


def _outside(ents: Listing, ids: list[str], books: _Books) -> set[str]:
    """The entries among ``ids`` keyed outside the posting window (``POSTING_WINDOW``)."""
    if not ids:
        return set()
    ts = [ents[i]["entry_timestamp"] for i in ids]
    out = POSTING_WINDOW.outside([t[:10] for t in ts], [_secs(t) for t in ts], books.holidays, *books.hours)
    return {i for i, o in zip(ids, out.tolist()) if o}


def _why_off(ts: str, books: _Books) -> str:
    """Why an entry keyed at ``ts``, outside the posting window, is outside it."""
    day = ts[:10]
    if day in books.holidays:
        return f"keyed on the holiday {day} at {ts[11:16]}"
    if not np.is_busday(np.datetime64(day)):
        return f"keyed on a weekend day ({day}) at {ts[11:16]}"
    return f"keyed on {day} at {ts[11:16]}, outside {hhmm(books.hours[0])}-{hhmm(books.hours[1])}"


def _rules(ents: Listing, books: _Books) -> dict[str, list[str]]:
    """Candidates per criterion by the red-flag rules (the listing and master data, no documents)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    ids = sorted(ents)
    off = _outside(ents, [i for i in ids if ents[i]["source"] == "manual"], books)
    for eid in ids:
        h = ents[eid]
        if abs(h.get("residual", 0.0)) > 0.004:
            out["UNBALANCED"].append(eid)
        if h.get("approver") and h["approver"] == h["preparer"]:
            out["SELF_APPROVAL"].append(eid)
        if any(not ACCOUNT_OPEN.standing(books.chart.get(a)) for a in h["accounts"]):
            out["INVALID_ACCOUNT"].append(eid)
        u = books.users.get(h["preparer"])
        if h["source"] == "manual" and (u is None or USER_MAY_POST.suspect(u)):
            out["UNAUTHORISED_USER"].append(eid)
        if eid in off:
            out["OFF_HOURS"].append(eid)
        close = books.closes.get(h["posting_date"][:7])
        if close and h["entry_timestamp"][:10] > close:
            out["CUTOFF"].append(eid)
    return out


def naive(kit: Kit) -> Generator[Step, Any, None]:
    """Applies every red-flag rule to the listing and master data and flags all hits (each entry once,
    under the first rule that catches it), without reading the policies, the approval logs, the
    authorisations, the close calendar changes or the balances; reports the numbering gap without an
    amount. Six rules and a gap, an amount only for the imbalance (the other rules catch control
    deviations): not one ``SurfaceRule``."""
    books = yield from _read_books(kit)
    ents, _rows = yield from _scan(kit)
    hits = _rules(ents, books)
    first: dict[str, str] = {}
    for crit in KINDS:
        for eid in hits[crit]:
            first.setdefault(eid, crit)
    flags = [flag(eid, crit, [], f"Entry {eid} ({ents[eid]['total_debit']:.2f}) trips the {crit} rule.",
                  _difference(ents[eid]) if SPEC.amount_asked(crit) else None)
             for eid, crit in first.items()]
    n = yield from dispose(kit, flags, reserve=2)
    n += yield from dispose(kit, [flag(gap, "COMPLETENESS_GAP", [], f"Entry number {gap} is missing from the listing.")
                                  for gap in _gap_ids(ents)])
    yield from kit.submit(f"Flagged {n} entries that trip a red-flag rule.")


def _difference(h: dict[str, Any]) -> float:
    return abs(h.get("residual", 0.0))


def _read_documents(kit: Kit, books: _Books) -> Generator[Step, Any, _Pack]:
    """Open the two policies, the interface rounding reports, the approval logs, the out-of-hours
    authorisations and the close calendar changes."""
    pack = _Pack(**vars(books))
    pol, reports, memos = yield from kit.listings(["policy", "report", "memo"])
    pack.je = [d["doc_id"] for d in pol if "balancing and approval" in d["title"].lower()][:1]
    pack.close = [d["doc_id"] for d in pol if "period-close" in d["title"].lower()][:1]
    rounding = [d["doc_id"] for d in reports if "rounding report" in d["title"].lower()]
    kinds = ("approval log", "out-of-hours", "close calendar change")
    notes = [(d["doc_id"], next(w for w in kinds if w in d["title"].lower())) for d in memos
             if any(w in d["title"].lower() for w in kinds)]
    bodies = yield from kit.open_all([*pack.je, *pack.close, *rounding, *(doc for doc, _k in notes)])
    if pack.je:
        je = JE_POLICY.parse(bodies.get(pack.je[0], ""))
        pack.rule = RoundingLimit(je.per_root_line) if je else ROUNDING_LIMIT
    if pack.close:
        stated = CLOSE_POLICY.parse(bodies.get(pack.close[0], ""))
        pack.hours = (stated.start, stated.end) if stated else pack.hours
    for doc in rounding:
        if rep := ROUNDING_REPORT.parse(bodies.get(doc, "")):
            pack.reports[rep.period] = (doc, {u.reference: (u.difference / 100, u.lines) for u in rep.uploads})
    for doc, kind in notes:
        body = bodies.get(doc, "")
        if kind == "approval log":
            log = APPROVAL_LOG.parse(body)
            pack.logs += [(doc, log, {r.reference: r for r in log.rows})] if log else []
        elif kind == "out-of-hours":
            auth = OUT_OF_HOURS.parse(body)
            pack.auths += [(doc, auth)] if auth else []
        elif (ext := CLOSE_CHANGE.parse(body)) and ext.issued <= ext.close:  # issued by the original close date
            pack.exts[ext.period] = (doc, ext)
    return pack


def _flag(eid: str, crit: str, evidence: list[str], why: str, amount: float) -> Disposition:
    """A flag stating ``amount`` where the criterion is a misstatement; a control deviation states none."""
    return flag(eid, crit, evidence, f"Entry {eid}: {why}.", amount if SPEC.amount_asked(crit) else None)


def _clear(eid: str, h: dict[str, Any], evidence: list[str], why: str) -> Disposition:
    return clear(eid, evidence, f"Entry {eid} (USD {h['total_debit']:,.2f}): {why}.")


def _judge_unbalanced(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Cleared when the rounding report of its period gives the upload exactly the residual it posted to
    suspense, within the policy's tolerance for the upload's priced lines."""
    signed = h["residual"]
    d = abs(signed)
    rep = p.reports.get(h["posting_date"][:7])
    ev = [eid] + ([rep[0]] if rep else []) + p.je
    reported, n = rep[1].get(h.get("reference") or "", (None, 0)) if rep else (None, 0)
    head = (f"debits {h['total_debit'] - max(-signed, 0):.2f} vs credits {h['total_credit'] - max(signed, 0):.2f}, "
            f"a residual of {d:.2f} posted to suspense {SUSPENSE}")
    where = f"rounding report {rep[0]}" if rep else "no interface rounding report for the period"
    limit = p.rule.limit_cents(n) / 100
    if reported is not None and abs(reported - signed) < 0.005 and d <= limit + 1e-9:
        return _clear(eid, h, ev, f"{head}, reported as such on {where} for an upload of {n} priced lines and within "
                      f"the USD {limit:.4f} tolerance (0.0087 x sqrt({n})) of the journal entry policy")
    if reported is not None:
        return _flag(eid, "UNBALANCED", ev, f"{head}; {where} reports {reported:+,.2f} for this upload, not the "
                     "residual posted: an unexplained difference", d)
    return _flag(eid, "UNBALANCED", ev, f"{head}, not on {where}: not an interface rounding difference but a keying "
                 "or interface error", d)


def _judge_self_approval(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Cleared when the incident's manual approval log shows a second approver, whose limit covers the
    amount, signing it off on or before the posting date."""
    day, prep, amount = h["posting_date"], h["preparer"], h["total_debit"]
    log = next((g for g in p.logs if g[1].start <= day <= g[1].end), None)
    ev = ([log[0]] if log else []) + ["master:users", *p.je]
    row = log[2].get(h.get("reference") or "") if log else None
    where = f"manual approval log {log[0]}" if log else "no workflow incident log"
    base = f"manual entry of {amount:,.2f} posted on {day} with its preparer {prep} recorded as approver"
    if row is None:
        return _flag(eid, "SELF_APPROVAL", ev, f"{base}; it is not signed off on {where}: self-approved", amount)
    limit = float(p.users.get(row.signer, {}).get("approval_limit") or 0)
    if row.signer == prep or row.signed > day:
        return _flag(eid, "SELF_APPROVAL", ev, f"{base}; {where} shows it signed off by {row.signer} only on "
                     f"{row.signed}, after it was posted on {day}", amount)
    if limit < amount:
        return _flag(eid, "SELF_APPROVAL", ev, f"{base}; {where} shows it signed off by {row.signer}, whose approval "
                     f"limit of {limit:,.2f} does not cover it", amount)
    return _clear(eid, h, ev, f"{base} during the workflow incident; {where} shows it signed off by {row.signer} on "
                  f"{row.signed}, before posting, within a limit of {limit:,.2f}")


def _account_words(acct: dict[str, Any] | None, posted: str, ok: bool) -> str:
    """The careful rationale's words for ``ACCOUNT_OPEN``'s verdict on ``acct`` (the rule decides ``ok``)."""
    if ok and acct is not None:
        return f"was opened on {acct.get('opened')}, before the posting date"
    if acct is None:
        return "does not exist in the chart of accounts"
    if acct.get("opened") and posted < acct["opened"]:
        return f"was only opened on {acct['opened']}"
    if acct.get("closed") and posted > acct["closed"]:
        return f"was closed on {acct['closed']}"
    return f"has status {acct.get('status')}"


def _judge_account(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Flagged when an account it posts to was not open on the posting date (``ACCOUNT_OPEN``)."""
    posted = h["posting_date"]
    odd = [a for a in dict.fromkeys(h["accounts"]) if not ACCOUNT_OPEN.standing(p.chart.get(a))]
    verdicts = [(a, ACCOUNT_OPEN.check(p.chart.get(a), posted).ok) for a in odd]
    words = {a: _account_words(p.chart.get(a), posted, ok) for a, ok in verdicts}
    bad = [f"account {a} {words[a]}" for a, ok in verdicts if not ok]
    if bad:
        return _flag(eid, "INVALID_ACCOUNT", ["master:accounts"], f"posted on {posted} to an account not open for "
                     f"posting: {'; '.join(bad)}", h["total_debit"])
    return _clear(eid, h, ["master:accounts"], f"posted on {posted} to an account active at that date per the chart "
                  f"of accounts: {'; '.join(f'account {a} {words[a]}' for a, _ok in verdicts)}")


def _user_words(user: dict[str, Any] | None, ok: bool) -> str:
    """The careful rationale's words for ``USER_MAY_POST``'s verdict on the preparer (the rule decides ``ok``)."""
    if user is None:
        return "is not in the user master"
    if not user.get("posting_rights"):
        return f"has no posting rights ({user.get('role')})"
    term = user.get("termination_date") or ""
    if term:
        return f"was terminated only on {term}, after the posting date" if ok else f"was terminated on {term}"
    return "is active with posting rights"


def _judge_user(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Flagged when its preparer could not post it (``USER_MAY_POST``: rights ended before it was keyed or posted)."""
    user, posted = p.users.get(h["preparer"]), h["posting_date"]
    ok = user is not None and USER_MAY_POST.check(user, h["entry_timestamp"][:10], posted).ok
    text = f"keyed on {posted} by {h['preparer']}, who {_user_words(user, ok)}"
    if ok:
        return _clear(eid, h, ["master:users"], text)
    return _flag(eid, "UNAUTHORISED_USER", ["master:users"], text, h["total_debit"])


def _judge_off_hours(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Cleared when an authorisation for the day names the preparer and its hours cover the time keyed."""
    ts, prep, amount = h["entry_timestamp"], h["preparer"], h["total_debit"]
    why, t = _why_off(ts, p), _secs(ts) // 60 * 60
    day_memos = [(doc, m, {u.id for u in m.users}) for doc, m in p.auths if m.day == ts[:10]]
    memo = next((x for x in day_memos if prep in x[2] and x[1].start <= t < x[1].end), None)
    if memo:
        return _clear(eid, h, [memo[0], *p.close], f"{why}, but out-of-hours work authorisation {memo[0]} names {prep} "
                      f"for {ts[:10]}, {_hours(memo[1])}, which covers {ts[11:16]}")
    if day_memos:
        doc, m, users = day_memos[0]
        gap = f"does not name {prep}" if prep not in users else f"covers {_hours(m)} only, not {ts[11:16]}"
        return _flag(eid, "OFF_HOURS", ["master:calendar", *p.close, doc], f"manual entry of {amount:.2f} {why} by "
                     f"{prep}; the only authorisation for that day, {doc}, {gap}", amount)
    return _flag(eid, "OFF_HOURS", ["master:calendar", *p.close], f"manual entry of {amount:.2f} {why} by {prep}, with "
                 "no out-of-hours work authorisation for that day", amount)


def _hours(m: OutOfHours) -> str:
    return f"{hhmm(m.start)}-{hhmm(m.end)}"


def _judge_cutoff(eid: str, h: dict[str, Any], p: _Pack) -> Disposition:
    """Cleared when a close calendar change, issued by the close date, extends the close to or past the
    recording date."""
    rec, posted = h["entry_timestamp"][:10], h["posting_date"]
    close = p.closes.get(posted[:7])
    ext = p.exts.get(posted[:7])
    if ext and rec <= ext[1].new_close:
        return _clear(eid, h, ["master:calendar", *p.close, ext[0]], f"posted on {posted} and recorded on {rec}, after "
                      f"the calendar close {close} but within the extension of the close to {ext[1].new_close} by "
                      f"close calendar change {ext[0]}")
    more = f"; close calendar change {ext[0]} extended it only to {ext[1].new_close}" if ext else ""
    return _flag(eid, "CUTOFF", [eid, "master:calendar", *p.close] + ([ext[0]] if ext else []), f"posted on {posted} "
                 f"but recorded on {rec}, after the period's close date {close}{more}; the period was locked",
                 h["total_debit"])


#: how careful judges a hit of each criterion's rule against the evidence
JUDGE: dict[str, Callable[[str, dict[str, Any], _Pack], Disposition]] = {
    "UNBALANCED": _judge_unbalanced, "SELF_APPROVAL": _judge_self_approval, "INVALID_ACCOUNT": _judge_account,
    "UNAUTHORISED_USER": _judge_user, "OFF_HOURS": _judge_off_hours, "CUTOFF": _judge_cutoff,
}


def _roll_forward(net: dict[str, float], balances: list[dict[str, Any]]) -> dict[str, float]:
    """Per account whose closing balance does not roll forward: closing - opening - the listed movements."""
    diffs = {b["account"]: round(b["closing_balance"] - b["opening_balance"] - net.get(b["account"], 0.0), 2)
             for b in balances}
    return {a: d for a, d in diffs.items() if abs(d) > 0.005}


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the user master, the chart and the calendar; finds the entries a red-flag rule could catch
    with filtered queries (never the whole listing), the listed movements per account with
    ``compute_stats`` and the numbering gaps by counting; reads the policies, the approval logs, the
    authorisations and the close calendar changes; then judges every rule hit against its evidence (one
    verdict an entry: the first criterion that flags it, else the first that clears it), rolls the
    balances forward to size the missing entry, and disposes of everything with what it opened: flags
    first (those citing the entry itself, opened first), the missing entry, then the clearances."""
    gaps = yield from _find_gaps(kit)
    books = yield from _read_books(kit)
    want = yield from _late_or_odd(kit, books)
    pack = yield from _read_documents(kit, books)
    net, balances = yield from _movements(kit)
    ents = yield from _targeted(kit, pack, want)
    hits = _rules(ents, pack)
    flags: dict[str, Disposition] = {}
    clears: dict[str, Disposition] = {}
    for crit in KINDS:
        for eid in hits[crit]:
            d = JUDGE[crit](eid, ents[eid], pack)
            (flags if d.flag else clears).setdefault(eid, d)
    clears = {k: d for k, d in clears.items() if k not in flags}
    diffs = _roll_forward(net, balances)
    moved = max((abs(d) for d in diffs.values()), default=0.0)
    dr = ", ".join(f"{a} {d:+,.2f}" for a, d in sorted(diffs.items()))
    missing = [flag(gap, "COMPLETENESS_GAP", ["master:balances"], f"Entry number {gap} is missing from the "
                    "consecutively numbered listing, and the roll-forward of the trial balance (closing - opening - "
                    f"listed movements) does not agree for: {dr}. The missing entry moved {moved:,.2f}.", moved)
               for gap in gaps]
    yield from _dispose_all(kit, flags, missing, clears)
    by = Counter(d.criteria for d in flags.values())
    yield from kit.submit("Flagged " + ", ".join(f"{n} {c}" for c, n in sorted(by.items())) + (
        f"; {len(gaps)} entry missing from the listing (roll-forward difference {moved:,.2f})" if gaps else "")
        + f". Cleared {len(clears)} look-alikes with their evidence.")


def _dispose_all(kit: Kit, flags: dict[str, Disposition], missing: list[Disposition],
                 clears: dict[str, Disposition]) -> Generator[Step, Any, None]:
    """Flags (those citing the entry itself first, each opening the entry before its disposition; a
    call kept for each missing entry and the summary), the missing entries, then the clearances; the
    last call before the summary goes to the next clearance that needs no reading."""

    def decide(d: Disposition) -> Generator[Step, Any, Disposition]:
        if d.entry_id in d.evidence:  # the entry is its own evidence: open it first
            entry = yield from kit.call("get_entry", entry_id=d.entry_id)
            if d.criteria == "UNBALANCED" and "lines" in entry:
                d = replace(d, amount=round(abs(sum(ln["credit"] - ln["debit"] for ln in entry["lines"]
                                                    if ln["account"] == SUSPENSE)), 2))
        return d

    order = sorted(flags.values(), key=lambda d: (d.entry_id not in d.evidence, d.entry_id))
    yield from review(kit, order, decide, reserve=2 + len(missing))
    yield from dispose(kit, missing, reserve=2)
    cleared = [clears[k] for k in sorted(clears)]
    done = yield from review(kit, cleared, decide, reserve=2)
    yield from dispose(kit, [d for d in cleared[len(done):] if d.entry_id not in d.evidence][:1])


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=JE_POLICY.template + "\n\n" + CLOSE_POLICY.template,
            rules=(ACCOUNT_OPEN, USER_MAY_POST, POSTING_WINDOW),
            decisive="per criterion, the evidence its rule hit is judged by: the upload's residual on suspense "
                     "against the interface's rounding report (within USD 0.0087 x sqrt(n) for its n priced lines), "
                     "the second sign-off on the "
                     "incident's approval log before posting, master:accounts (the account open at the posting "
                     "date), master:users (the termination date against the keying and posting dates), the day's "
                     "out-of-hours authorisation (user and hours), the close calendar change (the extended close "
                     "against the recording date); the roll-forward of master:balances sizes the missing entry")
