"""JE-1 (L1): upload residuals in the rounding account.

The ERP posts only balanced documents. Month-end accruals and year-end top-side adjustments are
prepared in spreadsheets (the expense allocated across cost centres and projects) and reach the
ledger through the GL upload tool, which posts each upload file as one entry (each account's
lines summarised on one ledger line). A file whose debit and credit totals differ by up to the
tool's tolerance (USD 0.25, 0.50 or 1.00, drawn per seed and stated in the journal-entry policy)
is accepted and its residual is posted on a line of its own to account 7990 Rounding Differences
(credited when the file's debits exceed its credits, debited otherwise), so every entry and the
year balance. What auditors test is what lands there: each residual in the rounding account
against the policy's rounding tolerance. Every residual sits on an accrual (``AC``) or top-side
adjustment (``TS``) upload, and its size alone does not tell an error from a rounding.

What does is the upload file (one document per residual, titled with the entry's reference,
dated the day it was uploaded, naming the entry, its accounts, its totals and the residual). The
policy accepts one cause only: allocation rounding within three standard deviations of the
file's roundings. A file that allocates a balanced amount by percentage rounds each of its n
lines to the cent; each rounding is uniform within half a cent (standard deviation 0.29 cents),
so the policy accepts a residual of at most USD 0.0087 x sqrt(n) (``ROUNDING_LIMIT``). A file
whose lines were keyed as whole-cent amounts has no rounding at all.

Planted, all drawn from one pool (the year's accruals and top-side adjustments of USD 240 or more;
the same residual, timing, amount and text distributions) and made a defect or a decoy at random.
The debit total of the file changes and the residual is posted to 7990 (the accrued liability is
what the file states; an accrual's automatic reversal reverses that liability and is left as the
books posted it):

* Decoys (``allocation_rounding_within_limit``): an allocation of the credited amount over
  enough lines that the tolerance covers the residual. Decisive facts: the upload file, its basis
  (allocation), the residual and the number of rounded lines.
* Defects ``keyed_file_not_balanced``: a file keyed line by line in whole cents, so nothing was
  rounded and the residual is a keying error. Decisive facts: the file, its basis (keyed), the
  residual.
* Defects ``difference_exceeds_rounding_limit``: an allocation over so few lines that the
  tolerance (USD 0.0087 x sqrt(n)) does not cover the residual. Decisive facts: the file, its basis,
  the residual and the number of lines.

Red-flag rule (postings to the rounding account): the books post no rounding, so the rule catches
no unplanted entry (``tests/test_key_audit_je01.py`` measures it), and every world's ledger
balances (``tests/test_rounding_balance.py``). Required evidence (and clearing evidence): the
policy and the entry's upload file. ``near_miss`` moves decoys' residuals closer to their files'
tolerance (and the line-limit defects' closer from above).
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
from jeval_ray.tasks.taskkit import (DATE, MONEY, NAME, REF, ROUNDING_LIMIT, TOKEN, Disposition, Form, RoundingLimit,
                                     SurfaceRule, Task, clear, entry_ref, fixed, flag, parse_any, review, roles,
                                     surface_naive, tally)

SPEC = spec(
    "JE-1",
    "L1",
    'Upload residuals in the rounding account',
    step_budget=60,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Review the upload residuals posted to the rounding account and find those the journal-entry policy does not accept as rounding within its tolerance.',
    defect='upload residual posted to rounding that is not allocation rounding within tolerance (a file keyed in whole cents, or more than USD 0.0087 x sqrt(n) for n rounded lines)',
    decoys='residuals of allocated accruals that are rounding within the policy tolerance',
    required_evidence="the journal-entry policy and the entry's upload file",
    sources=('general_ledger', 'je_policy', 'upload_files'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', "the upload file's debits and credits differ, and the residual posted to the rounding account is "
         'not rounding the journal-entry policy accepts', 'the residual posted to the rounding account'),
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
              "entry (each account's lines summarised on one ledger line) and rejects a file whose debit and credit "
              "totals differ by more than USD {tolerance}. The residual of an accepted file (its debit total minus "
              "its credit total) is posted on a line of its own to account 7990 Rounding Differences, so that the "
              "entry balances.\nSection 4.3 Rounding. The only residual this policy accepts is allocation "
              "rounding: a file that allocates a balanced amount by percentage rounds each of its n allocated lines "
              "to the cent, and its residual is accepted up to three standard deviations of n independent half-cent "
              "roundings, USD {per_root_line} x sqrt(n). Any other residual, including any residual of a file whose "
              "lines were keyed as amounts (nothing rounded), is an error in the file and must be corrected before "
              "period close; the rounding account is reviewed against this tolerance at each close.",
              tolerance=fixed(2), per_root_line=fixed(4))
_HEAD = ("Upload file for journal {ref} (entry {entry}), prepared by {preparer} and uploaded on {uploaded} for posting "
         "on {posting}. Purpose: {purpose}.\nCredit: account {credit_account}, one line of {credit}.\n")
_POSTED = ("\nPosted in the ledger: debit {debit}, credit {credit}; residual {difference} posted to account "
           f"{ROUNDING_ACCOUNT} {ROUNDING_NAME}.")
_UPLOAD_KINDS: dict[str, Any] = dict(ref=TOKEN, entry=REF, preparer=TOKEN, uploaded=DATE, posting=DATE,
                                     credit_account=TOKEN, credit=MONEY, debit_account=TOKEN, debit=MONEY,
                                     difference=fixed(2))
KEYED = Form(KeyedUpload, _HEAD + "Debit: account {debit_account}, {lines} lines keyed as amounts per cost centre (no "
             "allocation, nothing rounded). Basis: keyed. Lines: {lines}.\nFile totals: debit {debit}, credit "
             "{credit}." + _POSTED, **_UPLOAD_KINDS)
ALLOCATED = Form(AllocatedUpload, _HEAD + "Debit: account {debit_account}, the credited {credit} allocated by "
                 "{allocation}, each allocated line rounded to the cent. Basis: allocation. Lines: {lines}.\nFile "
                 "totals: amount allocated {credit}; sum of the rounded lines {debit}." + _POSTED,
                 allocation=NAME, **_UPLOAD_KINDS)


def plant(b: WorldBuilder) -> None:
    """Add the policy and the rounding account; turn a pool of accruals and top-side adjustments into
    uploads whose debit total differs from the credit within the tool's tolerance, the residual posted
    to the rounding account on a line of its own; make each a decoy (allocation rounding within the
    tolerance) or a defect (not rounding, or beyond the tolerance) at random."""
    rng, c = b.rng, b.cols
    tol_cents = int(rng.choice([25, 50, 100]))
    b.accounts.append({"account": ROUNDING_ACCOUNT, "name": ROUNDING_NAME, "type": "expense", "normal_balance": "debit",
                       "contra_of": None, "status": "active", "opened": "2015-01-01", "closed": None, "blocked_on": None})
    b.accounts.sort(key=lambda r: r["account"])
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy(tol_cents, ROUNDING_LIMIT.per_root_line)),
                            "2024-12-15")
    chosen = b.pick(b.n_defects + b.n_decoys,
                    where=c.manual & np.isin(c.doc_code, UPLOAD_CODES) & (c.credit_cents >= MIN_CREDIT_CENTS),
                    what="accruals and top-side adjustments")
    for idx, is_defect in zip(chosen.tolist(), roles(b.n_defects, b.n_decoys, rng)):
        # the residual: one distribution for every upload, within the tool's tolerance and scaled to the
        # journal's size (allocated lines average USD 20 or more, so a small journal has few lines and a
        # small tolerance)
        most = min(MAX_LINES, int(c.credit_cents[idx]) // 2000)
        cap = min(tol_cents, max(3, int(ROUNDING_LIMIT.limit_cents(most))))
        d = int(rng.integers(3, cap + 1))
        sign = 1 if rng.random() < 0.5 else -1
        c.debit_cents[idx] = c.credit_cents[idx] + sign * d
        # the tool posts the residual to the rounding account, on the other side, so the entry balances
        b.set_line(idx, ROUNDING_ACCOUNT, -sign * d)
        kind = "decoy" if not is_defect else ("keyed" if rng.random() < 0.5 else "few_lines")
        b.claim("JE-1", entries=[idx], documents=[policy, _upload(b, idx, kind, d, sign, policy, most)])


def _lines(rng: np.random.Generator, kind: str, d: int, near: float, most: int) -> int:
    """How many lines an upload of ``kind`` with a residual of ``d`` cents has (at most ``most`` when
    it is an allocation the tolerance covers)."""
    need = (d * 100 / ROUNDING_LIMIT.per_root_line) ** 2  # the fewest lines whose tolerance reaches d
    if kind == "keyed":
        return int(rng.integers(4, 60))
    if kind == "decoy":
        # enough lines for the tolerance to cover the residual; near_miss brings the tolerance down to it
        slack = rng.uniform(1.05, 1.1 + 2.9 * (1 - near))
        return max(2, math.ceil(need), min(most, math.ceil(need * slack)))
    # too few lines: three standard deviations of their roundings stay below the residual
    share = rng.uniform(0.15 + 0.6 * near, 0.2 + 0.7 * near)
    return max(2, min(int(need * share), math.ceil(need) - 1))


def _upload(b: WorldBuilder, idx: int, kind: str, d: int, sign: int, policy: int, most: int) -> int:
    """Write the entry's upload file, record the entry as a decoy or a defect; the file's handle."""
    c = b.cols
    when = b.date_str(c.entry_date[idx])
    dr = str(c.debit_account[idx])
    credit = int(c.credit_cents[idx]) - max(sign * d, 0)  # the file's credit: the entry's less a rounding credit
    head = asdict(Upload(
        ref=str(c.reference[idx]), entry=entry_ref(idx), preparer=str(c.preparer[idx]), uploaded=when,
        posting=b.date_str(c.post_date[idx]), purpose=str(c.description[idx]), credit_account=str(c.credit_account[idx]),
        credit=credit, debit_account=dr, lines=_lines(b.rng, kind, d, b.knobs.near_miss, most),
        debit=credit + sign * d, difference=d))
    if kind == "keyed":
        doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {head['ref']}", KEYED.render(KeyedUpload(**head)), when)
        b.add_defect(idx, "keyed_file_not_balanced", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=[f"{{D:{doc}}}", "keyed", d / 100])
        return doc
    up = AllocatedUpload(**head, allocation=BASES.get(dr, "headcount by cost centre"))
    doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {up.ref}", ALLOCATED.render(up), when)
    facts = [f"{{D:{doc}}}", "allocation", d / 100, str(up.lines)]
    assert ROUNDING_LIMIT.check(up.basis, up.lines, d, None).ok is (kind == "decoy")
    if kind == "decoy":
        b.add_decoy(idx, "allocation_rounding_within_limit", [policy, doc], facts=facts)
    else:
        b.add_defect(idx, "difference_exceeds_rounding_limit", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=facts)
    return doc


# ----------------------------------------------------------------- strategies
def _residuals(kit: Kit, filters: list[dict] | None = None,
               columns: tuple[str, ...] = ("entry_id", "debit", "credit", "reference"),
               ) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The uploads (manual entries) with a line on the rounding account, each with its residual (USD,
    unsigned); the year-end closing entry, which closes the account, is automated."""
    rows = yield from kit.ledger([{"column": "account", "op": "eq", "value": ROUNDING_ACCOUNT},
                                  {"column": "source", "op": "eq", "value": "manual"}, *(filters or [])],
                                 columns=list(columns))
    return {k: {**v, "difference": abs(v["total_debit"] - v["total_credit"])} for k, v in entries_of(rows).items()}


