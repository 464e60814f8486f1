"""JE-1 (L1): unbalanced entries.

The ERP posts only balanced documents keyed in it. Month-end accruals and year-end top-side
adjustments are prepared in spreadsheets (the expense allocated across cost centres and projects)
and reach the ledger through the GL upload tool, which posts each upload file as one entry (each
account's lines summarised on one ledger line) and accepts a file whose debit and credit totals
differ by up to a tolerance (USD 0.25, 0.50 or 1.00, drawn per seed and stated in the
journal-entry policy). So every unbalanced entry is an upload of an accrual (``AC``) or a top-side
adjustment (``TS``), every difference is within the tool's tolerance and sits on the allocated
(debit) side, and the size of a difference does not tell an error from a rounding.

What does is the upload file (one document per unbalanced entry, titled with the entry's
reference, dated the day it was uploaded, naming the entry, its accounts and its posted totals).
The policy accepts one cause only: allocation rounding. A file that allocates a balanced amount
by percentage rounds each allocated line to the cent, which can move the total by at most half a
cent (USD 0.005) per rounded line; a file whose lines were keyed as whole-cent amounts has no
rounding at all.

Planted, all drawn from one pool (the year's accruals and top-side adjustments; the same
difference, timing, amount and text distributions) and made a defect or a decoy at random. Only
the debit total of the entry changes (the accrued liability is what the file states; an
accrual's automatic reversal reverses that liability and is left as the books posted it):

* Decoys (``allocation_rounding_within_limit``): an allocation of the credited amount over
  enough lines that rounding reaches the difference. Decisive facts: the upload file, its
  basis (allocation), the difference and the number of rounded lines.
* Defects ``keyed_file_not_balanced``: a file keyed line by line in whole cents, so nothing was
  rounded and the difference is a keying error. Decisive facts: the file, its basis (keyed),
  the difference.
* Defects ``difference_exceeds_rounding_limit``: an allocation over so few lines that rounding
  cannot explain the difference (more than USD 0.005 a line). Decisive facts: the file, its
  basis, the difference and the number of lines.

Red-flag rule (debits differ from credits): the books post only balanced entries, so the rule
catches no unplanted entry (0 of the 25,432 unplanted listed entries of seeds 0-49 at default knobs;
``tests/test_key_audit_je01.py`` measures it). Required evidence (and clearing evidence): the
policy and the entry's upload file. ``near_miss`` moves decoys' differences closer to their
files' rounding limit (and the line-limit defects' closer from above).
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
    'Unbalanced entries',
    step_budget=60,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Find journal entries whose debits and credits do not balance, other than the differences the journal-entry policy accepts.',
    defect='unbalanced upload whose difference is not allocation rounding (a file keyed in whole cents, or more than half a cent per rounded line)',
    decoys='uploads of allocated accruals whose difference is rounding within the policy limit',
    required_evidence="the journal-entry policy and the entry's upload file",
    sources=('general_ledger', 'je_policy', 'upload_files'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits of the entry differ by an amount the journal-entry policy does not accept',
         'the difference between debits and credits'),
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
              "credit totals differ by the posted difference",
        conclusion="The upload was out of balance when keyed; the policy accepts only rounding, and a file with no "
                   "rounded line has none. Exception: the entry misstates the debited account by the difference.",
        standard=_STD),
    key("defect", "difference_exceeds_rounding_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount over N rounded lines; the difference is larger than N x USD "
              "0.005",
        conclusion="Rounding of N lines cannot reach the difference, so a line was changed after the allocation. "
                   "Exception: the difference is an error the policy does not accept.",
        standard=_STD),
    key("decoy", "allocation_rounding_within_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount (the file's total before rounding equals the credit) over N "
              "lines, each rounded to the cent; the difference is at most N x USD 0.005 and within the tool's "
              "tolerance",
        conclusion="The difference is the allocation rounding the policy accepts; no exception.",
        standard=_STD),
)

POLICY_TITLE = "Journal entry policy - balancing and rounding"
UPLOAD_TITLE = "GL upload file"
#: spreadsheet journals: month-end accruals and top-side adjustments (one debited expense, Cr 2100)
UPLOAD_CODES = ("AC", "TS")
#: what an allocation of the debited account is spread over (utilities by floor space, fees by project hours …)
BASES = {"6000": "headcount by cost centre", "6200": "floor space by cost centre", "6400": "hours by project",
         "6700": "budget share by cost centre and campaign"}




@dataclass(frozen=True)
class Policy:
    """The journal-entry policy's balancing and rounding sections: the upload tool's tolerance (cents)
    and the most rounding one allocated line may add (thousandths of a USD)."""
    tolerance: int
    per_line: int


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
              "totals differ by more than USD {tolerance}.\nSection 4.3 Rounding. The only difference this policy "
              "accepts is allocation rounding: a file that allocates a balanced amount by percentage rounds each "
              "allocated line to the cent and may therefore differ by at most USD {per_line} (half a cent) per "
              "rounded line. Any other difference, including any difference on a file whose lines were keyed as "
              "amounts (nothing rounded), is an error in the file and must be corrected before period close.",
              tolerance=fixed(2), per_line=fixed(3))
_HEAD = ("Upload file for journal {ref} (entry {entry}), prepared by {preparer} and uploaded on {uploaded} for posting "
         "on {posting}. Purpose: {purpose}.\nCredit: account {credit_account}, one line of {credit}.\n")
_POSTED = "\nPosted in the ledger: debit {debit}, credit {credit}; difference {difference}."
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
    """Add the policy; turn a pool of accruals and top-side adjustments into uploads whose debit
    total differs from the credit within the tool's tolerance; make each a decoy (allocation
    rounding) or a defect (not rounding) at random."""
    rng, c = b.rng, b.cols
    tol_cents = int(rng.choice([25, 50, 100]))
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy(tol_cents, ROUNDING_LIMIT.per_line_mills)),
                            "2024-12-15")
    chosen = b.pick(b.n_defects + b.n_decoys, where=c.manual & np.isin(c.doc_code, UPLOAD_CODES),
                    what="accruals and top-side adjustments")
    for idx, is_defect in zip(chosen.tolist(), roles(b.n_defects, b.n_decoys, rng)):
        # the difference: one distribution for every upload, within the tool's tolerance and scaled to
        # the journal's size (allocated lines average USD 20 or more, so a small journal has few lines)
        cap = min(tol_cents, max(3, int(c.credit_cents[idx]) // 4000))
        d = int(rng.integers(3, cap + 1))
        sign = 1 if rng.random() < 0.5 else -1
        c.debit_cents[idx] = c.credit_cents[idx] + sign * d
        kind = "decoy" if not is_defect else ("keyed" if rng.random() < 0.5 else "few_lines")
        b.claim("JE-1", entries=[idx], documents=[policy, _upload(b, idx, kind, d, policy)])


def _lines(rng: np.random.Generator, kind: str, d: int, near: float) -> int:
    """How many lines an upload of ``kind`` with a difference of ``d`` cents has."""
    per_line_cents = ROUNDING_LIMIT.per_line_mills / 10
    if kind == "keyed":
        return int(rng.integers(4, 60))
    if kind == "decoy":
        # enough lines for the rounding to reach the difference; near_miss brings the limit down to it
        slack = rng.uniform(1.05, 1.1 + 2.9 * (1 - near))
        return max(2, math.ceil(d / per_line_cents * slack))
    # too few lines: at most half a cent each cannot make the difference
    share = rng.uniform(0.15 + 0.6 * near, 0.2 + 0.7 * near)
    return max(2, min(int(d / per_line_cents * share), math.ceil(d / per_line_cents) - 1))


def _upload(b: WorldBuilder, idx: int, kind: str, d: int, policy: int) -> int:
    """Write the entry's upload file, record the entry as a decoy or a defect; the file's handle."""
    c = b.cols
    when = b.date_str(c.entry_date[idx])
    dr = str(c.debit_account[idx])
    head = asdict(Upload(
        ref=str(c.reference[idx]), entry=entry_ref(idx), preparer=str(c.preparer[idx]), uploaded=when,
        posting=b.date_str(c.post_date[idx]), purpose=str(c.description[idx]), credit_account=str(c.credit_account[idx]),
        credit=int(c.credit_cents[idx]), debit_account=dr, lines=_lines(b.rng, kind, d, b.knobs.near_miss),
        debit=int(c.debit_cents[idx]), difference=d))
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
def _unbalanced(kit: Kit, filters: list[dict] | None = None,
                columns: tuple[str, ...] = ("entry_id", "line_no", "debit", "credit", "reference"),
                ) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    rows = yield from kit.ledger(filters, columns=list(columns))
    ents = {k: v for k, v in entries_of(rows).items() if abs(v["total_debit"] - v["total_credit"]) > 0.004}
    return {k: {**v, "difference": abs(v["total_debit"] - v["total_credit"])} for k, v in ents.items()}


RULE = SurfaceRule("debits differ from credits", "UNBALANCED", _unbalanced,
                   "Entry {entry_id} does not balance: difference {difference:.2f}.",
                   "Flagged {n} entries that do not balance.")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy (tolerance, half a cent per rounded line), then each unbalanced entry's
    upload file: clears allocation rounding within the limit, flags every other difference."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "balancing and rounding" in d["title"].lower()), None)
    stated = POLICY.parse((yield from kit.open(policy)).get("body", "")) if policy else None
    rule = RoundingLimit(stated.per_line) if stated else ROUNDING_LIMIT
    files = {d["title"][len(UPLOAD_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(UPLOAD_TITLE)}
    # the ERP posts only balanced documents: only manual (uploaded) entries can differ
    ents = yield from _unbalanced(kit, [{"column": "source", "op": "eq", "value": "manual"}],
                                  ("entry_id", "debit", "credit", "reference"))

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        v = ents[eid]
        d = round(abs(v["total_debit"] - v["total_credit"]), 2)
        doc = files.get(v.get("reference") or "")
        if doc is None:
            return flag(eid, "UNBALANCED", [policy] if policy else [],
                        f"Entry {eid} does not balance (difference {d:.2f}) and no upload file supports it.")
        up = parse_any((yield from kit.open(doc)).get("body", ""), (KEYED, ALLOCATED))
        return _judge(eid, d, doc, policy, up, rule, stated.tolerance if stated else None)

    done = yield from review(kit, sorted(ents), decide)
    flags, clears = tally(done)
    yield from kit.submit(f"Reviewed {len(ents)} unbalanced uploads: flagged {flags}, cleared {clears} "
                          "allocation rounding differences.")


def _judge(eid: str, d: float, doc: str, policy: str | None, up: Upload | None, rule: RoundingLimit,
           tol_cents: int | None) -> Disposition:
    """The disposition of an unbalanced entry (difference ``d`` USD) whose upload file reads ``up``."""
    basis, n = (up.basis, up.lines) if up else ("", 0)
    ev = [doc] + ([policy] if policy else [])
    limit = round(rule.limit_cents(n) / 100, 3)
    if basis != "allocation":
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: upload file {doc} is keyed (basis: keyed, amounts per line), "
                    f"so nothing was rounded; the difference of {d:.2f} is a keying error, not rounding ({policy}).")
    if not rule.check(basis, n, round(d * 100), tol_cents).ok:
        return flag(eid, "UNBALANCED", ev, f"Entry {eid}: upload file {doc} is an allocation over {n} rounded lines, so "
                    f"rounding can reach at most {limit:.3f}; the difference of {d:.2f} is larger and is an error "
                    f"under {policy}.")
    tol = (tol_cents or 0) / 100
    return clear(eid, ev, f"Entry {eid}: upload file {doc} is an allocation of the credited amount over {n} lines, each "
                 f"rounded to the cent; the difference of {d:.2f} is within the {limit:.3f} rounding limit (half a "
                 f"cent a line) and the USD {tol:.2f} tolerance of {policy}.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template, rules=(ROUNDING_LIMIT,),
            decisive="the upload file's basis and number of rounded lines against the difference: allocation "
                     "rounding of at most half a cent a line (section 4.3 of the journal-entry policy)")
