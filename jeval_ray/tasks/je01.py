"""JE-1 (L1): upload residuals in the rounding and suspense accounts.

The ERP posts only balanced documents. Month-end accruals and year-end top-side adjustments are
prepared in spreadsheets (the expense allocated across cost centres and projects) and reach the
ledger through the GL upload tool, which posts each upload file as one entry (each account's
lines summarised on one ledger line). A file whose debit and credit totals differ by up to the
tool's tolerance (USD 0.25, 0.50 or 1.00, drawn per seed and stated in the journal-entry policy)
is accepted and its residual is posted on a line of its own to account 7990 Rounding Differences
(credited when the file's debits exceed its credits, debited otherwise); a file whose residual
exceeds the tolerance is accepted only with its residual posted, the same way, to account 2991
Suspense - GL Upload Differences pending investigation; so every entry and the year balance. What
auditors test is what lands there: each residual in the rounding account against the policy's
rounding tolerance, and each suspense item for its clearing by year end. Every residual sits on
an accrual (``AC``) or top-side adjustment (``TS``) upload, and its size alone does not tell an
error from a rounding, nor an open suspense item from a cleared one.

Accounts. 2991 is the upload tool's own suspense account (a liability, credit normal), not JE-16's
2990 Suspense - Interface Differences: each interface has its own suspense account, reconciled and
cleared by its owner, so neither task's items hide among the other's and a world composing both
plants adds two distinct accounts.

Rounding (section 4.3 of the policy). What decides is the upload file (one document per residual,
titled with the entry's reference, dated the day it was uploaded, naming the entry, its accounts,
its totals, the residual and the account it went to). The policy accepts one cause only:
allocation rounding within three standard deviations of the file's roundings. A file that
allocates a balanced amount by percentage rounds each of its n lines to the cent; each rounding
is uniform within half a cent (standard deviation 0.29 cents), so the policy accepts a residual of
at most USD 0.0087 x sqrt(n) (``ROUNDING_LIMIT``). A file whose lines were keyed as whole-cent
amounts has no rounding at all.

Suspense (section 4.4). Every suspense item is investigated; the investigation record (one per
item, titled ``Suspense investigation <upload reference>``, dated the day of the investigation)
names the upload and entry, the residual, who investigated it when, the cause found and the
correction: a journal (its reference and posting date) moving the residual out of 2991 to the
account found, the debited expense or the credited liability. The policy requires every item
cleared by such a journal posted in the fiscal year (on or before 2025-12-31), for the residual and
to the account the record states. A clearing journal is a top-side adjustment (``TS``, described
``Suspense clearing upload <reference>``), two lines: 2991 and the account it moves the residual to.
The record states who, when and what only; the agent compares it with the ledger.

Planted, all drawn from one pool (the year's accruals and top-side adjustments of USD 240 or more;
the same residual, timing, amount and text distributions), each made a defect or a decoy at random
and, independently of that, a rounding item or (``SUSPENSE_SHARE``) a suspense item. The debit
total of the file changes and the residual is posted to 7990 or 2991 (the accrued liability is
what the file states; an accrual's automatic reversal reverses that liability and is left as the
books posted it). A suspense item's residual is drawn above the tolerance up to six times it, its
file keyed or an allocation at random (the file decides nothing there), the account its record
finds the debited or the credited one at random, for defects and decoys alike:

* Decoys ``allocation_rounding_within_limit`` (rounding): an allocation of the credited amount over
  enough lines that the tolerance covers the residual. Decisive facts: the upload file, its basis
  (allocation), the residual and the number of rounded lines.
* Decoys ``suspense_cleared_as_investigated``: the record's clearing journal is in the ledger,
  posted by year end, moving the residual to the account the record found. Decisive facts: the
  record, the journal, the account, its posting date, the residual.
* Defects ``keyed_file_not_balanced`` (rounding): a file keyed line by line in whole cents, so
  nothing was rounded and the residual is a keying error. Decisive facts: the file, its basis
  (keyed), the residual.
* Defects ``difference_exceeds_rounding_limit`` (rounding): an allocation over so few lines that
  the tolerance (USD 0.0087 x sqrt(n)) does not cover the residual. Decisive facts: the file, its
  basis, the residual and the number of lines.
* Defects ``suspense_open_at_year_end``: the record was made after the year-end close and gives
  its correction journal a 2026 posting date; no journal clears the item in the year. Decisive
  facts: the record, the journal, its posting date, the residual.
* Defects ``suspense_cleared_to_other_account``: the record's journal is in the ledger, posted by
  year end, but moves the residual to the other of the upload's two accounts (the same
  distribution of clearing accounts as the decoys'). Decisive facts: the record, the journal, the
  account found and the account posted, the residual.

Every defect is a misstatement of the residual (``misstatement_cents``); the task asks no amount
(``asks_amount=False``, as before: the residual is the entry's own line on 7990 or 2991, read from
the listing, so asking it would score nothing the flag does not).

Red-flag rule (uploads posting to the rounding or suspense account, the clearing journals aside):
the books post no rounding and no suspense, so the rule catches no unplanted entry
(``tests/test_key_audit_je01.py`` measures it); the clearing journals are top-side adjustments
that name their upload, not uploads. Every world's ledger balances
(``tests/test_rounding_balance.py``). Required evidence (and clearing evidence): the policy and the
entry's upload file (rounding) or investigation record (suspense). ``near_miss`` moves rounding
decoys' residuals closer to their files' tolerance (and the line-limit defects' closer from above).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, MONEY, NAME, REF, ROUNDING_LIMIT, TOKEN, WORD, Disposition, Form, RoundingLimit,
                                     SurfaceRule, Task, clear, entry_ref, fixed, flag, parse_any, review, roles,
                                     surface_naive, tally)

SPEC = spec(
    "JE-1",
    "L1",
    'Upload residuals in the rounding and suspense accounts',
    step_budget=60,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Review the upload residuals posted to the rounding and suspense accounts and find those the journal-entry policy does not accept: a residual in rounding that is not allocation rounding within its tolerance, or a residual in suspense not cleared by year end to the account its investigation found.',
    defect='upload residual posted to rounding that is not allocation rounding within tolerance (a file keyed in whole cents, or more than USD 0.0087 x sqrt(n) for n rounded lines), or posted to suspense and still open at year end or cleared to another account than its investigation record found',
    decoys='residuals of allocated accruals that are rounding within the policy tolerance; suspense residuals cleared in the year to the account their investigation found',
    required_evidence="the journal-entry policy and the entry's upload file (rounding) or suspense investigation record (suspense)",
    sources=('general_ledger', 'je_policy', 'upload_files', 'suspense_investigations'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', "the upload file's debits and credits differ, and the residual is one the journal-entry policy "
         'does not accept: in the rounding account, not allocation rounding within its tolerance; in the suspense '
         'account, not cleared in the year to the account its investigation record found',
         'the residual posted to the rounding or suspense account'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=False,
    available=True,
)

_STD = "AS 2401.58-.61; ISA 240.32(a)"
KEY_RATIONALE = (
    key("defect", "keyed_file_not_balanced",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: amounts keyed per line in whole cents (no allocation, so no rounding); the file's own debit and "
              "credit totals differ by the residual the tool posted to 7990 Rounding Differences",
        conclusion="The upload was out of balance when keyed; the policy accepts only rounding, and a file with no "
                   "rounded line has none. Exception: the entry misstates the debited account by the difference.",
        standard=_STD),
    key("defect", "difference_exceeds_rounding_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount over N rounded lines; the residual posted to 7990 is larger "
              "than the tolerance USD 0.0087 x sqrt(N) (three standard deviations of N half-cent roundings)",
        conclusion="Rounding of N lines does not plausibly reach the residual, so a line was changed after the "
                   "allocation. Exception: the residual is an error the policy does not accept.",
        standard=_STD),
    key("defect", "suspense_open_at_year_end",
        evidence="the suspense investigation record of the upload, read against the journal-entry policy (section "
                 "4.4) and the year's ledger",
        facts="the residual went to 2991 Suspense - GL Upload Differences; the record gives the correction journal "
              "for posting after 31 December 2025, and no journal clears the item in the year's ledger",
        conclusion="The item was open at year end: the residual sits in suspense instead of the account the "
                   "investigation found. Exception: misstatement of the residual.",
        standard=_STD),
    key("defect", "suspense_cleared_to_other_account",
        evidence="the suspense investigation record of the upload, read against the journal-entry policy (section "
                 "4.4) and the clearing journal it names",
        facts="the record found the correction belongs to account A (the debited expense or the credited "
              "liability); the clearing journal in the ledger moves the residual out of 2991 to account B, the other",
        conclusion="The item was cleared without the basis the record gives: the residual sits in an account it "
                   "does not belong to. Exception: misstatement of the residual.",
        standard=_STD),
    key("decoy", "suspense_cleared_as_investigated",
        evidence="the suspense investigation record of the upload, read against the journal-entry policy (section "
                 "4.4) and the clearing journal it names",
        facts="the clearing journal the record names is in the year's ledger, posted on or before 31 December 2025, "
              "and moves the residual out of 2991 to the account the record found",
        conclusion="The suspense item was investigated and cleared as the policy requires; no exception.",
        standard=_STD),
    key("decoy", "allocation_rounding_within_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount (the file's total before rounding equals the credit) over N "
              "lines, each rounded to the cent; the residual posted to 7990 is at most USD 0.0087 x sqrt(N) and "
              "within the tool's tolerance",
        conclusion="The residual is the allocation rounding the policy accepts; no exception.",
        standard=_STD),
)

POLICY_TITLE = "Journal entry policy - balancing and rounding"
UPLOAD_TITLE = "GL upload file"
#: spreadsheet journals: month-end accruals and top-side adjustments (one debited expense, Cr 2100)
UPLOAD_CODES = ("AC", "TS")
#: what an allocation of the debited account is spread over (utilities by floor space, fees by project hours …)
BASES = {"6000": "headcount by cost centre", "6200": "floor space by cost centre", "6400": "hours by project",
         "6700": "budget share by cost centre and campaign"}
#: where the upload tool posts a file's residual (an account the task adds to the chart)
ROUNDING_ACCOUNT = "7990"
ROUNDING_NAME = "Rounding Differences"
#: where the upload tool posts a residual beyond its tolerance, pending investigation: the GL upload
#: tool's own suspense account (JE-16's billing interface has 2990; one suspense account per interface,
#: each reconciled and cleared by its owner, so neither task's items hide among the other's)
SUSPENSE_ACCOUNT = "2991"
SUSPENSE_NAME = "Suspense - GL Upload Differences"
INVESTIGATION_TITLE = "Suspense investigation"
#: the clearing journal's description (a top-side adjustment that moves a suspense item out)
CLEARING_TEXT = "Suspense clearing"
YEAR_END = "2025-12-31"
#: the share of planted uploads whose residual exceeds the tool's tolerance (suspense items)
SUSPENSE_SHARE = 0.45
#: a suspense residual is more than the tolerance and at most this many times it
SUSPENSE_MAX_TIMES = 6
#: a planted upload allocates at least this much (USD 20 a line on average, and enough lines for a 3-cent tolerance)
MIN_CREDIT_CENTS = 24_000
#: the most lines an allocation spreads over
MAX_LINES = 2_500




@dataclass(frozen=True)
class Policy:
    """The journal-entry policy's balancing and rounding sections: the upload tool's tolerance (cents)
    and the rounding tolerance per square root of the rounded lines (ten-thousandths of a USD)."""
    tolerance: int
    per_root_line: int


@dataclass(frozen=True)
class Upload:
    """What every upload file states: the journal, its entry, who uploaded it when, and the posted totals."""
    basis: ClassVar[str] = ""
    ref: str
    entry: str
    preparer: str
    uploaded: str
    posting: str
    purpose: str
    credit_account: str
    credit: int
    debit_account: str
    lines: int
    debit: int
    difference: int
    account: str
    account_name: str


@dataclass(frozen=True)
class KeyedUpload(Upload):
    """An upload keyed line by line in whole cents (nothing rounded)."""
    basis: ClassVar[str] = "keyed"


@dataclass(frozen=True)
class AllocatedUpload(Upload):
    """An upload allocating the credited amount by ``allocation``, each line rounded to the cent."""
    basis: ClassVar[str] = "allocation"
    allocation: str


POLICY = Form(Policy, "Section 4.2 Balancing. Every journal entry must balance: total debits must equal total credits. "
              "Entries keyed in the ERP cannot be posted unbalanced. Month-end accruals and top-side adjustments "
              "prepared in spreadsheets are posted through the GL upload tool, which posts each upload file as one "
              "entry (each account's lines summarised on one ledger line). The tool's tolerance: a file is accepted "
              "as balanced unless its debit and credit totals differ by more than USD {tolerance}. The residual of "
              "a file within that tolerance (its debit total minus its credit total) is posted on a line of its own "
              f"to account {ROUNDING_ACCOUNT} {ROUNDING_NAME}, so that the entry balances. A file whose totals "
              "differ by more than the tool's tolerance is accepted only with its residual posted on a line of its "
              f"own to account {SUSPENSE_ACCOUNT} {SUSPENSE_NAME}, pending investigation.\nSection 4.3 Rounding. "
              "The only residual this policy accepts in the rounding account is allocation "
              "rounding: a file that allocates a balanced amount by percentage rounds each of its n allocated lines "
              "to the cent, and its residual is accepted up to three standard deviations of n independent half-cent "
              "roundings, USD {per_root_line} x sqrt(n). Any other residual, including any residual of a file whose "
              "lines were keyed as amounts (nothing rounded), is an error in the file and must be corrected before "
              "period close; the rounding account is reviewed against this tolerance at each close.\nSection 4.4 "
              f"Suspense. Every item in account {SUSPENSE_ACCOUNT} is investigated by the general ledger team, which "
              "records for each item the upload, the residual, the cause found and the correction: a journal that "
              "moves the residual out of suspense to the account the investigation found. Every suspense item must "
              f"be cleared by such a correction posted in the fiscal year (on or before {YEAR_END}), for the "
              "residual and to the account its investigation record states, so that the suspense account is nil at "
              "year end and no residual stays in an account it does not belong to.",
              tolerance=fixed(2), per_root_line=fixed(4))
_HEAD = ("Upload file for journal {ref} (entry {entry}), prepared by {preparer} and uploaded on {uploaded} for posting "
         "on {posting}. Purpose: {purpose}.\nCredit: account {credit_account}, one line of {credit}.\n")
_POSTED = ("\nPosted in the ledger: debit {debit}, credit {credit}; residual {difference} posted to account "
           "{account} {account_name}.")
_UPLOAD_KINDS: dict[str, Any] = dict(ref=TOKEN, entry=REF, preparer=TOKEN, uploaded=DATE, posting=DATE,
                                     credit_account=TOKEN, credit=MONEY, debit_account=TOKEN, debit=MONEY,
                                     difference=fixed(2), account=TOKEN, account_name=NAME)
KEYED = Form(KeyedUpload, _HEAD + "Debit: account {debit_account}, {lines} lines keyed as amounts per cost centre (no "
             "allocation, nothing rounded). Basis: keyed. Lines: {lines}.\nFile totals: debit {debit}, credit "
             "{credit}." + _POSTED, **_UPLOAD_KINDS)
ALLOCATED = Form(AllocatedUpload, _HEAD + "Debit: account {debit_account}, the credited {credit} allocated by "
                 "{allocation}, each allocated line rounded to the cent. Basis: allocation. Lines: {lines}.\nFile "
                 "totals: amount allocated {credit}; sum of the rounded lines {debit}." + _POSTED,
                 allocation=NAME, **_UPLOAD_KINDS)


@dataclass(frozen=True)
class Investigation:
    """The general ledger team's record of one suspense item: the upload, its residual, who investigated it
    when, the cause found and the correcting journal (its reference, posting date, side and account)."""
    ref: str
    entry: str
    difference: int
    posting: str
    investigator: str
    investigated: str
    cause: str
    journal: str
    cleared: str
    side: str
    found: str


INVESTIGATION = Form(Investigation, "Suspense item investigation for upload {ref} (entry {entry}): residual "
                     f"{{difference}} posted to account {SUSPENSE_ACCOUNT} {SUSPENSE_NAME} for posting on {{posting}}.\n"
                     "Investigated by {investigator} on {investigated}.\nCause found: {cause}.\nCorrection: journal "
                     "{journal} with posting date {cleared}; {side} account {found} {difference} against account "
                     f"{SUSPENSE_ACCOUNT}.",
                     ref=TOKEN, entry=REF, difference=fixed(2), posting=DATE, investigator=TOKEN, investigated=DATE,
                     cause=NAME, journal=TOKEN, cleared=DATE, side=WORD, found=TOKEN)
#: what an investigation finds, by the account it corrects: the debited expense or the credited liability
CAUSES = {"debit": ("a line of the debited account keyed with transposed digits",
                    "a line of the debited account keyed twice in the file",
                    "a line of the debited account keyed with a wrong amount"),
          "credit": ("the credit line keyed with transposed digits",
                     "the credit line keyed from a superseded estimate",
                     "the credit line keyed with a wrong amount")}


def plant(b: WorldBuilder) -> None:
    """Add the policy, the rounding and the suspense accounts; turn a pool of accruals and top-side
    adjustments into uploads whose debit total differs from the credit. A residual within the tool's
    tolerance goes to the rounding account (a decoy when allocation rounding within the rounding
    tolerance, a defect otherwise); a larger one goes to the suspense account and is investigated (a
    decoy when cleared in the year to the account its record found, a defect when open at year end
    or cleared to another account). Roles are drawn at random from the one pool."""
    rng, c = b.rng, b.cols
    tol_cents = int(rng.choice([25, 50, 100]))
    for acct in ({"account": ROUNDING_ACCOUNT, "name": ROUNDING_NAME, "type": "expense", "normal_balance": "debit"},
                 {"account": SUSPENSE_ACCOUNT, "name": SUSPENSE_NAME, "type": "liability", "normal_balance": "credit"}):
        b.accounts.append({**acct, "contra_of": None, "status": "active", "opened": "2015-01-01", "closed": None,
                           "blocked_on": None})
    b.accounts.sort(key=lambda r: r["account"])
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy(tol_cents, ROUNDING_LIMIT.per_root_line)),
                            "2024-12-15")
    chosen = b.pick(b.n_defects + b.n_decoys,
                    where=c.manual & np.isin(c.doc_code, UPLOAD_CODES) & (c.credit_cents >= MIN_CREDIT_CENTS),
                    what="accruals and top-side adjustments")
    for idx, is_defect in zip(chosen.tolist(), roles(b.n_defects, b.n_decoys, rng)):
        most = min(MAX_LINES, int(c.credit_cents[idx]) // 2000)
        suspense = rng.random() < SUSPENSE_SHARE
        if suspense:
            # beyond the tool's tolerance: one distribution for every suspense item
            d = int(rng.integers(tol_cents + 1, SUSPENSE_MAX_TIMES * tol_cents + 1))
        else:
            # the residual: one distribution for every upload, within the tool's tolerance and scaled to the
            # journal's size (allocated lines average USD 20 or more, so a small journal has few lines and a
            # small tolerance)
            cap = min(tol_cents, max(3, int(ROUNDING_LIMIT.limit_cents(most))))
            d = int(rng.integers(3, cap + 1))
        sign = 1 if rng.random() < 0.5 else -1
        c.debit_cents[idx] = c.credit_cents[idx] + sign * d
        # the tool posts the residual to the rounding or suspense account, on the other side, so the entry balances
        b.set_line(idx, SUSPENSE_ACCOUNT if suspense else ROUNDING_ACCOUNT, -sign * d)
        if suspense:
            kind = "cleared" if not is_defect else ("open" if rng.random() < 0.5 else "other_account")
            _suspense_item(b, idx, kind, d, sign, policy, most)
            continue
        kind = "decoy" if not is_defect else ("keyed" if rng.random() < 0.5 else "few_lines")
        b.claim("JE-1", entries=[idx], documents=[policy, _upload(b, idx, kind, d, sign, policy, most)])


def _lines(rng: np.random.Generator, kind: str, d: int, near: float, most: int) -> int:
    """How many lines an upload of ``kind`` with a residual of ``d`` cents has (at most ``most`` when
    it is an allocation the tolerance covers; ``any``: a suspense item's allocation, whose lines decide nothing)."""
    need = (d * 100 / ROUNDING_LIMIT.per_root_line) ** 2  # the fewest lines whose tolerance reaches d
    if kind == "keyed":
        return int(rng.integers(4, 60))
    if kind == "any":
        return int(rng.integers(4, max(5, most) + 1))
    if kind == "decoy":
        # enough lines for the tolerance to cover the residual; near_miss brings the tolerance down to it
        slack = rng.uniform(1.05, 1.1 + 2.9 * (1 - near))
        return max(2, math.ceil(need), min(most, math.ceil(need * slack)))
    # too few lines: three standard deviations of their roundings stay below the residual
    share = rng.uniform(0.15 + 0.6 * near, 0.2 + 0.7 * near)
    return max(2, min(int(need * share), math.ceil(need) - 1))


def _head(b: WorldBuilder, idx: int, kind: str, d: int, sign: int, most: int, suspense: bool) -> dict[str, Any]:
    """The fields every upload file states."""
    c = b.cols
    credit = int(c.credit_cents[idx]) - max(sign * d, 0)  # the file's credit: the entry's less a residual credit
    return asdict(Upload(
        ref=str(c.reference[idx]), entry=entry_ref(idx), preparer=str(c.preparer[idx]),
        uploaded=b.date_str(c.entry_date[idx]), posting=b.date_str(c.post_date[idx]), purpose=str(c.description[idx]),
        credit_account=str(c.credit_account[idx]), credit=credit, debit_account=str(c.debit_account[idx]),
        lines=_lines(b.rng, kind, d, b.knobs.near_miss, most), debit=credit + sign * d, difference=d,
        account=SUSPENSE_ACCOUNT if suspense else ROUNDING_ACCOUNT, account_name=SUSPENSE_NAME if suspense else ROUNDING_NAME))


def _file(b: WorldBuilder, head: dict[str, Any], keyed: bool) -> tuple[int, Upload]:
    """Add the upload file (keyed or an allocation); its handle and fields."""
    up: Upload
    if keyed:
        up = keyed_up = KeyedUpload(**head)
        body = KEYED.render(keyed_up)
    else:
        up = allocated = AllocatedUpload(**head, allocation=BASES.get(head["debit_account"], "headcount by cost centre"))
        body = ALLOCATED.render(allocated)
    return b.add_document("upload_file", f"{UPLOAD_TITLE} {up.ref}", body, head["uploaded"]), up


def _upload(b: WorldBuilder, idx: int, kind: str, d: int, sign: int, policy: int, most: int) -> int:
    """Write the entry's upload file, record the entry as a decoy or a defect; the file's handle."""
    head = _head(b, idx, kind, d, sign, most, suspense=False)
    doc, up = _file(b, head, keyed=kind == "keyed")
    if kind == "keyed":
        b.add_defect(idx, "keyed_file_not_balanced", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=[f"{{D:{doc}}}", "keyed", d / 100])
        return doc
    facts = [f"{{D:{doc}}}", "allocation", d / 100, str(up.lines)]
    assert ROUNDING_LIMIT.check(up.basis, up.lines, d, None).ok is (kind == "decoy")
    if kind == "decoy":
        b.add_decoy(idx, "allocation_rounding_within_limit", [policy, doc], facts=facts)
    else:
        b.add_defect(idx, "difference_exceeds_rounding_limit", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=facts)
    return doc


def _suspense_item(b: WorldBuilder, idx: int, kind: str, d: int, sign: int, policy: int, most: int) -> None:
    """An upload whose residual went to suspense: its file (keyed or an allocation, at random), the
    investigation record and, unless the item stayed open at year end, the clearing journal (a
    top-side adjustment moving the residual out of suspense); record it as a decoy or a defect."""
    rng, c = b.rng, b.cols
    keyed = rng.random() < 0.5
    doc, up = _file(b, _head(b, idx, "keyed" if keyed else "any", d, sign, most, suspense=True), keyed)
    found_side = "debit" if rng.random() < 0.5 else "credit"
    found = str(c.debit_account[idx] if found_side == "debit" else c.credit_account[idx])
    other = str(c.credit_account[idx] if found_side == "debit" else c.debit_account[idx])
    keyed_on = np.datetime64(c.entry_date[idx], "D")
    year_end = np.datetime64(YEAR_END)
    investigated = np.busday_offset(keyed_on + int(rng.integers(1, 16)), 0, roll="forward")
    if kind == "open":  # the investigation and its correction fall after the year-end close
        investigated = np.busday_offset(max(investigated, year_end + 20) + int(rng.integers(0, 41)), 0, roll="forward")
    journal_keyed = np.busday_offset(investigated + int(rng.integers(0, 4)), 0, roll="forward")
    cleared = journal_keyed if kind == "open" else max(min(journal_keyed, year_end), np.datetime64(c.post_date[idx], "D"))
    number = 900_000 + int(idx)
    # the clearing journal is keyed and approved as the books' top-side adjustments are
    ts = np.flatnonzero((c.doc_code == "TS") & c.manual)
    like = int(ts[int(rng.integers(0, len(ts)))]) if len(ts) else idx
    rec = Investigation(ref=up.ref, entry=entry_ref(idx), difference=d, posting=up.posting,
                        investigator=str(c.approver[idx]), investigated=b.date_str(investigated),
                        cause=str(rng.choice(CAUSES[found_side])), journal=f"TS-{number:07d}", cleared=b.date_str(cleared),
                        side="credit" if sign > 0 else "debit", found=found)
    record = b.add_document("investigation", f"{INVESTIGATION_TITLE} {up.ref}", INVESTIGATION.render(rec),
                            rec.investigated)
    entries = [idx]
    if kind != "open":
        posted_to = found if kind == "cleared" else other
        # Dr suspense / Cr the account when the tool credited suspense (sign +1), the other way round otherwise
        new = int(b.add_entries([{
            "doc_code": "TS", "post_date": cleared, "entry_date": journal_keyed,
            "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": str(c.preparer[like]),
            "approver": str(c.approver[like]), "reference": rec.journal,
            "description": f"{CLEARING_TEXT} upload {up.ref}",
            "lines": [(posted_to, sign * d), (posted_to, -sign * d)]}])[0])
        b.e["debit_account" if sign > 0 else "credit_account"][new] = SUSPENSE_ACCOUNT
        entries.append(new)
    b.claim("JE-1", entries=entries, documents=[policy, doc, record])
    if kind == "cleared":
        b.add_decoy(idx, "suspense_cleared_as_investigated", [policy, record],
                    facts=[f"{{D:{record}}}", rec.journal, found, rec.cleared, d / 100])
    elif kind == "open":
        b.add_defect(idx, "suspense_open_at_year_end", "UNBALANCED", [policy, record], misstatement_cents=d,
                     facts=[f"{{D:{record}}}", rec.journal, rec.cleared, d / 100])
    else:
        b.add_defect(idx, "suspense_cleared_to_other_account", "UNBALANCED", [policy, record], misstatement_cents=d,
                     facts=[f"{{D:{record}}}", rec.journal, found, other, d / 100])


# ----------------------------------------------------------------- strategies
_COLUMNS = ("entry_id", "debit", "credit", "reference", "description", "posting_date")


def _residual_filters(filters: list[dict] | None = None) -> list[dict]:
    """``query_ledger`` filters for the uploads (manual entries) with a line on the rounding or the suspense account."""
    return [{"column": "account", "op": "in", "value": [ROUNDING_ACCOUNT, SUSPENSE_ACCOUNT]},
            {"column": "source", "op": "eq", "value": "manual"}, *(filters or [])]


def _residual_entries(rows: list[dict]) -> dict[str, dict[str, Any]]:
    """The uploads among ``rows``' entries, each with its residual (USD, unsigned) and ``account`` (where it went);
    the suspense clearing journals aside (the year-end closing entry, which closes the rounding account, is
    automated)."""
    return {k: {**v, "difference": abs(v["total_debit"] - v["total_credit"]), "account": v["accounts"][0]}
            for k, v in entries_of(rows).items() if not str(v.get("description") or "").startswith(CLEARING_TEXT)}


def _residuals(kit: Kit, filters: list[dict] | None = None,
               columns: tuple[str, ...] = _COLUMNS,
               ) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The uploads with a residual on the rounding or the suspense account (``_residual_entries``)."""
    rows = yield from kit.ledger(_residual_filters(filters), columns=list(columns) + ["account"])
    return _residual_entries(rows)


RULE = SurfaceRule(f"uploads posting a residual to the rounding account {ROUNDING_ACCOUNT} or the suspense account "
                   f"{SUSPENSE_ACCOUNT}", "UNBALANCED", _residuals,
                   "Entry {entry_id} posts a residual of {difference:.2f} to account {account}.",
                   "Flagged {n} entries that post a residual to the rounding or suspense account.")
naive = surface_naive(RULE)


def _read_residuals(kit: Kit) -> Generator[Step, Any, tuple[dict[str, dict], dict[str, list[dict]]]]:
    """The upload residuals (``_residual_entries``) and the suspense clearing journals by reference, read in one
    reply."""
    rows, clearing = yield from kit.ledgers([
        (_residual_filters(), [*_COLUMNS, "account"]),
        ([{"column": "description", "op": "startswith", "value": CLEARING_TEXT}], [*_COLUMNS, "account"])])
    ents = _residual_entries(rows)
    journals: dict[str, list[dict]] = {}
    for r in clearing:
        journals.setdefault(str(r.get("reference")), []).append(r)
    return ents, journals


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy (tool tolerance, USD 0.0087 x sqrt(n) rounding tolerance), then each upload
    file behind a residual in the rounding account: clears allocation rounding within the tolerance,
    flags every other residual. For each residual in suspense, reads its investigation record and the
    clearing journal it names: clears an item cleared in the year, for the residual, to the account
    the record found; flags one open at year end or cleared elsewhere."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "balancing and rounding" in d["title"].lower()), None)
    stated = POLICY.parse((yield from kit.open(policy)).get("body", "")) if policy else None
    rule = RoundingLimit(stated.per_root_line) if stated else ROUNDING_LIMIT
    files = {d["title"][len(UPLOAD_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(UPLOAD_TITLE)}
    records = {d["title"][len(INVESTIGATION_TITLE) + 1:]: d["doc_id"] for d in docs
               if d["title"].startswith(INVESTIGATION_TITLE)}
    ents, journals = yield from _read_residuals(kit)

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        v = ents[eid]
        d = round(v["difference"], 2)
        if v["account"] == SUSPENSE_ACCOUNT:
            rec = records.get(v.get("reference") or "")
            if rec is None:
                return flag(eid, "UNBALANCED", [policy] if policy else [],
                            f"Entry {eid} posts a residual of {d:.2f} to suspense {SUSPENSE_ACCOUNT} and no "
                            "investigation record supports clearing it.")
            inv = INVESTIGATION.parse((yield from kit.open(rec)).get("body", ""))
            return _judge_suspense(eid, d, rec, policy, inv, journals)
        doc = files.get(v.get("reference") or "")
        if doc is None:
            return flag(eid, "UNBALANCED", [policy] if policy else [],
                        f"Entry {eid} posts a residual of {d:.2f} to the rounding account and no upload file "
                        "supports it.")
        up = parse_any((yield from kit.open(doc)).get("body", ""), (KEYED, ALLOCATED))
        return _judge(eid, d, doc, policy, up, rule, stated.tolerance if stated else None)

    done = yield from review(kit, sorted(ents), decide)
    flags, clears = tally(done)
    yield from kit.submit(f"Reviewed {len(ents)} upload residuals in the rounding and suspense accounts: flagged "
                          f"{flags}, cleared {clears} (allocation rounding within the tolerance, or suspense items "
                          "cleared in the year as investigated).")


def _judge_suspense(eid: str, d: float, rec: str, policy: str | None, inv: Investigation | None,
                    journals: dict[str, list[dict]]) -> Disposition:
    """The disposition of a suspense residual (``d`` USD) whose investigation record reads ``inv``, against
    the clearing journals in the ledger (their lines by reference)."""
    ev = [rec] + ([policy] if policy else [])
    if inv is None:
        return flag(eid, "UNBALANCED", ev, f"Entry {eid} posts a residual of {d:.2f} to suspense {SUSPENSE_ACCOUNT}; "
                    f"record {rec} states no correction.")
    lines = journals.get(inv.journal, [])
    posted = str(lines[0]["posting_date"])[:10] if lines else ""
    if not lines or posted > YEAR_END:
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: the residual of {d:.2f} posted to suspense {SUSPENSE_ACCOUNT} "
                    f"was still open at {YEAR_END}: investigation record {rec} gives correction journal "
                    f"{inv.journal} with posting date {inv.cleared}, and no such journal is in the year's ledger; the "
                    f"suspense balance is misstated by {d:.2f} ({policy}, section 4.4).")
    moved = {str(r["account"]): round((r.get("debit") or 0.0) - (r.get("credit") or 0.0), 2)
             for r in lines if str(r["account"]) != SUSPENSE_ACCOUNT}
    out = round(sum(abs((r.get("debit") or 0.0) - (r.get("credit") or 0.0)) for r in lines
                    if str(r["account"]) == SUSPENSE_ACCOUNT), 2)
    if set(moved) != {inv.found} or abs(out - d) > 0.004:
        to = ", ".join(sorted(moved)) or "no account"
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: the residual of {d:.2f} posted to suspense {SUSPENSE_ACCOUNT} "
                    f"was cleared by journal {inv.journal} to account {to} ({out:.2f}), while investigation record "
                    f"{rec} found the correction belongs to account {inv.found}; the residual sits in the wrong "
                    f"account ({policy}, section 4.4).")
    return clear(eid, ev, f"Entry {eid}: the residual of {d:.2f} posted to suspense {SUSPENSE_ACCOUNT} was cleared by "
                 f"journal {inv.journal} posted on {posted} (by {YEAR_END}) to account {inv.found}, the account "
                 f"investigation record {rec} found ({inv.cause}), for the residual; no exception under {policy}.")


def _judge(eid: str, d: float, doc: str, policy: str | None, up: Upload | None, rule: RoundingLimit,
           tol_cents: int | None) -> Disposition:
    """The disposition of an upload residual (``d`` USD) whose upload file reads ``up``."""
    basis, n = (up.basis, up.lines) if up else ("", 0)
    ev = [doc] + ([policy] if policy else [])
    limit = rule.limit_cents(n) / 100
    if basis != "allocation":
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: upload file {doc} is keyed (basis: keyed, amounts per line), "
                    f"so nothing was rounded; the residual of {d:.2f} is a keying error, not rounding ({policy}).")
    if not rule.check(basis, n, round(d * 100), tol_cents).ok:
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: upload file {doc} is an allocation over {n} rounded lines, so "
                    f"the rounding tolerance is {limit:.4f} (0.0087 x sqrt({n})); the residual of {d:.2f} is larger "
                    f"and is an error under {policy}.")
    tol = (tol_cents or 0) / 100
    return clear(eid, ev, f"Entry {eid}: upload file {doc} is an allocation of the credited amount over {n} lines, each "
                 f"rounded to the cent; the residual of {d:.2f} is within the {limit:.4f} rounding tolerance "
                 f"(0.0087 x sqrt({n})) and the USD {tol:.2f} tolerance of {policy}.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template, rules=(ROUNDING_LIMIT,),
            decisive="the upload file's basis and number of rounded lines against the residual posted to the "
                     "rounding account: allocation rounding within USD 0.0087 x sqrt(n) (section 4.3 of the "
                     "journal-entry policy); for a residual in suspense, the investigation record's correction "
                     "against the clearing journal in the ledger: posted by year end, to the account found "
                     "(section 4.4)")