RULE = SurfaceRule(f"uploads posting to the rounding account {ROUNDING_ACCOUNT}", "UNBALANCED", _residuals,
                   "Entry {entry_id} posts a residual of {difference:.2f} to the rounding account.",
                   "Flagged {n} entries that post a residual to the rounding account.")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy (tool tolerance, USD 0.0087 x sqrt(n) rounding tolerance), then each upload
    file behind a residual in the rounding account: clears allocation rounding within the tolerance,
    flags every other residual."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "balancing and rounding" in d["title"].lower()), None)
    stated = POLICY.parse((yield from kit.open(policy)).get("body", "")) if policy else None
    rule = RoundingLimit(stated.per_root_line) if stated else ROUNDING_LIMIT
    files = {d["title"][len(UPLOAD_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(UPLOAD_TITLE)}
    ents = yield from _residuals(kit)

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        v = ents[eid]
        d = round(v["difference"], 2)
        doc = files.get(v.get("reference") or "")
        if doc is None:
            return flag(eid, "UNBALANCED", [policy] if policy else [],
                        f"Entry {eid} posts a residual of {d:.2f} to the rounding account and no upload file "
                        "supports it.")
        up = parse_any((yield from kit.open(doc)).get("body", ""), (KEYED, ALLOCATED))
        return _judge(eid, d, doc, policy, up, rule, stated.tolerance if stated else None)

    done = yield from review(kit, sorted(ents), decide)
    flags, clears = tally(done)
    yield from kit.submit(f"Reviewed {len(ents)} upload residuals in the rounding account: flagged {flags}, cleared "
                          f"{clears} allocation rounding residuals within the tolerance.")


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
                     "journal-entry policy)")
